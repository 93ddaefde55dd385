/**
 * Build stamps: a hash of a build's inputs (file contents and settings) recorded beside its
 * outputs, so a build runs again only when an input or the Go toolchain changed. Used for the
 * Go builds of tools/gobuild.ts (control plane, istio-check, crdgen).
 */
import { createHash } from "node:crypto";
import { join } from "node:path";

/** Per-build entries: the inputs' hash and the `go version` that built them. */
export type Stamp = Record<string, { inputs: string; go: string }>;

/** SHA-256 over the files of `dir` (name and content, in the given order) and `settings`. */
export async function inputsHash(
  dir: string,
  files: readonly string[],
  settings: readonly unknown[],
): Promise<string> {
  const h = createHash("sha256");
  for (const f of files) h.update(f + "\0" + await Deno.readTextFile(join(dir, f)) + "\0");
  for (const s of settings) h.update(JSON.stringify(s));
  return h.digest("hex");
}

/** The stamp in `file`, or an empty one when it is missing or unreadable. */
export async function readStamp(file: string): Promise<Stamp> {
  try {
    return JSON.parse(await Deno.readTextFile(file)) as Stamp;
  } catch {
    return {};
  }
}

/** Records `entry` under `name` in the stamp `file`, keeping the other entries. */
export async function writeStamp(file: string, name: string, entry: Stamp[string]): Promise<void> {
  const stamp = await readStamp(file);
  stamp[name] = entry;
  await Deno.writeTextFile(file, JSON.stringify(stamp, null, 2) + "\n");
}
