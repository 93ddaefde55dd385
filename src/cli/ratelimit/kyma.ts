/**
 * Kyma's RateLimit (`gateway.kyma-project.io/v1alpha1`, kyma-project/api-gateway) as this
 * project's: the same spec, its fillIntervals in our whole-second form, and the differences in
 * behaviour a user who migrates meets (docs/migrating-from-kyma.md). Pure: object in, object out.
 */
import { goDurationProblem, parseGoDuration } from "../../api/duration.ts";
import { GATEWAY_GROUP } from "../../api/groups.ts";
import {
  isQueryName,
  isQueryValue,
  MAX_QUERY_NAME_LENGTH,
  MAX_QUERY_VALUE_LENGTH,
  MAX_RULE_HEADERS_AND_QUERY,
  MAX_TOKENS_LIMIT,
} from "../../api/ratelimit_bounds.ts";
import { MIN_FILL_INTERVAL_MS, SHADOW_HEADER, SHADOW_HEADER_VALUE } from "../../api/envoy.ts";
import { show } from "../../api/issues.ts";
import { objectFieldProblems } from "./fields.ts";

/** The apiVersion of Kyma's RateLimit. */
export const KYMA_API_VERSION = "gateway.kyma-project.io/v1alpha1";

type Obj = Record<string, unknown>;

/** The converted RateLimit and what behaves differently, or why it cannot be carried over. */
export type KymaConversion =
  | { ok: true; rateLimit: Obj; differences: string[] }
  | { ok: false; problems: string[] };

const isObj = (v: unknown): v is Obj => v !== null && typeof v === "object" && !Array.isArray(v);

/** True when `doc` is a Kyma RateLimit (its apiVersion and kind). */
export function isKymaRateLimit(doc: unknown): boolean {
  return isObj(doc) && doc.apiVersion === KYMA_API_VERSION && doc.kind === "RateLimit";
}

/** Metadata a user would write: kubectl's and the API server's bookkeeping left out. */
function userMetadata(meta: unknown): Obj {
  if (!isObj(meta)) return {};
  const out: Obj = {};
  for (const k of ["name", "namespace", "labels"]) if (meta[k] !== undefined) out[k] = meta[k];
  if (isObj(meta.annotations)) {
    const kept = Object.entries(meta.annotations).filter(([k]) =>
      k !== "kubectl.kubernetes.io/last-applied-configuration"
    );
    if (kept.length > 0) out.annotations = Object.fromEntries(kept);
  }
  return out;
}

/** Greatest common divisor of two positive integers. */
function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

interface At {
  /** `spec.local.defaultBucket` or `spec.local.buckets[i].bucket`. */
  path: string;
  bucket: Obj;
}

/** The buckets of a Kyma spec, each with its field path. */
function bucketsOf(local: Obj): At[] {
  const out: At[] = [];
  if (isObj(local.defaultBucket)) {
    out.push({ path: "spec.local.defaultBucket", bucket: local.defaultBucket });
  }
  if (Array.isArray(local.buckets)) {
    local.buckets.forEach((rule, i) => {
      if (isObj(rule) && isObj(rule.bucket)) {
        out.push({ path: `spec.local.buckets[${i}].bucket`, bucket: rule.bucket });
      }
    });
  }
  return out;
}

/**
 * Kyma takes any Go duration from 50ms; this project whole seconds or minutes. A bucket whose
 * interval is not whole seconds has its fillInterval and tokensPerFill multiplied by the least
 * factor that makes it so: a continuous bucket gains one token every fillInterval /
 * tokensPerFill, which that leaves unchanged, and keeps its maxTokens. A rule's interval stays a
 * multiple of the default's: each becomes lcm(interval, 1s), and a multiple's lcm is a multiple.
 */
function convertIntervals(
  buckets: At[],
): { ok: true; out: Map<string, Obj>; notes: string[] } | { ok: false; problems: string[] } {
  const problems: string[] = [];
  const out = new Map<string, Obj>();
  const notes: string[] = [];
  for (const { path, bucket } of buckets) {
    const text = bucket.fillInterval;
    const ms = typeof text === "string" ? parseGoDuration(text) : undefined;
    if (ms === undefined) {
      const otherwise = `${show(text)} is not a Go duration like 30s or 500ms`;
      problems.push(
        `${path}.fillInterval ${
          typeof text === "string" ? goDurationProblem(text, otherwise) : otherwise
        }`,
      );
      continue;
    }
    if (ms < MIN_FILL_INTERVAL_MS) {
      problems.push(`${path}.fillInterval ${text} is below Envoy's minimum of 50ms`);
      continue;
    }
    if (!Number.isInteger(ms)) {
      problems.push(`${path}.fillInterval ${text} is not a whole number of milliseconds`);
      continue;
    }
    const factor = 1000 / gcd(ms, 1000);
    const seconds = (ms * factor) / 1000;
    const tokens = typeof bucket.tokensPerFill === "number"
      ? bucket.tokensPerFill * factor
      : bucket.tokensPerFill;
    if (typeof tokens === "number" && tokens > MAX_TOKENS_LIMIT) {
      problems.push(
        `${path}.fillInterval ${text}: in whole seconds (${seconds}s) tokensPerFill would be ${tokens}, above ${MAX_TOKENS_LIMIT}`,
      );
      continue;
    }
    out.set(path, { ...bucket, tokensPerFill: tokens, fillInterval: `${seconds}s` });
    if (factor > 1) {
      notes.push(
        `${path}: fillInterval ${text} becomes ${seconds}s and tokensPerFill ${
          show(bucket.tokensPerFill)
        } becomes ${tokens}, the same rate (intervals here are whole seconds or minutes)`,
      );
    }
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, out, notes };
}

