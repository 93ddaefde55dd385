/**
 * Deliberately broken operators for the mutation test: each wraps the real ControllerSpecs (or sets
 * the simulator's operator options) so that one invariant of the simulation must fail. They go in
 * through `SimulationOptions.operator`, the simulator's own injection point; nothing in src/ knows.
 */
import { RESOURCES } from "../../src/api/resources.ts";
import { SCALER_MODULE, scalerController } from "../../src/controllers/scaler.ts";
import { reconcileScaler } from "../../src/reconcile/scaler/mod.ts";
import { moduleController } from "../../src/controllers/module_controller.ts";
import { SERVERLESS_MODULE, serverlessController } from "../../src/controllers/serverless.ts";
import { claimLease } from "../../src/reconcile/module/claim.ts";
import {
  MANAGED_BY,
  MANAGED_BY_LABEL,
  SCALER_FINALIZER,
  SERVERLESS_FINALIZER,
} from "../../src/reconcile/labels.ts";
import type { Plan } from "../../src/reconcile/plan.ts";
import { filterLimits } from "../../src/reconcile/ratelimit/input.ts";
import { ACCEPTED_CONDITION } from "../../src/reconcile/ratelimit/status.ts";
import { PROXY_STATUS } from "../../src/api/istiod.ts";
import { ENGINE_DOMAIN_ANNOTATION } from "../../src/api/global_engine.ts";
import { reconcileServerless } from "../../src/reconcile/serverless/mod.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";
import type {
  CacheReader,
  ControllerSpec,
  ReconcileContext,
} from "../../src/runtime/controller_spec.ts";
import { SIM_CONTROLLERS } from "../../sim/operator.ts";
import { allControllersFor } from "../../src/controllers/registry.ts";
import { DEFAULT_MESH } from "../../src/dataplane/mod.ts";
import type { SimulationOptions } from "../../sim/simulation.ts";

/** The RateLimit controller the simulated operator runs (the mesh's root namespace set). */
const rateLimitController = SIM_CONTROLLERS.find((c) => c.name === "ratelimit")!;

/** What a mutant changes in a run. */
export type MutantOptions = Pick<SimulationOptions, "operator" | "userObjects" | "engine">;

type PlanEdit = (
  plan: Plan,
  key: string,
  cache: CacheReader,
  ctx: ReconcileContext,
) => Plan | undefined;

/** The spec with its Plans passed through `edit`. */
function editPlans(spec: ControllerSpec, edit: PlanEdit): ControllerSpec {
  return {
    ...spec,
    reconcile(key, cache, ctx) {
      const plan = spec.reconcile(key, cache, ctx);
      return plan && edit(plan, key, cache, ctx);
    },
  };
}

/** Every real controller, with `name`'s replaced by `mutant`. */
function swap(...mutants: ControllerSpec[]): MutantOptions {
  const byName = new Map(mutants.map((m) => [m.name, m]));
  return { operator: { controllers: SIM_CONTROLLERS.map((c) => byName.get(c.name) ?? c) } };
}

function primaryOf(cache: CacheReader, type: ResourceType, key: string): KubeObject | undefined {
  const [namespace, name] = key.includes("/") ? key.split("/") : [undefined, key];
  return cache.get(type, namespace, name);
}

type ServerlessInput = Parameters<typeof reconcileServerless>[0];

/** The real Serverless controller, its reducer reading what `edit` makes of its input. */
function serverlessSeeing(edit: (input: ServerlessInput) => ServerlessInput): MutantOptions {
  return swap(
    moduleController(
      "serverless",
      SERVERLESS_MODULE,
      () => Promise.resolve((input) => reconcileServerless(edit(input))),
    ),
  );
}

/** A Serverless reducer that skips the claim: it believes every object holds the claim Lease. */
export function skipsTheClaim(): MutantOptions {
  return serverlessSeeing((input) => ({
    ...input,
    claim: {
      ...input.claim,
      observed: claimLease(input.claim, (input.object as KubeObject).metadata),
    },
  }));
}

/** A user's ConfigMap that carries the operator's managed-by label (copied from its output). */
export const USER_COPY: KubeObject = {
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: {
    name: "copied-settings",
    namespace: "platform-system",
    labels: { [MANAGED_BY_LABEL]: MANAGED_BY },
  },
  data: { note: "the user's, copied from the operator's output" },
};

