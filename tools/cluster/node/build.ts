/**
 * The real node's binaries: kubelet and kube-proxy, built in one `go build` from the same wrapper
 * module and with the same flags as the API server (`go/k8s`), the programs of its images and its
 * API relay (`go/nodeimages`), and CoreDNS (tools/coredns). Only `up({ realNode: true })` builds
 * them, through the same stamp as the control plane's binaries, so the default cluster build costs
 * what it did.
 */
import { join } from "node:path";
import { type GoBuild, GoCache, goEnv } from "../../gobuild.ts";
import { k8sLdflags, readVersions } from "../build.ts";
import { BIN_DIR, GO_DIR } from "../paths.ts";
import { corednsBuild, corednsVersion } from "../../coredns/build.ts";

/** Paths of the real node's built binaries. */
export interface NodeBinaries {
  kubelet: string;
  /** kube-proxy, from the kubelet's build. */
  kubeProxy: string;
  /** Relays the `kubernetes` Service's endpoint on the bridge to the API server (go/nodeimages). */
  apiRelay: string;
  /** CoreDNS with the cluster DNS plugins (tools/coredns). */
  coredns: string;
  /** CoreDNS's module version. */
  corednsVersion: string;
  /** Static pause program, the sandbox image's only file. */
  pause: string;
  /** Static test workload (see go/nodeimages/podcheck). */
  podcheck: string;
  /** Kubernetes version kubelet was built at (the API server's). */
  version: string;
}

const cache = new GoCache(BIN_DIR);

/** The three builds of the real node. */
export async function nodeBuilds(): Promise<GoBuild[]> {
  const { kubernetes } = await readVersions();
  // One `go build` for both: they share most packages, so kube-proxy adds little to the kubelet.
  const kubelet = ["k8s.io/kubernetes/cmd/kubelet", "k8s.io/kubernetes/cmd/kube-proxy"];
  const images = ["./pause", "./podcheck", "./apirelay"];
  return [
    {
      name: "kubelet",
      label: `kubelet and kube-proxy ${kubernetes}`,
      dir: join(GO_DIR, "k8s"),
      inputs: ["go.mod", "go.sum", "tools.go"],
      extra: [[kubelet, k8sLdflags(kubernetes), goEnv()]],
      packages: kubelet,
      outputs: ["kubelet", "kube-proxy"],
      ldflags: k8sLdflags(kubernetes),
    },
    {
      name: "nodeimages",
      label: "pause, podcheck and apirelay",
      dir: join(GO_DIR, "nodeimages"),
      inputs: ["go.mod", "pause/main.go", "podcheck/main.go", "apirelay/main.go"],
      extra: [[images, goEnv()]],
      packages: images,
      outputs: ["pause", "podcheck", "apirelay"],
      ldflags: "-s -w",
    },
    await corednsBuild(),
  ];
}

/** Which node builds are stale; `goAvailable` says whether building is possible. */
export async function nodeBuildStatus(): Promise<{ stale: string[]; goAvailable: boolean }> {
  return cache.status(await nodeBuilds());
}

/** Builds the node's programs when missing or stale; returns their paths. */
export async function ensureNodeBuilt(log: (msg: string) => void): Promise<NodeBinaries> {
  if (!await cache.ensure(await nodeBuilds(), log)) log("node binaries up to date");
  return {
    kubelet: cache.path("kubelet"),
    kubeProxy: cache.path("kube-proxy"),
    apiRelay: cache.path("apirelay"),
    coredns: cache.path("coredns"),
    corednsVersion: await corednsVersion(),
    pause: cache.path("pause"),
    podcheck: cache.path("podcheck"),
    version: (await readVersions()).kubernetes,
  };
}
