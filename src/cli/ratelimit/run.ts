/**
 * Runs traffic against a RateLimit the way the cluster would: the operator's reducer makes the
 * EnvoyFilter (or the Error status), the data-plane model applies it to one proxy at time 0 and
 * answers each request. Pure: text in, results out.
 */
import { errorLines } from "../../api/issues.ts";
import type { KubeObject } from "../../api/object.ts";
import type {
  Bucket,
  BucketRule,
  GlobalLimit,
  GlobalRule,
  RateLimit,
} from "../../api/ratelimit.ts";
import { parseRateLimit } from "../../api/ratelimit.ts";
import { ruleAdvice } from "../../api/ratelimit_advice.ts";
import { isUnknownField } from "../../api/validation/unknown.ts";
import { parseFillInterval } from "../../api/duration.ts";
import {
  type BucketId,
  bucketTokens,
  engineConfigOfFilters,
  EngineModel,
  type EnvoyBehaviour,
  type GlobalDecision,
  Mesh,
  type MeshTarget,
} from "../../dataplane/mod.ts";
import { globalDomain } from "../../api/global_engine.ts";
import { RATELIMIT_CONDITION, reconcileRateLimit } from "../../reconcile/ratelimit/mod.ts";
import { filterContexts } from "../../reconcile/ratelimit/scope.ts";
import { engineLinesOf, globalRates } from "../../reconcile/ratelimit/status.ts";
import {
  type BucketRate,
  bucketRates,
  filterLimits,
  ONE_READY_ENGINE,
} from "../../reconcile/ratelimit/input.ts";
import type { TrafficRequest } from "./args.ts";
import { DYNAMIC_DESCRIPTORS_MINOR } from "../../dataplane/mod.ts";

const DYNAMIC_DESCRIPTORS_ENVOY = `1.${DYNAMIC_DESCRIPTORS_MINOR}`;

/** One request and its answer. */
export interface RequestOutcome extends TrafficRequest {
  status: number;
  bucket?: BucketId;
  responseHeaders: Record<string, string>;
  body: string;
  /** Tokens left in the bucket used, after the request. */
  remaining?: number;
  /** The proxy rejected it (a gRPC call's rejection is HTTP 200 with a grpc-status). */
  rejected: boolean;
  /** Admitted, but a limit in shadow mode would have rejected it. */
  wouldReject: boolean;
  /** For a per-client rule's bucket: the client it is (a header's value, or an address). */
  bucketClient?: string;
  /** The Pod whose proxy answered (with a global part, traffic is spread over the replicas). */
  pod?: number;
  /** What the engine answered, when the global filter asked it. */
  global?: GlobalOutcome;
}

/** A request's global part: the rule it counted against, the engine's code and what is left. */
export interface GlobalOutcome {
  /** The global rule's index, or `default`. */
  rule: string;
  code: "OK" | "OVER_LIMIT" | "ERROR";
  /** Requests left in the rule's window (its client's, for a per-client rule). */
  remaining?: number;
  /** True when the global limit, not a local one, refused the request. */
  rejected: boolean;
}

/** A global rule, its limit and what it did across all Pods. */
export interface GlobalReport {
  /** The rule's index, or `default`. */
  id: string;
  rule?: GlobalRule;
  limit: GlobalLimit;
  admitted: number;
  rejected: number;
  /** Of `admitted`, those shadow mode let through that it would have rejected. */
  wouldReject: number;
}

/** A bucket, what it matches, and what it did. */
export interface BucketReport {
  id: BucketId;
  /** The client of a per-client rule's bucket; absent before any client reached the rule. */
  client?: string;
  rule?: BucketRule;
  bucket: Bucket;
  admitted: number;
  rejected: number;
  /** Of `admitted`, those shadow mode let through that it would have rejected. */
  wouldReject: number;
  /** Tokens over time: (t, tokens) after fills and after each request it took. */
  tokens: Array<[number, number]>;
  /** Requests it decided: (t, admitted, tokens left after, admitted only by shadow mode). */
  marks: Array<[number, boolean, number, boolean]>;
}

