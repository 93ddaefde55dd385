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
import { goEnv, goVersion } from "../cluster/build.ts";
import { withLock } from "../cluster/lock.ts";
import { exists } from "../cluster/paths.ts";
import { inputsHash, readStamp, writeStamp } from "../cluster/stamp.ts";

/** The Go module's directory (`tools/istio-check`). */
export const MODULE_DIR: string = resolve(import.meta.dirname ?? ".");

/** Cache directory of the binary: `ISTIO_CHECK_CACHE_DIR` or `<repo>/.cache/istio-check`. */
export function cacheDir(): string {
  return Deno.env.get("ISTIO_CHECK_CACHE_DIR") ??
    resolve(MODULE_DIR, "..", "..", ".cache", "istio-check");
}

const NAME = "istio-check";
/** No symbol table or DWARF: the binary is only run, never debugged, and half the size. */
const LDFLAGS = "-s -w";

/** What to install when there is no Go: the module's own `go` line names the minimum. */
export const GO_MISSING =
  "istio-check needs a Go toolchain (Go 1.26 or newer, https://go.dev/dl/) on PATH to build " +
  "tools/istio-check against istio.io/istio; install Go and run the tests again";

async function inputs(): Promise<string> {
  const files: string[] = ["go.mod", "go.sum"];
  const sources: string[] = [];
  for await (const e of Deno.readDir(MODULE_DIR)) {
    if (e.isFile && e.name.endsWith(".go")) sources.push(e.name);
  }
  return inputsHash(MODULE_DIR, [...files, ...sources.sort()], [goEnv(), LDFLAGS]);
}

/** True when the cached binary was built from the current inputs by `go` (any go when null). */
async function upToDate(dir: string, go: string | null): Promise<boolean> {
  const s = (await readStamp(join(dir, "stamp.json")))[NAME];
  return s !== undefined && s.inputs === await inputs() && (go === null || s.go === go) &&
    await exists(join(dir, NAME));
}

/**
 * The path of an up-to-date istio-check binary, building it first when needed (a few minutes
 * with a cold Go build cache; Go's own GOCACHE and GOMODCACHE are used). Safe to call from
 * several processes at once. Throws GO_MISSING when a build is needed and there is no Go.
 */
export async function ensureIstioCheck(log: (msg: string) => void = () => {}): Promise<string> {
  const dir = cacheDir();
  const bin = join(dir, NAME);
  const go = await goVersion();
  if (await upToDate(dir, go)) return bin;
  if (go === null) throw new Error(GO_MISSING);
  await Deno.mkdir(dir, { recursive: true });
  await withLock(join(dir, ".lock"), async () => {
    if (await upToDate(dir, go)) return;
    const started = performance.now();
    log(`building ${NAME} (${go}); the first build compiles istio.io/istio and takes minutes`);
    const tmp = join(dir, `.${NAME}-${Deno.pid}`);
    const out = await new Deno.Command("go", {
      args: ["build", "-ldflags", LDFLAGS, "-o", tmp, "."],
      cwd: MODULE_DIR,
      env: goEnv(),
      stdin: "null",
    }).output();
    if (!out.success) {
      await Deno.remove(tmp).catch(() => {});
      throw new Error(`go build in ${MODULE_DIR} failed:\n${new TextDecoder().decode(out.stderr)}`);
    }
    await Deno.rename(tmp, bin);
    await writeStamp(join(dir, "stamp.json"), NAME, { inputs: await inputs(), go });
    log(`built ${NAME} in ${((performance.now() - started) / 1000).toFixed(1)}s`);
  }, log);
  return bin;
}

if (import.meta.main) {
  try {
    console.log(await ensureIstioCheck((m) => console.error(`[istio-check] ${m}`)));
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    Deno.exit(1);
  }
}
