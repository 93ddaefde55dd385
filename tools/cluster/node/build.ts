/**
 * The real node's binaries: kubelet, built from the same wrapper module and with the same flags
 * as the API server (`go/k8s`), and the programs of its images (`go/nodeimages`). Only
 * `up({ realNode: true })` builds them, through the same stamp as the control plane's binaries,
 * so the default cluster build costs what it did.
 */
import { join } from "node:path";
import { type GoBuild, GoCache, goEnv } from "../../gobuild.ts";
import { k8sLdflags, readVersions } from "../build.ts";
import { BIN_DIR, GO_DIR } from "../paths.ts";

/** Paths of the real node's built binaries. */
export interface NodeBinaries {
  kubelet: string;
  /** Static pause program, the sandbox image's only file. */
  pause: string;
  /** Static test workload (see go/nodeimages/podcheck). */
  podcheck: string;
  /** Kubernetes version kubelet was built at (the API server's). */
  version: string;
}

const cache = new GoCache(BIN_DIR);

/** The two builds of the real node. */
export async function nodeBuilds(): Promise<GoBuild[]> {
  const { kubernetes } = await readVersions();
  const kubelet = ["k8s.io/kubernetes/cmd/kubelet"];
  const images = ["./pause", "./podcheck"];
  return [
    {
      name: "kubelet",
      label: `kubelet ${kubernetes}`,
      dir: join(GO_DIR, "k8s"),
      inputs: ["go.mod", "go.sum", "tools.go"],
      extra: [[kubelet, k8sLdflags(kubernetes), goEnv()]],
      packages: kubelet,
      outputs: ["kubelet"],
      ldflags: k8sLdflags(kubernetes),
    },
    {
      name: "nodeimages",
      label: "pause and podcheck",
      dir: join(GO_DIR, "nodeimages"),
      inputs: ["go.mod", "pause/main.go", "podcheck/main.go"],
      extra: [[images, goEnv()]],
      packages: images,
      outputs: ["pause", "podcheck"],
      ldflags: "-s -w",
    },
  ];
}

/** Which node builds are stale; `goAvailable` says whether building is possible. */
export async function nodeBuildStatus(): Promise<{ stale: string[]; goAvailable: boolean }> {
  return cache.status(await nodeBuilds());
}

/** Builds kubelet and the image programs when missing or stale; returns their paths. */
export async function ensureNodeBuilt(log: (msg: string) => void): Promise<NodeBinaries> {
  if (!await cache.ensure(await nodeBuilds(), log)) log("node binaries up to date");
  return {
    kubelet: cache.path("kubelet"),
    pause: cache.path("pause"),
    podcheck: cache.path("podcheck"),
    version: (await readVersions()).kubernetes,
  };
}
