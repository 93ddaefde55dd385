/**
 * Objects the benches feed the operator: RateLimits with a chosen number of rules, the Pods they
 * select, and namespaces. The same builders serve the in-process benches and the control plane.
 */
import { SIDECAR_STATUS_ANNOTATION } from "../src/api/pod.ts";
import { MAX_BUCKET_RULES } from "../src/api/ratelimit_bounds.ts";
import { apiVersionOf, RESOURCES } from "../src/api/resources.ts";
import type { KubeObject, ResourceType } from "../src/api/object.ts";
import { kwokNode } from "../tools/cluster/mesh.ts";

/** Namespace of the benches' workloads. */
export const BENCH_NAMESPACE = "bench";
/** The rules of the benches' RateLimits: none, the usual 4, and the most the CRD allows. */
export const RULE_COUNTS = [0, 4, MAX_BUCKET_RULES] as const;

/** Label every object the benches create carries (so one selector finds them all). */
export const BENCH_LABEL = { key: "bench.platform-project.io/run", value: "1" } as const;

/**
 * Bucket rule `j` of a RateLimit: path only, headers only, or both, in turn, so each kind of
 * matcher is exercised; fill intervals are multiples of the default bucket's 1s.
 */
export function bucketRule(j: number): Record<string, unknown> {
  const bucket = { maxTokens: 5 + j, tokensPerFill: 1 + (j % 3), fillInterval: `${1 + (j % 4)}s` };
  switch (j % 3) {
    case 0:
      return { path: `/api/v1/items/${j}`, bucket };
    case 1:
      return { headers: { "X-Tenant": `tenant-${j}`, "X-Plan": "free" }, bucket };
    default:
      return { path: `/search/${j}`, headers: { "X-Rate-Limited": "true" }, bucket };
  }
}

/** Options of {@link rateLimitObject}. */
export interface RateLimitFixture {
  /** Index of the RateLimit: its name, its workload's label and its creation order follow it. */
  i: number;
  /** Number of additional bucket rules. */
  rules: number;
  namespace?: string;
  /** Fields the API server sets (uid, generation, creationTimestamp, resourceVersion). */
  stored?: boolean;
  /** Another RateLimit type of the same shape (the peer's); default the operator's. */
  type?: ResourceType;
}

/** Name of the i-th RateLimit and of the workload (label `app`) it selects. */
export function workloadName(i: number): string {
  return `w-${String(i).padStart(5, "0")}`;
}

/** The i-th RateLimit: selects `app: w-<i>`, a default bucket and `rules` additional buckets. */
export function rateLimitObject(o: RateLimitFixture): KubeObject {
  const name = workloadName(o.i);
  const namespace = o.namespace ?? BENCH_NAMESPACE;
  const stored = o.stored
    ? {
      uid: `00000000-0000-4000-8000-${String(o.i).padStart(12, "0")}`,
      generation: 1,
      resourceVersion: String(1000 + o.i),
      creationTimestamp: new Date(Date.UTC(2026, 0, 1) + o.i * 1000).toISOString().replace(
        ".000Z",
        "Z",
      ),
    }
    : {};
  return {
    apiVersion: apiVersionOf(o.type ?? RESOURCES.RateLimit),
    kind: "RateLimit",
    metadata: { name, namespace, labels: { [BENCH_LABEL.key]: BENCH_LABEL.value }, ...stored },
    spec: {
      selectorLabels: { app: name },
      enableResponseHeaders: true,
      local: {
        defaultBucket: { maxTokens: 100, tokensPerFill: 10, fillInterval: "1s" },
        buckets: Array.from({ length: o.rules }, (_, j) => bucketRule(j)),
      },
    },
  };
}

/** The i-th workload Pod (label `app: w-<i>`), Ready as kwok or the simulator would make it. */
export function podObject(
  i: number,
  opts: { namespace?: string; ready?: boolean } = {},
): KubeObject {
  const name = workloadName(i);
  const ready = opts.ready ?? true;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `${name}-0`,
      namespace: opts.namespace ?? BENCH_NAMESPACE,
      uid: `10000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
      labels: { app: name, [BENCH_LABEL.key]: BENCH_LABEL.value },
    },
    spec: { containers: [{ name: "app", image: "registry.example/httpbin:1" }] },
    status: {
      phase: ready ? "Running" : "Pending",
      conditions: [{ type: "Ready", status: ready ? "True" : "False" }],
    },
  };
}

/** A Namespace object. */
export function namespaceObject(name: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name, labels: { [BENCH_LABEL.key]: BENCH_LABEL.value } },
  };
}

/** Name of the kwok node the benches' Pods are bound to. */
export const BENCH_NODE = "bench-kwok-0";

/** A kwok-managed Node with room for many Pods (the default kwok node takes 110). */
export function benchNodeObject(): KubeObject {
  return kwokNode(BENCH_NODE, { cpu: "1k", memory: "1Ti", pods: "100000" }, {
    [BENCH_LABEL.key]: BENCH_LABEL.value,
  }) as unknown as KubeObject;
}

/**
 * What Istio's injector writes on a Pod it gave a sidecar (the annotation's shape as Istio 1.2x
 * writes it). Kyma's controller refuses a RateLimit whose Pods lack it, so every bench Pod has it:
 * the operator and the peer get the same Pods.
 */
export const SIDECAR_STATUS = JSON.stringify({
  initContainers: ["istio-validation"],
  containers: ["istio-proxy"],
  volumes: ["workload-socket", "credential-socket", "workload-certs", "istio-envoy", "istio-data"],
  imagePullSecrets: null,
  revision: "default",
});

/** The i-th workload Pod to create: bound to the bench node, so no scheduling is timed. */
export function podManifest(i: number, namespace: string): KubeObject {
  const name = workloadName(i);
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `${name}-0`,
      namespace,
      labels: { app: name, [BENCH_LABEL.key]: BENCH_LABEL.value },
      annotations: { [SIDECAR_STATUS_ANNOTATION]: SIDECAR_STATUS },
    },
    spec: {
      nodeName: BENCH_NODE,
      containers: [{ name: "app", image: "registry.example/httpbin:1" }],
    },
  };
}
