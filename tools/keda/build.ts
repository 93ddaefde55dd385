/**
 * KEDA's three programs built from its Go module (`go/`: a wrapper requiring
 * github.com/kedacore/keda/v2 with KEDA's own replace directives): the operator
 * (`cmd/operator` → `keda`), the metrics API server (`cmd/adapter` → `keda-adapter`) and the
 * admission webhooks (`cmd/webhooks` → `keda-admission-webhooks`), the names KEDA's Makefile
 * gives them. Static (CGO_ENABLED=0), with the version variables KEDA's Makefile sets and the
 * time zone database embedded (see {@link KEDA_TAGS}), through
 * {@link GoCache}: a build is a no-op when its stamp matches.
 */
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type GoBuild, GoCache, goEnv } from "../gobuild.ts";
import { REPO_ROOT } from "../cluster/paths.ts";

/** Directory of the wrapper module. */
export const KEDA_GO_DIR: string = resolve(
  import.meta.dirname ?? fileURLToPath(new URL(".", import.meta.url)),
  "go",
);
/** Where the binaries and their stamp go. */
export const KEDA_BIN_DIR: string = join(REPO_ROOT, ".cache", "keda", "bin");
/** KEDA's module path. */
export const KEDA_MODULE = "github.com/kedacore/keda/v2";

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
 * `timetzdata` embeds Go's copy of the time zone database: KEDA's images are distroless/static,
 * which has /usr/share/zoneinfo, the project's runtime base has not, and KEDA's cron scaler loads
 * the ScaledObject's `timezone` (without it: "unknown time zone Etc/UTC").
 */
export const KEDA_TAGS: readonly string[] = ["timetzdata"];

/** One build per program, so each shows its own progress and time. */
export async function kedaBuilds(): Promise<GoBuild[]> {
  const version = await kedaVersion();
  const ldflags = kedaLdflags(version);
  return Object.values(KEDA_PROGRAMS).map(({ binary, pkg }) => ({
    name: binary,
    label: `${binary} (KEDA ${version} ${pkg.slice(KEDA_MODULE.length + 1)})`,
    dir: KEDA_GO_DIR,
    inputs: ["go.mod", "go.sum", "tools.go"],
    extra: [[pkg, ldflags, goEnv(), KEDA_TAGS]],
    packages: [pkg],
    outputs: [binary],
    ldflags,
    tags: KEDA_TAGS,
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
