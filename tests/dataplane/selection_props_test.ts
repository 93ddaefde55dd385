/**
 * Properties of the generated EnvoyFilter as the data-plane model runs it, against a reference
 * written from docs/design.md (which bucket) and from Envoy's arithmetic (envoy_reference.ts: tokens
 * and header values), for Envoy 1.30, 1.33 and 1.38: the first matching rule wins; the path
 * matches exactly, query ignored, and a path prefix starts the path, query and all; the method is
 * one of the rule's, exactly; the host one of the rule's, case-insensitively and without a port or
 * trailing dot, `*.d` any name ending in `.d`; header names case-insensitively, values exactly; one token from
 * that bucket only; every response carries the headers that Envoy computes; every 429 has the
 * exact shape. Global rules, matched by the same entries, count a request under the first rule that
 * takes it, else the default, as the engine model answers the global filter.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseFillInterval } from "../../src/api/duration.ts";
import { parseRateLimit, type RateLimit } from "../../src/api/ratelimit.ts";
import {
  engineConfigOfFilters,
  EngineModel,
  envoyBehaviour,
  Mesh,
} from "../../src/dataplane/mod.ts";
import { renderEnvoyFilter } from "../../src/reconcile/ratelimit/render.ts";
import { validateSpec } from "../../src/reconcile/ratelimit/validate.ts";
import { RefLimiter, type RefSpec } from "./envoy_reference.ts";

const VERSIONS = ["1.30", "1.33", "1.38"].map((v) => {
  const b = envoyBehaviour(v);
  if (!b.ok) throw new Error(b.error);
  return b.value;
});

/** The one Pod the RateLimits select. */
const POD = { namespace: "demo", name: "p", labels: { app: "httpbin" }, ready: true };

const PATHS = ["/", "/a", "/b", "/a/b", "/A"];
const PREFIXES = ["/", "/a", "/a/", "/ab", "/b"];
const NAMES = ["X-A", "x-b", "X-Rate-Limited"];
const METHODS = ["GET", "POST", "PUT", "DELETE"];
const VALUES = ["1", "true", "True", ""];
const HOSTS = [
  "a.example.com",
  "*.example.com",
  "b.a.example.com",
  "*.a.example.com",
  "example.org",
];
/** Request hosts: in other cases, with ports, trailing dots, and near misses. */
const REQUEST_HOSTS = [
  "a.example.com",
  "A.Example.COM:8080",
  "b.a.example.com.",
  "b.a.example.com.:80",
  "example.com",
  "x.example.com:443",
  "example.org",
  "EXAMPLE.ORG.",
  "a.example.com:",
  "a.example.comx",
  "a.example.com..",
  "xa.example.com",
];

/** Query parameters a rule takes: names and values (decoded), an empty value, a dot. */
const QUERIES: Record<string, string>[] = [
  { format: "csv" },
  { format: "" },
  { q: "." },
  { format: "csv", q: "." },
  { "ids[]": "a.b" },
];
/**
 * Request paths with query strings: repeated parameters, encodings of either case, empty values,
 * names that only end like one, values with an `=`.
 */
const QUERY_PATHS = [
  "/a?format=csv",
  "/a?x=1&format=csv",
  "/a?format=json&format=csv",
  "/a?%66ormat=%63sv",
  "/a?FORMAT=csv",
  "/a?format=CSV",
  "/a?format=csv&",
  "/a?format",
  "/a?format=",
  "/a?xformat=csv",
  "/b?format=csv=1",
  "/b?q=.&format=csv",
  "/b?q=%2e&format=%63%73%76",
  "/b?q=%2E",
  "/b?q=%2",
  "/a/b?ids[]=a.b",
  "/a?ids%5b%5D=a%2Eb",
  "/a?format=csv?q=.",
];

interface Rule {
  path?: string;
  pathPrefix?: string;
  methods?: string[];
  hosts?: string[];
  headers?: Record<string, string>;
  queryParams?: Record<string, string>;
  bucket: { maxTokens: number; tokensPerFill: number; fillInterval: string };
}

const bucketArb = (intervals: string[]) =>
  fc.record({
    maxTokens: fc.integer({ min: 1, max: 4 }),
    tokensPerFill: fc.integer({ min: 1, max: 3 }),
    fillInterval: fc.constantFrom(...intervals),
  });

const headersArb = fc.dictionary(fc.constantFrom(...NAMES), fc.constantFrom(...VALUES), {
  minKeys: 1,
  maxKeys: 2,
});