/** A path and the query parameters a rule here matches, from a Kyma path with a query string. */
interface Queried {
  path: string;
  queryParams: Record<string, string>;
}

/** A Kyma path with a query string as a {@link Queried}, or why it cannot be one. */
type QueryPath = ({ ok: true } & Queried) | { ok: false; problem: string };

/**
 * Kyma compares a rule's path with the whole `:path`, so `/search?q=a` selects that request only.
 * Here a path never holds a query string; the rule becomes path `/search` with queryParams
 * `{q: a}`, which takes that request and others (parameters beside it, in any order, encoded or
 * not): `differences` says so. Each `name=value` (a bare `name` is the empty value) is decoded,
 * and the rule must be able to hold it, else the path is refused with the reason.
 */
function queryPath(path: string, headers: number): QueryPath {
  const q = path.indexOf("?");
  const base = path.slice(0, q);
  const query = path.slice(q + 1);
  const refuse = (why: string): QueryPath => ({
    ok: false,
    problem: `${show(path)}: ${why}`,
  });
  if (!base.startsWith("/")) return refuse("the part before ? is not a path like /search");
  if (query.length === 0) return refuse("an empty query string has no rule here");
  const queryParams: Record<string, string> = {};
  for (const part of query.split("&")) {
    if (part.length === 0) return refuse("the query string has an empty parameter (&&)");
    const eq = part.indexOf("=");
    let name: string, value: string;
    try {
      name = decodeURIComponent(eq < 0 ? part : part.slice(0, eq));
      value = eq < 0 ? "" : decodeURIComponent(part.slice(eq + 1));
    } catch {
      return refuse(`${show(part)} is not percent-encoded correctly`);
    }
    if (!isQueryName(name) || [...name].length > MAX_QUERY_NAME_LENGTH) {
      return refuse(
        `${
          show(name)
        } is not a query parameter's name here (at most ${MAX_QUERY_NAME_LENGTH} characters: letters, digits and -._~[])`,
      );
    }
    if (!isQueryValue(value) || [...value].length > MAX_QUERY_VALUE_LENGTH) {
      return refuse(
        `${name}'s value ${
          show(value)
        } is not a query parameter's value here (at most ${MAX_QUERY_VALUE_LENGTH} characters, decoded: letters, digits and -._~!$'()*,/:;=?@[], no &, +, %, # or spaces)`,
      );
    }
    if (Object.hasOwn(queryParams, name) && queryParams[name] !== value) {
      return refuse(`${name} is given twice; a rule here holds one value a parameter`);
    }
    queryParams[name] = value;
  }
  if (Object.keys(queryParams).length + headers > MAX_RULE_HEADERS_AND_QUERY) {
    return refuse(
      `its query parameters and the rule's headers are more than the ${MAX_RULE_HEADERS_AND_QUERY} a rule here matches together`,
    );
  }
  return { ok: true, path: base, queryParams };
}

/** The rules whose Kyma path holds a query string, converted (queryPath), by index. */
function queryRules(
  rules: unknown[],
): { ok: true; out: Map<number, Queried> } | { ok: false; problems: string[] } {
  const out = new Map<number, Queried>();
  const problems: string[] = [];
  rules.forEach((rule, i) => {
    if (!isObj(rule) || typeof rule.path !== "string" || !rule.path.includes("?")) return;
    if (rule.path.includes("#")) return; // no request carries a fragment: the spec's check says so
    const headers = isObj(rule.headers) ? Object.keys(rule.headers).length : 0;
    const c = queryPath(rule.path, headers);
    if (!c.ok) return void problems.push(`spec.local.buckets[${i}].path ${c.problem}`);
    out.set(i, { path: c.path, queryParams: c.queryParams });
  });
  return problems.length > 0 ? { ok: false, problems } : { ok: true, out };
}

/** A rule's descriptor keys as Kyma's controller writes them: `path`, then its header names. */
function kymaKeys(rule: Obj): string[] {
  return [
    ...(typeof rule.path === "string" && rule.path.length > 0 ? ["path"] : []),
    ...(isObj(rule.headers) ? Object.keys(rule.headers) : []),
  ];
}

