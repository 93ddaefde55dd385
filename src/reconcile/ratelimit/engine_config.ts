/**
 * The engine's configuration of a RateLimit's domain (envoyproxy/ratelimit, docs/global-engine.md):
 * derived from the same `globalEntries` as the route actions, so its descriptors are exactly
 * those the proxies send; checked by the rules the engine applies when it loads a configuration
 * (one bad domain refuses a whole update); printed as the engine's `/rlconfig` prints it, so what
 * an engine loaded can be compared with what was sent; carried on the EnvoyFilter
 * (ENGINE_DOMAIN_ANNOTATION) and read back from it, and the snapshot the operator's xDS server
 * serves is those of the filters it owns. Pure.
 *
 * The engine's source at the pinned version (the Go module cache,
 * github.com/envoyproxy/ratelimit@v1.4.1-0.20260122083618-3fb702589d36): src/config/config_impl.go
 * (`loadDescriptors`, `GetLimit`, `dump`), src/config/config_xds.go (the xDS resource to its
 * YAML form), api/ratelimit/config/ratelimit/v3/rls_conf.proto (the resource).
 */
import type { GlobalLimit, RateLimitSpec } from "../../api/ratelimit.ts";
import type { GlobalUnit } from "../../api/ratelimit_bounds.ts";
import type { DescriptorEntry } from "../../api/envoy.ts";
import type { KubeObject } from "../../api/object.ts";
import { isObject } from "../../api/json.ts";
import { ENGINE_DOMAIN_ANNOTATION, globalDomain } from "../../api/global_engine.ts";
import { globalEntries } from "./entries.ts";
import { isRateLimitFilter } from "./input.ts";

/** The engine's units the API's map to (rls_conf.proto `RateLimitUnit`). */
export type EngineUnit = "SECOND" | "MINUTE" | "HOUR" | "DAY";

/** The engine's unit of each of the API's. */
export const ENGINE_UNIT_OF: Readonly<Record<GlobalUnit, EngineUnit>> = {
  Second: "SECOND",
  Minute: "MINUTE",
  Hour: "HOUR",
  Day: "DAY",
};

/** A limit of the engine: requests per unit (rls_conf.proto `RateLimitPolicy`). */
export interface EngineRateLimit {
  unit: EngineUnit;
  /** A uint32. */
  requestsPerUnit: number;
}

/**
 * One descriptor of a domain's configuration (rls_conf.proto `RateLimitDescriptor`, protobuf
 * JSON names): its key, its value (absent: every value of the key matches, each counted apart),
 * the limit of a request descriptor that ends here, shadow mode, and the descriptors nested in it.
 */
export interface EngineDescriptor {
  key: string;
  value?: string;
  rateLimit?: EngineRateLimit;
  shadowMode?: boolean;
  descriptors?: EngineDescriptor[];
}

/** The engine's configuration of one domain (rls_conf.proto `RateLimitConfig`, its name the domain). */
export interface EngineDomainConfig {
  domain: string;
  descriptors: EngineDescriptor[];
}

/**
 * The descriptors that limit the request descriptors `lists` (each an entry list, its limit):
 * the list [e1..en] becomes e1 > e2 > ... > en, nested, with the limit on en; an entry with an
 * empty value (the per-client one, whose value each request gives) is a key without value, which
 * the engine matches for any value after it found no `key_value` (config_impl.go `GetLimit`).
 */
function chains(
  lists: readonly { entries: readonly DescriptorEntry[]; limit: EngineRateLimit }[],
  shadow: boolean,
): EngineDescriptor[] {
  const out: EngineDescriptor[] = [];
  for (const { entries, limit } of lists) {
    let inner: EngineDescriptor | undefined;
    for (let i = entries.length - 1; i >= 0; i--) {
      const { key, value } = entries[i];
      const d: EngineDescriptor = { key, ...(value !== "" ? { value } : {}) };
      if (inner === undefined) {
        d.rateLimit = { unit: limit.unit, requestsPerUnit: limit.requestsPerUnit };
        if (shadow) d.shadowMode = true;
      } else d.descriptors = [inner];
      inner = d;
    }
    if (inner !== undefined) out.push(inner);
  }
  return out;
}