const ruleArb: fc.Arbitrary<Rule> = fc.record({
  path: fc.option(
    fc.oneof(
      fc.constantFrom(...PATHS).map((path) => ({ path })),
      fc.constantFrom(...PREFIXES).map((pathPrefix) => ({ pathPrefix })),
    ),
    { nil: undefined },
  ),
  methods: fc.option(
    fc.subarray(METHODS, { minLength: 1 }).chain((ms) =>
      fc.shuffledSubarray(ms, { minLength: ms.length })
    ),
    {
      nil: undefined,
    },
  ),
  hosts: fc.option(fc.shuffledSubarray(HOSTS, { minLength: 1, maxLength: 3 }), { nil: undefined }),
  // A Host named as a header compares exactly, as sent: one spelling of the request hosts.
  headers: fc.option(
    fc.oneof(
      headersArb,
      fc.tuple(
        fc.option(headersArb, { nil: undefined }),
        fc.constantFrom("Host", "host"),
        fc.constantFrom(...REQUEST_HOSTS),
      ).map(([hs, name, value]) => ({ ...hs, [name]: value })),
    ),
    { nil: undefined },
  ),
  queryParams: fc.option(fc.constantFrom(...QUERIES), { nil: undefined }),
  bucket: bucketArb(["10s", "20s", "1m"]),
}, { requiredKeys: ["bucket"] }).filter((r) =>
  r.path !== undefined || r.methods !== undefined || r.hosts !== undefined ||
  r.headers !== undefined || r.queryParams !== undefined
)
  .map((r) => ({
    ...(r.path ?? {}),
    ...(r.methods ? { methods: r.methods } : {}),
    ...(r.hosts ? { hosts: r.hosts } : {}),
    ...(r.headers ? { headers: r.headers } : {}),
    ...(r.queryParams ? { queryParams: r.queryParams } : {}),
    bucket: r.bucket,
  }));

const rateLimitArb = fc.record({
  rules: fc.array(ruleArb, { maxLength: 4 }),
  defaultBucket: bucketArb(["10s"]),
  enableResponseHeaders: fc.boolean(),
}).map((r) =>
  parseRateLimit({
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    metadata: { name: "rl", namespace: "demo", uid: "u" },
    spec: {
      selectorLabels: { app: "httpbin" },
      enableResponseHeaders: r.enableResponseHeaders,
      local: { defaultBucket: r.defaultBucket, buckets: r.rules },
    },
  })
).filter((p) => p.ok && validateSpec(p.value.spec).length === 0)
  .map((p) => (p as { ok: true; value: RateLimit }).value);

interface Req {
  /** Nanoseconds after the limit was applied. */
  ns: number;
  path: string;
  method: string;
  headers: Record<string, string>;
}

/** Request headers: each name at most once, in a random letter case. */
const requestHeadersArb = fc.array(
  fc.tuple(fc.constantFrom(...NAMES), fc.constantFrom(...VALUES), fc.boolean()),
  { maxLength: 3 },
).map((hs) => {
  const out: Record<string, string> = {};
  const seen = new Set<string>();
  for (const [name, value, upper] of hs) {
    if (seen.has(name.toLowerCase())) continue;
    seen.add(name.toLowerCase());
    out[upper ? name.toUpperCase() : name.toLowerCase()] = value;
  }
  return out;
});

const requestsArb = fc.array(
  fc.record({
    // Bursts at one instant, whole milliseconds, and fractional times (nanoseconds).
    gap: fc.oneof(
      fc.constant(0),
      fc.integer({ min: 0, max: 15_000 }).map((ms) => ms * 1_000_000),
      fc.integer({ min: 0, max: 15e9 }),
    ),
    path: fc.constantFrom(
      ...PATHS,
      "/a/",
      "/a?x=1",
      "/b?",
      "/a/b?c=/a",
      "/ab",
      "/abc?a/",
      ...QUERY_PATHS,
    ),
    // Methods compare exactly: get is not GET, nor GETX.
    method: fc.constantFrom(...METHODS, "get", "GETX", "HEAD"),
    headers: requestHeadersArb,
    host: fc.option(fc.tuple(fc.constantFrom(...REQUEST_HOSTS), fc.constantFrom("Host", "host")), {
      nil: undefined,
    }),
  }),
  { maxLength: 60 },
).map((rs) => {
  let ns = 0;
  return rs.map((r): Req => ({
    ns: ns += r.gap,
    path: r.path,
    method: r.method,
    headers: r.host === undefined ? r.headers : { ...r.headers, [r.host[1]]: r.host[0] },
  }));
});