/** The whole run. */
export interface TrafficRun {
  outcomes: RequestOutcome[];
  buckets: BucketReport[];
  endMs: number;
  /** The Envoy the proxy ran. */
  envoy: EnvoyBehaviour;
  /** True when the RateLimit is the ingress gateway's (whose routes each have their own buckets). */
  gateway: boolean;
  /** True when the limit is in shadow mode (spec.enforce false). */
  shadow: boolean;
  /** Each bucket's rate on one Pod and on `replicas` Pods (1 unless given), as the status gives it. */
  rates: BucketRate[];
  /** `--replicas`, when given. */
  replicas?: number;
  /** The global rules' reports, when the RateLimit has spec.global (all Pods together). */
  global?: GlobalReport[];
  /** The Pods the traffic went to: `--replicas` with a global part, else 1. */
  pods: number;
  /**
   * The advice on rules that are valid but seldom meant (ratelimit_advice.ts: Host named as a
   * header or a key, a hop-by-hop header), a line each: `spec.local.buckets[0].headers names Host, ...`.
   */
  advice: string[];
}

/** Where a request without a client comes from. */
export const DEFAULT_CLIENT = "10.0.0.1";

/**
 * The request as the proxy gets it: from its client's address, and with the client as the value
 * of each per-client header it does not carry.
 */
function sent(req: TrafficRequest, rules: readonly Pick<BucketRule, "perClient">[]) {
  const client = req.client ?? DEFAULT_CLIENT;
  const headers = { ...req.headers };
  const have = new Set(Object.keys(headers).map((k) => k.toLowerCase()));
  for (const rule of rules) {
    const h = rule.perClient?.header;
    if (req.client !== undefined && h !== undefined && !have.has(h.toLowerCase())) {
      headers[h] = req.client;
      have.add(h.toLowerCase());
    }
  }
  return {
    ...(req.method !== undefined ? { method: req.method } : {}),
    path: req.path,
    headers,
    peer: client,
  };
}

/** Why the proxy refuses per-client rules, when its Envoy has no dynamic descriptors. */
function perClientUnsupported(rl: RateLimit, envoy: EnvoyBehaviour): string | undefined {
  const i = (rl.spec.local?.buckets ?? []).findIndex((r) => r.perClient !== undefined);
  if (i < 0 || envoy.dynamicDescriptors) return undefined;
  return `spec.local.buckets[${i}].perClient: per-client buckets need Envoy ${DYNAMIC_DESCRIPTORS_ENVOY} (Istio 1.26) or later; Envoy ${envoy.version} refuses the filter (its descriptor entry without a value)`;
}

/** At most this many fill points are drawn between two requests of a bucket. */
const MAX_FILL_POINTS = 200;

/** What the operator's reducer makes of a RateLimit: its filters and the parsed object, or why not. */
type Reduced =
  | { ok: true; apply: KubeObject[]; rateLimit: RateLimit }
  | { ok: false; error: string };

/**
 * The RateLimit `raw` through the operator's reducer, as the operator reconciles it once applied:
 * unknown fields refused first as the API server would (kubectl's strict field validation), then
 * the reducer's EnvoyFilters, or its message when it refuses the spec.
 */
function reduce(raw: unknown): Reduced {
  const withIdentity = raw !== null && typeof raw === "object" && !Array.isArray(raw)
    ? withDefaults(raw as Record<string, unknown>)
    : raw;
  const strict = parseRateLimit(withIdentity, { unknown: "refuse" });
  if (!strict.ok && strict.errors.some(isUnknownField)) {
    return { ok: false, error: errorLines(strict.errors).join("\n") };
  }
  const plan = reconcileRateLimit({
    rateLimit: withIdentity,
    peers: [],
    pods: [],
    meshInstalled: true,
    now: 0,
    // With spec.global: as once the rate limit engine is Ready, the global part applied too.
    globalEngine: ONE_READY_ENGINE,
  });
  const status = plan.status as
    | { state?: string; conditions?: { type: string; message: string }[] }
    | undefined;
  if (status?.state !== "Ready" || !strict.ok) {
    // The Ready condition says what is wrong; the rest of the status is about Pods, and here
    // there are none.
    const ready = status?.conditions?.find((c) => c.type === RATELIMIT_CONDITION);
    return { ok: false, error: ready?.message ?? "the RateLimit cannot be applied" };
  }
  return { ok: true, apply: plan.apply, rateLimit: strict.value };
}

/**
 * The objects the operator would apply for the RateLimit `raw` (its EnvoyFilter), exactly as its
 * reducer makes them; an invalid RateLimit gives the operator's message.
 */
