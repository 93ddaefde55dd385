/**
 * The RateLimit controller: what the runtime watches for RateLimits, which keys a change wakes,
 * and the reconcile that reads the cache into `reconcileRateLimit`'s input.
 *
 * Everything goes through indexes (ratelimit_index.ts), never a scan of a namespace: a Pod event
 * wakes the RateLimits selecting it; a RateLimit or EnvoyFilter event wakes the rivals of its
 * selectors (those that can select the same Pods), whose verdicts it may change; a reconcile reads
 * those rivals as its peers and the Pods its selectors may select. So a reconcile costs the same
 * in a namespace of ten RateLimits as in one of ten thousand.
 */
import { RESOURCES } from "../api/resources.ts";
import { type KubeObject, objectKey, splitKey } from "../api/object.ts";
import { byIndexOf, type CacheReader, type ControllerSpec } from "../runtime/mod.ts";
import { emptyPlan } from "../reconcile/plan.ts";
import {
  filterRef,
  filterSelector,
  isOrphanOf,
  isOtherRateLimitFilter,
  isRateLimitFilter,
} from "../reconcile/ratelimit/input.ts";
import { CRD_PRESENCE, crdName, isUnknown } from "./cache_trust.ts";
import { everyPrimary, whenNamed } from "./triggers.ts";
import { FILTER_PROJECTION, POD_PROJECTION } from "./ratelimit_cache.ts";
import {
  holdersSelecting,
  OTHER_FILTERS_INDEX,
  podScopesOf,
  podsEverywhere,
  podsFor,
  RATELIMIT_INDEXES,
  rivalsOf,
  selectingPod,
  specSelector,
} from "./ratelimit_index.ts";
import { stringMap } from "../api/json.ts";
import { ISTIO_ROOT_NAMESPACE } from "../api/mesh.ts";
import { selects } from "../api/selector.ts";
import { meshProxyOf } from "../api/pod.ts";
import {
  ISTIOD_STATUS_NAME,
  istiodStatusOf,
  PROXY_STATUS,
  type ProxyStatusFields,
  proxyStatusOf,
} from "../api/istiod.ts";
import type {
  EngineObservation,
  EnginePod,
  ProxyObservation,
} from "../reconcile/ratelimit/input.ts";
import {
  changedDomainsOf,
  ENGINE_STATUS,
  ENGINES_STATUS_NAME,
  enginesStatusOf,
  engineStatusOf,
} from "../api/engine_status.ts";
import { ENGINE_DOMAIN_ANNOTATION, GLOBAL_ENGINE_SERVICE } from "../api/global_engine.ts";
import { at } from "../api/json.ts";

export {
  FILTER_SELECTOR_INDEX,
  POD_LABEL_INDEX,
  RATELIMIT_SELECTOR_INDEX,
} from "./ratelimit_index.ts";

/** The RateLimit reducer (src/reconcile/ratelimit/mod.ts), once loaded. */
type RateLimitReducer = typeof import("../reconcile/ratelimit/mod.ts").reconcileRateLimit;

let reducer: RateLimitReducer | undefined;

/**
 * Loads the RateLimit reducer (parse, validation plans, render, status) once a process: every
 * RateLimit controller's preload, which the runtime runs before its first reconcile, so an
 * operator with no RateLimit never loads it. A dynamic import with a literal specifier, which
 * `deno compile` still embeds. Tests and benches that call `reconcile` directly await it first.
 */
export async function loadRateLimitReducer(): Promise<void> {
  reducer ??= (await import("../reconcile/ratelimit/mod.ts")).reconcileRateLimit;
}

/** The CRD whose presence means the mesh is installed. */
export const ENVOYFILTER_CRD = crdName(RESOURCES.EnvoyFilter);
/** How soon to look again while the EnvoyFilter watch has not listed yet. */
const UNKNOWN_FILTERS_REQUEUE_MS = 1000;

/** This operator's filter for a RateLimit, as cached, if it is one. */
function ownFilter(cache: CacheReader, namespace: string, name: string): KubeObject | undefined {
  const ef = cache.get(RESOURCES.EnvoyFilter, namespace, name);
  return ef && isRateLimitFilter(ef) ? ef : undefined;
}

type Selector = Record<string, string> | undefined;