/** The engine's limit of a global limit. */
function engineLimit(limit: GlobalLimit): EngineRateLimit {
  return { unit: ENGINE_UNIT_OF[limit.unit], requestsPerUnit: limit.requests };
}

/**
 * The engine's configuration of `domain` for the entry lists `entries` of a global part (those
 * of `globalEntries`: its rules' in order, then the default's when it has one), `shadow` for
 * spec.enforce false. For a renderer that has the entries already.
 */
export function engineDomainOfEntries(
  domain: string,
  global: NonNullable<RateLimitSpec["global"]>,
  entries: readonly { entries: readonly DescriptorEntry[] }[],
  shadow: boolean,
): EngineDomainConfig {
  const rules = global.rules ?? [];
  const lists = entries.map((e, i) => ({
    entries: e.entries,
    limit: engineLimit(i < rules.length ? rules[i].limit : global.default!.limit),
  }));
  return { domain, descriptors: chains(lists, shadow) };
}

/**
 * The engine's configuration of RateLimit `namespace`/`name`'s domain (`globalDomain`), from its
 * spec's global part; undefined without one.
 */
export function engineDomainOf(
  namespace: string,
  name: string,
  spec: Pick<RateLimitSpec, "global" | "enforce">,
): EngineDomainConfig | undefined {
  const global = spec.global;
  if (global === undefined) return undefined;
  return engineDomainOfEntries(
    globalDomain(namespace, name),
    global,
    globalEntries(global),
    !spec.enforce,
  );
}

/** The largest `requests_per_unit` (a uint32). */
const UINT32_MAX = 4294967295;

const UNITS: ReadonlySet<string> = new Set(Object.values(ENGINE_UNIT_OF));

/** A descriptor's key among its siblings: `key`, or `key_value` (config_impl.go `finalKey`). */
function compositeKey(d: EngineDescriptor): string {
  return d.value !== undefined && d.value !== "" ? `${d.key}_${d.value}` : d.key;
}

/**
 * What the engine would refuse in a domain's configuration, in its words where it has them
 * (config_impl.go `loadConfig`, `loadDescriptors`): an empty domain, an empty key, two descriptors
 * of one level with the same composite key, an unknown unit; and what the engine would load but
 * not as meant, so not handed over either: a `requests_per_unit` that is not a uint32 (it would be
 * cut), a composite key ending in `*` (the engine matches it as a prefix wildcard; the operator
 * never means one). Empty when the engine loads it as written.
 */
export function checkEngineDomain(config: EngineDomainConfig): string[] {
  const problems: string[] = [];
  if (config.domain === "") problems.push("config file cannot have empty domain");
  const walk = (descriptors: readonly EngineDescriptor[], parent: string) => {
    const seen = new Set<string>();
    for (const d of descriptors) {
      if (d.key === "") {
        problems.push(`${parent}: descriptor has empty key`);
        continue;
      }
      const key = compositeKey(d);
      const full = parent + key;
      if (seen.has(key)) problems.push(`duplicate descriptor composite key '${full}'`);
      seen.add(key);
      if (key.endsWith("*")) {
        problems.push(`'${full}' ends in '*', which the engine reads as a wildcard`);
      }
      const limit = d.rateLimit;
      if (limit !== undefined) {
        if (!UNITS.has(limit.unit)) {
          problems.push(`${full}: invalid rate limit unit '${limit.unit}'`);
        }
        const n = limit.requestsPerUnit;
        if (!Number.isInteger(n) || n < 0 || n > UINT32_MAX) {
          problems.push(
            `${full}: requests_per_unit ${n} is not an integer from 0 to ${UINT32_MAX}`,
          );
        }
      }
      walk(d.descriptors ?? [], full + ".");
    }
  };
  walk(config.descriptors, config.domain + ".");
  return problems;
}

