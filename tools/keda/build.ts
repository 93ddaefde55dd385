/**
 * KEDA's three programs built from its Go module (`go/`: a wrapper requiring
 * github.com/kedacore/keda/v2 with KEDA's own replace directives): the operator
 * (`cmd/operator` → `keda`), the metrics API server (`cmd/adapter` → `keda-adapter`) and the
 * admission webhooks (`cmd/webhooks` → `keda-admission-webhooks`), the names KEDA's Makefile
 * gives them. Static (CGO_ENABLED=0), with the version variables KEDA's Makefile sets, from
 * KEDA's module with its scalers trimmed to the triggers the tests use (tools/keda/trim.ts),
 * through {@link GoCache}: a build is a no-op when its stamp matches. No build tags: the time
 * zone database KEDA's cron scaler reads is the runtime base's (Debian's tzdata, as distroless),
 * so the packages KEDA shares with the CRD generator's build (the same k8s.io versions) are
 * compiled once.
 */
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type GoBuild, GoCache, goEnv, runGo } from "../gobuild.ts";
import { REPO_ROOT } from "../cluster/paths.ts";
import { writeFileAtomic } from "../files.ts";
import { KEDA_TRIGGERS, trimmedCopy, trimmedGoMod } from "./trim.ts";

/** Directory of the wrapper module. */
export const KEDA_GO_DIR: string = resolve(
  import.meta.dirname ?? fileURLToPath(new URL(".", import.meta.url)),
  "go",
);
/** Where the binaries and their stamp go. */
export const KEDA_BIN_DIR: string = join(REPO_ROOT, ".cache", "keda", "bin");
/** KEDA's module path. */
export const KEDA_MODULE = "github.com/kedacore/keda/v2";
/** KEDA's module with its scalers trimmed to {@link KEDA_TRIGGERS} (tools/keda/trim.ts). */
export const KEDA_SRC_DIR: string = join(REPO_ROOT, ".cache", "keda", "src");
/** The go.mod the build reads: the wrapper's, with KEDA replaced by {@link KEDA_SRC_DIR}. */
export const KEDA_MODFILE: string = join(REPO_ROOT, ".cache", "keda", "keda.mod");

/** The three programs: the binary's name and its package in KEDA's module. */
export const KEDA_PROGRAMS = {
  operator: { binary: "keda", pkg: `${KEDA_MODULE}/cmd/operator` },
  metricServer: { binary: "keda-adapter", pkg: `${KEDA_MODULE}/cmd/adapter` },
  admissionWebhook: { binary: "keda-admission-webhooks", pkg: `${KEDA_MODULE}/cmd/webhooks` },
} as const;

/** One of the three programs. */
export type KedaProgram = keyof typeof KEDA_PROGRAMS;

const cache = new GoCache(KEDA_BIN_DIR);

/** The version of KEDA the wrapper module requires (its go.mod). */
export async function kedaVersion(): Promise<string> {
  const gomod = await Deno.readTextFile(join(KEDA_GO_DIR, "go.mod"));
  const m = new RegExp(`^require ${KEDA_MODULE.replaceAll(".", "\\.")} (v\\S+)$`, "m").exec(gomod);
  if (!m) throw new Error(`${KEDA_GO_DIR}/go.mod requires no ${KEDA_MODULE}`);
  return m[1];
}

/** KEDA's Makefile's -X flags (version, commit: the tag, as the module has no git), stripped. */
export function kedaLdflags(version: string): string {
  const v = `${KEDA_MODULE}/version`;
  return `-s -w -X=${v}.GitCommit=${version} -X=${v}.Version=${version.replace(/^v/, "")}`;
}

/**
 * Makes the trimmed copy of KEDA's module (once per version and trigger list) and the go.mod and
 * go.sum that point the build at it.
 */
export async function prepareTrimmedKeda(): Promise<void> {
  const version = await kedaVersion();
  const info = JSON.parse(
    await runGo(["mod", "download", "-json", `${KEDA_MODULE}@${version}`], KEDA_GO_DIR),
  ) as { Dir?: string; Error?: string };
  if (!info.Dir) throw new Error(info.Error ?? `no ${KEDA_MODULE}@${version} module`);
  await trimmedCopy(info.Dir, KEDA_SRC_DIR);
  const gomod = await Deno.readTextFile(join(KEDA_GO_DIR, "go.mod"));
  await writeFileAtomic(KEDA_MODFILE, trimmedGoMod(gomod, KEDA_MODULE, KEDA_SRC_DIR));
  await writeFileAtomic(
    KEDA_MODFILE.replace(/\.mod$/, ".sum"),
    await Deno.readTextFile(join(KEDA_GO_DIR, "go.sum")),
  );
}

/**
 * One build per program, so each shows its own progress and time; each reads KEDA's module
 * trimmed to {@link KEDA_TRIGGERS} (tools/keda/trim.ts), which its stamp includes.
 */
export async function kedaBuilds(): Promise<GoBuild[]> {
  const version = await kedaVersion();
  const ldflags = kedaLdflags(version);
  return Object.values(KEDA_PROGRAMS).map(({ binary, pkg }) => ({
    name: binary,
    label: `${binary} (KEDA ${version} ${pkg.slice(KEDA_MODULE.length + 1)}, scalers: ${
      KEDA_TRIGGERS.join(", ")
    })`,
    dir: KEDA_GO_DIR,
    inputs: ["go.mod", "go.sum", "tools.go", "../trim.ts"],
    extra: [[pkg, ldflags, goEnv(), KEDA_TRIGGERS]],
    packages: [pkg],
    outputs: [binary],
    ldflags,
    flags: [`-modfile=${KEDA_MODFILE}`],
    before: prepareTrimmedKeda,
  }));
}

/** Paths of the built programs, by component. */
export type KedaBinaries = Record<KedaProgram, string>;

/** Builds what is missing or stale; returns the binaries' paths. */
export async function ensureKedaBuilt(log: (msg: string) => void): Promise<KedaBinaries> {
  if (!await cache.ensure(await kedaBuilds(), log)) log("KEDA binaries up to date");
  return {
    operator: cache.path(KEDA_PROGRAMS.operator.binary),
    metricServer: cache.path(KEDA_PROGRAMS.metricServer.binary),
    admissionWebhook: cache.path(KEDA_PROGRAMS.admissionWebhook.binary),
  };
}

/** Which builds are stale, and whether Go is there to build them. */
export async function kedaBuildStatus(): Promise<{ stale: string[]; goAvailable: boolean }> {
  return cache.status(await kedaBuilds());
}
