/**
 * The operator loads no npm package at run time: every package costs resident memory whether or
 * not it is used (zod with the schemas held 15 MB of an idle operator). It validates with the plans
 * generated from the schemas (src/api/validation/) and reads a kubeconfig's YAML only on demand.
 * Nor does it load the modules' upstream CRD text at start: only a module controller's preload
 * imports it (about 2 MB of an idle operator), and `deno compile` still embeds it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { denoInfo } from "./layers.ts";

const ROOT = join(import.meta.dirname ?? ".", "..", "..");

interface Dependency {
  specifier: string;
  code?: { specifier: string };
  isDynamic?: boolean;
}
interface Graph {
  modules: { specifier: string; dependencies?: Dependency[] }[];
  redirects?: Record<string, string>;
}

async function graphOf(entry: string): Promise<Graph> {
  return await denoInfo(entry, ROOT) as Graph;
}

/** The modules loaded when `entry` starts: static code imports, not types, not dynamic imports. */
function loadedAtStart(graph: Graph, entry: string): string[] {
  const byUrl = new Map(graph.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const visit = (url: string) => {
    const resolved = graph.redirects?.[url] ?? url;
    if (seen.has(resolved)) return;
    seen.add(resolved);
    for (const dep of byUrl.get(resolved)?.dependencies ?? []) {
      if (dep.code && !dep.isDynamic) visit(dep.code.specifier);
    }
  };
  visit(entry);
  return [...seen];
}

Deno.test("the operator's start-up graph has no npm package", async () => {
  const entry = pathToFileURL(join(ROOT, "src/cli/operator_main.ts")).href;
  const loaded = loadedAtStart(await graphOf(entry), entry);
  assert.ok(loaded.length > 50, `only ${loaded.length} modules: not the operator's graph`);
  assert.ok(loaded.some((u) => u.endsWith("/src/api/validation/run.ts")), "validates with plans");
  assert.deepEqual(loaded.filter((u) => u.startsWith("npm:")), []);
});

Deno.test("the start-up graph check sees a package imported for its value", async () => {
  // src/crd/schema.ts turns zod schemas into CRDs: it needs zod's value, so zod is loaded.
  const entry = pathToFileURL(join(ROOT, "src/crd/schema.ts")).href;
  const loaded = loadedAtStart(await graphOf(entry), entry);
  assert.ok(loaded.some((u) => u.startsWith("npm:") && u.includes("zod")), loaded.join("\n"));
});

Deno.test("the modules' CRD text is imported on demand, not at start, and is in the compiled graph", async () => {
  const entry = pathToFileURL(join(ROOT, "src/cli/operator_main.ts")).href;
  const graph = await graphOf(entry);
  const texts = [
    "src/reconcile/keda/crds/generated.ts",
    "src/reconcile/serverless/crds/generated.ts",
  ]
    .map((p) => pathToFileURL(join(ROOT, p)).href);
  const loaded = loadedAtStart(graph, entry);
  assert.deepEqual(texts.filter((t) => loaded.includes(t)), [], "not loaded at start");
  assert.ok(
    loaded.some((u) => u.endsWith("/src/reconcile/keda/crds/upstream.ts")),
    "provenance is",
  );
  // `deno compile` embeds the whole graph, dynamic imports with a literal specifier included.
  const dynamic = graph.modules.flatMap((m) =>
    (m.dependencies ?? []).filter((d) => d.isDynamic && d.code).map((d) => d.code!.specifier)
  );
  assert.deepEqual(texts.filter((t) => !dynamic.includes(t)), [], "imported dynamically");
  const inGraph = new Set(graph.modules.map((m) => m.specifier));
  assert.deepEqual(texts.filter((t) => !inGraph.has(t)), [], "in the graph compile embeds");
});
