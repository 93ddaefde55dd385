/**
 * The upstream CRDs the modules install (KEDA's, Kyma's Function), embedded as JSON text by
 * `deno task module-crds` (src/reconcile/keda/crds/generated.ts, src/reconcile/serverless/crds/).
 * Parsed once per process on first use and frozen: every render shares the schemas, which are
 * large (KEDA's ScaledJob alone is about 300 KB), and only the metadata is built per render.
 */
import type { KubeObject, ObjectMeta, ResourceType } from "../api/object.ts";

/** The parts of a CRD the operator reads. */
export interface UpstreamCrd extends KubeObject {
  spec: {
    group: string;
    names: { kind: string; plural: string; shortNames?: string[] };
    scope: "Namespaced" | "Cluster";
    versions: { name: string; served: boolean; storage: boolean }[];
  };
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** A lazy, memoised parse of embedded CRDs. */
export function embeddedCrds(json: readonly string[]): () => readonly UpstreamCrd[] {
  let parsed: readonly UpstreamCrd[] | undefined;
  return () => parsed ??= deepFreeze(json.map((j) => JSON.parse(j) as UpstreamCrd));
}

/**
 * An upstream CRD with the module's metadata: upstream's annotations (controller-gen's version)
 * kept, the module's name and labels added. The spec is upstream's, shared and frozen.
 */
export function withMetadata(crd: UpstreamCrd, meta: ObjectMeta): KubeObject {
  return {
    ...crd,
    metadata: {
      ...meta,
      ...(crd.metadata.annotations ? { annotations: { ...crd.metadata.annotations } } : {}),
    },
  };
}

/** The resource type of a CRD's storage version. */
export function typeOfCrd(crd: UpstreamCrd): ResourceType {
  const version = crd.spec.versions.find((v) => v.storage) ?? crd.spec.versions[0];
  return {
    group: crd.spec.group,
    version: version.name,
    kind: crd.spec.names.kind,
    plural: crd.spec.names.plural,
    namespaced: crd.spec.scope === "Namespaced",
  };
}
