/**
 * The upstream CRDs the modules install (KEDA's, Kyma's Function), as the reducers read them: handed
 * in with their input (loaded by the controllers, src/controllers/embedded_crds.ts), given the
 * module's metadata here. Pure: no import, no decoding.
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
