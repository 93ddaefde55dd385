/**
 * The gauges to alert on, computed from the watch cache each time /metrics is read: objects by
 * kind and state, RateLimits by their `Enforced` condition, each RateLimit condition that is not
 * True, and each module object with its served state. Nothing is counted between scrapes (no
 * memory held, no write), and a scrape reads each primary's cached list once: at 10,000
 * RateLimits that took 8.5 ms on a busy 2-core machine (tests/controllers/object_metrics_test.ts).
 */
import { type KubeObject, type ResourceType } from "../api/object.ts";
import { RESOURCES } from "../api/resources.ts";
import { type CacheReader, CollectedGauge, type Metrics, type Sample } from "../runtime/mod.ts";

/** The conditions of a RateLimit that `ratelimit_unmet` reports when they are not True. */
export const RATELIMIT_CONDITIONS = ["Ready", "Enforced"] as const;

type Fields = Record<string, unknown>;

const text = (v: unknown) => (typeof v === "string" ? v : undefined);

/** An object's status; a missing or odd one reads as empty. */
function statusOf(obj: KubeObject): Fields {
  return typeof obj.status === "object" && obj.status !== null ? obj.status as Fields : {};
}

/** `status.state`, or `Unknown` before the operator wrote one. */
function stateOf(obj: KubeObject): string {
  return text(statusOf(obj).state) ?? "Unknown";
}

/** A condition's status and reason; a missing condition is Unknown with no reason. */
function conditionOf(obj: KubeObject, type: string): { status: string; reason: string } {
  const conditions = statusOf(obj).conditions;
  if (Array.isArray(conditions)) {
    for (const c of conditions as unknown[]) {
      if (typeof c !== "object" || c === null || (c as Fields).type !== type) continue;
      return {
        status: text((c as Fields).status) ?? "Unknown",
        reason: text((c as Fields).reason) ?? "",
      };
    }
  }
  return { status: "Unknown", reason: "" };
}