/**
 * Whether a rule's host takes the request's Host, as docs/ratelimit.md says: letters in any case,
 * a port and one trailing dot dropped; `*.d` any name that ends with `.d` after one label or more.
 */
function hostTakes(host: string, sent: string | undefined): boolean {
  if (sent === undefined) return false;
  const name = sent.toLowerCase().replace(/:[0-9]+$/, "").replace(/\.$/, "");
  if (name.includes(":")) return false;
  if (!host.startsWith("*.")) return name === host;
  return name.length > host.length - 1 && name.endsWith(host.slice(1));
}

/**
 * Whether a request's path has each of a rule's query parameters, as docs/ratelimit.md says: in the
 * query (after the first `?`), a parameter (between `&`s) whose name (up to its first `=`) and
 * value, percent-decoded, are the rule's; no `=` is an empty value; any occurrence.
 */
function queryTakes(query: Record<string, string>, path: string): boolean {
  const at = path.indexOf("?");
  if (at < 0) return false;
  const decode = (s: string) =>
    s.replace(/%([0-9A-Fa-f]{2})/g, (_, hex) => String.fromCharCode(parseInt(hex, 16)));
  const params = path.slice(at + 1).split("&").map((p) => {
    const eq = p.indexOf("=");
    return eq < 0 ? [decode(p), ""] : [decode(p.slice(0, eq)), decode(p.slice(eq + 1))];
  });
  return Object.entries(query).every(([name, value]) =>
    params.some(([n, v]) => n === name && v === value)
  );
}

/** docs/design.md's selection, written directly. */
function expectedBucket(rules: readonly Rule[], req: Req): "default" | number {
  const path = req.path.split("?")[0];
  const headers = new Map(Object.entries(req.headers).map(([k, v]) => [k.toLowerCase(), v]));
  const i = rules.findIndex((r) =>
    (r.path === undefined || r.path === path) &&
    (r.pathPrefix === undefined || req.path.startsWith(r.pathPrefix)) &&
    (r.methods === undefined || r.methods.includes(req.method)) &&
    (r.hosts === undefined || r.hosts.some((h) => hostTakes(h, headers.get("host")))) &&
    Object.entries(r.headers ?? {}).every(([k, v]) => headers.get(k.toLowerCase()) === v) &&
    (r.queryParams === undefined || queryTakes(r.queryParams, req.path))
  );
  return i < 0 ? "default" : i;
}

function refSpec(b: Rule["bucket"]): RefSpec {
  return {
    maxTokens: b.maxTokens,
    tokensPerFill: b.tokensPerFill,
    fillIntervalMs: parseFillInterval(b.fillInterval)!,
  };
}

Deno.test("property: bucket selection, admission, headers and the 429 shape", () => {
  fc.assert(
    fc.property(rateLimitArb, requestsArb, (rl, requests) => {
      const rules = rl.spec.local!.buckets as Rule[];
      for (const envoy of VERSIONS) {
        const mesh = new Mesh({ envoy });
        mesh.sync([renderEnvoyFilter(rl)], [POD], 0);
        assert.deepEqual(mesh.rejections(), []);
        const specs = [rl.spec.local!.defaultBucket, ...rules.map((r) => r.bucket)].map(refSpec);
        const ref = new RefLimiter(specs, envoy.minor);
        for (const req of requests) {
          const want = expectedBucket(rules, req);
          const answer = ref.request(want === "default" ? 0 : want + 1, BigInt(req.ns));
          const r = mesh.send({
            to: { namespace: "demo", labels: { app: "httpbin" } },
            path: req.path,
            method: req.method,
            headers: req.headers,
          }, req.ns / 1e6);
          const where = `Envoy ${envoy.version}, ${req.ns} ns: ${req.method} ${req.path} ${
            JSON.stringify(req.headers)
          }`;
          assert.equal(r.bucket, want, where);
          const headers: Record<string, string> = rl.spec.enableResponseHeaders
            ? {
              "x-ratelimit-limit": String(answer.limit),
              "x-ratelimit-remaining": String(answer.remaining),
              ...(answer.reset !== undefined ? { "x-ratelimit-reset": String(answer.reset) } : {}),
            }
            : {};
          if (answer.admitted) {
            assert.deepEqual([r.status, r.body, r.headers], [200, "", headers], where);
          } else {
            assert.deepEqual(
              { status: r.status, body: r.body, headers: r.headers },
              {
                status: 429,
                // HEAD: headers only (Http::Utility::sendLocalReply's is_head_request_).
                body: req.method === "HEAD" ? "" : "local_rate_limited",
                headers: { ...headers, "content-type": "text/plain" },
              },
              where,
            );
          }
        }
      }
    }),
    { seed: 42, numRuns: 1000 },
  );
});

