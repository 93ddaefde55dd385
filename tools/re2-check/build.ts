/**
 * Builds re2-check (re2_check.cc beside this file) against Debian's libre2 with g++, into a cache
 * directory, only when its source, the compiler or the library's header changed (their hash, kept
 * beside it).
 *
 *   ./deno run -A tools/re2-check/build.ts   # prints the binary's path
 *
 * @module
 */
import { join, resolve } from "node:path";
import { inputsHash } from "../stamp.ts";
import { type Log, step } from "../progress.ts";

const MODULE_DIR = resolve(import.meta.dirname ?? ".");
const SOURCE = "re2_check.cc";
/** RE2's header as Debian's libre2-dev installs it (its library beside it). */
const HEADER = "/usr/include/re2/re2.h";
/** What ensureRe2Check says when g++ or RE2 is missing. */
export const RE2_MISSING =
  "re2-check needs g++ and RE2's headers and library: apt-get install g++ libre2-dev " +
  "(.ci/packages installs them)";

/** Cache directory of the binary: `<repo>/.cache/re2-check`. */
export function re2CacheDir(): string {
  return resolve(MODULE_DIR, "..", "..", ".cache", "re2-check");
}

/** The binary's path (built or not). */
export function re2CheckPath(): string {
  return join(re2CacheDir(), "re2-check");
}

/** Runs `cmd` and returns its stdout; throws with its stderr when it fails. */
async function output(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/** Builds re2-check when its inputs changed; returns its path. Throws naming what is missing. */
export async function ensureRe2Check(log: Log = () => {}): Promise<string> {
  let compiler: string;
  let header: string;
  try {
    compiler = (await output("g++", ["--version"])).split("\n")[0];
    header = await Deno.readTextFile(HEADER);
  } catch {
    throw new Error(RE2_MISSING);
  }
  const dir = re2CacheDir();
  const bin = re2CheckPath();
  const stampFile = join(dir, "inputs.sha256");
  const inputs = await inputsHash(MODULE_DIR, [SOURCE], [compiler, header]);
  const built = await Deno.readTextFile(stampFile).catch(() => "");
  const present = await Deno.stat(bin).then(() => true, () => false);
  if (present && built === inputs) {
    log("re2-check is up to date");
    return bin;
  }
  await Deno.mkdir(dir, { recursive: true });
  await step("compiling re2-check against Debian's libre2 (g++)", log, async () => {
    await output("g++", [
      "-O1",
      "-std=c++17",
      "-o",
      bin,
      join(MODULE_DIR, SOURCE),
      "-lre2",
      "-pthread",
    ]);
  }, { done: "re2-check built" });
  await Deno.writeTextFile(stampFile, inputs);
  return bin;
}

if (import.meta.main) console.log(await ensureRe2Check((m) => console.error(m)));
