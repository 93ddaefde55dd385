/**
 * What the deployed-operator test needs besides the harness: deploy/ as users apply it with only
 * the image reference changed (a kustomize overlay over the unchanged directory), the operator's
 * Pods, and what the host can read about the processes in them (/proc: user, capabilities, root
 * filesystem), which is the world the Pod's security context promises.
 */
import { join, relative } from "node:path";
import { parse, stringify } from "yaml";
import type { KubeObject } from "../../src/api/object.ts";
import { nodeLayout } from "../../tools/cluster/node/layout.ts";
import { REPO_ROOT } from "../../tools/operator/process.ts";
import { type E2E, waitFor } from "./harness.ts";

/** Namespace and Deployment name of deploy/'s operator. */
export const DEPLOYED = { namespace: "platform-system", name: "platform-operator" } as const;
/** The label selecting the operator's Pods. */
export const SELECTOR = "app.kubernetes.io/name=platform-operator";

/**
 * Writes a kustomization in `dir` whose only resource is the repository's deploy/ (or `from`, a
 * variant such as deploy/variants/ratelimit-only) and whose only change is the image (what
 * `kustomize edit set image` does); returns `dir`.
 */
export async function imageOverlay(dir: string, image: string, from = "deploy"): Promise<string> {
  await Deno.mkdir(dir, { recursive: true });
  // deploy/ already renames `platform-operator` to its published image; the overlay renames that.
  const base = parse(
    await Deno.readTextFile(join(REPO_ROOT, from, "kustomization.yaml")),
  ) as { images: { name: string; newName: string }[] };
  const published = base.images.find((i) => i.name === "platform-operator")?.newName;
  if (!published) throw new Error(`${from}/kustomization.yaml sets no image for platform-operator`);
  const colon = image.lastIndexOf(":");
  const kustomization = {
    apiVersion: "kustomize.config.k8s.io/v1beta1",
    kind: "Kustomization",
    resources: [relative(dir, join(REPO_ROOT, from))],
    images: [{
      name: published,
      newName: image.slice(0, colon),
      newTag: image.slice(colon + 1),
    }],
  };
  await Deno.writeTextFile(join(dir, "kustomization.yaml"), stringify(kustomization));
  return dir;
}

/** A Pod as the test reads it. */
export interface PodView extends KubeObject {
  spec: { nodeName?: string; containers: { name: string; image: string }[] };
  status: {
    podIP?: string;
    phase?: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: {
      ready: boolean;
      restartCount: number;
      containerID?: string;
      state?: Record<string, { reason?: string; message?: string }>;
    }[];
  };
}

/** The operator's Pods that are not being deleted. */
export async function operatorPods(env: E2E): Promise<PodView[]> {
  const pods = await env.kube.list<PodView>("pods", {
    namespace: DEPLOYED.namespace,
    labelSelector: SELECTOR,
  });
  return pods.filter((p) => !p.metadata.deletionTimestamp);
}

/** True when the Pod's Ready condition is True. */
export function isReady(p: PodView): boolean {
  return p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

/** The two operator Pods, Ready, on the real node. */
export async function twoReady(env: E2E): Promise<PodView[]> {
  return await waitFor("two operator Pods Ready on the real node", async () => {
    const pods = await operatorPods(env);
    const node = env.cluster.realNode!.name;
    return pods.length === 2 && pods.every((p) => isReady(p) && p.spec.nodeName === node)
      ? pods
      : undefined;
  }, { timeoutMs: 180_000, describe: async () => JSON.stringify(await operatorPods(env)) });
}

/** What /proc says about one process. */
export interface HostProcess {
  pid: number;
  cmdline: string[];
  /** Real, effective, saved and filesystem uid. */
  uids: number[];
  capEff: string;
  noNewPrivs: boolean;
  /** Mount options of the process's root ("/" in its own mount namespace). */
  rootOptions: string[];
}

/**
 * The process of each Pod's first container, as /proc shows it: its pid is the `init.pid` that
 * containerd's runc shim writes into the container's bundle under this cluster's node (so
 * another cluster's processes on the same machine are never read).
 */
export async function containerProcesses(
  clusterDir: string,
  pods: readonly PodView[],
): Promise<HostProcess[]> {
  const tasks = join(nodeLayout(clusterDir).containerdState, "io.containerd.runtime.v2.task");
  const found: HostProcess[] = [];
  for (const p of pods) {
    const id = p.status.containerStatuses?.[0]?.containerID?.replace(/^containerd:\/\//, "");
    if (!id) throw new Error(`${p.metadata.name} has no container yet`);
    const pid = Number((await Deno.readTextFile(join(tasks, "k8s.io", id, "init.pid"))).trim());
    const cmdline = (await Deno.readTextFile(`/proc/${pid}/cmdline`)).split("\0");
    const status = await Deno.readTextFile(`/proc/${pid}/status`);
    const field = (k: string) => new RegExp(`^${k}:\\s*(.*)$`, "m").exec(status)?.[1] ?? "";
    const mounts = await Deno.readTextFile(`/proc/${pid}/mountinfo`);
    const root = mounts.split("\n").map((l) => l.split(" ")).find((f) => f[4] === "/");
    found.push({
      pid,
      cmdline: cmdline.filter((a) => a !== ""),
      uids: field("Uid").split(/\s+/).map(Number),
      capEff: field("CapEff"),
      noNewPrivs: field("NoNewPrivs") === "1",
      rootOptions: root?.[5]?.split(",") ?? [],
    });
  }
  return found;
}

/** The Lease the operator's replicas elect a leader with, and its holder. */
export async function leaseHolder(env: E2E): Promise<string | undefined> {
  const lease = await env.kube.get<KubeObject & { spec?: { holderIdentity?: string } }>(
    "leases.coordination.k8s.io",
    DEPLOYED.name,
    DEPLOYED.namespace,
  );
  return lease?.spec?.holderIdentity || undefined;
}
