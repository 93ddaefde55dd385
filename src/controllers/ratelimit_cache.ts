/**
 * What the RateLimit controller's cache keeps of the objects it does not own whole: every
 * RateLimit needs its Pods and its EnvoyFilter in memory, so at ten thousand RateLimits these are
 * most of the operator's memory. Each projection keeps exactly what reconciling reads (and what
 * the cache itself reads of metadata); the rest is dropped as the watch delivers it.
 */
import { SIDECAR_STATUS_ANNOTATION } from "../api/pod.ts";
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

/** Metadata fields of a Pod that the controller (labels, the sidecar annotation) and cache read. */
const POD_META = [
  "name",
  "namespace",
  "uid",
  "resourceVersion",
  "creationTimestamp",
  "deletionTimestamp",
  "finalizers",
  "labels",
] as const;

function containerNames(list: unknown, withRestartPolicy: boolean): Json[] | undefined {
  if (!Array.isArray(list)) return undefined;
  return list.filter(isObject).map((c) => {
    const out: Json = {};
    if (c.name !== undefined) out.name = c.name;
    if (withRestartPolicy && c.restartPolicy !== undefined) out.restartPolicy = c.restartPolicy;
    return out;
  });
}

/**
 * A Pod: its labels (which RateLimits select it), whether it has a mesh proxy (container names,
 * native sidecars' restart policy, the injector's annotation), and whether it still serves (phase,
 * deletionTimestamp). A running Pod is a few kilobytes of JSON; this keeps a few hundred bytes.
 */
export const POD_PROJECTION: Projection = {
  name: "ratelimit.pod",
  keep(pod: KubeObject): KubeObject {
    const meta: Json = {};
    const from = pod.metadata as unknown as Json;
    for (const k of POD_META) if (from[k] !== undefined) meta[k] = structuredClone(from[k]);
    const sidecar = pod.metadata.annotations?.[SIDECAR_STATUS_ANNOTATION];
    if (typeof sidecar === "string") meta.annotations = { [SIDECAR_STATUS_ANNOTATION]: sidecar };
    const spec: Json = {};
    const containers = containerNames(isObject(pod.spec) ? pod.spec.containers : undefined, false);
    const inits = containerNames(isObject(pod.spec) ? pod.spec.initContainers : undefined, true);
    if (containers) spec.containers = containers;
    if (inits) spec.initContainers = inits;
    const phase = isObject(pod.status) ? pod.status.phase : undefined;
    return {
      apiVersion: pod.apiVersion,
      kind: pod.kind,
      metadata: meta as unknown as ObjectMeta,
      spec,
      ...(phase !== undefined ? { status: { phase } } : {}),
    };
  },
};
