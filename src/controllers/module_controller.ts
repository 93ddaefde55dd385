/**
 * What the Serverless and Scaler controllers share: the cache reads that build a module reducer's
 * input, the mapping from a watch event to the module objects that must look at it, and the
 * ControllerSpec made of them.
 */
import { apiVersionOf } from "../api/resources.ts";
import { isUnknown } from "./cache_trust.ts";
import { type KubeObject, objectKey, type ResourceType, splitKey } from "../api/object.ts";
import type { CacheReader, ControllerSpec, WatchSpec } from "../runtime/mod.ts";
import { emptyPlan, type Plan } from "../reconcile/plan.ts";
import type { ModuleInput } from "../reconcile/module/lifecycle.ts";
import { CLAIM_LABEL, CLAIM_SELECTOR, claimName } from "../reconcile/module/claim.ts";
import { RESOURCES } from "../api/resources.ts";
import { DNS_LOOKUP } from "../api/cluster_dns.ts";
import type { EmbeddedCrds } from "./embedded_crds.ts";
import { everyPrimary, ownerByLabel, sortedKeys, whenLabelled } from "./triggers.ts";
import {
  FIELD_MANAGER,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  MANAGED_SELECTOR,
  MODULE_LABEL,
  OWNER_LABEL,
  ownerLabelValue,
} from "../reconcile/labels.ts";

/** A module the operator installs: its label value, its kind, what it installs, what blocks deletion. */
export interface ModuleKind {
  /** MODULE_LABEL value: `serverless` or `keda`. */
  module: "serverless" | "keda";
  primary: ResourceType;
  /** Every type of object the module installs. */
  installed: readonly ResourceType[];
  /** User object types whose existence blocks deletion (their CRDs come with the module). */
  userTypes: readonly ResourceType[];
  /** The upstream CRDs the module installs, loaded before its controller's first reconcile. */
  crds: EmbeddedCrds;
  /**
   * True when the operator looks up cluster DNS names for the module (src/controllers/cluster_dns.ts):
   * its controller then watches the DNSLookup objects (a type served inside the operator) and hands
   * them to the reducer as `lookups`.
   */
  lookups?: boolean;
}

/**
 * The watches of a module controller and what each wakes: the claim Leases of the module wake every
 * peer (a claim changed hands or went away: any may be served or a duplicate now), an installed
 * object its owner (every peer when its owner is gone), a user object every peer (their count
 * blocks deletion).
 */
export function moduleWatches(kind: ModuleKind): WatchSpec[] {
  const every = everyPrimary(kind.primary);
  const owner = ownerByLabel(kind.primary, OWNER_LABEL, ownerLabelValue, every);
  const installed = { [MANAGED_BY_LABEL]: MANAGED_BY, [MODULE_LABEL]: kind.module };
  return [
    { type: kind.primary },
    {
      type: RESOURCES.Lease,
      labelSelector: CLAIM_SELECTOR,
      ownNamespace: true,
      trigger: whenLabelled({ [CLAIM_LABEL]: kind.module }, every),
    },
    ...kind.installed.map((type) => ({
      type,
      labelSelector: MANAGED_SELECTOR,
      trigger: whenLabelled(installed, owner),
    })),
    ...kind.userTypes.map((type) => ({ type, optional: true, trigger: every })),
    ...(kind.lookups ? [{ type: DNS_LOOKUP, local: true, trigger: every }] : []),
  ];
}

function belongsTo(obj: KubeObject, module: string): boolean {
  const labels = obj.metadata.labels ?? {};
  return labels[MANAGED_BY_LABEL] === MANAGED_BY && labels[MODULE_LABEL] === module;
}

/**
 * The observed objects the module installed, from every installed type's cache: those with the
 * module's labels that the operator's own server-side apply wrote (their managedFields name its
 * field manager). Labels alone are not proof: a user's object may carry them (copied, or set by a
 * kustomization's common labels), and the module must never prune, or wait for, what it did not
 * write.
 */
export function installedObjects(kind: ModuleKind, cache: CacheReader): KubeObject[] {
  const { ownedFields } = cache;
  return kind.installed.flatMap((type) =>
    cache.list(type).filter((o) =>
      belongsTo(o, kind.module) &&
      (ownedFields === undefined ||
        ownedFields.call(cache, type, o.metadata.namespace, o.metadata.name) !== undefined)
    )
  );
}

/** User objects per kind, as sorted `namespace/name` (`{ Function: ["a/f"] }`). */
export function userObjectNames(
  kind: ModuleKind,
  cache: CacheReader,
): Record<string, string[]> {
  return Object.fromEntries(
    kind.userTypes.map((type) => [type.kind, cache.list(type).map(objectKey).sort()]),
  );
}

/** How soon a module object whose deletion waits for a user-object count is looked at again. */
export const UNKNOWN_USER_OBJECTS_REQUEUE_MS = 1_000;

