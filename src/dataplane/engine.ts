/**
 * envoyproxy/ratelimit ("the engine", docs/global-engine.md) as a pure model of its fixed windows,
 * checked step by step against its source (github.com/envoyproxy/ratelimit at the pin of
 * tools/ratelimit-engine/go.mod):
 *
 * 1. The limit of a descriptor: `config_impl.go` `GetLimit`, walking the domain's nested
 *    descriptors entry by entry, `key_value` first, else `key` (any value); a limit only on the
 *    node of the descriptor's last entry; an unknown domain, or no limit: OK, nothing counted.
 * 2. `now` in whole Unix seconds; the window starts at `(now / divider) * divider`
 *    (`cache_key.go` `GenerateCacheKey`, `utilities.go` `UnitToDivider`).
 * 3. The counter: `<prefix><domain>_<key>_<value>_..._<window start>`, one for every engine and
 *    proxy sharing the Redis.
 * 4. `INCRBY hits` (the request's `hits_addend`, at least 1: `GetHitsAddends`) for each descriptor
 *    with a limit, in order, refused calls included (`fixed_cache_impl.go` `DoLimit`, with
 *    `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT` and the local cache at their defaults, off).
 * 5. OVER_LIMIT when the count after the call exceeds `requests_per_unit`, else OK with
 *    `limitRemaining = requests_per_unit - count`; `durationUntilReset = divider - now % divider`
 *    (`base_limiter.go` `GetResponseDescriptorStatus`).
 * 6. Shadow mode turns a descriptor's OVER_LIMIT into OK (limitRemaining 0) after counting; the
 *    overall code is OVER_LIMIT when any descriptor is (`service/ratelimit.go`
 *    `shouldRateLimitWorker`); an `unlimited` limit is OK with limitRemaining 2^32-1, not counted.
 *
 * Not modelled, refused when a configuration uses them: wildcard values (`value: "a*"`),
 * `replaces`, `share_threshold`, quota mode. Deterministic: the caller passes the time.
 */
import { z } from "zod";
import { type FieldError, toFieldErrors } from "../api/issues.ts";
import { type DescriptorEntry, UINT32_MAX } from "../api/envoy.ts";
import { at } from "../api/json.ts";
import { ENGINE_DOMAIN_ANNOTATION } from "../api/global_engine.ts";

/** The engine's units (`ratelimit.config.ratelimit.v3.RateLimitUnit`). */
export const WINDOW_UNITS = ["SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "YEAR"] as const;
/** One of the engine's units. */
export type WindowUnit = typeof WINDOW_UNITS[number];

/** `UnitToDivider`: a unit's window in seconds (a MONTH is 30 days, a YEAR 365). */
export const UNIT_SECONDS: Readonly<Record<WindowUnit, number>> = {
  SECOND: 1,
  MINUTE: 60,
  HOUR: 3600,
  DAY: 86400,
  WEEK: 604800,
  MONTH: 2592000,
  YEAR: 31536000,
};

/** The start (Unix seconds) of the window of `unit` holding `nowS`: aligned to the epoch. */
export function windowStart(nowS: number, unit: WindowUnit): number {
  const d = UNIT_SECONDS[unit];
  return Math.floor(nowS / d) * d;
}

/** The engine's clock: `time.Now().Unix()`, whole seconds. */
export function engineSeconds(nowMs: number): number {
  return Math.floor(nowMs / 1000);
}

/** A limit of the engine's configuration. */
export interface ModelLimit {
  unit: WindowUnit;
  requestsPerUnit: number;
  unlimited?: boolean;
}

/** One descriptor of a domain's configuration, nested (rls_conf.proto `RateLimitDescriptor`). */
export interface ModelDescriptor {
  key: string;
  /** Absent: every value of `key` (that has no descriptor of its own) has its own counter. */
  value?: string;
  rateLimit?: ModelLimit;
  shadowMode?: boolean;
  descriptors?: ModelDescriptor[];
}

/** One domain's configuration (rls_conf.proto `RateLimitConfig`). */
export interface ModelDomain {
  domain: string;
  descriptors: ModelDescriptor[];
}

/** Camel-case protobuf JSON names as the engine's YAML (snake case) spells them. */
function snake(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snake);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map((
      [k, v],
    ) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), snake(v)]),
  );
}

const LimitSchema = z.strictObject({
  // The YAML loader upper-cases the unit (config_impl.go); xDS sends the enum's name.
  unit: z.string().transform((u) => u.toUpperCase()).pipe(z.enum(WINDOW_UNITS)),
  requests_per_unit: z.number().int().min(0).max(UINT32_MAX).default(0),
  unlimited: z.boolean().optional(),
  name: z.string().optional(),
});

