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

async function readOrUndefined(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
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

/** The files of `files` that are missing or differ on disk, in the order given. */
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
 * none is stale. A file already as generated is never touched.
 */
export async function checkOrWrite(
  files: readonly GeneratedFile[],
  check: boolean,
): Promise<StaleFile[]> {
  const stale = await staleFiles(files);
  if (check) return stale;
  const text = new Map(files.map((f) => [f.path, f.text]));
  for (const { path } of stale) {
    await Deno.mkdir(dirname(path), { recursive: true });
    await Deno.writeTextFile(path, text.get(path)!);
  }
  return stale;
}
