/**
 * What the global rate limit engine's Pods say of themselves (issue #43 point 4), read back from
 * each Pod, never assumed: whether it reaches Redis (`GET /healthcheck` on its HTTP port) and
 * which configuration it has loaded (`GET /rlconfig` on its debug port), turned into objects of a
 * type served inside the operator (src/runtime/local_types.ts), one a Pod, like ProxyStatus
 * (src/api/istiod.ts).
 *
 * Facts, from envoyproxy/ratelimit at the pinned version (docs/global-engine.md):
 *
 * - `/healthcheck` (src/server/health.go `ServeHTTP`) answers 200 with the body `OK` while every
 *   component of its health map is healthy, else 500 with no body. The components are `redis`,
 *   `sigterm` and, only with `HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED=true` (not set by the
 *   operator), `config`. With `REDIS_HEALTH_CHECK_ACTIVE_CONNECTION=true`, as the operator runs
 *   it, `redis` fails when the pool's last connection closes and is healthy again once one opens
 *   (src/redis/driver_impl.go `poolTrace`); `sigterm` fails for good once the process got
 *   SIGTERM, that is while its Pod terminates. So a 500 from a Pod that is not terminating means
 *   no connection to Redis.
 * - `/rlconfig` (src/service_cmd/runner/runner.go) prints the loaded configuration's `Dump()`
 *   (src/config/config_impl.go): one line per descriptor that has a limit,
 *   `<full key>: unit=<UNIT> requests_per_unit=<n>, shadow_mode: <bool>, quota_mode: <bool>`,
 *   where the full key is the domain, then `.`, then each descriptor's `key` or `key_value` down
 *   to it joined by `.`; nothing for descriptors without a limit; an empty body before any
 *   configuration. Domains and descriptors come from Go maps, so in no fixed order.
 *
 * A RateLimit's domain is `<namespace>/<name>` (global_engine.ts `globalDomain`), and every
 * descriptor tree the operator gives the engine starts with the entry `rule` (render.ts
 * `globalEntries`: `rule_<index>` or `rule_default`). Neither a namespace nor a name holds `_`, so
 * a line's domain is its full key up to the first `.rule_`, even for a name with dots.
 */
import { isObject } from "./json.ts";
import type { KubeObject, ResourceType } from "./object.ts";
import { GLOBAL_ENGINE_SERVICE } from "./global_engine.ts";

/** The type of the objects the engine's answers become; never served by the API server. */
export const ENGINE_STATUS: ResourceType = {
  group: "mesh.platform-project.io",
  version: "v1",
  kind: "EngineStatus",
  plural: "enginestatuses",
  namespaced: true,
};

/**
 * Name of the EngineStatus that says whether the engine's Pods are known (in the engine's
 * namespace): no Pod can have it, since a Pod's name is a DNS subdomain and has no `_`.
 */
export const ENGINES_STATUS_NAME = "_engines";

/** Whether a Pod's engine reaches Redis, as its `/healthcheck` says. */
export type RedisState = "Reachable" | "Unreachable" | "Unknown";

/** Why something of a Pod could not be read. */
export interface ReadFailure {
  reason: string;
  message: string;
}

/** What one engine Pod's EngineStatus holds. */
export interface EngineStatusFields {
  /** The Pod's Ready condition is True. */
  ready: boolean;
  /** From its `/healthcheck`; Unknown when that did not answer as the engine does. */
  redis: RedisState;
  /**
   * The lines of its `/rlconfig` by domain, each list sorted; absent when `/rlconfig` was not read
   * (see `error`).
   */
  loaded?: Record<string, string[]>;
  /** Why `/healthcheck` or `/rlconfig` could not be read; absent when both were. */
  error?: ReadFailure;
  /**
   * When this reading was first read (RFC 3339, the operator's clock): the poller reads every few
   * seconds and keeps the time while the answers stay the same, so a reading at rest changes
   * nothing.
   */
  since: string;
  /**
   * The domains whose lines changed since the Pod's previous reading, when nothing else of it did
   * (its readiness, Redis, errors): only their RateLimits need to look again. Absent when anything
   * else may have changed, or on a first reading.
   */
  changed?: string[];
}

/** What the engine's own EngineStatus holds: whether its Pods are listed, and if not, why. */
export type EngineListing =
  | { listed: true; pods: number }
  | { listed: false; reason: string; message: string };