/** Samples of label sets counted by `keyOf` (two label values, joined). */
function counted<T>(
  items: Iterable<T>,
  valuesOf: (item: T) => readonly [string, string],
  names: readonly [string, string],
): Sample[] {
  const counts = new Map<string, number>();
  for (const item of items) {
    const [a, b] = valuesOf(item);
    const k = `${a}\n${b}`;
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return [...counts].map(([k, n]) => {
    const [a, b] = k.split("\n");
    return [{ [names[0]]: a, [names[1]]: b }, n];
  });
}

/** The primaries whose gauges are served: those the enabled controllers watch. */
export interface ObjectMetricsScope {
  cache: CacheReader;
  /** The primary types of the controllers that run. */
  primaries: readonly ResourceType[];
}

const MODULE_KINDS = [RESOURCES.Serverless.kind, RESOURCES.Scaler.kind];

/** The object gauges, for `metrics.add`; their `collect` reads `scope()` when it is set. */
export class ObjectMetrics {
  /** Objects by kind and `status.state` (`Unknown` before the operator wrote one). */
  readonly objects = new CollectedGauge(
    "platform_operator_objects",
    "Serverless, Scaler and RateLimit objects by kind and status.state.",
  );
  /** RateLimits by the status and reason of their Enforced condition. */
  readonly enforced = new CollectedGauge(
    "platform_operator_ratelimits_enforced",
    "RateLimits by the status and reason of their Enforced condition.",
  );
  /** RateLimits by the status and reason of their Accepted condition. */
  readonly accepted = new CollectedGauge(
    "platform_operator_ratelimits_accepted",
    "RateLimits by the status and reason of their Accepted condition (what istiod says the proxies took).",
  );
  /**
   * RateLimits with a global part by the status and reason of their GlobalEnforced condition
   * (what the engine's Pods say they hold); those without the condition are not counted.
   */
  readonly globalEnforced = new CollectedGauge(
    "platform_operator_ratelimits_global_enforced",
    "RateLimits with spec.global by the status and reason of their GlobalEnforced condition (what the rate limit engine's Pods say they hold).",
  );
  /**
   * 1 for each RateLimit condition (Ready, Enforced) that is not True, and for Accepted and
   * GlobalEnforced when they are False (a proxy rejected the config, the engine does not enforce
   * the global part; Unknown is not counted: an operator that does not ask istiod leaves Accepted
   * so, and a push under way is Unknown); none when all are met.
   */
  readonly unmet = new CollectedGauge(
    "platform_operator_ratelimit_unmet",
    "1 for each RateLimit condition (Ready, Enforced) that is not True, and Accepted or GlobalEnforced when False, by namespace and name.",
  );
  /** 1 for each Serverless and Scaler, with its state and whether it is the served one. */
  readonly modules = new CollectedGauge(
    "platform_operator_module",
    "1 for each Serverless and Scaler object, with its state and served (True for the one served).",
  );

  /** Adds the gauges to `metrics` and reads them from `scope` at each scrape. */
  register(metrics: Metrics, scope: () => ObjectMetricsScope | undefined): void {
    const lists = (kinds?: readonly string[]) => {
      const s = scope();
      if (!s) return [];
      return s.primaries.filter((t) => !kinds || kinds.includes(t.kind))
        .map((t) => ({ type: t, objects: s.cache.list(t) }));
    };
    this.objects.collect = () =>
      lists().flatMap(({ type, objects }) =>
        counted(objects, (o) => [type.kind, stateOf(o)], ["kind", "state"])
      );
    /** RateLimits counted by the status and reason of their condition `type`. */
    const byCondition = (type: string, present = false) => () =>
      lists([RESOURCES.RateLimit.kind]).flatMap(({ objects }) =>
        counted(present ? objects.filter((o) => hasCondition(o, type)) : objects, (o) => {
          const c = conditionOf(o, type);
          return [c.status, c.reason];
        }, ["status", "reason"])
      );
    this.enforced.collect = byCondition("Enforced");
    this.accepted.collect = byCondition("Accepted");
    this.globalEnforced.collect = byCondition("GlobalEnforced", true);
    this.unmet.collect = () =>
      lists([RESOURCES.RateLimit.kind]).flatMap(({ objects }) => objects.flatMap(unmetOf));
    this.modules.collect = () =>
      lists(MODULE_KINDS).flatMap(({ type, objects }) =>
        objects.map((o): Sample => [{
          kind: type.kind,
          namespace: o.metadata.namespace ?? "",
          name: o.metadata.name,
          state: stateOf(o),
          served: text(statusOf(o).served) ?? "Unknown",
        }, 1])
      );
    for (
      const g of [
        this.objects,
        this.enforced,
        this.accepted,
        this.globalEnforced,
        this.unmet,
        this.modules,
      ]
    ) {
      metrics.add(g);
    }
  }
}

/** The conditions `ratelimit_unmet` reports only when False. */
const FALSE_ONLY: readonly string[] = ["Accepted", "GlobalEnforced"];

/** True when the object has a condition of `type`. */
function hasCondition(obj: KubeObject, type: string): boolean {
  const conditions = statusOf(obj).conditions;
  return Array.isArray(conditions) &&
    conditions.some((c) => typeof c === "object" && c !== null && (c as Fields).type === type);
}

/** The `ratelimit_unmet` samples of one RateLimit: a condition missing counts as Unknown. */
function unmetOf(obj: KubeObject): Sample[] {
  const out: Sample[] = [];
  for (const type of [...RATELIMIT_CONDITIONS, ...FALSE_ONLY]) {
    const c = conditionOf(obj, type);
    if (c.status === "True" || (FALSE_ONLY.includes(type) && c.status !== "False")) continue;
    out.push([{
      namespace: obj.metadata.namespace ?? "",
      name: obj.metadata.name,
      condition: type,
      ...c,
    }, 1]);
  }
  return out;
}