Deno.test("property: at most one rule's descriptor is produced for any request", () => {
  fc.assert(
    fc.property(rateLimitArb, requestsArb, (rl, requests) => {
      // With always_consume_default false and one descriptor per request, each admitted request
      // takes exactly one token in total: the sum over buckets of tokens used equals admissions.
      const mesh = new Mesh();
      mesh.sync([renderEnvoyFilter(rl)], [POD], 0);
      const state = mesh.proxy("demo", "p")!;
      const buckets = () =>
        [...state.buckets.values(), ...state.routes.values()].flatMap((m) => [...m.values()]);
      for (const req of requests) {
        const before = buckets().reduce((n, b) => n + b.tokensAt(0), 0);
        const count = buckets().length;
        const r = mesh.send({
          to: { namespace: "demo", labels: { app: "httpbin" } },
          path: req.path,
          method: req.method,
          headers: req.headers,
        }, 0);
        const after = buckets().reduce((n, b) => n + b.tokensAt(0), 0);
        const fresh = buckets().slice(count).reduce((n, b) => n + b.spec.maxTokens, 0);
        assert.equal(before + fresh - after, r.status === 200 ? 1 : 0);
      }
    }),
    { seed: 7, numRuns: 1000 },
  );
});

Deno.test("property: the first global rule that takes a request counts it, else the default", () => {
  const T0_MS = 1795877160_000;
  // Each rule's limit is its own number, so the engine's answer says which rule counted.
  const limitOf = (i: number | "default") => i === "default" ? 900 : 1000 + i;
  const globalArb = fc.record({
    rules: fc.array(ruleArb, { minLength: 1, maxLength: 4 }),
    withDefault: fc.boolean(),
  }).map((g) =>
    parseRateLimit({
      apiVersion: "gateway.platform-project.io/v1alpha1",
      kind: "RateLimit",
      metadata: { name: "rl", namespace: "demo", uid: "u", generation: 1 },
      spec: {
        selectorLabels: { app: "httpbin" },
        global: {
          rules: g.rules.map(({ bucket: _, ...match }, i) => ({
            ...match,
            limit: { requests: limitOf(i), unit: "Minute" },
          })),
          ...(g.withDefault
            ? { default: { limit: { requests: limitOf("default"), unit: "Minute" } } }
            : {}),
        },
      },
    })
  ).filter((p) => p.ok && validateSpec(p.value.spec).length === 0)
    .map((p) => (p as { ok: true; value: RateLimit }).value);
  let counted = 0;
  fc.assert(
    fc.property(globalArb, requestsArb, (rl, requests) => {
      const filter = renderEnvoyFilter(rl, undefined, { global: true });
      const { config, problems } = engineConfigOfFilters([filter]);
      assert.deepEqual(problems, []);
      const mesh = new Mesh({ engine: new EngineModel([{ config, ready: true }]) });
      mesh.sync([filter], [POD], 0);
      assert.deepEqual(mesh.rejections(), []);
      const rules = rl.spec.global!.rules as unknown as Rule[];
      for (const req of requests) {
        const r = mesh.send({
          to: { namespace: "demo", labels: { app: "httpbin" } },
          path: req.path,
          method: req.method,
          headers: req.headers,
        }, T0_MS + req.ns / 1e6);
        const want = expectedBucket(rules, req);
        const where = `${req.method} ${req.path} ${JSON.stringify(req.headers)}`;
        if (want === "default" && rl.spec.global!.default === undefined) {
          assert.equal(
            r.global,
            undefined,
            `${where}: no rule, no default: the engine is not asked`,
          );
          continue;
        }
        counted++;
        // One counter, the rule's: a request that two entries described would count twice.
        assert.equal(r.global?.keys?.length, 1, `${where}: ${JSON.stringify(r.global?.keys)}`);
        assert.equal(r.global?.requestsPerUnit, limitOf(want), where);
      }
    }),
    { seed: 23, numRuns: 500 },
  );
  assert.ok(counted > 1000, `only ${counted} requests counted`);
});
