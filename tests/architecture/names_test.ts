/**
 * One name, one meaning: no exported name is declared by two files of src/ or sim/, so a reader
 * who meets a name knows which thing it is. `main` is exempt: each command's module exports its
 * entry point under that name, and the command table (src/cli/main.ts) names them by command.
 */
import assert from "node:assert/strict";
import { join, relative } from "node:path";

const ROOT = join(import.meta.dirname ?? ".", "..", "..");
const EXEMPT = new Set(["main"]);
const DECLARATION =
  /^export (?:declare )?(?:async )?(?:function\*?|class|abstract class|interface|type|const|let|enum)\s+([A-Za-z_$][\w$]*)/gm;

async function* tsFiles(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    if (e.isDirectory) yield* tsFiles(path);
    else if (e.name.endsWith(".ts")) yield path;
  }
}

/** Exported names declared by more than one file, with the files. */
export function twiceDeclared(sources: ReadonlyMap<string, string>): string[] {
  const by = new Map<string, string[]>();
  for (const [file, text] of sources) {
    for (const m of text.matchAll(DECLARATION)) by.set(m[1], [...(by.get(m[1]) ?? []), file]);
  }
  return [...by].filter(([name, files]) => files.length > 1 && !EXEMPT.has(name))
    .map(([name, files]) => `${name}: ${files.sort().join(", ")}`).sort();
}

Deno.test("names: no exported name is declared by two files of src/ or sim/", async () => {
  const sources = new Map<string, string>();
  for (const dir of ["src", "sim"]) {
    for await (const f of tsFiles(join(ROOT, dir))) {
      sources.set(relative(ROOT, f), await Deno.readTextFile(f));
    }
  }
  assert.ok(sources.size > 200, `only ${sources.size} files read`);
  assert.deepEqual(twiceDeclared(sources), []);
});

Deno.test("names: the check finds a type and a function of one name in two files", () => {
  const found = twiceDeclared(
    new Map([
      ["a.ts", "export type Outcome = string;\nexport function main() {}"],
      ["b.ts", "export interface Outcome {}\nexport function main() {}"],
    ]),
  );
  assert.deepEqual(found, ["Outcome: a.ts, b.ts"]);
});
