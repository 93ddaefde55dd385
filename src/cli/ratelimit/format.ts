/** Text output of `mod.ts ratelimit`: JSON lines, or a table and a per-bucket summary. */
import type { BucketRule, GlobalLimit } from "../../api/ratelimit.ts";
import { parseFillInterval } from "../../api/duration.ts";
import { describeBehaviour, type Refill } from "../../dataplane/mod.ts";
import { SHADOW_HEADER, SHADOW_HEADER_VALUE } from "../../api/envoy.ts";
import type { BucketReport, GlobalReport, RequestOutcome, TrafficRun } from "./run.ts";

/** Milliseconds as seconds with up to 3 decimals: `0s`, `1.5s`, `0.25s`. */
export function formatT(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))}s`;
}

/** One output line of `--json`. */
export function jsonLine(o: RequestOutcome): string {
  return JSON.stringify({
    t: formatT(o.t),
    ...(o.method !== undefined ? { method: o.method } : {}),
    path: o.path,
    status: o.status,
    ...(o.bucket !== undefined ? { bucket: o.bucket } : {}),
    ...(o.bucketClient !== undefined ? { client: o.bucketClient } : {}),
    ...(o.wouldReject ? { wouldReject: true } : {}),
    ...(o.pod !== undefined ? { pod: o.pod } : {}),
    ...(o.global
      ? {
        global: {
          rule: o.global.rule,
          code: o.global.code,
          ...(o.global.remaining !== undefined ? { remaining: o.global.remaining } : {}),
        },
      }
      : {}),
    headers: o.responseHeaders,
    ...(o.status === 200 ? {} : { body: o.body }),
  });
}

/**
 * With `--replicas`, the `--json` lines after the requests' lines: one a bucket, its rate on one
 * Pod and on the replicas together (`{"bucket":"0","perPod":"2/1m","replicas":3,"workload":"6/1m"}`).
 */
export function rateJsonLines(result: TrafficRun): string[] {
  const n = result.replicas;
  if (n === undefined) return [];
  return result.rates.map((r) =>
    JSON.stringify({
      bucket: r.bucket,
      ...(r.perPod !== undefined ? { perPod: r.perPod } : {}),
      replicas: n,
      workload: r.workload,
    })
  );
}

/** Words in a list of alternatives: `GET`, `GET or HEAD`, `POST, PUT or PATCH`. */
function oneOf(words: readonly string[]): string {
  return words.length < 2
    ? words.join("")
    : `${words.slice(0, -1).join(", ")} or ${words[words.length - 1]}`;
}

/**
 * What a rule matches, in words: `path /headers, X-Rate-Limited: true`, `path /api*` (a prefix),
 * `method GET or HEAD`, `host api.example.com or *.example.org`, `query format=csv`.
 */
export function describeRule(
  rule:
    | Pick<
      BucketRule,
      "path" | "pathPrefix" | "methods" | "hosts" | "headers" | "queryParams" | "perClient"
    >
    | undefined,
): string {
  if (!rule) return "every other request";
  const parts = [
    ...(rule.methods !== undefined ? [`method ${oneOf(rule.methods)}`] : []),
    ...(rule.hosts !== undefined ? [`host ${oneOf(rule.hosts)}`] : []),
    ...(rule.path !== undefined ? [`path ${rule.path}`] : []),
    ...(rule.pathPrefix !== undefined ? [`path ${rule.pathPrefix}*`] : []),
    ...Object.entries(rule.queryParams ?? {}).map(([k, v]) => `query ${k}=${v}`),
    ...Object.entries(rule.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
  ];
  const key = rule.perClient?.header !== undefined
    ? `each ${rule.perClient.header}`
    : rule.perClient?.clientIP
    ? "each client IP"
    : undefined;
  if (key === undefined) return parts.join(", ");
  return parts.length > 0 ? `${parts.join(", ")}; ${key}` : `every request; ${key}`;
}

/** A time in the units people write it in: `2m`, `30s`, `1.5s`. */
function duration(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : formatT(ms);
}

/**
 * A bucket in words, as the refill works: `10 every 30s, burst 10` (interval) or
 * `10 per 30s, continuous (1 every 3s), burst 10`.
 */
export function describeBucket(r: BucketReport, refill: Refill): string {
  const b = r.bucket;
  if (refill === "interval") {
    return `${b.tokensPerFill} every ${b.fillInterval}, burst ${b.maxTokens}`;
  }
  const perToken = parseFillInterval(b.fillInterval)! / b.tokensPerFill;
  return `${b.tokensPerFill} per ${b.fillInterval}, continuous (1 every ${
    duration(perToken)
  }), burst ${b.maxTokens}`;
}

/** What a gateway RateLimit means for several routes, in plain words (two lines). */
export const GATEWAY_ROUTES_NOTE = [
  "On the ingress gateway every route (each VirtualService host and http route) has its own buckets; this shows one route.",
  "A RateLimit over two routes gives two independent default buckets, so twice this traffic gets through.",
];

function table(rows: string[][], rightAligned: ReadonlySet<number>): string[] {
  const widths = rows[0].map((_, c) => rows.reduce((w, r) => Math.max(w, r[c].length), 0));
  return rows.map((r) =>
    r.map((cell, c) => (rightAligned.has(c) ? cell.padStart(widths[c]) : cell.padEnd(widths[c])))
      .join("  ").trimEnd()
  );
}

/** A response's status as the table shows it: `429`, or `200 grpc-status 8` for a gRPC reply. */
function statusText(o: RequestOutcome): string {
  const grpc = o.responseHeaders["grpc-status"];
  return grpc === undefined ? String(o.status) : `${o.status} grpc-status ${grpc}`;
}

/** The rates of a run's buckets on `replicas` Pods, one line a bucket. */
function ratesReport(result: TrafficRun): string[] {
  const n = result.replicas;
  if (n === undefined || result.rates.length === 0) return [];
  return [
    "",
    ...table(
      [
        ["BUCKET", "PER POD", `${n} ${n === 1 ? "REPLICA" : "REPLICAS"}`],
        // A global rule's limit holds for the workload as a whole: no rate of its own per Pod.
        ...result.rates.map((r) => [r.bucket, r.perPod ?? "-", r.workload]),
      ],
      new Set([1, 2]),
    ),
  ];
}

/**
 * The readable report: which Envoy behaviour it shows, one row a request, then admitted and
 * rejected per bucket (and, in shadow mode, how many of the admitted it would have rejected),
 * then each bucket's rate on one Pod and on the replicas.
 */
export function textReport(result: TrafficRun): string[] {
  const withHeaders = result.outcomes.some((o) => Object.keys(o.headers).length > 0);
  const shadow = result.shadow;
  const perClient = result.buckets.some((b) => b.rule?.perClient !== undefined);
  const global = result.global !== undefined;
  const pods = result.pods > 1;
  const methods = result.outcomes.some((o) => o.method !== undefined);
  const head = [
    "T",
    ...(methods ? ["METHOD"] : []),
    "PATH",
    ...(withHeaders ? ["HEADERS"] : []),
    ...(pods ? ["POD"] : []),
    "STATUS",
    ...(result.buckets.length > 0 ? ["BUCKET"] : []),
    ...(perClient ? ["CLIENT"] : []),
    ...(result.buckets.length > 0 ? ["LEFT"] : []),
    ...(global ? ["GLOBAL", "GLOBAL LEFT"] : []),
    ...(shadow ? ["SHADOW"] : []),
  ];
  const rows = result.outcomes.map((o) => [
    formatT(o.t),
    ...(methods ? [o.method ?? "GET"] : []),
    o.path,
    ...(withHeaders ? [Object.entries(o.headers).map(([k, v]) => `${k}=${v}`).join(",")] : []),
    ...(pods ? [o.pod === undefined ? "-" : String(o.pod)] : []),
    statusText(o),
    ...(result.buckets.length > 0 ? [o.bucket === undefined ? "-" : String(o.bucket)] : []),
    ...(perClient ? [o.bucketClient ?? ""] : []),
    ...(result.buckets.length > 0 ? [o.remaining === undefined ? "-" : String(o.remaining)] : []),
    ...(global
      ? [
        o.global?.rule ?? "-",
        o.global?.remaining === undefined ? "-" : String(o.global.remaining),
      ]
      : []),
    ...(shadow ? [o.wouldReject ? "would reject" : ""] : []),
  ]);
  const right = ["POD", "STATUS", "LEFT", "GLOBAL LEFT"].map((h) => head.indexOf(h));
  const requests = table([head, ...rows], new Set(right.filter((c) => c >= 0)));
  const summary = table(
    [
      [
        "BUCKET",
        ...(perClient ? ["CLIENT"] : []),
        "MATCHES",
        "REFILL",
        "ADMITTED",
        ...(shadow ? ["WOULD REJECT"] : []),
        "REJECTED",
      ],
      ...result.buckets.map((b) => [
        String(b.id),
        ...(perClient ? [b.client ?? ""] : []),
        describeRule(b.rule),
        describeBucket(b, result.envoy.refill),
        String(b.admitted),
        ...(shadow ? [String(b.wouldReject)] : []),
        String(b.rejected),
      ]),
    ],
    new Set((shadow ? [3, 4, 5] : [3, 4]).map((c) => c + (perClient ? 1 : 0))),
  );
  const admitted = result.outcomes.filter((o) => !o.rejected).length;
  const would = result.outcomes.filter((o) => o.wouldReject).length;
  const byGlobal = result.outcomes.filter((o) => o.global?.rejected).length;
  const rejected = result.outcomes.length - admitted;
  return [
    describeBehaviour(result.envoy),
    ...(global ? globalNote(result.pods) : []),
    ...(shadow
      ? [
        `Shadow mode (spec.enforce: false): nothing is rejected; the workload sees ${SHADOW_HEADER}: ${SHADOW_HEADER_VALUE} on what would be.`,
      ]
      : []),
    ...(result.gateway ? GATEWAY_ROUTES_NOTE : []),
    ...result.advice,
    ...requests,
    "",
    `${result.outcomes.length} requests: ${admitted} admitted${
      shadow ? ` (${would} would be rejected)` : ""
    }, ${rejected} rejected${
      global && rejected > 0
        ? ` (${rejected - byGlobal} by local limits, ${byGlobal} by global)`
        : ""
    }`,
    ...(result.buckets.length > 0 ? summary : []),
    ...(result.global ? globalSummary(result.global, shadow) : []),
    ...ratesReport(result),
  ];
}

/** The lines saying how the preview runs a global part. */
function globalNote(pods: number): string[] {
  return [
    `Global limits: one engine (envoyproxy/ratelimit's fixed windows) counts for ${
      pods === 1 ? "the Pod" : `all ${pods} Pods, the requests going to each in turn`
    }; time 0 starts a window of every unit; a request the local limits refuse is not counted.`,
  ];
}

/** A global limit in words: `4/Minute`. */
function limitText(l: GlobalLimit): string {
  return `${l.requests}/${l.unit}`;
}

/** Admitted and refused by each global rule, all Pods together. */
function globalSummary(reports: readonly GlobalReport[], shadow: boolean): string[] {
  return [
    "",
    ...table(
      [
        [
          "GLOBAL",
          "MATCHES",
          "LIMIT",
          "ADMITTED",
          ...(shadow ? ["WOULD REJECT"] : []),
          "REJECTED",
        ],
        ...reports.map((r) => [
          r.id,
          describeRule(r.rule),
          limitText(r.limit),
          String(r.admitted),
          ...(shadow ? [String(r.wouldReject)] : []),
          String(r.rejected),
        ]),
      ],
      new Set(shadow ? [3, 4, 5] : [3, 4]),
    ),
  ];
}
