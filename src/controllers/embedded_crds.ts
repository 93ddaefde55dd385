/**
 * The upstream CRDs the modules install (KEDA's, Kyma's Function), embedded by `deno task
 * module-crds` as gzipped JSON (src/reconcile/keda/crds/generated.ts, src/reconcile/serverless/
 * crds/). The JSON is about 0.5 MB (KEDA's ScaledJob alone is about 300 KB) and only rendering a
 * module reads it, so it is imported when a module controller first reconciles (its `preload`),
 * not when the operator starts, and gzipped because Deno holds the source of every module the
 * operator may import from the start. Decoded once and frozen: every render shares the schemas,
 * and only the metadata is built per render. The reducers get them with their input.
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

/** The text `deno task module-crds` gzipped and base64-encoded (tools/crdgen/embed.ts). */
export async function inflate(gzipBase64: string): Promise<string> {
  const bytes = Uint8Array.from(atob(gzipBase64), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return await new Response(stream).text();
}

/** The embedded CRDs of the module `importer` imports, decoded and parsed when it has been. */
export function embeddedCrds(
  what: string,
  importer: () => Promise<{ CRDS_GZIP_BASE64: string }>,
): EmbeddedCrds {
  let loading: Promise<readonly UpstreamCrd[]> | undefined;
  let parsed: readonly UpstreamCrd[] | undefined;
  return {
    load() {
      loading ??= importer()
        .then(({ CRDS_GZIP_BASE64 }) => inflate(CRDS_GZIP_BASE64))
        .then((json) => parsed = deepFreeze(JSON.parse(json) as UpstreamCrd[]))
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
  () => import("../reconcile/keda/crds/generated.ts"),
);

/** The Function CRD, imported when the Serverless controller first reconciles (its preload). */
export const FUNCTION_CRDS: EmbeddedCrds = embeddedCrds(
  "the Function CRD",
  () => import("../reconcile/serverless/crds/generated.ts"),
);
