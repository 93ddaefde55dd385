/**
 * What keda_real_test.ts needs besides the harness: when it can run (root and the real node's
 * packages, KEDA's binaries or Go, podman), KEDA's images, a namespace whose Pods all go to the
 * real node (PodNodeSelector and PodTolerationRestriction annotations, so the operator's rendering
 * stays as it is), and a view of the KEDA Pods.
 */
import type { KubeObject } from "../../src/api/object.ts";
import { realNodeNamespaceAnnotations } from "../../tools/cluster/mod.ts";
import { deploymentManifest } from "../../tools/cluster/test_helpers.ts";
import { REAL_NODE_SKIP } from "../../tools/cluster/real_node_fixtures.ts";
import { kedaBuildStatus } from "../../tools/keda/build.ts";
import { buildKedaImages, type KedaImages } from "../../tools/keda/image.ts";
import { missingTools } from "../../tools/image/run.ts";
import { CLUSTER_DNS_IP } from "../../tools/cluster/services.ts";
import type { Kube } from "./kube.ts";

/** Why the real KEDA suite cannot run here, or "". */
export const KEDA_REAL_SKIP: string = await (async () => {
  const keda = await kedaBuildStatus();
  const why = [
    REAL_NODE_SKIP,
    keda.stale.length > 0 && !keda.goAvailable ? "KEDA not built and no go" : "",
    (await missingTools()) ?? "",
  ].filter((w) => w !== "");
  if (why.length > 0) console.error(`\n*** real KEDA e2e SKIPPED: ${why.join("; ")} ***\n`);
  return why.join("; ");
})();

/** Builds (or reuses) KEDA's binaries and images; logs progress. */
export function kedaImages(): Promise<KedaImages> {
  return buildKedaImages((l) => console.error(`[keda images] ${l}`));
}

/** The operator flags that make the Scaler's Deployments use `images`. */
export function imageFlags(images: KedaImages): string[] {
  return [
    `--keda-operator-image=${images.operator.ref}`,
    `--keda-metrics-server-image=${images.metricServer.ref}`,
    `--keda-webhook-image=${images.admissionWebhook.ref}`,
  ];
}

/**
 * The operator's flags on the real node: KEDA's `images`, and cluster DNS asked at the kube-dns
 * Service's address, since the operator runs as a host process, outside any Pod (kube-proxy's
 * rules serve the host too). KEDA_REAL_CLUSTER_DNS=off runs an operator that does not look the
 * names up, to show the DNS step failing without it.
 */
export function operatorFlags(images: KedaImages): string[] {
  const dns = Deno.env.get("KEDA_REAL_CLUSTER_DNS") ?? CLUSTER_DNS_IP;
  return [...imageFlags(images), `--cluster-dns=${dns}`];
}

/**
 * A namespace whose every Pod the API server sends to the real node: PodNodeSelector adds the
 * node's label as nodeSelector, PodTolerationRestriction its taint's toleration.
 */
export function realNodeNamespace(name: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name, annotations: realNodeNamespaceAnnotations() },
  };
}

/** A one-replica Deployment kwok runs (its image is never pulled). */
export function kwokDeployment(namespace: string, name: string): KubeObject {
  return deploymentManifest(namespace, name) as unknown as KubeObject;
}

/** What the test reads off one Pod. */
export interface PodView {
  name: string;
  app: string;
  node: string;
  nodeSelector: Record<string, string>;
  image: string;
  ready: boolean;
  /** The container's waiting reason (ErrImagePull, CrashLoopBackOff, …) or "". */
  waiting: string;
  restarts: number;
}

interface PodJson {
  metadata: { name: string; labels?: Record<string, string>; deletionTimestamp?: string };
  spec: {
    nodeName?: string;
    nodeSelector?: Record<string, string>;
    containers: { image: string }[];
  };
  status?: {
    conditions?: { type: string; status: string }[];
    containerStatuses?: {
      restartCount: number;
      state?: { waiting?: { reason?: string } };
    }[];
  };
}

/** The Pods of `namespace`, as {@link PodView}s sorted by app. */
export async function pods(kube: Kube, namespace: string): Promise<PodView[]> {
  const items = await kube.list<PodJson>("pods", { namespace });
  // A deleted Pod stays listed, and may stay Ready, until the kubelet has stopped it (up to its
  // grace period): it is on its way out, not one of KEDA's running Pods.
  return items.filter((p) => !p.metadata.deletionTimestamp).map((p) => ({
    name: p.metadata.name,
    app: p.metadata.labels?.app ?? "",
    node: p.spec.nodeName ?? "",
    nodeSelector: p.spec.nodeSelector ?? {},
    image: p.spec.containers[0]?.image ?? "",
    ready: p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false,
    waiting: p.status?.containerStatuses?.[0]?.state?.waiting?.reason ?? "",
    restarts: p.status?.containerStatuses?.[0]?.restartCount ?? 0,
  })).sort((a, b) => a.app.localeCompare(b.app));
}

/** One line per Pod, for failure messages. */
export function describePods(ps: readonly PodView[]): string {
  return ps.map((p) =>
    `${p.name} node=${p.node || "-"} ready=${p.ready} waiting=${p.waiting || "-"} ` +
    `restarts=${p.restarts} image=${p.image}`
  ).join("\n");
}
