/**
 * Whether what the cache says of a type can be trusted. A type whose CRD is observed but whose
 * watch is not live (the CRD appeared moments ago, or listing it fails) is unknown: "none seen" is
 * not "none" then. A type whose CRD is not observed has no objects, so it is known (empty).
 */
import { apiVersionOf, RESOURCES } from "../api/resources.ts";
import { cacheMeta, type KubeObject, type Projection, type ResourceType } from "../api/object.ts";
import type { CacheReader } from "../runtime/mod.ts";

/** The name of a custom resource type's CRD: `<plural>.<group>`. */
export function crdName(type: ResourceType): string {
  return `${type.plural}.${type.group}`;
}

/** True when `type`'s CRD is observed but its watch is not live. A reader without `isLive` is live. */
export function isUnknown(cache: CacheReader, type: ResourceType): boolean {
  if (!cache.isLive || cache.isLive(type)) return false;
  return cache.get(RESOURCES.CustomResourceDefinition, undefined, crdName(type)) !== undefined;
}

/**
 * What a controller that only asks whether a CRD exists keeps of it: its metadata, read as
 * metadata only. A CRD's schema is most of it: the CRDs of a cluster with Istio and KEDA are
 * about 1.3 MB of JSON, and a platform cluster's dozens of CRDs many times that; none of it is
 * listed, parsed or cached for a name.
 */
export const CRD_PRESENCE: Projection = {
  name: "crd.presence",
  metadataOnly: true,
  keep(crd: KubeObject): KubeObject {
    return {
      apiVersion: apiVersionOf(RESOURCES.CustomResourceDefinition),
      kind: RESOURCES.CustomResourceDefinition.kind,
      metadata: cacheMeta(crd),
    };
  },
};