export function renderFilters(
  raw: unknown,
): { ok: true; value: KubeObject[] } | { ok: false; error: string } {
  const reduced = reduce(raw);
  return reduced.ok ? { ok: true, value: reduced.apply } : reduced;
}

/**
 * Runs `requests` against the RateLimit `raw` on one proxy (one route) running `envoy`; an invalid
 * RateLimit gives the operator's message.
 */
export function runTraffic(
  raw: unknown,
  requests: readonly TrafficRequest[],
  endMs: number,
  envoy: EnvoyBehaviour,
  replicas?: number,
): { ok: true; value: TrafficRun } | { ok: false; error: string } {
  const reduced = reduce(raw);
  if (!reduced.ok) return reduced;
  const plan = { apply: reduced.apply };
  const rl = reduced.rateLimit;
  const local = rl.spec.local;
  const globalSpec = rl.spec.global;
  const namespace = rl.metadata.namespace ?? "default";
  const labels = rl.spec.selectorLabels;
  // The proxy is the one the filter's context names: a gateway's router, or a sidecar.
  const contexts = plan.apply.length > 0 ? filterContexts(plan.apply[0]) : [];
  const gateway = contexts.length === 1 && contexts[0] === "GATEWAY";
  // A global part: the workload's traffic spread over the replicas, one engine counting for all.
  const pods = globalSpec ? replicas ?? 1 : 1;
  let engine: EngineModel | undefined;
  if (globalSpec) {
    const { config, problems } = engineConfigOfFilters(plan.apply);
    if (problems.length > 0) throw new Error(`generated engine config refused: ${problems[0]}`);
    engine = new EngineModel([{ config, ready: true }]);
  }
  const mesh = new Mesh({
    envoy,
    ...(gateway ? { gateway: { namespace, labels } } : {}),
    ...(engine ? { engine } : {}),
  });
  mesh.sync(
    plan.apply,
    Array.from({ length: pods }, (_, i) => ({
      namespace,
      name: `proxy-${i}`,
      labels,
      ready: true,
      router: gateway,
    })),
    0,
  );
  const rejected = mesh.rejections();
  const unsupported = perClientUnsupported(rl, envoy);
  if (unsupported !== undefined && rejected.length > 0) return { ok: false, error: unsupported };
  if (rejected.length > 0) {
    // The model refusing what the reducer made is a bug of this project, not of the user's input.
    throw new Error(`generated EnvoyFilter rejected: ${JSON.stringify(rejected[0].errors)}`);
  }
  const proxy = mesh.proxy(namespace, "proxy-0")!;
  const first = `${namespace}/proxy-0`;
  const to: MeshTarget = gateway ? "gateway" : { namespace, labels };
  const ruleReports: BucketReport[] = local === undefined ? [] : [
    {
      id: "default",
      bucket: local.defaultBucket,
      admitted: 0,
      rejected: 0,
      wouldReject: 0,
      tokens: [],
      marks: [],
    },
    ...local.buckets.map((rule, i): BucketReport => ({
      id: i,
      rule,
      bucket: rule.bucket,
      admitted: 0,
      rejected: 0,
      wouldReject: 0,
      tokens: [],
      marks: [],
    })),
  ];
  const sample = (r: BucketReport, t: number) =>
    r.tokens.push([t, bucketTokens(proxy, r.id, t, undefined, r.client) ?? 0]);
  // Interval: a point at each fill. Continuous: tokens rise in a straight line, so a point where
  // the bucket becomes full is enough between requests.
  const fillsUpTo = (r: BucketReport, from: number, to: number) => {
    const every = parseFillInterval(r.bucket.fillInterval)!;
    if (envoy.refill === "continuous") {
      const tokens = bucketTokens(proxy, r.id, from, undefined, r.client) ?? 0;
      const full = from + ((r.bucket.maxTokens - tokens) * every) / r.bucket.tokensPerFill;
      if (tokens < r.bucket.maxTokens && full < to) sample(r, full);
      return;
    }
    const first = Math.floor(from / every) + 1;
    const last = Math.floor(to / every);
    const step = Math.max(1, Math.ceil((last - first + 1) / MAX_FILL_POINTS));
    // Counted, not `k += step` to `last`: past 2^53 a float sum stops advancing.
    const points = Math.max(0, Math.floor((last - first) / step) + 1);
    for (let i = 0; i < Math.min(points, MAX_FILL_POINTS); i++) {
      sample(r, (first + i * step) * every);
    }
  };
  for (const r of ruleReports) sample(r, 0);
  const byId = new Map(ruleReports.map((r) => [r.id, r]));
  const clients = new ClientReports(byId);
  // A client's fill points are drawn up to the time it last had them: before each request from
  // it (its bucket as its previous request left it) and at the end, never for every request.
  const flushClient = (r: BucketReport, to: number) => {
    const from = clients.filledTo(r);
    if (to <= from) return;
    fillsUpTo(r, from, to);
    clients.filled(r, to);
  };
  const domain = globalDomain(namespace, rl.metadata.name);
  const globalReports: GlobalReport[] | undefined = globalSpec && [
    ...(globalSpec.rules ?? []).map((rule, i): GlobalReport => ({
      id: String(i),
      rule,
      limit: rule.limit,
      admitted: 0,
      rejected: 0,
      wouldReject: 0,
    })),
    ...(globalSpec.default
      ? [{
        id: "default",
        limit: globalSpec.default.limit,
        admitted: 0,
        rejected: 0,
        wouldReject: 0,
      }]
      : []),
  ];
  let prev = 0;
  const outcomes: RequestOutcome[] = [];
  const perClientRules = [...(local?.buckets ?? []), ...(globalSpec?.rules ?? [])];
  for (const req of requests) {
    for (const r of ruleReports) fillsUpTo(r, prev, req.t);
    prev = req.t;
    const request = sent(req, perClientRules);
    // Whichever client the request turns out to be, its bucket's points up to now come first.
    for (const r of clients.candidates(request)) flushClient(r, req.t);
    const d = mesh.send({ to, ...request }, req.t);
    const g = d.global && globalOutcome(d.global, d.globalRejected === true, domain);
    const globalWould = d.global?.shadowOverLimit === true || d.global?.notEnforced === true;
    if (g && globalReports) {
      const gr = globalReports.find((x) => x.id === g.rule);
      if (gr) {
        if (g.rejected) gr.rejected++;
        else gr.admitted++;
        if (!g.rejected && globalWould) gr.wouldReject++;
      }
    }
    outcomes.push({
      ...(pods > 1 && d.pod ? { pod: Number(d.pod.slice(d.pod.lastIndexOf("-") + 1)) } : {}),
      ...(g ? { global: g } : {}),
      ...req,
      status: d.status,
      bucket: d.bucket,
      responseHeaders: d.headers,
      body: d.body,
      remaining: d.remaining,
      rejected: d.rejected === true,
      wouldReject: d.wouldReject === true || globalWould,
      ...(d.client !== undefined ? { bucketClient: d.client } : {}),
    });
    const r = d.bucket === undefined
      ? undefined
      : d.client === undefined
      ? byId.get(d.bucket)
      : clients.report(d.bucket as number, d.client, req.t);
    // Not foreseen among the candidates (a client value the model derives otherwise): drawn now.
    if (r && r.client !== undefined) flushClient(r, req.t);
    // A local bucket's count is of what the local filter decided (a global refusal came after);
    // its tokens, drawn by --svg, are the first Pod's.
    const refusedHere = d.rejected === true && d.globalRejected !== true;
    if (r) {
      if (refusedHere) r.rejected++;
      else r.admitted++;
      if (d.wouldReject) r.wouldReject++;
    }
    if (r && d.pod === first) {
      r.marks.push([req.t, !refusedHere, d.remaining ?? 0, d.wouldReject === true]);
      // The level an admitted request found (the token it took more), then what it left.
      if (envoy.refill === "continuous" && !refusedHere && !d.wouldReject) {
        r.tokens.push([req.t, (bucketTokens(proxy, r.id, req.t, undefined, r.client) ?? 0) + 1]);
      }
      sample(r, req.t);
    }
  }
  for (const r of ruleReports) fillsUpTo(r, prev, endMs);
  for (const r of clients.all()) flushClient(r, endMs);
  // A per-client rule that clients reached is shown by client, not also as the rule; each rule's
  // clients follow it in the order they came.
  const shown = ruleReports.flatMap((r) => {
    const of = clients.of(r.id);
    return of.length > 0 ? of : [r];
  });
  const limits = filterLimits(plan.apply[0]);
  return {
    ok: true,
    value: {
      outcomes,
      buckets: shown,
      endMs,
      envoy,
      gateway,
      shadow: !rl.spec.enforce,
      rates: [
        ...(limits ? bucketRates(limits, replicas ?? 1) : []),
        // Each global rule's workload-wide limit, as status.rates gives it.
        ...(globalSpec ? globalRates(engineLinesOf(plan.apply[0])) : []),
      ],
      ...(replicas !== undefined ? { replicas } : {}),
      ...(globalReports ? { global: globalReports } : {}),
      pods,
      advice: ruleAdvice(rl),
    },
  };
}