/**
 * A RateLimit Plan that also deletes the user's copy: the runner's guard (the managed-by label)
 * lets it through, and only the creator-based invariant can tell.
 */
export function deletesAUsersObject(): MutantOptions {
  const { namespace, name } = USER_COPY.metadata;
  return {
    ...swap(editPlans(rateLimitController, (plan) => ({
      ...plan,
      delete: [...plan.delete, { apiVersion: "v1", kind: "ConfigMap", namespace, name }],
    }))),
    userObjects: [USER_COPY],
  };
}

/** A RateLimit reducer that writes the user's spec back with minutes turned into seconds. */
export function editsAUsersSpec(): MutantOptions {
  return swap(editPlans(rateLimitController, (plan, key, cache) => {
    const rl = primaryOf(cache, RESOURCES.RateLimit, key);
    if (!rl || rl.metadata.deletionTimestamp) return plan;
    const text = JSON.stringify(rl.spec);
    const normalized = text.replace(/"(\d+)m"/g, (_, n: string) => `"${Number(n) * 60}s"`);
    if (normalized === text) return plan;
    const { apiVersion, kind, metadata: { name, namespace } } = rl;
    const body = { apiVersion, kind, metadata: { name, namespace }, spec: JSON.parse(normalized) };
    return { ...plan, apply: [...plan.apply, body] };
  }));
}

/** Module reducers that drop the finalizer as soon as the object is being deleted, before cleanup. */
export function dropsTheFinalizerFirst(): MutantOptions {
  const early = (spec: ControllerSpec, finalizer: string) =>
    editPlans(spec, (plan, key, cache) => {
      const obj = primaryOf(cache, spec.primary, key);
      if (!obj?.metadata.deletionTimestamp) return plan;
      return { ...plan, apply: [], delete: [], finalizer: { remove: finalizer } };
    });
  return swap(
    early(serverlessController, SERVERLESS_FINALIZER),
    early(scalerController, SCALER_FINALIZER),
  );
}

/**
 * A Scaler reducer that does not read the aggregator's verdict: it sees KEDA's metrics APIService
 * Available whatever the aggregator says (the Scaler before issue 44).
 */
export function ignoresTheMetricsApi(): MutantOptions {
  const available = {
    conditions: [{ type: "Available", status: "True", reason: "Passed", message: "" }],
  };
  return swap(
    moduleController(
      "scaler",
      SCALER_MODULE,
      () =>
        Promise.resolve((input) =>
          reconcileScaler({
            ...input,
            installed: input.installed.map((o) =>
              o.kind === "APIService" ? { ...o, status: available } : o
            ),
          })
        ),
    ),
  );
}

/**
 * A Serverless reducer that does not read its Deployment's rollout: it sees every Deployment it
 * installed Available, with every replica updated and ready, whatever the Deployment controller says.
 */
export function ignoresTheRollout(): MutantOptions {
  const rolledOut = (d: KubeObject): KubeObject => ({
    ...d,
    status: {
      observedGeneration: d.metadata.generation ?? 0,
      conditions: [{ type: "Available", status: "True", reason: "MinimumReplicasAvailable" }],
    },
  });
  return serverlessSeeing((input) => ({
    ...input,
    installed: input.installed.map((o) => o.kind === "Deployment" ? rolledOut(o) : o),
  }));
}

/**
 * A Scaler reducer that does not read the operator's cluster DNS lookups: it sees none, as when
 * the operator does not ask (the Scaler before this part of issue 44).
 */
export function ignoresClusterDns(): MutantOptions {
  return swap(
    moduleController(
      "scaler",
      { ...SCALER_MODULE, lookups: true },
      () => Promise.resolve((input) => reconcileScaler({ ...input, lookups: [] })),
    ),
  );
}

/** A RateLimit reducer whose condition reasons are not in the state table. */
export function writesAStatusOffTheTable(): MutantOptions {
  return swap(editPlans(rateLimitController, (plan) => {
    const status = plan.status as { conditions?: { reason: string }[] } | undefined;
    if (!status?.conditions?.length) return plan;
    const conditions = status.conditions.map((c) => ({ ...c, reason: "AllGood" }));
    return { ...plan, status: { ...status, conditions } };
  }));
}

/**
 * A RateLimit reducer whose status.mode describes the spec, not the filter in force: after a
 * refused update that flips spec.enforce, it says Shadow while the last good filter enforces (or
 * the other way round).
 */
