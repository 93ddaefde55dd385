/**
 * What keda_real_test.ts needs to watch KEDA do its job on the real node: a metric served by a Pod
 * of the test (podcheck's /metric, set from the host), a real Deployment to scale, a ScaledObject
 * with a metrics-api trigger that reads the metric through cluster DNS, and a trace of the
 * Deployment's replicas, the HPA and the Scaler sampled over time.
 */
import type { KubeObject } from "../../src/api/object.ts";
import { conditionOf, statusOf } from "./status.ts";
import type { Kube } from "./kube.ts";
import { deploymentManifest } from "../../tools/cluster/test_helpers.ts";

/** The Deployment KEDA scales and the one serving the metric. */
export const SCALED_APP = "app";
/** The Pod (and Service) serving `{"value": N}` at /metric. */
export const METRIC_APP = "metric";

/** Hardened podcheck containers: what restricted Pod Security asks. */
function podcheckTemplate(name: string, image: string): Record<string, unknown> {
  return {
    metadata: { labels: { app: name } },
    spec: {
      securityContext: {
        runAsUser: 65532,
        runAsGroup: 65532,
        runAsNonRoot: true,
        seccompProfile: { type: "RuntimeDefault" },
      },
      terminationGracePeriodSeconds: 1,
      containers: [{
        name: "podcheck",
        image,
        imagePullPolicy: "Never",
        ports: [{ containerPort: 8080, name: "http" }],
        securityContext: {
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          capabilities: { drop: ["ALL"] },
        },
        readinessProbe: { httpGet: { path: "/ready", port: 8080 }, periodSeconds: 1 },
      }],
    },
  };
}

/** tools/cluster's one-replica Deployment, its Pods podcheck's. */
function podcheckDeployment(ns: string, name: string, image: string): KubeObject {
  const d = deploymentManifest(ns, name) as unknown as KubeObject & { spec: object };
  return { ...d, spec: { ...d.spec, template: podcheckTemplate(name, image) } };
}

/**
 * The scaled Deployment, the metric's Deployment and its Service (port 80), all podcheck: run in a
 * namespace whose Pods go to the real node.
 */
export function scalingWorkload(ns: string, image: string): KubeObject[] {
  return [
    podcheckDeployment(ns, METRIC_APP, image),
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: METRIC_APP, namespace: ns },
      spec: {
        selector: { app: METRIC_APP },
        ports: [{ name: "http", port: 80, targetPort: 8080 }],
      },
    },
    podcheckDeployment(ns, SCALED_APP, image),
  ];
}

/** Bounds of the ScaledObject's replicas. */
export const SCALE_BOUNDS = { min: 1, max: 3 } as const;

/**
 * A ScaledObject scaling `target` on the metrics-api trigger: KEDA's operator GETs the metric
 * Service by its cluster DNS name, one replica per unit of the value; no stabilization window, so
 * the HPA follows the value within its sync period both ways.
 */
export function metricsApiScaledObject(ns: string, name: string, target: string): KubeObject {
  const noWait = (policy: Record<string, unknown>) => ({
    stabilizationWindowSeconds: 0,
    policies: [{ ...policy, periodSeconds: 5 }],
  });
  return {
    apiVersion: "keda.sh/v1alpha1",
    kind: "ScaledObject",
    metadata: { name, namespace: ns },
    spec: {
      scaleTargetRef: { name: target },
      minReplicaCount: SCALE_BOUNDS.min,
      maxReplicaCount: SCALE_BOUNDS.max,
      pollingInterval: 5,
      advanced: {
        horizontalPodAutoscalerConfig: {
          behavior: {
            scaleUp: noWait({ type: "Pods", value: SCALE_BOUNDS.max }),
            scaleDown: noWait({ type: "Pods", value: SCALE_BOUNDS.max }),
          },
        },
      },
      triggers: [{
        type: "metrics-api",
        metricType: "AverageValue",
        metadata: {
          url: `http://${METRIC_APP}.${ns}.svc.cluster.local/metric`,
          format: "json",
          valueLocation: "value",
          targetValue: "1",
        },
      }],
    },
  };
}

interface PodJson {
  metadata: { deletionTimestamp?: string };
  status?: { podIP?: string; conditions?: { type: string; status: string }[] };
}

