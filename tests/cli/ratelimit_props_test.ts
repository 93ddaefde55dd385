/**
 * The preview (`deno task ratelimit`, main() with temp files) never crashes on a schema-valid
 * RateLimit: for any RateLimit the CRD admits, from small ones to the largest and oddest the bounds
 * allow, and a few requests that hit its rules, it prints a result (exit 0) or the operator's
 * refusal (exit 2), and never throws.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { stringify } from "yaml";
import { parseRateLimit } from "../../src/api/ratelimit.ts";
import {
  MAX_BUCKET_RULES,
  MAX_HEADER_NAME_LENGTH,
  MAX_HEADER_VALUE_LENGTH,
  MAX_LABEL_KEY_LENGTH,
  MAX_LABEL_VALUE_LENGTH,
  MAX_PATH_LENGTH,
  MAX_RULE_HEADERS,
  MAX_TOKENS_LIMIT,
} from "../../src/api/ratelimit_bounds.ts";
import { main } from "../../src/cli/ratelimit/mod.ts";
import { customResourceDefinitions } from "../../src/crd/definitions.ts";
import { admits } from "../crd/admission.ts";
import { boundCases, largestRateLimit, oddRateLimits } from "../reconcile/ratelimit_extremes.ts";

const SCHEMA = customResourceDefinitions().find((c) => c.spec.names.kind === "RateLimit")!.spec
  .versions[0].schema.openAPIV3Schema;

/** Text of at most `max` characters: often short and plain, sometimes long or odd. */
const text = (max: number) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.string({ maxLength: Math.min(max, 8) }) },
    { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: Math.min(max, 20) }) },
    {
      weight: 1,
      arbitrary: fc.constantFrom("<>&", "\u2028", "🙂", " ", "=", "a=b", "\\", '"').map((s) =>
        s.repeat(Math.max(1, Math.floor(max / [...s].length)))
      ),
    },
  );

const tokens = fc.oneof(
  fc.integer({ min: 1, max: 20 }),
  fc.constantFrom(1, MAX_TOKENS_LIMIT - 1, MAX_TOKENS_LIMIT),
  fc.integer({ min: 1, max: MAX_TOKENS_LIMIT }),
);
const interval = fc.oneof(
  fc.constantFrom("1s", "2s", "10s", "30s", "1m", "2m", "999999999s", "9999999m"),
  fc.integer({ min: 1, max: 999999999 }).map((n) => `${n}s`),
  fc.integer({ min: 1, max: 9999999 }).map((n) => `${n}m`),
);
const bucketArb = fc.record({ maxTokens: tokens, tokensPerFill: tokens, fillInterval: interval });
/** A bucket whose interval is a multiple of `unit` (as the operator requires), or any. */
const ruleBucket = (unit: string) =>
  fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record({
        maxTokens: tokens,
        tokensPerFill: tokens,
        fillInterval: fc.integer({ min: 1, max: 3 }).map((k) => {
          const n = Number(unit.slice(0, -1)) * k;
          return n <= (unit.endsWith("s") ? 999999999 : 9999999) ? `${n}${unit.slice(-1)}` : unit;
        }),
      }),
    },
    { weight: 1, arbitrary: bucketArb },
  );
/** Mostly what a valid rule has (an HTTP token, a path without spaces), sometimes anything. */
const mostly = <T>(valid: fc.Arbitrary<T>, any: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 12, arbitrary: valid }, { weight: 1, arbitrary: any });
const pathArb = mostly(
  fc.stringMatching(/^\/[A-Za-z0-9._~%!$&'()*+,;=:@\/<>"`{}|^-]{0,40}$/),
  text(MAX_PATH_LENGTH - 1).map((s) => `/${s.replace(/[?#]/g, "")}`),
).filter((p) => [...p].length <= MAX_PATH_LENGTH);
const headersArb = fc.dictionary(
  mostly(fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,20}$/), text(MAX_HEADER_NAME_LENGTH)),
  text(MAX_HEADER_VALUE_LENGTH),
  { minKeys: 1, maxKeys: MAX_RULE_HEADERS },
);
const ruleArb = (unit: string) =>
  fc.record({
    path: fc.option(pathArb, { nil: undefined }),
    headers: fc.option(headersArb, { nil: undefined }),
    bucket: ruleBucket(unit),
  }).map((r) => ({
    ...(r.path !== undefined || r.headers === undefined ? { path: r.path ?? "/" } : {}),
    ...(r.headers !== undefined ? { headers: r.headers } : {}),
    bucket: r.bucket,
  }));
