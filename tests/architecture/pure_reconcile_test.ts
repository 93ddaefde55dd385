/**
 * The reconcile layer is pure: no import at run time, no I/O, no clock, no chance. What it needs
 * of the world (the modules' upstream CRDs among it) comes in with its input.
 */
import assert from "node:assert/strict";
import { join, relative } from "node:path";

const ROOT = join(import.meta.dirname ?? ".", "..", "..");

/** What a pure module never calls, and why. */
const EFFECTS: readonly [RegExp, string][] = [
  [/\bimport\s*\(/, "a dynamic import"],
  [/\bDeno\./, "the Deno namespace (files, env, processes)"],
  [/\bfetch\s*\(/, "the network"],
  [/\b(De)?[Cc]ompressionStream\b/, "a stream"],
  [/\bDate\.now\s*\(|\bnew Date\s*\(\s*\)/, "the clock"],
  [/\bMath\.random\s*\(/, "chance"],
  [/\bset(Timeout|Interval)\s*\(/, "timers"],
];

/** The effects a source text calls, by description. */
function effectsIn(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  return EFFECTS.filter(([re]) => re.test(code)).map(([, what]) => what);
}

async function files(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    if (e.isDirectory) out.push(...await files(path));
    else if (e.name.endsWith(".ts")) out.push(path);
  }
  return out;
}

Deno.test("src/reconcile calls no effect: no dynamic import, I/O, clock, chance or timer", async () => {
  const found: string[] = [];
  for (const f of await files(join(ROOT, "src", "reconcile"))) {
    for (const what of effectsIn(await Deno.readTextFile(f))) {
      found.push(`${relative(ROOT, f)}: ${what}`);
    }
  }
  assert.deepEqual(found, []);
});

Deno.test("the effect check finds what it looks for, and not in comments", () => {
  assert.deepEqual(effectsIn('const m = await import("./crds.ts");'), ["a dynamic import"]);
  assert.deepEqual(
    effectsIn("new Blob([b]).stream().pipeThrough(new DecompressionStream('gzip'))"),
    [
      "a stream",
    ],
  );
  assert.deepEqual(effectsIn("const t = Date.now();"), ["the clock"]);
  assert.deepEqual(effectsIn("// Date.now() is not called here\n/* nor import('x') */"), []);
});
