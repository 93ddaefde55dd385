/** Builds the control-plane binaries from the Go wrapper modules under `tools/cluster/go`. */
import { join } from "node:path";
import { type GoBuild, GoCache, goEnv, goVersion as goVersionIn, runGo } from "../gobuild.ts";
import { BIN_DIR, GO_DIR } from "./paths.ts";

/** Versions of the components, read from the wrapper modules' go.mod files. */
export interface Versions {
  kubernetes: string;
  etcd: string;
  kwok: string;
}

/** Absolute paths of the built binaries plus the kwok stage configuration. */
export interface Binaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubeScheduler: string;
  kubectl: string;
  kwok: string;
  /** kwok Stage objects (node-initialize, heartbeat, pod-ready/complete/delete). */
  kwokStages: string;
  versions: Versions;
}

interface GoModule {
  name: "k8s" | "etcd" | "kwok";
  requirePath: string;
  packages: string[];
  outputs: string[];
  ldflags: (version: string) => string;
}

/** Linker flags of every k8s.io/kubernetes binary: the version `kubectl version` and nodes report. */
export function k8sLdflags(v: string): string {
  const [major, minor] = v.replace(/^v/, "").split(".");
  const pkg = "k8s.io/component-base/version";
  return `-s -w -X ${pkg}.gitVersion=${v} -X ${pkg}.gitMajor=${major} ` +
    `-X ${pkg}.gitMinor=${minor} -X ${pkg}.gitTreeState=clean`;
}

const K8S_CMDS = ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"];

const MODULES: GoModule[] = [
  {
    name: "k8s",
    requirePath: "k8s.io/kubernetes",
    packages: K8S_CMDS.map((c) => `k8s.io/kubernetes/cmd/${c}`),
    outputs: K8S_CMDS,
    ldflags: k8sLdflags,
  },
  {
    name: "etcd",
    requirePath: "go.etcd.io/etcd/server/v3",
    packages: ["go.etcd.io/etcd/server/v3"],
    outputs: ["etcd"],
    ldflags: () => "-s -w",
  },
  {
    name: "kwok",
    requirePath: "sigs.k8s.io/kwok",
    packages: ["sigs.k8s.io/kwok/cmd/kwok"],
    outputs: ["kwok"],
    ldflags: () => "-s -w",
  },
];

/** Stage manifests copied from the kwok module (kwok itself embeds none). */
const KWOK_STAGE_FILES = [
  "kustomize/stage/node/fast/node-initialize.yaml",
  "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
  "kustomize/stage/pod/fast/pod-ready.yaml",
  "kustomize/stage/pod/fast/pod-complete.yaml",
  "kustomize/stage/pod/fast/pod-delete.yaml",
];

const KWOK_STAGES = join(BIN_DIR, "kwok-stages.yaml");
const cache = new GoCache(BIN_DIR);

export { goEnv };

/** `go version` output, or null when no Go toolchain is on PATH. */
export function goVersion(): Promise<string | null> {
  return goVersionIn(GO_DIR);
}

async function readModuleVersion(mod: GoModule): Promise<string> {
  const gomod = await Deno.readTextFile(join(GO_DIR, mod.name, "go.mod"));
  const esc = mod.requirePath.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  const m = gomod.match(new RegExp(`^\\s*(?:require\\s+)?${esc}\\s+(v\\S+)`, "m"));
  if (!m) throw new Error(`no "require ${mod.requirePath}" in ${mod.name}/go.mod`);
  return m[1];
}

/** Versions pinned by the wrapper modules. */
export async function readVersions(): Promise<Versions> {
  const [kubernetes, etcd, kwok] = await Promise.all(MODULES.map(readModuleVersion));
  return { kubernetes, etcd, kwok };
}

/** Copies kwok's stage manifests out of the kwok module (kwok itself embeds none). */
async function writeKwokStages(mod: GoModule): Promise<void> {
  const modDir = await runGo(
    ["list", "-m", "-f", "{{.Dir}}", mod.requirePath],
    join(GO_DIR, mod.name),
  );
  const docs = await Promise.all(KWOK_STAGE_FILES.map((f) => Deno.readTextFile(join(modDir, f))));
  await Deno.writeTextFile(KWOK_STAGES, docs.map((d) => d.trim()).join("\n---\n") + "\n");
}

/** The wrapper modules (k8s, etcd, kwok) as builds of the binary cache. */
export async function clusterBuilds(): Promise<GoBuild[]> {
  return await Promise.all(MODULES.map(async (mod): Promise<GoBuild> => {
    const ldflags = mod.ldflags(await readModuleVersion(mod));
    const kwok = mod.name === "kwok";
    return {
      name: mod.name,
      label: `${mod.name} ${await readModuleVersion(mod)}`,
      dir: join(GO_DIR, mod.name),
      inputs: ["go.mod", "go.sum", "tools.go"],
      extra: [[mod.packages, ldflags, goEnv()], ...(kwok ? [KWOK_STAGE_FILES] : [])],
      packages: mod.packages,
      outputs: mod.outputs,
      ldflags,
      ...(kwok ? { artifacts: [KWOK_STAGES], after: () => writeKwokStages(mod) } : {}),
    };
  }));
}

/** Paths the binaries have (or will have) in the cache. */
export async function binaryPaths(): Promise<Binaries> {
  const b = (n: string) => join(BIN_DIR, n);
  return {
    etcd: b("etcd"),
    kubeApiserver: b("kube-apiserver"),
    kubeControllerManager: b("kube-controller-manager"),
    kubeScheduler: b("kube-scheduler"),
    kubectl: b("kubectl"),
    kwok: b("kwok"),
    kwokStages: KWOK_STAGES,
    versions: await readVersions(),
  };
}

/** Which wrapper modules need a build; `goAvailable` says whether one is possible. */
export async function buildStatus(): Promise<{ stale: string[]; goAvailable: boolean }> {
  return cache.status(await clusterBuilds());
}

let pending: Promise<Binaries> | undefined;
/** The binaries this process checked or built: its inputs do not change while it runs. */
let ready: Binaries | undefined;

/**
 * Builds whatever is missing or stale (per-module stamp of go.mod/go.sum/flags/go version)
 * and returns the binary paths. Safe to call concurrently from several processes. Once it has
 * succeeded, later calls in the same process return the same paths at once, without checking or
 * logging again (callers that check first and then `up` print "up to date" once).
 */
export function ensureBuilt(log: (msg: string) => void = () => {}): Promise<Binaries> {
  if (ready) return Promise.resolve(ready);
  pending ??= doEnsureBuilt(log).then((b) => ready = b).finally(() => pending = undefined);
  return pending;
}

async function doEnsureBuilt(log: (msg: string) => void): Promise<Binaries> {
  if (!await cache.ensure(await clusterBuilds(), log)) log("binaries up to date, nothing to build");
  return binaryPaths();
}