const labelsArb = fc.dictionary(
  mostly(fc.stringMatching(/^[a-z0-9]([a-z0-9.-]{0,20}[a-z0-9])?$/), text(MAX_LABEL_KEY_LENGTH)),
  mostly(fc.stringMatching(/^[a-z0-9]{0,10}$/), text(MAX_LABEL_VALUE_LENGTH)),
  { minKeys: 1, maxKeys: 4 },
);

/** Any RateLimit of the schema's shape: mostly a usable one, sometimes not (the operator refuses). */
const generated = bucketArb.chain((defaultBucket) =>
  fc.record({
    name: fc.oneof(fc.constant("rl"), text(20).filter((s) => s.length > 0)),
    selectorLabels: fc.oneof(fc.constant({ app: "httpbin" }), labelsArb),
    enableResponseHeaders: fc.option(fc.boolean(), { nil: undefined }),
    defaultBucket: fc.constant(defaultBucket),
    buckets: fc.array(ruleArb(defaultBucket.fillInterval), { maxLength: MAX_BUCKET_RULES }),
  }).map((r) => ({
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    metadata: { name: r.name },
    spec: {
      selectorLabels: r.selectorLabels,
      ...(r.enableResponseHeaders === undefined
        ? {}
        : { enableResponseHeaders: r.enableResponseHeaders }),
      local: { defaultBucket: r.defaultBucket, buckets: r.buckets },
    },
  }))
);

/** The extremes of tests/reconcile/ratelimit_extremes.ts, built once. */
const EXTREMES: unknown[] = [
  largestRateLimit("plain"),
  largestRateLimit("escaped"),
  largestRateLimit("escaped", "gateway"),
  ...oddRateLimits().map((o) => o.rateLimit),
  ...boundCases().map((c) => c.at),
];

const rateLimitArb = fc.oneof(
  { weight: 6, arbitrary: generated as fc.Arbitrary<unknown> },
  { weight: 1, arbitrary: fc.constantFrom(...EXTREMES) },
);

interface Spec {
  local: { buckets?: { path?: string; headers?: Record<string, string> }[] };
}

/** A few requests: at each rule's path and headers, and one elsewhere, over a few seconds. */
function requestsFor(rl: unknown, times: number[]): string {
  const rules = (rl as { spec: Spec }).spec.local.buckets ?? [];
  const targets = [...rules.map((r) => ({ path: r.path ?? "/", headers: r.headers ?? {} })), {
    path: "/elsewhere",
    headers: {},
  }];
  return times.map((t, i) => {
    const target = targets[i % targets.length];
    return JSON.stringify({ t: `${t}ms`, ...target, count: 1 + (i % 3) });
  }).join("\n");
}

const ENVOYS = ["1.30", "1.33", "1.35", "1.38"];

Deno.test("the preview never throws on a schema-valid RateLimit: a result or a clean refusal", async () => {
  const dir = await Deno.makeTempDir({ prefix: "ratelimit-props-" });
  const counts = { done: 0, refused: 0 };
  try {
    await fc.assert(
      fc.asyncProperty(
        rateLimitArb,
        fc.array(fc.integer({ min: 0, max: 5000 }), { minLength: 1, maxLength: 8 })
          .map((ts) => ts.sort((a, b) => a - b)),
        fc.constantFrom(...ENVOYS),
        fc.boolean(),
        async (rl, times, envoy, json) => {
          // Only what the API server admits: the property is about schema-valid files.
          fc.pre(admits(SCHEMA, rl));
          assert.ok(parseRateLimit(rl).ok, "the CRD and the operator's schema agree");
          const file = `${dir}/rl.yaml`;
          const requests = `${dir}/requests.jsonl`;
          await Deno.writeTextFile(file, stringify(rl));
          await Deno.writeTextFile(requests, requestsFor(rl, times));
          const out: string[] = [];
          const err: string[] = [];
          const args = [
            "-f",
            file,
            "--requests",
            requests,
            "--envoy",
            envoy,
            "--svg",
            `${dir}/a.svg`,
          ];
          const code = await main(json ? [...args, "--json"] : args, {
            out: (l) => out.push(l),
            err: (l) => err.push(l),
          });
          if (code === 0) {
            counts.done++;
            assert.ok(out.length > 0 && err.length === 0, err.join("\n"));
          } else {
            counts.refused++;
            assert.equal(code, 2, err.join("\n"));
            assert.match(
              err.join("\n"),
              /^error: .*rl\.yaml: (Invalid spec, limit not applied: )?/,
            );
          }
        },
      ),
      { seed: 2024, numRuns: 300 },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  console.log(`preview: ${counts.done} results, ${counts.refused} refusals`);
  // Both outcomes are explored.
  assert.ok(counts.done > 50 && counts.refused > 20, JSON.stringify(counts));
});