/** User types whose count cannot be trusted (see `isUnknown`): deletion must wait for them. */
export function unknownUserTypes(kind: ModuleKind, cache: CacheReader): ResourceType[] {
  return kind.userTypes.filter((type) => isUnknown(cache, type));
}

/**
 * While a module object is being deleted and a user-object count is unknown, the reducer must not
 * run: it would take "none seen" for "none" and delete the module's CRDs, and with them every user
 * object of those kinds. Then the Plan is to write nothing and look again soon (the runtime also
 * queues the object when the watch goes live). Undefined when the reducer may run.
 */
export function holdDeletion(
  kind: ModuleKind,
  cache: CacheReader,
  object: KubeObject,
): Plan | undefined {
  if (!object.metadata.deletionTimestamp || unknownUserTypes(kind, cache).length === 0) {
    return undefined;
  }
  return { ...emptyPlan(), requeueAfterMs: UNKNOWN_USER_OBJECTS_REQUEUE_MS };
}

/** A module's reducer: its Plan from what the cache holds. */
export type ModuleReducer = (input: ModuleInput) => Plan;

/**
 * The controller of a module: its watches and triggers, and a reconcile that reads the reducer's
 * input from the cache (unless `holdDeletion` holds it). The reducer comes from `load`, called by
 * `preload` with the module's CRDs: an operator with no module object never loads a module's
 * reducer, renderers and validation (a dynamic import with a literal specifier, which `deno
 * compile` still embeds).
 */
export function moduleController(
  name: string,
  kind: ModuleKind,
  load: () => Promise<ModuleReducer>,
): ControllerSpec {
  let reduce: ModuleReducer | undefined;
  return {
    name,
    primary: kind.primary,
    watches: moduleWatches(kind),
    // Whether a module object is served depends on its peers: a change of one wakes them all.
    peers: (obj, cache) => sortedKeys([...everyPrimary(kind.primary)(obj, cache), objectKey(obj)]),
    // One at a time: whether a module object is served depends on its peers' `served`, and two
    // peers reconciled at once would each decide from a cache without the other's claim.
    concurrency: 1,
    // Without a module object, nothing it watches besides that kind leads to work.
    watchesNeedPrimary: true,
    async preload() {
      const [loaded] = await Promise.all([load(), kind.crds.load()]);
      reduce = loaded;
    },
    reconcile(key, cache, ctx) {
      const { namespace, name: objectName } = splitKey(key);
      const object = cache.get(kind.primary, namespace, objectName);
      if (!object) return undefined;
      if (!reduce) throw new Error(`${name}: reconcile before preload (the reducer is not loaded)`);
      return holdDeletion(kind, cache, object) ?? guardDeletion(
        kind,
        object,
        reduce({
          object,
          peers: cache.list(kind.primary),
          claim: {
            namespace: ctx.namespace,
            module: kind.module,
            observed: cache.get(RESOURCES.Lease, ctx.namespace, claimName(kind.module)),
          },
          installed: installedObjects(kind, cache),
          userObjects: userObjectNames(kind, cache),
          now: ctx.now,
          images: ctx.images,
          crds: kind.crds.get(),
          ...(kind.lookups ? { lookups: cache.list(DNS_LOOKUP) } : {}),
          ...(ctx.lastOutcome ? { lastOutcome: ctx.lastOutcome } : {}),
        }),
      );
    },
  };
}

/**
 * A Plan for a module object being deleted that deletes anything or removes the finalizer must
 * first find, with a live list, none of the user's objects that block the deletion (ScaledObjects,
 * Functions, ...): the cache can be behind by one created a moment before the deletion (seen in a
 * cold CI run: a Function applied just before the Serverless's deletion was not yet cached, and
 * the module was being removed, CRDs included), and the finalizer guard besides.
 */
export function guardDeletion(kind: ModuleKind, object: KubeObject, plan: Plan): Plan {
  const guarded = guardFinalizer(kind, plan);
  if (!object.metadata.deletionTimestamp) return guarded;
  if (guarded.delete.length === 0 && !guarded.finalizer?.remove) return guarded;
  const blockers = kind.userTypes.map((type) => ({
    apiVersion: apiVersionOf(type),
    kind: type.kind,
  }));
  return { ...guarded, blockers };
}

/**
 * A Plan that removes the module's finalizer must first find, with a live list, none of the
 * objects the module installs: a watch that stalled unnoticed can leave the cache without an
 * object applied before it stalled (sweep seed 272: an APIService applied 34 s before the deletion
 * was never seen, and the finalizer went while it remained).
 */
export function guardFinalizer(kind: ModuleKind, plan: Plan): Plan {
  if (!plan.finalizer?.remove) return plan;
  const labelSelector = `${MANAGED_SELECTOR},${MODULE_LABEL}=${kind.module}`;
  const noneLeft = kind.installed.map((type) => ({
    apiVersion: apiVersionOf(type),
    kind: type.kind,
    labelSelector,
    appliedBy: FIELD_MANAGER,
  }));
  return { ...plan, noneLeft };
}
