/**
 * Renders the EnvoyFilter the operator would apply for each RateLimit of the samples and the
 * simulator's scenarios (plus any the caller adds) into a directory for the istio-check binary:
 * one JSON file a case and `cases.json` listing them. The filter comes from the operator's own
 * reconcile (src/reconcile), so whatever it would apply is what Istio's code is run on.
 *
 *   ./deno run -A tools/istio-check/render.ts DIR
 *
 * @module
 */
import { join, relative, resolve } from "node:path";
import { parseAllDocuments } from "yaml";
import { reconcileRateLimit } from "../../src/reconcile/ratelimit/mod.ts";
import { ONE_READY_ENGINE } from "../../src/reconcile/ratelimit/input.ts";
import { filterContexts } from "../../src/reconcile/ratelimit/scope.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { at } from "../../src/api/json.ts";
import { GLOBAL_ENGINE_HOST, GLOBAL_ENGINE_SERVICE } from "../../src/api/global_engine.ts";
import { parseScenario } from "../../sim/scenario/format.ts";

const ROOT = resolve(import.meta.dirname ?? ".", "..", "..");

/** A RateLimit and where it was found. */
export interface Source {
  name: string;
  rateLimit: KubeObject;
  /** Pods beside it, which decide the filter's patch contexts (default none). */
  pods?: KubeObject[];
  /** The global rate limit engine is Ready: the filter holds the RateLimit's global part. */
  globalEngineReady?: boolean;
}

/** A case for istio-check: the EnvoyFilter and the proxy kind the RateLimit means. */
export interface Case {
  name: string;
  file: string;
  target: "sidecar" | "gateway" | "both";
  /** The HTTP filters the EnvoyFilter inserts, in order, right before the router. */
  filters: string[];
  envoyFilter: KubeObject;
}

/** A RateLimit the operator refuses: it applies no EnvoyFilter, so there is nothing to check. */
export interface Rejected {
  name: string;
  message: string;
}

const isRateLimit = (o: unknown): o is KubeObject =>
  typeof o === "object" && o !== null && (o as { kind?: unknown }).kind === "RateLimit";

async function yamlFiles(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (e.isFile && e.name.endsWith(".yaml")) names.push(join(dir, e.name));
  }
  return names.sort();
}

/**
 * Every RateLimit in samples/*.yaml, in docs/examples/ratelimit-global.yaml (kept out of samples/,
 * which `./deno task dev` applies, because it selects the same Pods as the workload sample) and in
 * the applies of sim/scenarios/*.yaml; one with a global part twice, as the operator renders it
 * before the engine is Ready and after.
 */
export async function repoSources(root = ROOT): Promise<Source[]> {
  const out: Source[] = [];
  const files = [
    ...await yamlFiles(join(root, "samples")),
    join(root, "docs", "examples", "ratelimit-global.yaml"),
  ];
  for (const file of files) {
    const docs = parseAllDocuments(await Deno.readTextFile(file)).map((d) => d.toJS());
    for (const doc of docs.filter(isRateLimit)) {
      out.push({ name: relative(root, file), rateLimit: doc });
      if (at(doc, "spec", "global") !== undefined) {
        out.push({
          name: `${relative(root, file)} (engine Ready)`,
          rateLimit: doc,
          globalEngineReady: true,
        });
      }
    }
  }
  for (const file of await yamlFiles(join(root, "sim", "scenarios"))) {
    const name = relative(root, file);
    const sc = parseScenario(await Deno.readTextFile(file), name);
    sc.steps.forEach((step, i) => {
      for (const obj of (step.apply ?? []).filter(isRateLimit)) {
        out.push({ name: `${name} step ${i} ${obj.metadata.name}`, rateLimit: obj as KubeObject });
      }
    });
  }
  return out;
}

/**
 * The operator's Plan for each RateLimit alone in its namespace with the mesh installed: its
 * EnvoyFilter, or the status message of its refusal. Identical filters are checked once.
 */
export function renderCases(sources: readonly Source[]): { cases: Case[]; rejected: Rejected[] } {
  const cases: Case[] = [];
  const rejected: Rejected[] = [];
  const seen = new Map<string, Case>();
  for (const src of sources) {
    const plan = reconcileRateLimit({
      rateLimit: src.rateLimit,
      peers: [],
      pods: src.pods ?? [],
      meshInstalled: true,
      now: 0,
      ...(src.globalEngineReady ? { globalEngine: ONE_READY_ENGINE } : {}),
    });
    const ef = plan.apply.find((o) => o.kind === "EnvoyFilter");
    if (!ef) {
      rejected.push({ name: src.name, message: String(plan.status?.description ?? "no plan") });
      continue;
    }
    const key = JSON.stringify(ef);
    const same = seen.get(key);
    if (same) {
      same.name += `, ${src.name}`;
      continue;
    }
    const namespace = ef.metadata.namespace ?? "default";
    // A filter for both kinds of proxy (Pods of both selected) is meant for each.
    const contexts = filterContexts(ef);
    const c: Case = {
      name: src.name,
      // The number makes the name unique; the rest is for a reader, and kept short: a namespace
      // and a name can have 63 and 253 characters, over a file name's 255 bytes.
      file: `${String(cases.length + 1).padStart(3, "0")}-${namespace}-${ef.metadata.name}`
        .slice(0, 100) + ".json",
      target: contexts.length > 1 ? "both" : contexts[0] === "GATEWAY" ? "gateway" : "sidecar",
      filters: insertedFilters(ef),
      envoyFilter: ef,
    };
    seen.set(key, c);
    cases.push(c);
  }
  return { cases, rejected };
}

/** The HTTP filters an EnvoyFilter's patches insert, in order, each once. */
export function insertedFilters(ef: KubeObject): string[] {
  const names: string[] = [];
  const patches = at(ef, "spec", "configPatches");
  for (const p of Array.isArray(patches) ? patches : []) {
    const name = at(p, "patch", "value", "name");
    if (at(p, "applyTo") === "HTTP_FILTER" && typeof name === "string" && !names.includes(name)) {
      names.push(name);
    }
  }
  return names;
}

/** The global rate limit engine's Service as istio-check puts it into the mesh it generates for. */
export const ENGINE = { host: GLOBAL_ENGINE_HOST, port: GLOBAL_ENGINE_SERVICE.grpcPort };

/**
 * Writes the cases as istio-check reads them: DIR/cases.json and one EnvoyFilter a case, as JSON
 * like the operator sends it (YAML would need care: Go's YAML 1.1 reads a plain `OFF` as false).
 */
export async function writeCases(dir: string, cases: readonly Case[]): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  for (const c of cases) {
    await Deno.writeTextFile(join(dir, c.file), JSON.stringify(c.envoyFilter, null, 2) + "\n");
  }
  const index = cases.map(({ name, file, target, filters }) => ({ name, file, target, filters }));
  await Deno.writeTextFile(
    join(dir, "cases.json"),
    JSON.stringify({ cases: index, engine: ENGINE }, null, 2),
  );
}

if (import.meta.main) {
  const dir = Deno.args[0];
  if (!dir) {
    console.error("usage: render.ts DIR");
    Deno.exit(2);
  }
  const { cases, rejected } = renderCases(await repoSources());
  await writeCases(dir, cases);
  for (const r of rejected) {
    console.error(`not rendered (the operator refuses it): ${r.name}: ${r.message}`);
  }
  console.log(`${cases.length} EnvoyFilters in ${dir}`);
}