/**
 * The lines the engine's `/rlconfig` prints for this domain once it has loaded it, sorted (the
 * engine prints its descriptors in Go map order, which varies): one for each descriptor with a
 * limit, `<domain>.<composite key>[.<composite key>...]: unit=<UNIT> requests_per_unit=<n>,
 * shadow_mode: <bool>, quota_mode: false` (config_impl.go `dump`; the key is the one its stats
 * are made for, `newParentKey`).
 */
export function rlconfigLines(config: EngineDomainConfig): string[] {
  const lines: string[] = [];
  const walk = (descriptors: readonly EngineDescriptor[], parent: string) => {
    for (const d of descriptors) {
      const full = parent + compositeKey(d);
      const l = d.rateLimit;
      if (l !== undefined) {
        lines.push(
          `${full}: unit=${l.unit} requests_per_unit=${l.requestsPerUnit}, shadow_mode: ${
            d.shadowMode === true
          }, quota_mode: false`,
        );
      }
      walk(d.descriptors ?? [], full + ".");
    }
  };
  walk(config.descriptors, config.domain + ".");
  return lines.sort();
}

/** How deep the annotation's descriptors may nest: the deepest entry list is far shorter. */
const MAX_DEPTH = 64;

const DESCRIPTOR_FIELDS: ReadonlySet<string> = new Set([
  "key",
  "value",
  "rateLimit",
  "shadowMode",
  "descriptors",
]);

/** A descriptor read strictly from JSON, or why not. */
function descriptorOf(v: unknown, where: string, depth: number): EngineDescriptor | string {
  if (!isObject(v)) return `${where}: not an object`;
  for (const k of Object.keys(v)) {
    if (!DESCRIPTOR_FIELDS.has(k)) return `${where}: unknown field ${JSON.stringify(k)}`;
  }
  if (typeof v.key !== "string") return `${where}.key: not a string`;
  const d: EngineDescriptor = { key: v.key };
  if (v.value !== undefined) {
    if (typeof v.value !== "string") return `${where}.value: not a string`;
    d.value = v.value;
  }
  if (v.rateLimit !== undefined) {
    const r = v.rateLimit;
    if (!isObject(r) || Object.keys(r).some((k) => k !== "unit" && k !== "requestsPerUnit")) {
      return `${where}.rateLimit: not {unit, requestsPerUnit}`;
    }
    if (typeof r.unit !== "string" || !UNITS.has(r.unit)) {
      return `${where}.rateLimit.unit: not one of ${[...UNITS].join(", ")}`;
    }
    const n = r.requestsPerUnit;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 0 || n > UINT32_MAX) {
      return `${where}.rateLimit.requestsPerUnit: not an integer from 0 to ${UINT32_MAX}`;
    }
    d.rateLimit = { unit: r.unit as EngineUnit, requestsPerUnit: n };
  }
  if (v.shadowMode !== undefined) {
    if (typeof v.shadowMode !== "boolean") return `${where}.shadowMode: not a boolean`;
    d.shadowMode = v.shadowMode;
  }
  if (v.descriptors !== undefined) {
    const nested = descriptorsOf(v.descriptors, `${where}.descriptors`, depth + 1);
    if (typeof nested === "string") return nested;
    d.descriptors = nested;
  }
  return d;
}

function descriptorsOf(v: unknown, where: string, depth: number): EngineDescriptor[] | string {
  if (!Array.isArray(v)) return `${where}: not a list`;
  if (depth > MAX_DEPTH) return `${where}: nested deeper than ${MAX_DEPTH}`;
  const out: EngineDescriptor[] = [];
  for (let i = 0; i < v.length; i++) {
    const d = descriptorOf(v[i], `${where}[${i}]`, depth);
    if (typeof d === "string") return d;
    out.push(d);
  }
  return out;
}