/**
 * The global rule a request counted against, read from the engine's counter key
 * (`<domain>_rule_<rule>_...`, the first entry of every global descriptor naming its rule).
 */
function globalOutcome(
  d: GlobalDecision,
  rejected: boolean,
  domain: string,
): GlobalOutcome | undefined {
  const key = d.keys?.[0];
  const prefix = `${domain}_rule_`;
  if (key === undefined || !key.startsWith(prefix)) return undefined;
  const rest = key.slice(prefix.length);
  return {
    rule: rest.slice(0, rest.indexOf("_")),
    code: d.code,
    ...(d.limitRemaining !== undefined ? { remaining: d.limitRemaining } : {}),
    rejected,
  };
}

/**
 * The reports of per-client rules' clients, by rule and client in the order they came (a lookup,
 * not a scan: a run may see a client a request), and until when each has its fill points.
 */
class ClientReports {
  readonly #byRule = new Map<number, Map<string, BucketReport>>();
  readonly #filledTo = new Map<BucketReport, number>();
  constructor(private readonly rules: ReadonlyMap<BucketId, BucketReport>) {}

  /**
   * The report of rule `id`'s `client`, made when new at `nowMs` (from the rule's, full at time
   * 0, as Envoy makes it full when the client first comes).
   */
  report(id: number, client: string, nowMs: number): BucketReport {
    let of = this.#byRule.get(id);
    if (!of) this.#byRule.set(id, of = new Map());
    const found = of.get(client);
    if (found) return found;
    const rule = this.rules.get(id)!;
    const made: BucketReport = {
      ...rule,
      client,
      admitted: 0,
      rejected: 0,
      wouldReject: 0,
      // Not sampled now: the request just sent has taken a token from it.
      tokens: [[0, rule.bucket.maxTokens]],
      marks: [],
    };
    of.set(client, made);
    this.#filledTo.set(made, nowMs);
    return made;
  }

