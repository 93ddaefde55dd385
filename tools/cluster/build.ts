/** Builds the control-plane binaries from the Go wrapper modules under `tools/cluster/go`. */
import { join } from "node:path";
import { BIN_DIR, exists, GO_DIR } from "./paths.ts";
import { withLock } from "./lock.ts";
import {
  inputsHash as hashInputs,
  readStamp as readStampFile,
  type Stamp,
  writeStamp,
} from "./stamp.ts";

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

const K8S_CMDS = ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"];

const MODULES: GoModule[] = [
  {
    name: "k8s",
    requirePath: "k8s.io/kubernetes",
    packages: K8S_CMDS.map((c) => `k8s.io/kubernetes/cmd/${c}`),
    outputs: K8S_CMDS,
    ldflags: (v) => {
      const [major, minor] = v.replace(/^v/, "").split(".");
      const pkg = "k8s.io/component-base/version";
      return `-s -w -X ${pkg}.gitVersion=${v} -X ${pkg}.gitMajor=${major} ` +
        `-X ${pkg}.gitMinor=${minor} -X ${pkg}.gitTreeState=clean`;
    },
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

const STAMP_FILE = join(BIN_DIR, "stamp.json");
const KWOK_STAGES = join(BIN_DIR, "kwok-stages.yaml");

/** Environment for every `go` invocation: local toolchain, static, reproducible paths. */
export function goEnv(): Record<string, string> {
  return {
    GOTOOLCHAIN: "local",
    CGO_ENABLED: "0",
    GOFLAGS: "-trimpath -buildvcs=false -mod=readonly",
  };
}

async function run(cmd: string, args: string[], cwd: string): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd, env: goEnv(), stdin: "null" }).output();
  const dec = new TextDecoder();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} failed (cwd ${cwd}):\n${dec.decode(out.stderr)}`);
  }
  return dec.decode(out.stdout).trim();
}

/** `go version` output, or null when no Go toolchain is on PATH. */
export async function goVersion(): Promise<string | null> {
  try {
    return await run("go", ["version"], GO_DIR);
  } catch {
    return null;
  }
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

async function inputsHash(mod: GoModule): Promise<string> {
  const settings: unknown[] = [[mod.packages, mod.ldflags(await readModuleVersion(mod)), goEnv()]];
  if (mod.name === "kwok") settings.push(KWOK_STAGE_FILES);
  return hashInputs(join(GO_DIR, mod.name), ["go.mod", "go.sum", "tools.go"], settings);
}

function readStamp(): Promise<Stamp> {
  return readStampFile(STAMP_FILE);
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

async function moduleUpToDate(mod: GoModule, stamp: Stamp, go: string | null): Promise<boolean> {
  const s = stamp[mod.name];
  if (!s || s.inputs !== await inputsHash(mod)) return false;
  if (go !== null && s.go !== go) return false;
  for (const o of mod.outputs) if (!await exists(join(BIN_DIR, o))) return false;
  return mod.name !== "kwok" || await exists(KWOK_STAGES);
}

/** Which wrapper modules need a build; `goAvailable` says whether one is possible. */
export async function buildStatus(): Promise<{ stale: string[]; goAvailable: boolean }> {
  const go = await goVersion();
  const stamp = await readStamp();
  const stale: string[] = [];
  for (const mod of MODULES) if (!await moduleUpToDate(mod, stamp, go)) stale.push(mod.name);
  return { stale, goAvailable: go !== null };
}

async function buildModule(mod: GoModule, log: (msg: string) => void): Promise<void> {
  const cwd = join(GO_DIR, mod.name);
  const version = await readModuleVersion(mod);
  const tmp = await Deno.makeTempDir({ dir: BIN_DIR, prefix: `.build-${mod.name}-` });
  try {
    const started = performance.now();
    log(`building ${mod.name} ${version}: ${mod.outputs.join(", ")} (this can take a while)`);
    const out = mod.outputs.length === 1 ? join(tmp, mod.outputs[0]) : tmp + "/";
    await run("go", ["build", "-ldflags", mod.ldflags(version), "-o", out, ...mod.packages], cwd);
    for (const o of mod.outputs) await Deno.rename(join(tmp, o), join(BIN_DIR, o));
    if (mod.name === "kwok") {
      const modDir = await run("go", ["list", "-m", "-f", "{{.Dir}}", mod.requirePath], cwd);
      const docs = await Promise.all(
        KWOK_STAGE_FILES.map((f) => Deno.readTextFile(join(modDir, f))),
      );
      await Deno.writeTextFile(KWOK_STAGES, docs.map((d) => d.trim()).join("\n---\n") + "\n");
    }
    log(`built ${mod.name} in ${((performance.now() - started) / 1000).toFixed(1)}s`);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
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
  await Deno.mkdir(BIN_DIR, { recursive: true });
  const first = await buildStatus();
  if (first.stale.length === 0) {
    log("binaries up to date, nothing to build");
    return binaryPaths();
  }
  if (!first.goAvailable) {
    throw new Error(`cannot build ${first.stale.join(", ")}: no "go" on PATH`);
  }
  await withLock(join(BIN_DIR, ".lock"), async () => {
    const go = await goVersion();
    for (const mod of MODULES) {
      if (await moduleUpToDate(mod, await readStamp(), go)) continue;
      await buildModule(mod, log);
      await writeStamp(STAMP_FILE, mod.name, { inputs: await inputsHash(mod), go: go ?? "" });
    }
  }, log);
  return binaryPaths();
}