interface RawDescriptor {
  key: string;
  value?: string;
  rate_limit?: z.output<typeof LimitSchema>;
  shadow_mode?: boolean;
  detailed_metric?: boolean;
  value_to_metric?: boolean;
  descriptors?: RawDescriptor[];
}

const DescriptorSchema: z.ZodType<RawDescriptor> = z.lazy(() =>
  z.strictObject({
    key: z.string().min(1),
    value: z.string().optional(),
    rate_limit: LimitSchema.optional(),
    shadow_mode: z.boolean().optional(),
    detailed_metric: z.boolean().optional(),
    value_to_metric: z.boolean().optional(),
    descriptors: z.array(DescriptorSchema).optional(),
  })
);

const DomainSchema = z.strictObject({
  name: z.string().optional(),
  domain: z.string().min(1),
  descriptors: z.array(DescriptorSchema).default([]),
});

/** A loaded configuration, or what the engine (or the model) refuses in it. */
export type ModelDomainLoad = { ok: true; value: ModelDomain } | {
  ok: false;
  errors: FieldError[];
};

/**
 * Reads one domain's configuration, in the engine's YAML names or protobuf JSON: what the engine
 * refuses (`config_impl.go`: an empty domain, a duplicate key or key_value at one level, an unknown
 * unit) and what this model does not follow (wildcards, `replaces`, `share_threshold`, quota
 * mode: unknown fields here) are errors naming the field.
 */
export function loadEngineDomain(value: unknown): ModelDomainLoad {
  const raw = snake(value);
  const parsed = DomainSchema.safeParse(raw);
  if (!parsed.success) return { ok: false, errors: toFieldErrors(parsed.error, raw) };
  const errors: FieldError[] = [];
  const convert = (list: RawDescriptor[], path: string): ModelDescriptor[] => {
    const seen = new Set<string>();
    return list.map((d, i) => {
      const at = `${path}[${i}]`;
      const composite = d.value === undefined || d.value === "" ? d.key : `${d.key}_${d.value}`;
      if (seen.has(composite)) {
        errors.push({
          path: `${at}.key`,
          message: `duplicate descriptor composite key '${composite}'`,
        });
      }
      seen.add(composite);
      if (d.value?.endsWith("*")) {
        errors.push({ path: `${at}.value`, message: "wildcard values are not modelled" });
      }
      return {
        key: d.key,
        ...(d.value ? { value: d.value } : {}),
        ...(d.rate_limit
          ? {
            rateLimit: {
              unit: d.rate_limit.unit,
              requestsPerUnit: d.rate_limit.requests_per_unit,
              ...(d.rate_limit.unlimited ? { unlimited: true } : {}),
            },
          }
          : {}),
        ...(d.shadow_mode ? { shadowMode: true } : {}),
        ...(d.descriptors?.length
          ? { descriptors: convert(d.descriptors, `${at}.descriptors`) }
          : {}),
      };
    });
  };
  const descriptors = convert(parsed.data.descriptors, "descriptors");
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, value: { domain: parsed.data.domain, descriptors } };
}

interface Node {
  limit?: ModelLimit;
  shadowMode: boolean;
  children: Map<string, Node>;
}

function nodesOf(list: readonly ModelDescriptor[] | undefined): Map<string, Node> {
  const out = new Map<string, Node>();
  for (const d of list ?? []) {
    out.set(d.value ? `${d.key}_${d.value}` : d.key, {
      ...(d.rateLimit ? { limit: d.rateLimit } : {}),
      shadowMode: d.shadowMode === true,
      children: nodesOf(d.descriptors),
    });
  }
  return out;
}

/** The limit a descriptor gets, and whether in shadow mode. */
interface FoundLimit {
  limit: ModelLimit;
  shadowMode: boolean;
}

/** The engine's loaded configuration: its domains, compiled for `GetLimit`. */
export class EngineConfig {
  readonly #domains = new Map<string, Map<string, Node>>();
  /** The domains as given (later ones of the same name replace earlier ones). */
  readonly domains: readonly ModelDomain[];

  constructor(domains: readonly ModelDomain[]) {
    this.domains = domains;
    for (const d of domains) this.#domains.set(d.domain, nodesOf(d.descriptors));
  }

  /** True when `domain` is loaded. */
  has(domain: string): boolean {
    return this.#domains.has(domain);
  }

  /** `GetLimit`: the limit of `entries` in `domain`; undefined when none (or an unknown domain). */
  limitOf(domain: string, entries: readonly DescriptorEntry[]): FoundLimit | undefined {
    let level = this.#domains.get(domain);
    if (level === undefined) return undefined;
    let found: FoundLimit | undefined;
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i];
      const next: Node | undefined = level.get(`${e.key}_${e.value}`) ?? level.get(e.key);
      if (next === undefined) break;
      // A limit counts only on the node of the last entry ("request depth does not match config
      // depth" otherwise).
      if (next.limit && i === entries.length - 1) {
        found = { limit: next.limit, shadowMode: next.shadowMode };
      }
      if (next.children.size === 0) break;
      level = next.children;
    }
    return found;
  }
}