export function describesTheSpecsMode(): MutantOptions {
  return swap(editPlans(rateLimitController, (plan, key, cache) => {
    const status = plan.status as { mode?: string } | undefined;
    const rl = primaryOf(cache, RESOURCES.RateLimit, key);
    if (!status?.mode || !rl) return plan;
    const shadow = (rl.spec as { enforce?: unknown }).enforce === false;
    return { ...plan, status: { ...status, mode: shadow ? "Shadow" : "Enforcing" } };
  }));
}

/**
 * A RateLimit reducer that, as this operator once did, deletes the EnvoyFilter when a RateLimit's
 * new spec is refused: one typo and the last good limit is gone.
 */
export function dropsTheLastGoodLimit(): MutantOptions {
  return swap(editPlans(rateLimitController, (plan, key) => {
    const status = plan.status as { state?: string; enforcedGeneration?: number } | undefined;
    if (status?.state !== "Error" || status.enforcedGeneration === undefined) return plan;
    const [namespace, name] = key.split("/");
    const filter = {
      apiVersion: "networking.istio.io/v1alpha3",
      kind: "EnvoyFilter",
      namespace,
      name,
    };
    return { ...plan, delete: [...plan.delete, filter] };
  }));
}

/** Two replicas with no leader election: each runs its controllers as if it led. */
export function ignoresTheLease(): MutantOptions {
  return { operator: { leaderElection: false, replicas: 2 } };
}

/** A RateLimit reducer that never writes a status: it never converges. */
export function neverConverges(): MutantOptions {
  return swap(editPlans(rateLimitController, (plan) => ({ ...plan, status: undefined })));
}

/**
 * Module controllers whose cache never forgets: an installed object deleted by someone else still
 * looks present (an informer that drops DELETE events), so it is never made again.
 */
export function neverForgets(): MutantOptions {
  const remembering = (spec: ControllerSpec): ControllerSpec => {
    // Each object as last seen, with the operator's applied fields as the cache said then.
    const seen = new Map<string, Map<string, { object: KubeObject; owned: unknown }>>();
    const keep = (cache: CacheReader, type: ResourceType) => {
      const t = `${type.group}/${type.kind}`;
      const mem = seen.get(t) ?? new Map<string, { object: KubeObject; owned: unknown }>();
      seen.set(t, mem);
      for (const o of cache.list(type)) {
        const { namespace, name } = o.metadata;
        mem.set(`${namespace ?? ""}/${name}`, {
          object: o,
          owned: cache.ownedFields?.(type, namespace, name),
        });
      }
      return mem;
    };
    const isPrimary = (t: ResourceType) => t.kind === spec.primary.kind;
    return {
      ...spec,
      reconcile(key, cache, ctx) {
        const ghostly: CacheReader = {
          ...cache,
          list: (type, namespace) =>
            isPrimary(type)
              ? cache.list(type, namespace)
              : [...keep(cache, type).values()].map((e) => e.object).filter((o) =>
                namespace === undefined || o.metadata.namespace === namespace
              ),
          get: (type, namespace, name) =>
            isPrimary(type)
              ? cache.get(type, namespace, name)
              : keep(cache, type).get(`${namespace ?? ""}/${name}`)?.object,
          ownedFields: (type, namespace, name) =>
            isPrimary(type)
              ? cache.ownedFields?.(type, namespace, name)
              : keep(cache, type).get(`${namespace ?? ""}/${name}`)?.owned,
          isLive: (type) => cache.isLive?.(type) ?? true,
        };
        return spec.reconcile(key, ghostly, ctx);
      },
    };
  };
  return swap(remembering(serverlessController), remembering(scalerController));
}

/** The plan's status with the current period's number in its messages, looked at each period. */
function stamped(plan: Plan, now: number, periodMs: number): Plan {
  const status = plan.status as { conditions?: { message: string }[] } | undefined;
  if (!status?.conditions?.length) return plan;
  // By period, not by millisecond: the write's own watch event must not bring another write.
  const stamp = Math.floor(now / periodMs);
  const conditions = status.conditions.map((c) => ({ ...c, message: `${c.message} (${stamp})` }));
  return { ...plan, status: { ...status, conditions }, requeueAfterMs: periodMs };
}

