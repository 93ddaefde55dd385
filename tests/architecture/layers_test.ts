/**
 * Imports run one way (tests/architecture/layers.ts): computed from the real module graph of every
 * TypeScript file in the repository, as `deno info --json` resolves it.
 */
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import {
  cyclesOf,
  deepestChain,
  denoInfo,
  drawnLevels,
  edgesOf,
  layerOf,
  levelsOf,
  wrongWay,
} from "./layers.ts";

const ROOT = join(import.meta.dirname ?? ".", "..", "..");
const SKIP = /(^|\/)(node_modules|\.cache|\.git|coverage|dist|tmp)(\/|$)/;

async function tsFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    const rel = relative(ROOT, path);
    if (SKIP.test(rel)) continue;
    if (e.isDirectory) out.push(...await tsFiles(path));
    else if (e.isFile && e.name.endsWith(".ts")) out.push(rel);
  }
  return out;
}

/** The module graph of every file: one root module importing them all, given to `deno info`. */
async function repositoryGraph(): Promise<{ files: string[]; info: unknown }> {
  const files = (await tsFiles(ROOT)).sort();
  const dir = join(ROOT, ".cache", "layers");
  await Deno.mkdir(dir, { recursive: true });
  const entry = join(dir, "all.ts");
  await Deno.writeTextFile(
    entry,
    files.map((f) => `import ${JSON.stringify(pathToFileURL(join(ROOT, f)).href)};`).join("\n"),
  );
  return { files, info: await denoInfo(entry, ROOT) };
}

Deno.test("layers: every import runs one way, from the real module graph", async () => {
  const { files, info } = await repositoryGraph();
  const root = pathToFileURL(ROOT + "/").href;
  const edges = edgesOf(info as Parameters<typeof edgesOf>[0], root);
  assert.ok(edges.length > 500, `the graph has only ${edges.length} edges: not the real one`);
  const outside = files.filter((f) => !layerOf(f));
  assert.deepEqual(outside, [], "every file belongs to a layer");
  assert.deepEqual(wrongWay(edges), []);
  // Not even between two files of one folder: a cycle makes the order of evaluation matter.
  assert.deepEqual(cyclesOf(edges), []);
  // A folder with a front (`mod.ts`) is entered only through it; tests may reach inside.
  const fronts = ["src/runtime/cache/", "src/runtime/"];
  const behind = edges.filter((e) =>
    !e.from.startsWith(".cache/") && !e.from.startsWith("tests/") &&
    fronts.some((f) => e.to.startsWith(f) && !e.from.startsWith(f) && e.to !== `${f}mod.ts`)
  );
  assert.deepEqual(behind.map((e) => `${e.from} -> ${e.to}`), []);
  // A runtime a newcomer can follow: no chain of imports in it longer than six files.
  const chain = deepestChain(edges, "src/runtime/");
  assert.ok(chain.length >= 4, `a chain of ${chain.length}: not the runtime's graph`);
  assert.ok(chain.length <= 6, `src/runtime is ${chain.length} levels deep: ${chain.join(" -> ")}`);
  // docs/architecture.md draws each runtime file at its level: the drawing is the graph's.
  const doc = await Deno.readTextFile(join(ROOT, "docs", "architecture.md"));
  const section = doc.split("## Inside the runtime")[1] ?? "";
  const block = section.split("```")[1] ?? "";
  assert.deepEqual(
    Object.fromEntries([...drawnLevels(block)].sort()),
    Object.fromEntries([...levelsOf(edges, "src/runtime/")].sort()),
    "docs/architecture.md's runtime levels differ from the module graph",
  );
});

Deno.test("levels: computed from the graph and read from a drawing", () => {
  const edges = [
    { from: "r/mod.ts", to: "r/a.ts" },
    { from: "r/a.ts", to: "r/b.ts" },
    { from: "r/mod.ts", to: "r/b.ts" },
    { from: "r/b.ts", to: "api/x.ts" },
  ];
  assert.deepEqual([...levelsOf(edges, "r/")], [["a.ts", 2], ["b.ts", 1], ["mod.ts", 3]]);
  const drawn = drawnLevels("  3  mod.ts   the front\n  2  a.ts\n  1  b.ts, c.ts\n     d/e.ts");
  assert.deepEqual([...drawn], [["mod.ts", 3], ["a.ts", 2], ["b.ts", 1], ["c.ts", 1], [
    "d/e.ts",
    1,
  ]]);
});

Deno.test("depth: the check finds the longest chain, type imports and all", () => {
  const edges = [
    { from: "src/runtime/mod.ts", to: "src/runtime/a.ts" },
    { from: "src/runtime/a.ts", to: "src/runtime/b.ts" },
    { from: "src/runtime/b.ts", to: "src/runtime/c.ts" },
    { from: "src/runtime/mod.ts", to: "src/runtime/c.ts" },
    { from: "src/runtime/c.ts", to: "src/api/object.ts" },
  ];
  assert.deepEqual(deepestChain(edges, "src/runtime/"), [
    "src/runtime/mod.ts",
    "src/runtime/a.ts",
    "src/runtime/b.ts",
    "src/runtime/c.ts",
  ]);
});

Deno.test("layers: the check finds an import that runs the wrong way", () => {
  const edges = [
    { from: "src/reconcile/plan.ts", to: "src/api/object.ts" },
    { from: "src/reconcile/plan.ts", to: "src/runtime/cluster.ts" },
    { from: "bench/cluster/env.ts", to: "tests/e2e/harness.ts" },
    { from: "src/api/resources.ts", to: "src/api/object.ts" },
  ];
  assert.deepEqual(wrongWay(edges), [
    "bench/cluster/env.ts -> tests/e2e/harness.ts (bench may not import tests)",
    "src/reconcile/plan.ts -> src/runtime/cluster.ts (reconcile may not import runtime)",
  ]);
});

Deno.test("cycles: the check finds two files that import each other, and a longer ring", () => {
  const e = (from: string, to: string) => ({ from, to });
  assert.deepEqual(
    cyclesOf([
      e("a.ts", "b.ts"),
      e("b.ts", "a.ts"),
      e("c.ts", "a.ts"),
      e("x.ts", "y.ts"),
      e(
        "y.ts",
        "z.ts",
      ),
      e("z.ts", "x.ts"),
    ]),
    [["a.ts", "b.ts"], ["x.ts", "y.ts", "z.ts"]],
  );
  assert.deepEqual(cyclesOf([e("a.ts", "b.ts"), e("b.ts", "c.ts")]), []);
});