/**
 * The rules Kyma's filter never selects. Kyma reads every rule's keys into one `rate_limits` entry
 * (a `request_headers` action a key, in the order first seen), so a request's descriptor holds all
 * of them; Envoy selects a descriptor only when its entries equal the request's, same number and
 * same keys in order. A rule that names fewer keys than all rules together never matches.
 */
function rulesKymaNeverSelects(rules: Obj[]): { index: number; keys: string[]; all: string[] }[] {
  const all: string[] = [];
  for (const rule of rules) for (const k of kymaKeys(rule)) if (!all.includes(k)) all.push(k);
  return rules.flatMap((rule, index) => {
    const keys = kymaKeys(rule);
    return keys.length === all.length ? [] : [{ index, keys, all }];
  });
}

/**
 * What behaves differently here than under Kyma, for this spec whose rules with a query string in
 * their path became `queried` (by index in `rules`).
 */
function differences(spec: Obj, rules: Obj[], queried: Map<number, Queried>): string[] {
  const out = [
    "the filter runs just before the router, after the mesh's authorization: a request the mesh denies takes no token (Kyma's filter runs first)",
    "a selector with no Pod, or with Pods without a sidecar, is applied and reported (Enforced False, NoPodSelected or SidecarMissing), so Pods that come later are limited; Kyma refuses it and applies nothing",
    "a rejected gRPC call gets grpc-status 8 (RESOURCE_EXHAUSTED), which clients do not retry; Kyma's gets 14 (UNAVAILABLE); add spec.grpcStatus: Unavailable to keep that",
    "Envoy's counters are http_local_rate_limiter.http_local_rate_limit.*, not rate_limit.http_local_rate_limit.*",
  ];
  if (spec.enforce === false) {
    out.push(
      `shadow mode also marks each request it would reject with the header ${SHADOW_HEADER}: ${SHADOW_HEADER_VALUE}`,
    );
  }
  rules.forEach((rule, i) => {
    if (typeof rule.path !== "string") return;
    const query = queried.get(i);
    if (query === undefined) {
      out.push(
        `spec.local.buckets[${i}]: path ${rule.path} matches with any query string too; under Kyma ${rule.path}?a=1 took the default bucket`,
      );
      return;
    }
    const params = Object.entries(query.queryParams).map(([k, v]) => `${k}: ${show(v)}`);
    out.push(
      `spec.local.buckets[${i}]: path ${rule.path} becomes path ${query.path} with queryParams {${
        params.join(", ")
      }}, which takes a request to ${query.path} whose query string holds ${
        params.length === 1 ? "it" : "them"
      } anywhere, beside other parameters, encoded or not; under Kyma only ${rule.path} as written took this rule`,
    );
  });
  for (const { index, keys, all } of rulesKymaNeverSelects(rules)) {
    out.push(
      `spec.local.buckets[${index}]: Kyma never selected this rule (each request's descriptor holds ${
        all.join(", ")
      }, this rule's only ${
        keys.join(", ")
      }), so its requests took the default bucket; here they take this rule's`,
    );
  }
  return out;
}

/** Kyma's RateLimit `doc` as this project's, or why it cannot be carried over. */
export function fromKyma(doc: Obj): KymaConversion {
  // Its spec is this project's and is checked as one; the fields beside it are checked here.
  const unknown = objectFieldProblems(doc);
  if (unknown.length > 0) return { ok: false, problems: unknown };
  const spec = isObj(doc.spec) ? doc.spec : {};
  const local = isObj(spec.local) ? spec.local : {};
  const rules = Array.isArray(local.buckets) ? local.buckets : [];
  const intervals = convertIntervals(bucketsOf(local));
  const queried = queryRules(rules);
  if (!intervals.ok || !queried.ok) {
    return {
      ok: false,
      problems: [
        ...(intervals.ok ? [] : intervals.problems),
        ...(queried.ok ? [] : queried.problems),
      ],
    };
  }
  const converted = intervals.out;
  const newLocal: Obj = { ...local };
  if (converted.has("spec.local.defaultBucket")) {
    newLocal.defaultBucket = converted.get("spec.local.defaultBucket");
  }
  if (Array.isArray(local.buckets)) {
    newLocal.buckets = local.buckets.map((rule, i) => {
      if (!isObj(rule)) return rule;
      const bucket = converted.get(`spec.local.buckets[${i}].bucket`);
      return { ...rule, ...queried.out.get(i), ...(bucket ? { bucket } : {}) };
    });
  }
  return {
    ok: true,
    rateLimit: {
      apiVersion: `${GATEWAY_GROUP}/v1alpha1`,
      kind: "RateLimit",
      metadata: userMetadata(doc.metadata),
      spec: { ...spec, local: newLocal },
    },
    differences: [
      ...intervals.notes,
      ...differences(spec, rules.filter(isObj), queried.out),
    ],
  };
}
