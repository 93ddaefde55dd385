/**
 * Properties of the generated EnvoyFilter as the data-plane model runs it, against a reference
 * written from DESIGN.md alone: the first matching rule wins; the path matches exactly, query
 * ignored; header names case-insensitively, values exactly; one token from that bucket only;
 * every 429 has the exact shape.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseFillInterval } from "../../src/api/duration.ts";
import { parseRateLimit, type RateLimit } from "../../src/api/ratelimit.ts";
import { Mesh } from "../../src/dataplane/mod.ts";
import { renderEnvoyFilter } from "../../src/reconcile/ratelimit/envoyfilter.ts";
import { validateSpec } from "../../src/reconcile/ratelimit/validate.ts";

const PATHS = ["/", "/a", "/b", "/a/b", "/A"];
const NAMES = ["X-A", "x-b", "X-Rate-Limited"];
const VALUES = ["1", "true", "True", ""];

interface Rule {
  path?: string;
  headers?: Record<string, string>;
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
  path: fc.option(fc.constantFrom(...PATHS), { nil: undefined }),
  headers: fc.option(headersArb, { nil: undefined }),
  bucket: bucketArb(["10s", "20s", "1m"]),
}, { requiredKeys: ["bucket"] }).filter((r) => r.path !== undefined || r.headers !== undefined)
  .map((r) => ({
    ...(r.path ? { path: r.path } : {}),
    ...(r.headers ? { headers: r.headers } : {}),
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
  t: number;
  path: string;
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
    gap: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 15_000 })),
    path: fc.constantFrom(...PATHS, "/a/", "/a?x=1", "/b?", "/a/b?c=/a", "/ab"),
    headers: requestHeadersArb,
  }),
  { maxLength: 60 },
).map((rs) => {
  let t = 0;
  return rs.map((r): Req => ({ t: t += r.gap, path: r.path, headers: r.headers }));
});

/** DESIGN.md's selection, written directly. */
function expectedBucket(rules: readonly Rule[], req: Req): "default" | number {
  const path = req.path.split("?")[0];
  const headers = new Map(Object.entries(req.headers).map(([k, v]) => [k.toLowerCase(), v]));
  const i = rules.findIndex((r) =>
    (r.path === undefined || r.path === path) &&
    Object.entries(r.headers ?? {}).every(([k, v]) => headers.get(k.toLowerCase()) === v)
  );
  return i < 0 ? "default" : i;
}

/** One reference bucket a rule: starts full at 0, fills stepped one by one. */
class RefBucket {
  tokens: number;
  next: number;
  constructor(readonly b: Rule["bucket"]) {
    this.tokens = b.maxTokens;
    this.next = parseFillInterval(b.fillInterval)!;
  }
  take(t: number): boolean {
    const every = parseFillInterval(this.b.fillInterval)!;
    for (; this.next <= t; this.next += every) {
      this.tokens = Math.min(this.b.maxTokens, this.tokens + this.b.tokensPerFill);
    }
    if (this.tokens < 1) return false;
    this.tokens--;
    return true;
  }
}

Deno.test("property: bucket selection, admission and the 429 shape follow DESIGN.md", () => {
  fc.assert(
    fc.property(rateLimitArb, requestsArb, (rl, requests) => {
      const rules = rl.spec.local.buckets as Rule[];
      const mesh = new Mesh();
      mesh.sync([renderEnvoyFilter(rl)], [{
        namespace: "demo",
        name: "p",
        labels: { app: "httpbin" },
        ready: true,
      }], 0);
      assert.deepEqual(mesh.rejections(), []);
      const ref = new Map<"default" | number, RefBucket>();
      for (const req of requests) {
        const want = expectedBucket(rules, req);
        const spec = want === "default" ? rl.spec.local.defaultBucket : rules[want].bucket;
        if (!ref.has(want)) ref.set(want, new RefBucket(spec));
        const bucket = ref.get(want)!;
        const admitted = bucket.take(req.t);
        const r = mesh.send({
          to: { namespace: "demo", labels: { app: "httpbin" } },
          path: req.path,
          headers: req.headers,
        }, req.t);
        assert.equal(r.bucket, want, `${req.path} ${JSON.stringify(req.headers)}`);
        const headers: Record<string, string> = rl.spec.enableResponseHeaders
          ? {
            "x-ratelimit-limit": String(spec.maxTokens),
            "x-ratelimit-remaining": String(bucket.tokens),
          }
          : {};
        if (admitted) {
          assert.deepEqual([r.status, r.body, r.headers], [200, "", headers]);
        } else {
          assert.deepEqual(
            { status: r.status, body: r.body, headers: r.headers },
            {
              status: 429,
              body: "local_rate_limited",
              headers: { ...headers, "content-type": "text/plain" },
            },
          );
        }
      }
    }),
    { seed: 42, numRuns: 300 },
  );
});

Deno.test("property: at most one rule's descriptor is produced for any request", () => {
  fc.assert(
    fc.property(rateLimitArb, requestsArb, (rl, requests) => {
      // With always_consume_default false and one descriptor per request, each admitted request
      // takes exactly one token in total: the sum over buckets of tokens used equals admissions.
      const mesh = new Mesh();
      mesh.sync([renderEnvoyFilter(rl)], [{
        namespace: "demo",
        name: "p",
        labels: { app: "httpbin" },
        ready: true,
      }], 0);
      const state = mesh.proxy("demo", "p")!;
      for (const req of requests) {
        const before = [...state.buckets.values()].reduce((n, b) => n + b.tokens, 0);
        const count = state.buckets.size;
        const r = mesh.send({
          to: { namespace: "demo", labels: { app: "httpbin" } },
          path: req.path,
          headers: req.headers,
        }, 0);
        const after = [...state.buckets.values()].reduce((n, b) => n + b.tokens, 0);
        const fresh = [...state.buckets.values()].slice(count).reduce(
          (n, b) => n + b.spec.maxTokens,
          0,
        );
        assert.equal(before + fresh - after, r.status === 200 ? 1 : 0);
      }
    }),
    { seed: 7, numRuns: 200 },
  );
});
