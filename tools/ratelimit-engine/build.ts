/**
 * Builds the global rate limit engine, envoyproxy/ratelimit (`ratelimit`, its
 * `src/service_cmd`, pinned by the `tool` line of the Go module beside this file), and the module's
 * two test harnesses (`ratelimit-test-client`, `ratelimit-test-xds`) into `.cache/ratelimit-engine/`
 * with the stamp, lock and Go environment of tools/gobuild.ts: two `go build`s, the engine first,
 * the harnesses after it sharing its compiled packages; each a no-op when its stamp matches.
 *
 *   ./deno task build --only=ratelimit-engine
 *
 * @module
 */
import { join, resolve } from "node:path";
import { type GoBuild, GoCache, goEnv } from "../gobuild.ts";
import type { Log } from "../progress.ts";

/** The Go module's directory (`tools/ratelimit-engine`). */
export const MODULE_DIR: string = resolve(import.meta.dirname ?? ".");
/** The engine's module and its main package (the upstream image's `/bin/ratelimit`). */
export const ENGINE_MODULE = "github.com/envoyproxy/ratelimit";
const ENGINE_PACKAGE = `${ENGINE_MODULE}/src/service_cmd`;
/** The binaries: the engine and the two test harnesses (docs/global-engine.md). */
export const ENGINE = "ratelimit";
export const TEST_CLIENT = "ratelimit-test-client";
export const TEST_XDS = "ratelimit-test-xds";
/** No symbol table or DWARF: run, never debugged, smaller. */
const LDFLAGS = "-s -w";

/** Cache directory: `RATELIMIT_ENGINE_CACHE_DIR` or `<repo>/.cache/ratelimit-engine`. */
export function cacheDir(): string {
  return Deno.env.get("RATELIMIT_ENGINE_CACHE_DIR") ??
    resolve(MODULE_DIR, "..", "..", ".cache", "ratelimit-engine");
}

/** The engine's version, as go.mod pins it. */
export async function engineVersion(): Promise<string> {
  const gomod = await Deno.readTextFile(join(MODULE_DIR, "go.mod"));
  const m = /^\s*github\.com\/envoyproxy\/ratelimit (v\S+)/m.exec(gomod);
  if (!m) throw new Error(`${MODULE_DIR}/go.mod requires no ${ENGINE_MODULE}`);
  return m[1];
}

async function harnessSources(): Promise<string[]> {
  const out: string[] = [];
  for (const dir of [TEST_CLIENT, TEST_XDS]) {
    for await (const e of Deno.readDir(join(MODULE_DIR, dir))) {
      if (e.isFile && e.name.endsWith(".go") && !e.name.endsWith("_test.go")) {
        out.push(`${dir}/${e.name}`);
      }
    }
  }
  return out.sort();
}

/** The two builds: the engine (inputs: go.mod, go.sum) and the harnesses (and their sources). */
export async function ratelimitEngineBuilds(): Promise<GoBuild[]> {
  const version = await engineVersion();
  return [{
    name: ENGINE,
    label: `${ENGINE} (${ENGINE_MODULE} ${version})`,
    dir: MODULE_DIR,
    inputs: ["go.mod", "go.sum"],
    extra: [goEnv(), LDFLAGS, ENGINE_PACKAGE],
    packages: [ENGINE_PACKAGE],
    outputs: [ENGINE],
    ldflags: LDFLAGS,
  }, {
    name: "harnesses",
    label: `${TEST_CLIENT} and ${TEST_XDS} (test harnesses, go-control-plane)`,
    dir: MODULE_DIR,
    inputs: ["go.mod", "go.sum", ...await harnessSources()],
    extra: [goEnv(), LDFLAGS],
    packages: [`./${TEST_CLIENT}`, `./${TEST_XDS}`],
    outputs: [TEST_CLIENT, TEST_XDS],
    ldflags: LDFLAGS,
  }];
}

/** Paths of the built binaries. */
export interface RatelimitEngineBinaries {
  engine: string;
  testClient: string;
  testXds: string;
}

/**
 * The paths of up-to-date binaries, building what is missing or stale first (Go's own GOCACHE
 * and GOMODCACHE are used). Safe to call from several processes at once.
 */
export async function ensureRatelimitEngine(log: Log = () => {}): Promise<RatelimitEngineBinaries> {
  const cache = new GoCache(cacheDir());
  if (!await cache.ensure(await ratelimitEngineBuilds(), log)) {
    log("ratelimit engine and harnesses up to date");
  }
  return {
    engine: cache.path(ENGINE),
    testClient: cache.path(TEST_CLIENT),
    testXds: cache.path(TEST_XDS),
  };
}

if (import.meta.main) {
  try {
    console.log(JSON.stringify(await ensureRatelimitEngine((m) => console.error(`[build] ${m}`))));
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    Deno.exit(1);
  }
}