/** Most bytes of a `/rlconfig` answer read (about 100 bytes a line, 9 lines at most a domain). */
export const MAX_RLCONFIG_BYTES = 16 * 1024 * 1024;
/** Longest line of `/rlconfig` taken (a domain is at most 317 characters, a key path far less). */
export const MAX_RLCONFIG_LINE = 4096;
/** Longest string kept of a message. */
const MAX_MESSAGE = 2048;

/** The engine's units (ratelimit.config.ratelimit.v3 RateLimitUnit), as `Dump` prints them. */
export const DUMP_UNITS = [
  "UNKNOWN",
  "SECOND",
  "MINUTE",
  "HOUR",
  "DAY",
  "WEEK",
  "MONTH",
  "YEAR",
] as const;

/** One unit of the engine. */
export type EngineUnitName = typeof DUMP_UNITS[number];

/** One line of `/rlconfig`, read. */
export interface RlconfigLine {
  /** The domain (the full key up to the first `.rule_`). */
  domain: string;
  /** The descriptor path after the domain (`rule_0.client`). */
  path: string;
  unit: EngineUnitName;
  requestsPerUnit: number;
  shadowMode: boolean;
  quotaMode: boolean;
}

const LINE =
  /^(.+): unit=([A-Z]+) requests_per_unit=([0-9]{1,10}), shadow_mode: (true|false), quota_mode: (true|false)$/;

/** The separator between a domain and the first entry of each of its descriptor trees. */
const FIRST_ENTRY = ".rule_";

/** Reads one `/rlconfig` line; why not, when it is not one the operator's engine prints. */
export function parseRlconfigLine(line: string): RlconfigLine | { problem: string } {
  if (line.length > MAX_RLCONFIG_LINE) return { problem: `longer than ${MAX_RLCONFIG_LINE}` };
  const m = LINE.exec(line);
  if (!m) return { problem: "not `<key>: unit=<UNIT> requests_per_unit=<n>, shadow_mode: …`" };
  const [, key, unit, requests, shadow, quota] = m;
  if (!(DUMP_UNITS as readonly string[]).includes(unit)) return { problem: `unit ${unit}` };
  const n = Number(requests);
  if (n > 4294967295) return { problem: `requests_per_unit ${requests} is over 32 bits` };
  const at = key.indexOf(FIRST_ENTRY);
  if (at <= 0) return { problem: `key ${key} has no domain of the operator's (no ${FIRST_ENTRY})` };
  return {
    domain: key.slice(0, at),
    path: key.slice(at + 1),
    unit: unit as EngineUnitName,
    requestsPerUnit: n,
    shadowMode: shadow === "true",
    quotaMode: quota === "true",
  };
}

/** What `/rlconfig` said: the lines by domain, or why it cannot be read. */
export type Rlconfig = { ok: true; domains: Record<string, string[]> } | {
  ok: false;
  reason: string;
};

/**
 * Reads a `/rlconfig` body: every line must be one the engine prints for a domain of the
 * operator's (`parseRlconfigLine`), or the whole answer is refused naming the first bad line (a
 * part of an answer could make a domain look loaded when it is not). Never throws. An empty body
 * is an engine with nothing loaded.
 */
export function parseRlconfig(body: string): Rlconfig {
  if (body.length > MAX_RLCONFIG_BYTES) {
    return { ok: false, reason: `the answer is over ${MAX_RLCONFIG_BYTES} bytes` };
  }
  const domains = new Map<string, string[]>();
  const lines = body.split("\n");
  // The engine ends each line with a newline: the last piece is empty.
  if (lines[lines.length - 1] === "") lines.pop();
  for (let i = 0; i < lines.length; i++) {
    const read = parseRlconfigLine(lines[i]);
    if ("problem" in read) {
      return { ok: false, reason: `line ${i + 1}: ${read.problem}: ${cut(lines[i], 200)}` };
    }
    const list = domains.get(read.domain);
    if (list) list.push(lines[i]);
    else domains.set(read.domain, [lines[i]]);
  }
  const out: Record<string, string[]> = {};
  for (const d of [...domains.keys()].sort()) out[d] = domains.get(d)!.sort();
  return { ok: true, domains: out };
}

/**
 * What a `/healthcheck` answer says of Redis (see the module's facts; the Pod must not be
 * terminating): 200 `OK` reachable, 500 unreachable; anything else is not the engine's answer.
 */
export function redisOfHealth(status: number, body: string): RedisState {
  if (status === 200 && body === "OK") return "Reachable";
  if (status === 500) return "Unreachable";
  return "Unknown";
}

function cut(s: string, max = MAX_MESSAGE): string {
  return s.length > max ? s.slice(0, max) + "…" : s;
}