/**
 * The engine configuration an EnvoyFilter carries (ENGINE_DOMAIN_ANNOTATION), read strictly: JSON
 * of exactly `EngineDomainConfig`'s fields, its domain the filter's own RateLimit's
 * (`<namespace>/<name>` of the filter, which has its RateLimit's name and namespace). Undefined
 * without the annotation, and undefined with a reason added to `problems` when it cannot be read
 * so; never throws.
 */
export function engineDomainOfFilter(
  ef: KubeObject,
  problems?: string[],
): EngineDomainConfig | undefined {
  const text = ef.metadata.annotations?.[ENGINE_DOMAIN_ANNOTATION];
  if (text === undefined) return undefined;
  const where = `EnvoyFilter ${
    ef.metadata.namespace ?? ""
  }/${ef.metadata.name} annotation ${ENGINE_DOMAIN_ANNOTATION}`;
  const fail = (why: string) => {
    problems?.push(`${where}: ${why}`);
    return undefined;
  };
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    return fail(`not JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  if (!isObject(v)) return fail("not an object");
  const extra = Object.keys(v).filter((k) => k !== "domain" && k !== "descriptors");
  if (extra.length > 0) return fail(`unknown field ${JSON.stringify(extra[0])}`);
  if (typeof v.domain !== "string") return fail("domain: not a string");
  const own = globalDomain(ef.metadata.namespace ?? "", ef.metadata.name);
  if (v.domain !== own) {
    return fail(`domain ${JSON.stringify(v.domain)} is not the filter's ${own}`);
  }
  const descriptors = descriptorsOf(v.descriptors, "descriptors", 1);
  if (typeof descriptors === "string") return fail(descriptors);
  return { domain: v.domain, descriptors };
}

/**
 * A domain of the engines' snapshot as the xDS server takes it: its name, a text that identifies
 * its configuration (the same text, the same configuration: the annotation, or the JSON of a
 * configuration), and how to read the configuration, asked only when that text is new for the
 * domain, so a snapshot of thousands of unchanged domains is not read again.
 */
export interface DomainSource {
  domain: string;
  text: string;
  /** The configuration, or why it cannot be read. */
  read: () => EngineDomainConfig | { problem: string };
}

/**
 * The domains carried by the EnvoyFilters this operator made for RateLimits
 * (`isRateLimitFilter`, with ENGINE_DOMAIN_ANNOTATION), each named after its filter (the filter
 * has its RateLimit's namespace and name, so no domain comes twice), in the filters' order.
 */
export function engineDomainSources(envoyFilters: Iterable<KubeObject>): DomainSource[] {
  const out: DomainSource[] = [];
  for (const ef of envoyFilters) {
    if (!isRateLimitFilter(ef)) continue;
    const text = ef.metadata.annotations?.[ENGINE_DOMAIN_ANNOTATION];
    if (text === undefined) continue;
    out.push({
      domain: globalDomain(ef.metadata.namespace ?? "", ef.metadata.name),
      text,
      read: () => {
        const problems: string[] = [];
        return engineDomainOfFilter(ef, problems) ?? { problem: problems[0] };
      },
    });
  }
  return out;
}

/**
 * The engines' snapshot: the domain configurations of `engineDomainSources`, sorted by domain; a
 * filter whose annotation cannot be read is left out, its reason added to `problems`.
 */
export function snapshotOf(
  envoyFilters: Iterable<KubeObject>,
  problems?: string[],
): EngineDomainConfig[] {
  const out: EngineDomainConfig[] = [];
  for (const source of engineDomainSources(envoyFilters)) {
    const read = source.read();
    if ("problem" in read) problems?.push(read.problem);
    else out.push(read);
  }
  return out.sort((a, b) => a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0);
}
