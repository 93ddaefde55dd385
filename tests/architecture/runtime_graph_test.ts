/**
 * The operator loads no npm package at run time: every package costs resident memory whether or
 * not it is used (zod with the schemas held 15 MB of an idle operator). It validates with the plans
 * generated from the schemas (src/api/validation/), loaded with the RateLimit reducer when the
 * first RateLimit is reconciled, and reads a kubeconfig's YAML only on demand.
 * Nor does it load the modules' upstream CRDs (data/upstream/<module>/crds.json) at start: only a module
 * controller's preload imports them, as text, so Deno does not hold their source from the start,
 * and `deno compile` still embeds them (it embeds every module of the graph, the text and bytes
 * imports of literal specifiers among them).
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
  assertionType?: string;
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
  assert.ok(loaded.some((u) => u.endsWith("/src/runtime/manager.ts")), "runs the manager");
  assert.deepEqual(loaded.filter((u) => u.startsWith("npm:")), []);
});

Deno.test("the start-up graph check sees a package imported for its value", async () => {
  // src/crd/schema.ts turns zod schemas into CRDs: it needs zod's value, so zod is loaded.
  const entry = pathToFileURL(join(ROOT, "src/crd/schema.ts")).href;
  const loaded = loadedAtStart(await graphOf(entry), entry);
  assert.ok(loaded.some((u) => u.startsWith("npm:") && u.includes("zod")), loaded.join("\n"));
});

/** The CRD data files, their provenance beside them. */
const CRD_DATA = ["data/upstream/keda/crds.json", "data/upstream/serverless/crds.json"];

/** Why the data files are not what the operator should import on demand; [] when they are. */
function onDemandProblems(graph: Graph, entry: string, root: string): string[] {
  const urls = CRD_DATA.map((p) => pathToFileURL(join(root, p)).href);
  const problems: string[] = [];
  const loaded = loadedAtStart(graph, entry);
  for (const u of urls.filter((u) => loaded.includes(u))) problems.push(`${u} is loaded at start`);
  // `deno compile` embeds the graph: a dynamic import with a literal specifier is in it.
  const imports = graph.modules.flatMap((m) => m.dependencies ?? []);
  for (const u of urls) {
    const found = imports.filter((d) => d.code?.specifier === u);
    if (found.length === 0) problems.push(`${u} is not in the graph compile embeds`);
    for (const d of found) {
      if (!d.isDynamic) problems.push(`${u} is imported statically`);
      // As JSON, Deno would hold its source from the start.
      if (d.assertionType !== "text") problems.push(`${u} is imported as ${d.assertionType}`);
    }
  }
  return problems;
}

Deno.test("the modules' CRD data is imported on demand as text, not at start, and is in the compiled graph", async () => {
  const entry = pathToFileURL(join(ROOT, "src/cli/operator_main.ts")).href;
  const graph = await graphOf(entry);
  assert.deepEqual(onDemandProblems(graph, entry, ROOT), []);
  const loaded = loadedAtStart(graph, entry);
  assert.ok(
    loaded.some((u) => u.endsWith("/data/upstream/keda/provenance.json")),
    "the provenance is (the KEDA version)",
  );
});

Deno.test("the on-demand check finds a static import, a JSON import and a missing one", () => {
  const entry = "file:///r/main.ts";
  const dep = (file: string, extra: Partial<Dependency>): Dependency => ({
    specifier: file,
    code: { specifier: `file:///r/${file}` },
    ...extra,
  });
  const graph: Graph = {
    modules: [{
      specifier: entry,
      dependencies: [
        dep(CRD_DATA[0], { assertionType: "json" }),
      ],
    }],
  };
  assert.deepEqual(onDemandProblems(graph, entry, "/r"), [
    "file:///r/data/upstream/keda/crds.json is loaded at start",
    "file:///r/data/upstream/keda/crds.json is imported statically",
    "file:///r/data/upstream/keda/crds.json is imported as json",
    "file:///r/data/upstream/serverless/crds.json is not in the graph compile embeds",
  ]);
});

/**
 * Module files the start-up graph may hold, and why: what the operator needs with no Serverless or
 * Scaler object (a module's watch triggers read its claim label; the image flags the KEDA image
 * names; the start-up checks compare the module RBAC the operator holds with what the modules
 * render).
 */
const MODULE_FILES_AT_START = [
  "src/reconcile/module/claim.ts",
  "src/reconcile/scaler/names.ts",
  "src/reconcile/scaler/rbac.ts",
  "src/reconcile/serverless/render.ts",
];