/**
 * A RateLimit reducer that stamps the time into its status every pass and looks again every
 * `periodMs`: a write at rest each period.
 */
export function writesAtRest(periodMs: number): MutantOptions {
  return swap(editPlans(rateLimitController, (plan, key, cache, ctx) => {
    // One object only, so the writes come exactly once a period.
    const first = cache.list(RESOURCES.RateLimit)[0];
    const firstKey = first && `${first.metadata.namespace}/${first.metadata.name}`;
    return key === firstKey ? stamped(plan, ctx.now, periodMs) : plan;
  }));
}

function moreTokens(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(moreTokens);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map((
      [k, v],
    ) => [k, k === "max_tokens" && typeof v === "number" ? v + 1 : moreTokens(v)]),
  );
}

/** A RateLimit reducer whose EnvoyFilters allow one token more than the spec says. */
export function enforcesTheWrongTokens(): MutantOptions {
  return swap(editPlans(rateLimitController, (plan) => ({
    ...plan,
    apply: plan.apply.map((o) => o.kind === "EnvoyFilter" ? moreTokens(o) as KubeObject : o),
  })));
}

/** `obj` with the limits of the engine domain it carries (its annotation) doubled. */
function doubledEngineLimits(obj: KubeObject): KubeObject {
  const text = obj.metadata.annotations?.[ENGINE_DOMAIN_ANNOTATION];
  if (text === undefined) return obj;
  const double = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(double) : typeof v === "object" && v !== null
      ? Object.fromEntries(
        Object.entries(v).map((
          [k, x],
        ) => [k, k === "requestsPerUnit" && typeof x === "number" ? 2 * x : double(x)]),
      )
      : v;
  return {
    ...obj,
    metadata: {
      ...obj.metadata,
      annotations: {
        ...obj.metadata.annotations,
        [ENGINE_DOMAIN_ANNOTATION]: JSON.stringify(double(JSON.parse(text))),
      },
    },
  };
}

/**
 * A RateLimit reducer that hands the engine twice each global limit (the engine domain its
 * EnvoyFilters carry): the engine admits twice what the RateLimit says in each window.
 */
export function doublesTheGlobalLimit(): MutantOptions {
  return swap(editPlans(rateLimitController, (plan) => ({
    ...plan,
    apply: plan.apply.map((o) => o.kind === "EnvoyFilter" ? doubledEngineLimits(o) : o),
  })));
}

/** A rate limit engine whose Pods each count in a Redis of their own: two Pods, twice the limit. */
export function countsInRedisPerPod(): MutantOptions {
  return { engine: { redisPerPod: true } };
}

/** `value` without per-client entries and actions: a per-client rule as one shared bucket. */
function oneBucketForAll(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.filter((v) => {
      const s = JSON.stringify(v);
      return s !== '{"key":"client","value":""}' &&
        !(s.startsWith('{"request_headers":') && s.includes('"descriptor_key":"client"'));
    }).map(oneBucketForAll);
  }
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, oneBucketForAll(v)]));
}

/** A RateLimit reducer whose per-client rules give all clients one bucket. */
export function sharesOneBucketAmongClients(): MutantOptions {
  return swap(editPlans(rateLimitController, (plan) => ({
    ...plan,
    apply: plan.apply.map((o) => o.kind === "EnvoyFilter" ? oneBucketForAll(o) as KubeObject : o),
  })));
}

/**
 * An operator that takes Istio's default, istio-system, for the mesh's root namespace, while the
 * simulated mesh's is mesh-system: its RateLimits there apply as if namespaced, and reach every
 * namespace.
 */
export function misplacesTheRootNamespace(): MutantOptions {
  return { operator: { controllers: allControllersFor({ meshRootNamespace: "istio-system" }) } };
}

/**
 * A RateLimit reducer that says Accepted without looking: whatever istiod says of the proxies,
 * its Accepted condition is True.
 */
export function claimsAcceptedWithoutLooking(): MutantOptions {
  return swap(editPlans(rateLimitController, (plan) => {
    const status = plan.status as
      | { conditions?: { type: string; status: string; reason: string; message: string }[] }
      | undefined;
    if (!status?.conditions?.some((c) => c.type === ACCEPTED_CONDITION)) return plan;
    const conditions = status.conditions.map((c) =>
      c.type === ACCEPTED_CONDITION
        ? { ...c, status: "True", reason: "Accepted", message: "The one proxy acknowledged it" }
        : c
    );
    return { ...plan, status: { ...status, conditions } };
  }));
}

