/**
 * Builds the istio-check binary (the Go module beside this file) into a cache directory, only
 * when its go.mod, go.sum, Go sources, build settings or the Go toolchain changed: the same
 * stamp, lock and Go environment as the control-plane binaries (tools/cluster/build.ts).
 *
 *   ./deno run -A tools/istio-check/build.ts   # prints the binary's path
 *
 * @module
 */
import { join, resolve } from "node:path";
import { type GoBuild, GoCache, goEnv, goVersion } from "../gobuild.ts";

/** The Go module's directory (`tools/istio-check`). */
export const MODULE_DIR: string = resolve(import.meta.dirname ?? ".");

/** Cache directory of the binary: `ISTIO_CHECK_CACHE_DIR` or `<repo>/.cache/istio-check`. */
export function cacheDir(): string {
  return Deno.env.get("ISTIO_CHECK_CACHE_DIR") ??
    resolve(MODULE_DIR, "..", "..", ".cache", "istio-check");
}

const NAME = "istio-check";
/** istiod's discovery server, from the same pinned `istio.io/istio` (go.mod's `tool` line). */
export const PILOT_DISCOVERY = "pilot-discovery";
/** istiod's main package: built with istio-check in one `go build`, sharing every compiled package. */
const PILOT_PACKAGE = "istio.io/istio/pilot/cmd/pilot-discovery";
/** No symbol table or DWARF: the binary is only run, never debugged, and half the size. */
const LDFLAGS = "-s -w";

/** What to install when there is no Go: the module's own `go` line names the minimum. */
export const GO_MISSING =
  "istio-check needs a Go toolchain (Go 1.26 or newer, https://go.dev/dl/) on PATH to build " +
  "tools/istio-check against istio.io/istio; install Go and run the tests again";

/** The proxy stand-in, a test harness (docs/proxy-standin.md): the package and its binary. */
export const PROXY_STANDIN = "proxy-standin";
/** Folders of the module whose Go sources (tests left out) the binaries are built from. */
const SOURCE_DIRS = [PROXY_STANDIN, "internal"];

async function goSources(dir: string, prefix: string, tests: boolean): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (e.isDirectory && prefix !== "") {
      out.push(...await goSources(join(dir, e.name), `${prefix}${e.name}/`, tests));
    } else if (e.isFile && e.name.endsWith(".go") && (tests || !e.name.endsWith("_test.go"))) {
      out.push(prefix + e.name);
    }
  }
  return out;
}

/** The module as a build of the binary cache: go.mod, go.sum and every Go source are inputs. */
export async function istioCheckBuild(): Promise<GoBuild> {
  const sources = await goSources(MODULE_DIR, "", true);
  for (const d of SOURCE_DIRS) {
    sources.push(...await goSources(join(MODULE_DIR, d), `${d}/`, false));
  }
  return {
    name: NAME,
    label: `${NAME}, ${PILOT_DISCOVERY} and ${PROXY_STANDIN} (istio.io/istio)`,
    dir: MODULE_DIR,
    inputs: ["go.mod", "go.sum", ...sources.sort()],
    extra: [goEnv(), LDFLAGS],
    packages: [".", PILOT_PACKAGE, `./${PROXY_STANDIN}`],
    outputs: [NAME, PILOT_DISCOVERY, PROXY_STANDIN],
    ldflags: LDFLAGS,
  };
}

/**
 * The path of an up-to-date istio-check binary, building it first when needed (Go's own GOCACHE
 * and GOMODCACHE are used). Safe to call from several processes at once. Throws GO_MISSING when a
 * build is needed and there is no Go.
 */
export async function ensureIstioCheck(log: (msg: string) => void = () => {}): Promise<string> {
  const cache = new GoCache(cacheDir());
  const build = await istioCheckBuild();
  const { stale } = await cache.status([build]);
  if (stale.length > 0 && await goVersion(MODULE_DIR) === null) throw new Error(GO_MISSING);
  await cache.ensure([build], log);
  return cache.path(NAME);
}

/**
 * The path of an up-to-date `pilot-discovery` (istiod) binary: the same build as
 * {@link ensureIstioCheck}, which builds both.
 */
export async function ensurePilotDiscovery(log: (msg: string) => void = () => {}): Promise<string> {
  await ensureIstioCheck(log);
  return new GoCache(cacheDir()).path(PILOT_DISCOVERY);
}

/**
 * The path of an up-to-date `proxy-standin` binary (xDS clients standing in for Envoy, a test
 * harness): the same build as {@link ensureIstioCheck}, which builds it too.
 */
export async function ensureProxyStandin(log: (msg: string) => void = () => {}): Promise<string> {
  await ensureIstioCheck(log);
  return new GoCache(cacheDir()).path(PROXY_STANDIN);
}

if (import.meta.main) {
  try {
    console.log(await ensureIstioCheck((m) => console.error(`[istio-check] ${m}`)));
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    Deno.exit(1);
  }
}