/** Sets the value the metric Pod serves (the host reaches the Pod on the project's bridge). */
export async function setMetric(kube: Kube, ns: string, value: number): Promise<void> {
  const ps = await kube.list<PodJson>("pods", {
    namespace: ns,
    labelSelector: `app=${METRIC_APP}`,
  });
  const ready = ps.find((p) =>
    !p.metadata.deletionTimestamp &&
    p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
  );
  if (!ready?.status?.podIP) throw new Error(`no Ready ${METRIC_APP} Pod in ${ns}`);
  const res = await fetch(`http://${ready.status.podIP}:8080/metric?set=${value}`);
  const body = await res.text();
  if (!res.ok || JSON.parse(body).value !== value) {
    throw new Error(`setting the metric to ${value}: ${res.status} ${body}`);
  }
}

/** One sample of what the scaling test watches. */
export interface ScaleSample {
  /** Milliseconds since the trace began. */
  at: number;
  /** The Deployment's spec.replicas (what the HPA asked). */
  replicas: number;
  /** Its ready replicas. */
  ready: number;
  /** The Scaler's state. */
  scaler: string;
  /** The HPA's ScalingActive condition status ("" before the HPA has one). */
  scalingActive: string;
}

interface DeploymentJson {
  spec: { replicas?: number };
  status?: { readyReplicas?: number };
}

/**
 * Samples the scaled Deployment, its HPA and the Scaler every `intervalMs` until stopped: the
 * record a test asserts the replica count over time with.
 */
export class ScaleTrace {
  readonly samples: ScaleSample[] = [];
  #stopped = false;
  readonly #done: Promise<void>;
  readonly #start = Date.now();

  constructor(
    kube: Kube,
    where: { ns: string; deployment: string; hpa: string; scaler: { ns: string; name: string } },
    intervalMs = 500,
  ) {
    this.#done = (async () => {
      while (!this.#stopped) {
        const [d, hpa, s] = await Promise.all([
          kube.get<DeploymentJson>("deployment", where.deployment, where.ns),
          kube.get("hpa", where.hpa, where.ns),
          kube.get("scaler", where.scaler.name, where.scaler.ns),
        ]).catch(() => [undefined, undefined, undefined] as const);
        if (d) {
          this.samples.push({
            at: Date.now() - this.#start,
            replicas: d.spec.replicas ?? 1,
            ready: d.status?.readyReplicas ?? 0,
            scaler: s ? String(statusOf(s).state ?? "") : "",
            scalingActive: conditionOf(hpa, "ScalingActive")?.status ?? "",
          });
        }
        await new Promise((r) => setTimeout(r, intervalMs));
      }
    })();
  }

  /** The samples from `from` ms on. */
  since(from: number): ScaleSample[] {
    return this.samples.filter((s) => s.at >= from);
  }

  /** Milliseconds since the trace began. */
  now(): number {
    return Date.now() - this.#start;
  }

  /** Stops sampling and waits for the last sample. */
  async stop(): Promise<ScaleSample[]> {
    this.#stopped = true;
    await this.#done;
    return this.samples;
  }
}

/** `t=1.5s 1/1 Ready active=True` per distinct sample, for failure messages. */
export function describeTrace(samples: readonly ScaleSample[]): string {
  const lines: string[] = [];
  let last = "";
  for (const s of samples) {
    const line = `${s.replicas}/${s.ready} scaler=${s.scaler} active=${s.scalingActive || "-"}`;
    if (line !== last) lines.push(`t=${(s.at / 1000).toFixed(1)}s ${line}`);
    last = line;
  }
  return lines.join("\n");
}

/** Longest stretch (ms) in which the HPA's ScalingActive was not True, after it first was. */
export function longestInactive(samples: readonly ScaleSample[]): number {
  let longest = 0;
  let since: number | undefined;
  let seen = false;
  for (const s of samples) {
    if (s.scalingActive === "True") {
      if (since !== undefined) longest = Math.max(longest, s.at - since);
      since = undefined;
      seen = true;
    } else if (seen && since === undefined) since = s.at;
  }
  const last = samples[samples.length - 1];
  if (since !== undefined && last) longest = Math.max(longest, last.at - since);
  return longest;
}