  /**
   * The reports a request could be counted on: each kept client whose name is the request's
   * peer, an x-forwarded-for address or a header's value.
   */
  candidates(req: { headers: Record<string, string>; peer: string }): BucketReport[] {
    if (this.#byRule.size === 0) return [];
    const names = new Set([req.peer]);
    for (const [k, v] of Object.entries(req.headers)) {
      names.add(v);
      if (k.toLowerCase() === "x-forwarded-for") {
        for (const a of v.split(",")) names.add(a.trim());
      }
    }
    const out: BucketReport[] = [];
    for (const of of this.#byRule.values()) {
      for (const n of names) {
        const r = of.get(n);
        if (r) out.push(r);
      }
    }
    return out;
  }

  /** Rule `id`'s clients' reports, in the order they came. */
  of(id: BucketId): BucketReport[] {
    return typeof id === "number" ? [...(this.#byRule.get(id)?.values() ?? [])] : [];
  }

  /** Every client's report. */
  all(): BucketReport[] {
    return [...this.#byRule.values()].flatMap((of) => [...of.values()]);
  }

  /** The time up to which `r` has its fill points. */
  filledTo(r: BucketReport): number {
    return this.#filledTo.get(r) ?? 0;
  }

  /** Records that `r` has its fill points up to `t`. */
  filled(r: BucketReport, t: number): void {
    this.#filledTo.set(r, t);
  }
}

/** What the API server and kubectl would add: a namespace, a uid, a creation time, generation 1. */
function withDefaults(obj: Record<string, unknown>): Record<string, unknown> {
  const meta =
    (obj.metadata !== null && typeof obj.metadata === "object" ? obj.metadata : {}) as Record<
      string,
      unknown
    >;
  return {
    ...obj,
    metadata: {
      namespace: "default",
      uid: "ratelimit-cli",
      generation: 1,
      creationTimestamp: "1970-01-01T00:00:00Z",
      ...meta,
    },
  };
}
