/**
 * Check or write generated files, the one way every generator does it (`crds`, `deploy`, and
 * tools/crdgen's `module-crds`): compare each file's generated text with the disk, and with
 * `--check` only say which differ and why, else write those (and only those).
 */
import { dirname } from "node:path";

/** A file a generator owns: where it goes and what it must hold. */
export interface GeneratedFile {
  path: string;
  text: string;
}

/** A generated file the disk does not hold as generated, and why: missing, or its first differing line. */
export interface StaleFile {
  path: string;
  why: string;
}

/** True for what Deno's file system calls throw: not found, permission denied, a folder, ... */
export function isFsError(err: unknown): err is Error {
  return Object.values(Deno.errors).some((E) => err instanceof E);
}

/** A generated file (or its folder) that could not be read or written, in one line. */
export class GeneratedFileError extends Error {}

/** `op()`, a file system error of it turned into a GeneratedFileError saying `what`. */
async function fsStep<T>(what: string, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (err) {
    if (!isFsError(err)) throw err;
    throw new GeneratedFileError(`${what}: ${err.message.split("\n")[0]}`);
  }
}

async function readOrUndefined(path: string): Promise<string | undefined> {
  return await fsStep(`cannot read ${path}`, async () => {
    try {
      return await Deno.readTextFile(path);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return undefined;
      throw err;
    }
  });
}

/** The first line where `found` differs from `expected`, quoted both ways. */
function firstDifference(expected: string, found: string): string {
  const want = expected.split("\n");
  const got = found.split("\n");
  for (let i = 0; i < Math.max(want.length, got.length); i++) {
    if (want[i] !== got[i]) {
      return `line ${i + 1} differs: expected ${
        JSON.stringify(want[i] ?? "(end of file)")
      }, found ${JSON.stringify(got[i] ?? "(end of file)")}`;
    }
  }
  return "differs";
}

/**
 * The files of `files` that are missing or differ on disk, in the order given; a
 * GeneratedFileError when one cannot be read.
 */
export async function staleFiles(files: readonly GeneratedFile[]): Promise<StaleFile[]> {
  const stale: StaleFile[] = [];
  for (const { path, text } of files) {
    const found = await readOrUndefined(path);
    if (found === undefined) stale.push({ path, why: "missing" });
    else if (found !== text) stale.push({ path, why: firstDifference(text, found) });
  }
  return stale;
}

/**
 * The stale files of `files`; unless `check`, also written (their folders made), so that afterwards
 * none is stale. A file already as generated is never touched. A GeneratedFileError when one cannot
 * be read or written.
 */
export async function checkOrWrite(
  files: readonly GeneratedFile[],
  check: boolean,
): Promise<StaleFile[]> {
  const stale = await staleFiles(files);
  if (check) return stale;
  const text = new Map(files.map((f) => [f.path, f.text]));
  for (const { path } of stale) {
    await fsStep(`cannot write ${path}`, async () => {
      await Deno.mkdir(dirname(path), { recursive: true });
      await Deno.writeTextFile(path, text.get(path)!);
    });
  }
  return stale;
}
