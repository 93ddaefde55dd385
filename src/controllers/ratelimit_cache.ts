/**
 * What the RateLimit controller's cache keeps of the objects it does not own whole: every
 * RateLimit needs its Pods and its EnvoyFilter in memory, so at ten thousand RateLimits these are
 * most of the operator's memory. Each projection keeps exactly what reconciling reads (and what
 * the cache itself reads of metadata); the rest is dropped as the watch delivers it.
 */
import { hasMeshSidecar, MESH_PROXY_CONTAINER, SIDECAR_STATUS_ANNOTATION } from "../api/pod.ts";
import type { KubeObject, ObjectMeta } from "../runtime/cluster.ts";
import type { Projection } from "../runtime/controller_spec.ts";

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/**
 * An EnvoyFilter: its metadata (ownership labels and references, the generation annotation) and
 * its workload selector (which Pods it holds); the rest of the spec is its digest, which the runner
 * compares with the desired spec's. A 4-rule filter is about 5 KB of JSON, of which this keeps a
 * few hundred bytes.
 */
export const FILTER_PROJECTION: Projection = {
  name: "ratelimit.envoyfilter",
  digestSpec: true,
  keep(ef: KubeObject): KubeObject {
    const selector = isObject(ef.spec) ? ef.spec.workloadSelector : undefined;
    return {
      apiVersion: ef.apiVersion,
      kind: ef.kind,
      metadata: structuredClone(ef.metadata),
      ...(selector !== undefined ? { spec: { workloadSelector: structuredClone(selector) } } : {}),
    };
  },
};

/** Metadata fields of a Pod that the controller (labels) and the cache (the rest) read. */
const POD_META = [
  "name",
  "namespace",
  "resourceVersion",
  "deletionTimestamp",
  "finalizers",
  "labels",
] as const;

/** The mesh proxy's container entry, shared by every projected Pod that has one. */
const PROXY_CONTAINER: readonly Json[] = Object.freeze([
  Object.freeze({ name: MESH_PROXY_CONTAINER }),
]);
const NATIVE_PROXY: readonly Json[] = Object.freeze([
  Object.freeze({ name: MESH_PROXY_CONTAINER, restartPolicy: "Always" }),
]);
const MARKED: Readonly<Record<string, string>> = Object.freeze({ [SIDECAR_STATUS_ANNOTATION]: "" });

/**
 * A Pod: its labels (which RateLimits select it), whether it has a mesh proxy, and whether it
 * still serves (phase, deletionTimestamp). Of the proxy it keeps only the evidence
 * `hasMeshSidecar` finds first: the `istio-proxy` container, the native sidecar, or the injector's
 * annotation with its value (a few hundred bytes of JSON nobody reads) left empty. A phase is kept
 * only when it ends the Pod. A running Pod is a few kilobytes of JSON; this keeps about 300 bytes,
 * and `tests/controllers/ratelimit_cache_test.ts` checks that every reading gives the same answer.
 */
export const POD_PROJECTION: Projection = {
  name: "ratelimit.pod",
  keep(pod: KubeObject): KubeObject {
    const meta: Json = {};
    const from = pod.metadata as unknown as Json;
    for (const k of POD_META) if (from[k] !== undefined) meta[k] = structuredClone(from[k]);
    const spec: Json = {};
    const proxy = meshProxyEvidence(pod);
    if (proxy === "container") spec.containers = PROXY_CONTAINER;
    else if (proxy === "native") spec.initContainers = NATIVE_PROXY;
    else if (proxy === "annotation") meta.annotations = MARKED;
    const phase = isObject(pod.status) ? pod.status.phase : undefined;
    const ended = phase === "Succeeded" || phase === "Failed";
    return {
      apiVersion: pod.apiVersion,
      kind: pod.kind,
      metadata: meta as unknown as ObjectMeta,
      spec,
      ...(ended ? { status: { phase } } : {}),
    };
  },
};

/** Which evidence of a mesh proxy `hasMeshSidecar` would find first, if any. */
function meshProxyEvidence(pod: KubeObject): "container" | "native" | "annotation" | undefined {
  if (!hasMeshSidecar(pod)) return undefined;
  const list = (field: string) => {
    const l = isObject(pod.spec) ? pod.spec[field] : undefined;
    return Array.isArray(l) ? l.filter(isObject) : [];
  };
  if (list("containers").some((c) => c.name === MESH_PROXY_CONTAINER)) return "container";
  const native = list("initContainers").some((c) =>
    c.name === MESH_PROXY_CONTAINER && c.restartPolicy === "Always"
  );
  return native ? "native" : "annotation";
}