/**
 * A RateLimit reducer that reads a proxy still pending (not connected, or not yet acknowledged) as
 * one that rejected the push: it writes Accepted=False ProxyRejected naming that proxy.
 */
export function reportsPendingAsRejected(): MutantOptions {
  return swap(editPlans(rateLimitController, (plan) => {
    const status = plan.status as
      | { conditions?: { type: string; status: string; reason: string; message: string }[] }
      | undefined;
    const pending = status?.conditions?.find((c) =>
      c.type === ACCEPTED_CONDITION && c.reason === "Pending"
    );
    const pod = pending && /(?:istiod|acknowledged|in force): ([^;,\s]+)/.exec(pending.message);
    if (!status?.conditions || !pod) return plan;
    const conditions = status.conditions.map((c) =>
      c === pending
        ? {
          ...c,
          status: "False",
          reason: "ProxyRejected",
          message: `1 of 1 proxy rejected the config istiod sent: ${
            pod[1]
          } rejected the listeners istiod sent it: ${c.message}`,
        }
        : c
    );
    return { ...plan, status: { ...status, conditions } };
  }));
}

/**
 * An operator that never asks istiod (as without `--istiod-url`): its RateLimits stay Accepted
 * Unknown (IstiodNotAsked) though every proxy took their filters.
 */
export function neverAsksIstiod(): MutantOptions {
  return {
    operator: {
      controllers: allControllersFor({ meshRootNamespace: DEFAULT_MESH.rootNamespace }),
    },
  };
}

/**
 * A RateLimit controller that trusts a reading of what a proxy holds before a later answer of
 * istiod confirmed it: it sees every ProxyStatus's `held` as confirmed. A dump may come from a
 * push istiod has not sent yet (sim/istiod.ts's push queue), so it says Accepted for a limit the
 * proxy does not hold yet.
 */
export function trustsUnconfirmedReadings(): MutantOptions {
  const confirmed = (o: KubeObject | undefined): KubeObject | undefined => {
    const held = (o?.status as { held?: { limits?: unknown } } | undefined)?.held;
    if (!o || !held?.limits) return o;
    return { ...o, status: { ...o.status as object, held: { ...held, confirmed: true } } };
  };
  return swap({
    ...rateLimitController,
    reconcile(key, cache, ctx) {
      const trusting: CacheReader = {
        ...cache,
        get: (type, namespace, name) => {
          const o = cache.get(type, namespace, name);
          return type.kind === PROXY_STATUS.kind ? confirmed(o) : o;
        },
        list: (type, namespace) => cache.list(type, namespace),
        isLive: (type) => cache.isLive?.(type) ?? true,
      };
      return rateLimitController.reconcile(key, trusting, ctx);
    },
  });
}

/**
 * A RateLimit controller that compares buckets only, as it did before the route digest: it reads
 * every proxy's held limits as carrying the digest of the filter it renders, whatever digest the
 * dump showed. After an edit that keeps the buckets (a rule's path, per-client or shared), it says
 * Accepted for the new generation from the dump of the previous one.
 */
export function comparesBucketsOnly(): MutantOptions {
  return swap({
    ...rateLimitController,
    reconcile(key, cache, ctx) {
      const plan = rateLimitController.reconcile(key, cache, ctx);
      const desired = plan?.apply.find((o) => o.kind === "EnvoyFilter");
      const digest = desired && filterLimits(desired)?.digest;
      if (digest === undefined) return plan;
      const blind = (o: KubeObject | undefined): KubeObject | undefined => {
        const held = (o?.status as { held?: { limits?: object[] } } | undefined)?.held;
        if (!o || o.kind !== PROXY_STATUS.kind || !held?.limits) return o;
        const limits = held.limits.map((l) => ({ ...l, digest }));
        return { ...o, status: { ...o.status as object, held: { ...held, limits } } };
      };
      const blinded: CacheReader = {
        ...cache,
        get: (type, namespace, name) => blind(cache.get(type, namespace, name)),
        list: (type, namespace) => cache.list(type, namespace).map((o) => blind(o) ?? o),
        isLive: (type) => cache.isLive?.(type) ?? true,
      };
      return rateLimitController.reconcile(key, blinded, ctx);
    },
  });
}