/** The module files loaded at start beyond MODULE_FILES_AT_START (reducers and renderers are not). */
function moduleFilesAtStart(graph: Graph, entry: string, root: string): string[] {
  const dirs = ["serverless", "scaler", "module"].map((m) =>
    pathToFileURL(join(root, "src/reconcile", m)).href + "/"
  );
  const allowed = MODULE_FILES_AT_START.map((f) => pathToFileURL(join(root, f)).href);
  return loadedAtStart(graph, entry).filter((u) =>
    dirs.some((d) => u.startsWith(d)) && !allowed.includes(u)
  );
}

Deno.test("the idle start-up graph holds no module reducer or renderer: they load with a module object", async () => {
  const entry = pathToFileURL(join(ROOT, "src/cli/operator_main.ts")).href;
  const graph = await graphOf(entry);
  assert.deepEqual(moduleFilesAtStart(graph, entry, ROOT), []);
  // Loaded on demand, and so still in the graph `deno compile` embeds.
  const all = graph.modules.map((m) => m.specifier);
  for (const reducer of ["src/reconcile/serverless/mod.ts", "src/reconcile/scaler/mod.ts"]) {
    assert.ok(all.includes(pathToFileURL(join(ROOT, reducer)).href), `${reducer} is embedded`);
  }
});

Deno.test("the module check sees a reducer imported statically", async () => {
  // The Scaler controller's reducer, as a static import would load it at start.
  const entry = pathToFileURL(join(ROOT, "src/reconcile/scaler/mod.ts")).href;
  const found = moduleFilesAtStart(await graphOf(entry), entry, ROOT);
  assert.ok(found.some((u) => u.endsWith("/src/reconcile/scaler/mod.ts")), found.join("\n"));
  assert.ok(found.some((u) => u.endsWith("/src/reconcile/module/lifecycle.ts")), found.join("\n"));
});

/**
 * What the RateLimit reducer loads (parse, validation plans, render, status): not at start, but by
 * the RateLimit controller's preload before its first reconcile (src/controllers/ratelimit.ts).
 */
const RATELIMIT_REDUCER_FILES = [
  "src/reconcile/ratelimit/mod.ts",
  "src/reconcile/ratelimit/status.ts",
  "src/reconcile/ratelimit/render.ts",
  "src/reconcile/ratelimit/validate.ts",
  "src/api/validation/run.ts",
  "src/api/validation/plans.json",
];

/** The RateLimit reducer's files that `entry` loads at start. */
function reducerFilesAtStart(graph: Graph, entry: string, root: string): string[] {
  const files = RATELIMIT_REDUCER_FILES.map((f) => pathToFileURL(join(root, f)).href);
  return loadedAtStart(graph, entry).filter((u) => files.includes(u));
}

Deno.test("the idle start-up graph holds no RateLimit reducer: it loads with the first RateLimit", async () => {
  const entry = pathToFileURL(join(ROOT, "src/cli/operator_main.ts")).href;
  const graph = await graphOf(entry);
  assert.deepEqual(reducerFilesAtStart(graph, entry, ROOT), []);
  const all = graph.modules.map((m) => m.specifier);
  for (const file of RATELIMIT_REDUCER_FILES) {
    assert.ok(all.includes(pathToFileURL(join(ROOT, file)).href), `${file} is embedded`);
  }
});

Deno.test("the reducer check sees the RateLimit reducer imported statically", async () => {
  const entry = pathToFileURL(join(ROOT, "src/reconcile/ratelimit/mod.ts")).href;
  const found = reducerFilesAtStart(await graphOf(entry), entry, ROOT);
  assert.deepEqual(found.length, RATELIMIT_REDUCER_FILES.length, found.join("\n"));
});

/** Code that only some flags use (--istiod-url/--istiod-service, --global-redis-secret). */
const FLAG_FILES = [
  "src/kube/istiod_source.ts",
  "src/kube/istiod.ts",
  "src/kube/engine_source.ts",
  "src/controllers/engine.ts",
  "src/reconcile/engine/mod.ts",
];

Deno.test("istiod's poller and the engine's code load only with their flags", async () => {
  const entry = pathToFileURL(join(ROOT, "src/cli/operator_main.ts")).href;
  const graph = await graphOf(entry);
  const files = FLAG_FILES.map((f) => pathToFileURL(join(ROOT, f)).href);
  assert.deepEqual(loadedAtStart(graph, entry).filter((u) => files.includes(u)), []);
  const all = graph.modules.map((m) => m.specifier);
  for (const u of files) assert.ok(all.includes(u), `${u} is embedded`);
});
