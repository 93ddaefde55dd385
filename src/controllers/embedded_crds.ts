/**
 * The upstream CRDs the modules install (KEDA's, Kyma's Function), kept as data in
 * `data/upstream/<module>/crds.json` beside their provenance (`deno task module-crds` writes both).
 * Only rendering a module reads them, so they are imported when a module controller first
 * reconciles (its `preload`), not when the operator starts. Imported as text (a stable import type
 * since Deno 2.8) rather than as JSON: Deno holds the source of a JSON module the operator may
 * import from the start, while a text import is read only when it runs; `deno compile` embeds
 * both as it embeds every import with a literal specifier. Parsed once and frozen: every render
 * shares the schemas, and only the metadata is built per render. The reducers get them with their
 * input. Never import these files as JSON as well: Deno keeps one module a file.
 */
import { deepFreeze } from "../api/json.ts";
import type { UpstreamCrd } from "../reconcile/upstream_crds.ts";

/** Embedded CRDs, imported on first need. */
export interface EmbeddedCrds {
  /** Imports and parses the CRDs, once: later calls give the same promise. */
  load(): Promise<readonly UpstreamCrd[]>;
  /**
   * The CRDs, once `load` has resolved. Before that it throws: what renders them is reached only
   * through a controller whose `preload` loads them (or a test that awaits `load`).
   */
  get(): readonly UpstreamCrd[];
}

/** The CRDs of a `crds.json`: a JSON array of CustomResourceDefinitions, or a clear error. */
export function parseCrds(what: string, text: string): UpstreamCrd[] {
  const crds: unknown = JSON.parse(text);
  if (!Array.isArray(crds) || crds.length === 0) {
    throw new Error(`${what}: want a non-empty JSON array of CRDs`);
  }
  crds.forEach((crd: { kind?: unknown; metadata?: { name?: unknown } }, i) => {
    if (crd?.kind !== "CustomResourceDefinition" || typeof crd.metadata?.name !== "string") {
      throw new Error(`${what}: [${i}] is not a named CustomResourceDefinition`);
    }
  });
  return crds as UpstreamCrd[];
}

/** The embedded CRDs of the text module `importer` imports, parsed when it has been. */
export function embeddedCrds(
  what: string,
  importer: () => Promise<{ default: string }>,
): EmbeddedCrds {
  let loading: Promise<readonly UpstreamCrd[]> | undefined;
  let parsed: readonly UpstreamCrd[] | undefined;
  return {
    load() {
      loading ??= importer()
        .then(({ default: text }) => parsed = deepFreeze(parseCrds(what, text)))
        .catch((err) => {
          loading = undefined; // a failed import may be retried
          throw err;
        });
      return loading;
    },
    get() {
      if (!parsed) throw new Error(`${what} not loaded yet: await load() first`);
      return parsed;
    },
  };
}

/** KEDA's CRDs, imported when the Scaler controller first reconciles (its preload). */
export const KEDA_CRDS: EmbeddedCrds = embeddedCrds(
  "KEDA's CRDs",
  () => import("../../data/upstream/keda/crds.json", { with: { type: "text" } }),
);

/** The Function CRD, imported when the Serverless controller first reconciles (its preload). */
export const FUNCTION_CRDS: EmbeddedCrds = embeddedCrds(
  "the Function CRD",
  () => import("../../data/upstream/serverless/crds.json", { with: { type: "text" } }),
);