// Engine Pods as the Kubernetes API gives them.

/** True when the Pod's `Ready` condition is True. */
export function podIsReady(pod: unknown): boolean {
  const conditions = isObject(pod) && isObject(pod.status) ? pod.status.conditions : undefined;
  if (!Array.isArray(conditions)) return false;
  return conditions.some((c) => isObject(c) && c.type === "Ready" && c.status === "True");
}

/** The Pod's IP (`status.podIP`), when it has one. */
export function podIp(pod: unknown): string | undefined {
  const ip = isObject(pod) && isObject(pod.status) ? pod.status.podIP : undefined;
  return typeof ip === "string" && ip !== "" ? ip : undefined;
}

/** `http://<ip>:<port>` of a Pod's IP (an IPv6 address in brackets). */
export function podUrl(ip: string, port: number): string {
  return `http://${ip.includes(":") ? `[${ip}]` : ip}:${port}`;
}

// The objects.

const API_VERSION = `${ENGINE_STATUS.group}/${ENGINE_STATUS.version}`;

/** An engine Pod's EngineStatus object (named as the Pod, in the engine's namespace). */
export function engineStatusObject(pod: string, fields: EngineStatusFields): KubeObject {
  return {
    apiVersion: API_VERSION,
    kind: ENGINE_STATUS.kind,
    metadata: { namespace: GLOBAL_ENGINE_SERVICE.namespace, name: pod },
    status: { ...fields },
  };
}

/** The engine's own EngineStatus object. */
export function enginesStatusObject(listing: EngineListing): KubeObject {
  return {
    apiVersion: API_VERSION,
    kind: ENGINE_STATUS.kind,
    metadata: { namespace: GLOBAL_ENGINE_SERVICE.namespace, name: ENGINES_STATUS_NAME },
    status: { ...listing },
  };
}

function text(v: unknown): string {
  return typeof v === "string" ? cut(v) : "";
}

/** The fields of a Pod's EngineStatus as the runtime cached it; undefined when unreadable. */
export function engineStatusOf(obj: KubeObject | undefined): EngineStatusFields | undefined {
  const s = obj?.status;
  if (!isObject(s) || typeof s.ready !== "boolean") return undefined;
  const redis = s.redis === "Reachable" || s.redis === "Unreachable" ? s.redis : "Unknown";
  let loaded: Record<string, string[]> | undefined;
  if (isObject(s.loaded)) {
    loaded = {};
    for (const [domain, lines] of Object.entries(s.loaded)) {
      if (!Array.isArray(lines) || !lines.every((l) => typeof l === "string")) return undefined;
      loaded[domain] = lines as string[];
    }
  }
  const error = isObject(s.error)
    ? { reason: text(s.error.reason), message: text(s.error.message) }
    : undefined;
  const changed = changedDomainsOf(obj);
  return {
    ready: s.ready,
    redis,
    ...(loaded ? { loaded } : {}),
    ...(error ? { error } : {}),
    since: text(s.since),
    ...(changed ? { changed } : {}),
  };
}

/**
 * The domains an EngineStatus says alone changed (`changed`), or undefined when anything may have:
 * the engine's own object, a first reading, any other change, an unreadable one.
 */
export function changedDomainsOf(obj: KubeObject | undefined): string[] | undefined {
  const c = isObject(obj?.status) ? obj.status.changed : undefined;
  return Array.isArray(c) && c.every((d) => typeof d === "string") ? c as string[] : undefined;
}

/**
 * The domains whose lines differ between two readings of one Pod's `/rlconfig` (added, gone or
 * other lines), sorted.
 */
export function domainsChanged(
  before: Readonly<Record<string, readonly string[]>>,
  now: Readonly<Record<string, readonly string[]>>,
): string[] {
  const out: string[] = [];
  for (const d of new Set([...Object.keys(before), ...Object.keys(now)])) {
    const a = before[d];
    const b = now[d];
    if (!a || !b || a.length !== b.length || a.some((l, i) => l !== b[i])) out.push(d);
  }
  return out.sort();
}

/** The fields of the engine's own EngineStatus; undefined when there is none (not listed yet). */
export function enginesStatusOf(obj: KubeObject | undefined): EngineListing | undefined {
  const s = obj?.status;
  if (!isObject(s)) return undefined;
  if (s.listed === true) {
    return { listed: true, pods: typeof s.pods === "number" ? s.pods : 0 };
  }
  return { listed: false, reason: text(s.reason), message: text(s.message) };
}