/** What the RateLimit controller needs to know of the mesh. */
export interface RateLimitSettings {
  /** The mesh's config root namespace, whose EnvoyFilters reach every namespace. */
  meshRootNamespace: string;
  /**
   * True when the operator asks istiod about its proxies: the controller then watches the
   * ProxyStatus objects (a type served inside the operator, src/api/istiod.ts) and reports the
   * Accepted condition from them; otherwise Accepted is Unknown (IstiodNotAsked).
   */
  proxyStatus?: boolean;
  /**
   * True when the operator runs the global rate limit engine and reads it back: the controller then
   * watches the EngineStatus objects (a type served inside the operator, src/api/engine_status.ts)
   * and reports GlobalEnforced from them; otherwise the global part is not rendered and
   * GlobalEnforced says the engine is not installed.
   */
  engineStatus?: boolean;
}

/**
 * The keys of the RateLimits a Pod concerns: those selecting it, and those of the root namespace
 * whose selector its labels match (they reach every namespace's Pods).
 */
export function rateLimitsOfPod(cache: CacheReader, root: string, pod: KubeObject): string[] {
  const keys = new Set(selectingPod(cache, pod));
  const labels = stringMap(pod.metadata.labels);
  if (pod.metadata.namespace !== root && labels) holdersSelecting(cache, root, labels, keys);
  return [...keys];
}

/** What istiod says of the proxies of `pods`, from the cached ProxyStatus objects. */
function proxiesOf(
  cache: CacheReader,
  operatorNamespace: string,
  pods: Iterable<KubeObject>,
): ProxyObservation {
  const byPod = new Map<string, ProxyStatusFields>();
  for (const p of pods) {
    const ns = p.metadata.namespace ?? "";
    const status = proxyStatusOf(cache.get(PROXY_STATUS, ns, p.metadata.name));
    if (status) byPod.set(`${ns}/${p.metadata.name}`, status);
  }
  const istiod = istiodStatusOf(cache.get(PROXY_STATUS, operatorNamespace, ISTIOD_STATUS_NAME));
  return { istiod, byPod };
}

/** What the operator read back of the engine's Pods, from the cached EngineStatus objects. */
function engineOf(cache: CacheReader): EngineObservation {
  const namespace = GLOBAL_ENGINE_SERVICE.namespace;
  const pods: EnginePod[] = [];
  let listing: EngineObservation["listing"];
  for (const obj of cache.list(ENGINE_STATUS, namespace)) {
    if (obj.metadata.name === ENGINES_STATUS_NAME) {
      listing = enginesStatusOf(obj);
      continue;
    }
    const fields = engineStatusOf(obj);
    if (fields) pods.push({ name: obj.metadata.name, ...fields });
  }
  return { listing, pods };
}

/**
 * The keys of the RateLimits the engine's state concerns: those with spec.global, and those whose
 * filter in place carries a domain (a refused generation may keep one after spec.global went).
 */
function globalRateLimits(cache: CacheReader): string[] {
  const keys: string[] = [];
  for (const rl of cache.list(RESOURCES.RateLimit)) {
    const ns = rl.metadata.namespace ?? "";
    if (
      at(rl, "spec", "global") !== undefined ||
      ownFilter(cache, ns, rl.metadata.name)?.metadata.annotations?.[ENGINE_DOMAIN_ANNOTATION] !==
        undefined
    ) keys.push(objectKey(rl));
  }
  return keys;
}

/**
 * The Pods a selector of a RateLimit in `namespace` may select, and the keys (`ns/name`) of its
 * rivals: those of its namespace whose selectors can select the same Pods, and across the root
 * namespace those sharing a gateway Pod with it (scope.ts `olderConflicts`).
 */
function scopeOf(
  cache: CacheReader,
  root: string,
  namespace: string,
  selectors: readonly Selector[],
  pods: Map<string, KubeObject>,
  rivals: Set<string>,
): void {
  const names = new Set<string>();
  for (const s of selectors) {
    if (!s) continue;
    const local = podsFor(cache, namespace, s);
    const candidates = namespace === root ? podsEverywhere(cache, s) : local;
    for (const p of candidates) pods.set(objectKey(p), p);
    rivalsOf(cache, namespace, s, names, local);
    for (const p of candidates) {
      const labels = stringMap(p.metadata.labels);
      const ns = p.metadata.namespace ?? "";
      if (!labels || !selects(s, labels) || meshProxyOf(p) !== "router") continue;
      // A gateway Pod shared across the root namespace: the root's RateLimits selecting it, or
      // (from the root) those of the Pod's own namespace.
      if (namespace !== root) holdersSelecting(cache, root, labels, rivals);
      else if (ns !== root) holdersSelecting(cache, ns, labels, rivals);
    }
  }
  for (const n of names) rivals.add(`${namespace}/${n}`);
}

