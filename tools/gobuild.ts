/**
 * Builds binaries from Go modules into a cache directory, once: each build has a stamp (a hash of
 * its input files, packages, flags and Go environment, plus the `go version`) in the directory's
 * `stamp.json`, and builds again only when that changes or an output is missing. Used by the local
 * control plane (`tools/cluster/build.ts`) and the CRD generator (`tools/crdgen/`).
 */
import { join } from "node:path";
import { withLock } from "./lock.ts";
import { exists } from "./files.ts";
import { inputsHash as hashFiles, readStamp, type Stamp, writeStamp } from "./stamp.ts";
import { step } from "./progress.ts";

/** One `go build` of some packages of a module, and what decides whether it is stale. */
export interface GoBuild {
  /** Key of the build in the stamp file. */
  name: string;
  /** What the build log calls it (default: name). */
  label?: string;
  /** The module directory `go build` runs in. */
  dir: string;
  /** Files of `dir` whose content decides staleness (go.mod, go.sum, sources). */
  inputs: readonly string[];
  /** Further inputs, hashed as JSON in order. */
  extra: readonly unknown[];
  packages: readonly string[];
  /** Binary names, written into the cache directory. */
  outputs: readonly string[];
  ldflags: string;
  /** Build tags (`go build -tags`), if any. */
  tags?: readonly string[];
  /** Further `go build` flags (e.g. `-modfile=…`), before the packages. */
  flags?: readonly string[];
  /** Runs under the cache's lock before `go build` (prepares what the flags name). */
  before?: () => Promise<void>;
  /** Paths besides the binaries that must exist for the build to be up to date. */
  artifacts?: readonly string[];
  /** Runs after the binaries are in place (writes `artifacts`). */
  after?: () => Promise<void>;
}

/** What to install when Go is missing. */
export const NEED_GO = "Go 1.26 with access to the Go module proxy is needed";

/** Environment for every `go` invocation: local toolchain, static, reproducible paths. */
export function goEnv(): Record<string, string> {
  return {
    GOTOOLCHAIN: "local",
    CGO_ENABLED: "0",
    GOFLAGS: "-trimpath -buildvcs=false -mod=readonly",
  };
}