/**
 * Redis as the engine uses it: counters by key, shared by every engine that reaches it. A key
 * lives `divider` seconds after its last INCRBY (its EXPIRE with no jitter: the shortest life the
 * engine gives it), after which the engine, whose key has moved on to a later window, never asks
 * for it again; `prune` forgets such keys.
 */
export class EngineCounters {
  readonly #counts = new Map<string, { count: number; expiresS: number }>();
  #prunedAt = -Infinity;

  /** INCRBY then EXPIRE in one pipeline: the count after the call. */
  incrBy(key: string, hits: number, nowS: number, ttlS: number): number {
    const live = this.#counts.get(key);
    const count = (live && live.expiresS > nowS ? live.count : 0) + hits;
    this.#counts.set(key, { count, expiresS: nowS + ttlS });
    return count;
  }

  /** The count of `key` at `nowS` (0 when absent or expired). */
  get(key: string, nowS: number): number {
    const live = this.#counts.get(key);
    return live && live.expiresS > nowS ? live.count : 0;
  }

  /** Forgets keys expired at `nowS`. */
  prune(nowS: number): void {
    if (nowS === this.#prunedAt) return;
    this.#prunedAt = nowS;
    for (const [k, v] of this.#counts) if (v.expiresS <= nowS) this.#counts.delete(k);
  }

  /** Keys held (for tests and bounds). */
  get size(): number {
    return this.#counts.size;
  }
}

/** A call of Envoy's rate limit filter (`envoy.service.ratelimit.v3.RateLimitRequest`). */
export interface EngineRequest {
  domain: string;
  descriptors: readonly (readonly DescriptorEntry[])[];
  /** Hits this call adds (0 or absent: 1). */
  hitsAddend?: number;
}

/** One descriptor's answer (`RateLimitResponse.DescriptorStatus`). */
export interface DescriptorAnswer {
  code: "OK" | "OVER_LIMIT";
  /** The limit that applied; absent when none did. */
  currentLimit?: { requestsPerUnit: number; unit: WindowUnit };
  limitRemaining: number;
  /** Seconds to the end of the window, with a limit. */
  durationUntilReset?: number;
  /**
   * Set when shadow mode turned OVER_LIMIT into OK (what the engine counts in its `shadow_mode`
   * stat; not in its answer).
   */
  shadowOverLimit?: true;
}

/** The engine's answer to a call. */
export interface EngineAnswer {
  overallCode: "OK" | "OVER_LIMIT";
  statuses: DescriptorAnswer[];
  /** The Redis keys counted by the call, in order (for invariants and tests). */
  keys: string[];
}

/** An answer, or the gRPC error Envoy gets instead (then its failure mode decides). */
export type EngineResult = { ok: true; answer: EngineAnswer } | { ok: false; error: string };

/**
 * The engine as a proxy reaches it: the answer to a call sent at `nowMs` on the proxy's clock,
 * or the error Envoy sees (no engine, Redis down, no answer within `timeoutMs`). `cluster` names the
 * engine's Service as the filter does.
 */
export interface EngineClient {
  ask(request: EngineRequest, nowMs: number, timeoutMs: number, cluster: string): EngineResult;
}

/** The counter key of a descriptor (`GenerateCacheKey`, empty `CACHE_KEY_PREFIX` by default). */
export function counterKey(
  domain: string,
  entries: readonly DescriptorEntry[],
  unit: WindowUnit,
  nowS: number,
  prefix = "",
): string {
  let key = `${prefix}${domain}_`;
  for (const e of entries) key += `${e.key}_${e.value}_`;
  return key + String(windowStart(nowS, unit));
}

/**
 * `ShouldRateLimit` of one engine with `config`, counting in `counters` (its Redis) at `nowMs` on
 * the engine's clock. An empty domain or descriptor list is the gRPC error the engine answers.
 */
export function shouldRateLimit(
  config: EngineConfig,
  counters: EngineCounters,
  request: EngineRequest,
  nowMs: number,
  prefix = "",
): EngineResult {
  if (request.domain === "") return { ok: false, error: "rate limit domain must not be empty" };
  if (request.descriptors.length === 0) {
    return { ok: false, error: "rate limit descriptor list must not be empty" };
  }
  const nowS = engineSeconds(nowMs);
  const hits = Math.max(1, request.hitsAddend ?? 0);
  let over = false;
  const keys: string[] = [];
  const statuses = request.descriptors.map((entries): DescriptorAnswer => {
    const found = config.limitOf(request.domain, entries);
    if (found?.limit.unlimited) return { code: "OK", limitRemaining: UINT32_MAX };
    if (found === undefined) return { code: "OK", limitRemaining: 0 };
    const { unit, requestsPerUnit } = found.limit;
    const divider = UNIT_SECONDS[unit];
    const key = counterKey(request.domain, entries, unit, nowS, prefix);
    keys.push(key);
    const count = counters.incrBy(key, hits, nowS, divider);
    const currentLimit = { requestsPerUnit, unit };
    const durationUntilReset = divider - (nowS % divider);
    if (count > requestsPerUnit) {
      if (!found.shadowMode) over = true;
      return {
        code: found.shadowMode ? "OK" : "OVER_LIMIT",
        currentLimit,
        limitRemaining: 0,
        durationUntilReset,
        ...(found.shadowMode ? { shadowOverLimit: true as const } : {}),
      };
    }
    return {
      code: "OK",
      currentLimit,
      limitRemaining: requestsPerUnit - count,
      durationUntilReset,
    };
  });
  return { ok: true, answer: { overallCode: over ? "OVER_LIMIT" : "OK", statuses, keys } };
}

/** One engine replica (Pod) of an {@link EngineModel}. */
export interface EngineReplica {
  /** The configuration it has loaded. */
  config: EngineConfig;
  /** Ready: the proxies' calls reach it (the Service's endpoints). */
  ready: boolean;
  /** Its clock's offset from the proxies', in ms (each engine reads its own clock). */
  clockOffsetMs?: number;
}

/**
 * The engine as the proxies reach it (an {@link EngineClient}): replicas behind one Service, each
 * call going to the next Ready one in turn (gRPC over HTTP/2 balances per call), all counting in
 * one Redis. Redis down: every call is an error, nothing counted. Redis slow (`redisLatencyMs`):
 * the call counts, but its answer comes after the filter's timeout, so Envoy sees an error.
 */
export class EngineModel implements EngineClient {
  readonly counters = new EngineCounters();
  replicas: EngineReplica[];
  redisUp = true;
  redisLatencyMs = 0;
  /** Calls answered so far, by replica index. */
  readonly calls: number[];
  #next = 0;

  constructor(replicas: EngineReplica[]) {
    this.replicas = replicas;
    this.calls = replicas.map(() => 0);
  }

  /** Sets every replica's configuration (a new snapshot loaded by all). */
  load(config: EngineConfig): void {
    for (const r of this.replicas) r.config = config;
  }

  ask(request: EngineRequest, nowMs: number, timeoutMs: number): EngineResult {
    const ready = this.replicas.map((r, i) => ({ r, i })).filter((x) => x.r.ready);
    if (ready.length === 0) return { ok: false, error: "no healthy upstream" };
    const { r, i } = ready[this.#next++ % ready.length];
    this.calls[i] = (this.calls[i] ?? 0) + 1;
    if (!this.redisUp) return { ok: false, error: "redis unavailable" };
    const nowS = engineSeconds(nowMs + (r.clockOffsetMs ?? 0));
    this.counters.prune(nowS);
    const result = shouldRateLimit(
      r.config,
      this.counters,
      request,
      nowMs + (r.clockOffsetMs ?? 0),
    );
    if (result.ok && this.redisLatencyMs > timeoutMs) {
      return { ok: false, error: `no answer within ${timeoutMs} ms` };
    }
    return result;
  }
}

/** The engine configuration read from EnvoyFilters, and what could not be read. */
export interface FiltersConfig {
  config: EngineConfig;
  /** One line per filter whose annotation the engine would not load, naming it and the field. */
  problems: string[];
}

/**
 * The engine's configuration as the operator hands it over: the domain each EnvoyFilter carries in
 * its ENGINE_DOMAIN_ANNOTATION (docs/global-engine.md), read as the engine would load it. Objects
 * other than EnvoyFilters, and filters without the annotation, are skipped; a domain given twice
 * keeps the last.
 */
export function engineConfigOfFilters(objects: readonly unknown[]): FiltersConfig {
  const domains: ModelDomain[] = [];
  const problems: string[] = [];
  for (const o of objects) {
    if (at(o, "kind") !== "EnvoyFilter") continue;
    const text = at(o, "metadata", "annotations", ENGINE_DOMAIN_ANNOTATION);
    if (typeof text !== "string") continue;
    const name = `${String(at(o, "metadata", "namespace") ?? "")}/${
      String(at(o, "metadata", "name") ?? "")
    }`;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      problems.push(`EnvoyFilter ${name}: ${ENGINE_DOMAIN_ANNOTATION} is not JSON`);
      continue;
    }
    const loaded = loadEngineDomain(value);
    if (loaded.ok) domains.push(loaded.value);
    else {
      for (const e of loaded.errors) {
        problems.push(`EnvoyFilter ${name}: ${ENGINE_DOMAIN_ANNOTATION} ${e.path}: ${e.message}`);
      }
    }
  }
  return { config: new EngineConfig(domains), problems };
}