/**
 * The RateLimit controller for a mesh (ControllerSpec for the runtime). `rateLimitController` is
 * this with Istio's default root namespace.
 */
export function rateLimitControllerFor(settings: RateLimitSettings): ControllerSpec {
  const root = settings.meshRootNamespace;
  /** Keys of the RateLimits whose verdicts a RateLimit's or filter's selectors may change. */
  const rivalKeys = (cache: CacheReader, ns: string, own: string, selectors: Selector[]) => {
    const keys = new Set<string>([`${ns}/${own}`]);
    scopeOf(cache, root, ns, selectors, new Map(), keys);
    return [...keys];
  };
  return {
    name: "ratelimit",
    primary: RESOURCES.RateLimit,
    watches: [
      // Every EnvoyFilter, not only managed ones: a filter of the same name that someone else made
      // must be seen, so the operator neither overwrites nor deletes it.
      // Cached as metadata, workload selector and a digest of the rest (ratelimit_cache.ts).
      // A filter of ours holds its Pods against newer rivals: when it comes, changes or goes
      // (withdrawn while its RateLimit stays, with no RateLimit event), they must look again.
      {
        type: RESOURCES.EnvoyFilter,
        optional: true,
        project: FILTER_PROJECTION,
        trigger: (ef, cache) => {
          const ns = ef.metadata.namespace;
          if (!ns) return [];
          // Another's rate limit filter: every RateLimit it may share proxies with looks again
          // (its namespace's; every one, from the mesh's root namespace). Rare, and few.
          if (isOtherRateLimitFilter(ef)) {
            return cache.list(RESOURCES.RateLimit, ns === root ? undefined : ns).map(objectKey);
          }
          const held = isRateLimitFilter(ef) ? filterSelector(ef) : undefined;
          return rivalKeys(cache, ns, ef.metadata.name, [held]);
        },
      },
      // Pods decide conflicts between RateLimits whose selectors only partly overlap, whether a
      // limit reaches any proxy (the Enforced condition) and which patch context it needs.
      // The runtime calls triggers with the Pod's old state too, so labels moved away are covered.
      // The root namespace's RateLimits reach every namespace's Pods: any Pod they select may
      // change their verdict (a Pod that is not a gateway refuses them).
      // Scoped: only the Pods RateLimits read are listed and watched (podScopesOf), so a cluster
      // of many unrelated Pods costs neither the start-up's lists nor their memory.
      {
        type: RESOURCES.Pod,
        project: POD_PROJECTION,
        trigger: (pod, cache) => rateLimitsOfPod(cache, root, pod),
        scopes: (rl, cache) => podScopesOf(rl, cache, root),
      },
      // Whether the mesh's CRD (and so its filters) exists: names only (see CRD_PRESENCE).
      {
        type: RESOURCES.CustomResourceDefinition,
        project: CRD_PRESENCE,
        trigger: whenNamed(ENVOYFILTER_CRD, everyPrimary(RESOURCES.RateLimit)),
      },
      // What istiod says of each proxy: a change wakes the RateLimits selecting its Pod; istiod's
      // own status (whether it answered) wakes them all.
      ...(settings.proxyStatus
        ? [{
          type: PROXY_STATUS,
          local: true,
          trigger: (status: KubeObject, cache: CacheReader) => {
            if (status.metadata.name === ISTIOD_STATUS_NAME) {
              return everyPrimary(RESOURCES.RateLimit)(status, cache);
            }
            const pod = cache.get(RESOURCES.Pod, status.metadata.namespace, status.metadata.name);
            return pod ? rateLimitsOfPod(cache, root, pod) : [];
          },
        }]
        : []),
      // What the engine's Pods say: a change of some domains' lines concerns their RateLimits
      // (a domain is its RateLimit's namespace/name); any other every RateLimit with a global part.
      ...(settings.engineStatus
        ? [{
          type: ENGINE_STATUS,
          local: true,
          trigger: (status: KubeObject, cache: CacheReader) => {
            const domains = changedDomainsOf(status);
            if (!domains) return globalRateLimits(cache);
            return domains.filter((d) => {
              const { namespace, name } = splitKey(d);
              return cache.get(RESOURCES.RateLimit, namespace, name) !== undefined;
            });
          },
        }]
        : []),
    ],
    indexes: [...RATELIMIT_INDEXES],
    preload: loadRateLimitReducer,
    // A Plan renders the filter and the status from the same input: with its own filter and
    // status written, the next pass would find both applied and write nothing.
    settlesInOnePass: true,
    // Its rivals' conflicts depend on it: by its spec, and by the filter it holds (which stays in
    // the cache a moment after the RateLimit is deleted). The runtime calls this with the old state
    // too, so a selector edited away from some rivals still wakes them.
    peers(rl, cache) {
      const ns = rl.metadata.namespace;
      if (!ns) return [];
      const held = ownFilter(cache, ns, rl.metadata.name);
      return rivalKeys(cache, ns, rl.metadata.name, [
        specSelector(rl),
        held && filterSelector(held),
      ]);
    },
    reconcile(key, cache, ctx) {
      const { namespace = "", name } = splitKey(key);
      const rateLimit = cache.get(RESOURCES.RateLimit, namespace, name);
      if (!rateLimit) {
        // Deleted: its filter goes now rather than when the garbage collector gets to it (13 s
        // on the test cluster, while the proxies kept enforcing it, beside a new RateLimit's
        // filter on the same Pods: both filters charged every request).
        const orphan = cache.get(RESOURCES.EnvoyFilter, namespace, name);
        if (!orphan || isUnknown(cache, RESOURCES.EnvoyFilter) || !isOrphanOf(orphan, name)) {
          return undefined;
        }
        return { ...emptyPlan(), delete: [filterRef({ namespace, name })] };
      }
      if (!reducer) {
        throw new Error("ratelimit: reconcile before preload (the reducer is not loaded)");
      }
      const meshInstalled =
        cache.get(RESOURCES.CustomResourceDefinition, undefined, ENVOYFILTER_CRD) !== undefined;
      // With the CRD present but its watch not listed yet, "no EnvoyFilter seen" is not "none":
      // the reducer would apply over a filter of the same name someone else made. Write nothing.
      if (isUnknown(cache, RESOURCES.EnvoyFilter)) {
        return { ...emptyPlan(), requeueAfterMs: UNKNOWN_FILTERS_REQUEUE_MS };
      }
      const envoyFilter = cache.get(RESOURCES.EnvoyFilter, namespace, name);
      const spec = specSelector(rateLimit);
      const held = envoyFilter ? filterSelector(envoyFilter) : undefined;
      const selectors = held && !sameSelector(held, spec) ? [spec, held] : [spec];
      const pods = new Map<string, KubeObject>();
      const rivals = new Set<string>();
      scopeOf(cache, root, namespace, selectors, pods, rivals);
      // The peers, and the filters named like them (as data: the reducer calls nothing of ours).
      const peers: KubeObject[] = [];
      const peerFilters = new Map<string, KubeObject>();
      for (const k of rivals) {
        if (k === key) continue;
        const peerKey = splitKey(k);
        const peer = cache.get(RESOURCES.RateLimit, peerKey.namespace, peerKey.name);
        if (!peer) continue;
        peers.push(peer);
        const filter = cache.get(RESOURCES.EnvoyFilter, peerKey.namespace, peerKey.name);
        if (filter) peerFilters.set(k, filter);
      }
      const otherFilters = [
        ...byIndexOf(cache, OTHER_FILTERS_INDEX, namespace),
        ...(namespace === root ? [] : byIndexOf(cache, OTHER_FILTERS_INDEX, root)),
      ];
      return reducer({
        rateLimit,
        peers,
        pods: [...pods.values()],
        envoyFilter,
        peerFilters,
        meshInstalled,
        meshRootNamespace: root,
        ...(otherFilters.length > 0 ? { otherFilters } : {}),
        now: ctx.now,
        lastOutcome: ctx.lastOutcome,
        ...(settings.proxyStatus
          ? { proxies: proxiesOf(cache, ctx.namespace, pods.values()) }
          : {}),
        ...(settings.engineStatus ? { globalEngine: engineOf(cache) } : {}),
      });
    },
  };
}

/** The RateLimit controller with Istio's default root namespace, `istio-system`. */
export const rateLimitController: ControllerSpec = rateLimitControllerFor({
  meshRootNamespace: ISTIO_ROOT_NAMESPACE,
});

function sameSelector(a: Record<string, string>, b: Record<string, string> | undefined): boolean {
  if (!b) return false;
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
}