/** Runs `go` (or another command) in `cwd` with {@link goEnv}; returns stdout, throws with stderr. */
export async function runGo(
  args: string[],
  cwd: string,
  cmd = "go",
): Promise<string> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(cmd, { args, cwd, env: goEnv(), stdin: "null" }).output();
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    throw new Error(
      cmd === "go" ? `no "go" on PATH: ${NEED_GO}` : `cannot run ${cmd}: ${(e as Error).message}`,
    );
  }
  const dec = new TextDecoder();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} failed (cwd ${cwd}):\n${dec.decode(out.stderr)}`);
  }
  return dec.decode(out.stdout).trim();
}

/** `go version` output, or null when no Go toolchain is on PATH. */
export async function goVersion(cwd: string): Promise<string | null> {
  try {
    return await runGo(["version"], cwd);
  } catch {
    return null;
  }
}

/**
 * The module (path → version) of every non-standard package `build` compiles, as `go list -deps`
 * reads them with its tags; a module a `replace` points elsewhere has the replacement as its
 * version (`=> path version`: that is what is compiled). The build's `flags` are left aside: the
 * one build that has them (KEDA's `-modfile`) reads its own go.mod plus a replace of KEDA itself.
 */
export async function buildModules(build: GoBuild): Promise<Map<string, string>> {
  const tags = build.tags?.length ? ["-tags", build.tags.join(",")] : [];
  const out = await runGo([
    "list",
    ...tags,
    "-deps",
    "-f",
    "{{if not .Standard}}{{with .Module}}{{.Path}}\t{{with .Replace}}=> {{.Path}} {{.Version}}{{else}}{{.Version}}{{end}}{{end}}{{end}}",
    ...build.packages,
  ], build.dir);
  const modules = new Map<string, string>();
  for (const line of out.split("\n")) {
    const [path, version] = line.split("\t");
    if (path && version) modules.set(path, version.trimEnd());
  }
  return modules;
}

/**
 * The modules that two or more of `builds` compile at different versions: module → the version
 * each build uses. Empty when every module they share is at one version, which lets Go's build
 * cache compile each package they share once.
 */
export function versionDisagreements(
  builds: readonly { name: string; modules: ReadonlyMap<string, string> }[],
): Map<string, Record<string, string>> {
  const out = new Map<string, Record<string, string>>();
  for (const b of builds) {
    for (const [path] of b.modules) {
      if (out.has(path)) continue;
      const users = builds.filter((o) => o.modules.has(path));
      const versions = new Set(users.map((o) => o.modules.get(path)));
      if (versions.size > 1) {
        out.set(path, Object.fromEntries(users.map((o) => [o.name, o.modules.get(path)!])));
      }
    }
  }
  return out;
}

/** The hash of a build's inputs. */
export function inputsHash(build: GoBuild): Promise<string> {
  return hashFiles(build.dir, build.inputs, build.extra);
}

/** The builds whose binaries live in one cache directory, with its stamp file and lock. */
export class GoCache {
  constructor(readonly binDir: string) {}

  /** Path of a binary in the cache. */
  path(output: string): string {
    return join(this.binDir, output);
  }

  get #stampFile(): string {
    return join(this.binDir, "stamp.json");
  }

  async #upToDate(build: GoBuild, stamp: Stamp, go: string | null): Promise<boolean> {
    const s = stamp[build.name];
    if (!s || s.inputs !== await inputsHash(build)) return false;
    if (go !== null && s.go !== go) return false;
    for (const o of [...build.outputs.map((o) => this.path(o)), ...build.artifacts ?? []]) {
      if (!await exists(o)) return false;
    }
    return true;
  }

  /** Names of the builds that need building; `goAvailable` says whether building is possible. */
  async status(builds: readonly GoBuild[]): Promise<{ stale: string[]; goAvailable: boolean }> {
    const go = await goVersion(builds[0]?.dir ?? ".");
    const stamp = await readStamp(this.#stampFile);
    const stale: string[] = [];
    for (const b of builds) if (!await this.#upToDate(b, stamp, go)) stale.push(b.name);
    return { stale, goAvailable: go !== null };
  }

  async #build(build: GoBuild, log: (msg: string) => void): Promise<void> {
    const tmp = await Deno.makeTempDir({ dir: this.binDir, prefix: `.build-${build.name}-` });
    try {
      const what = `building ${build.label ?? build.name}: ${build.outputs.join(", ")}`;
      await step(what, log, async () => {
        const out = build.outputs.length === 1 ? join(tmp, build.outputs[0]) : tmp + "/";
        const tags = build.tags?.length ? ["-tags", build.tags.join(",")] : [];
        await build.before?.();
        await runGo(
          [
            "build",
            ...tags,
            ...build.flags ?? [],
            "-ldflags",
            build.ldflags,
            "-o",
            out,
            ...build.packages,
          ],
          build.dir,
        );
        for (const o of build.outputs) await Deno.rename(join(tmp, o), this.path(o));
        await build.after?.();
      }, { done: `built ${build.name}` });
    } finally {
      await Deno.remove(tmp, { recursive: true });
    }
  }

  /**
   * Builds whatever of `builds` is missing or stale. Safe to call concurrently from several
   * processes (a lock directory in the cache). Throws a clear error when there is no Go.
   */
  async ensure(builds: readonly GoBuild[], log: (msg: string) => void): Promise<boolean> {
    await Deno.mkdir(this.binDir, { recursive: true });
    const first = await this.status(builds);
    if (first.stale.length === 0) return false;
    if (!first.goAvailable) {
      throw new Error(
        `cannot build ${
          first.stale.join(", ")
        }: no "go" on PATH (Go 1.26 with the Go module proxy is needed)`,
      );
    }
    await withLock(join(this.binDir, ".lock"), async () => {
      const go = await goVersion(builds[0].dir);
      for (const b of builds) {
        if (await this.#upToDate(b, await readStamp(this.#stampFile), go)) continue;
        await this.#build(b, log);
        await writeStamp(this.#stampFile, b.name, { inputs: await inputsHash(b), go: go ?? "" });
      }
    }, log);
    return true;
  }
}
