/**
 * The bounds of docs/ratelimit.md "Bounds" through the reducer: a RateLimit at each bound is
 * applied and one over it is refused naming the field and the rule; the largest valid RateLimit
 * renders an EnvoyFilter below the operator's budget; a filter over the budget is refused and the
 * last good one kept; and a refusal with hundreds of problems still fits the CRD's message limit.
 */
import assert from "node:assert/strict";
import { storedBytes } from "../../src/api/json.ts";
import { CONDITION_MESSAGE_MAX } from "../../src/api/message.ts";
import { parseRateLimit } from "../../src/api/ratelimit.ts";
import { reconcileRateLimit } from "../../src/reconcile/ratelimit/mod.ts";
import { ONE_READY_ENGINE } from "../../src/reconcile/ratelimit/input.ts";
import { RateLimitStatusSchema } from "../../src/api/schema/ratelimit.ts";
import { ENGINE_DOMAIN_ANNOTATION } from "../../src/api/global_engine.ts";
import { ENVOYFILTER_MAX_BYTES } from "../../src/reconcile/ratelimit/render.ts";
import { MAX_RULE_HEADERS_AND_QUERY } from "../../src/api/ratelimit_bounds.ts";
import {
  boundCases,
  largestRateLimit,
  largestSelector,
  largestWithGlobal,
} from "./ratelimit_extremes.ts";
import {
  applyPlan,
  bucket,
  input,
  pod,
  rateLimit,
  reconcileWorld,
  withProxy,
} from "./ratelimit_fixtures.ts";

type Ready = { state: string; conditions: { type: string; reason: string; message: string }[] };

function readyOf(rl: unknown, more = {}): Ready["conditions"][number] & { state: string } {
  const status = reconcileRateLimit(input(rl, more)).status as Ready;
  return { state: status.state, ...status.conditions.find((c) => c.type === "Ready")! };
}

Deno.test("each bound: at it the limit is applied, one over it is refused naming field and rule", () => {
  for (const c of boundCases()) {
    const at = readyOf(c.at);
    assert.equal(at.state, "Ready", `${c.what}: ${at.message}`);
    const over = readyOf(c.over);
    assert.equal(over.reason, "InvalidSpec", c.what);
    assert.equal(over.message, `Invalid spec, limit not applied: ${c.says}`, c.what);
  }
});

Deno.test("the largest valid RateLimit renders an EnvoyFilter below the operator's budget", () => {
  const sizes: Record<string, number> = {};
  for (const fill of ["plain", "escaped"] as const) {
    const plan = reconcileRateLimit(input(largestRateLimit(fill)));
    assert.equal((plan.status as Ready).state, "Ready", fill);
    const filter = plan.apply.find((o) => o.kind === "EnvoyFilter")!;
    sizes[fill] = storedBytes(filter);
  }
  console.log(`largest EnvoyFilter: ${JSON.stringify(sizes)} bytes`);
  // Every character of its paths, names and values takes six bytes where the plain one's takes
  // one (hosts and methods have none to escape).
  assert.ok(sizes.escaped > 2.5 * sizes.plain, JSON.stringify(sizes));
  assert.ok(sizes.escaped <= ENVOYFILTER_MAX_BYTES, JSON.stringify(sizes));
  // Well below etcd's limit: the API server's additions (managedFields, ...) have room.
  assert.ok(sizes.escaped <= 0.6 * 1.5 * 1024 * 1024, JSON.stringify(sizes));
});

Deno.test("query parameters in place of headers, any number of them, render no larger a filter", () => {
  const headersOnly = storedBytes(reconcileRateLimit(input(largestRateLimit("escaped"))).apply[0]);
  const sizes: number[] = [];
  for (let q = 1; q <= MAX_RULE_HEADERS_AND_QUERY; q++) {
    for (const fill of ["plain", "escaped"] as const) {
      const plan = reconcileRateLimit(input(largestRateLimit(fill, "workload", q)));
      assert.equal((plan.status as Ready).state, "Ready", `${fill} ${q}`);
      const filter = plan.apply.find((o) => o.kind === "EnvoyFilter")!;
      assert.ok(JSON.stringify(filter).includes(":path"), `${fill} ${q}`);
      sizes.push(storedBytes(filter));
    }
  }
  console.log(`with query parameters: ${sizes.join(", ")} bytes (headers only ${headersOnly})`);
  assert.ok(Math.max(...sizes) <= headersOnly, `${sizes} against ${headersOnly}`);
});

Deno.test("with its global part rendered, the largest valid RateLimit is no larger but for the engine annotation, and under budget", () => {
  const localOnly = storedBytes(
    reconcileRateLimit(input(largestRateLimit("escaped"))).apply[0],
  );
  let largest = 0;
  for (const fill of ["plain", "escaped"] as const) {
    for (const { what, rateLimit } of largestWithGlobal(fill)) {
      const plan = reconcileRateLimit(input(rateLimit, { globalEngine: ONE_READY_ENGINE }));
      assert.equal((plan.status as Ready).state, "Ready", `${fill} ${what}`);
      const filter = plan.apply.find((o) => o.kind === "EnvoyFilter")!;
      assert.ok(JSON.stringify(filter).includes("envoy.filters.http.ratelimit"), what);
      const bytes = storedBytes(filter);
      largest = Math.max(largest, bytes);
      // The engine's configuration of the domain rides along in an annotation (a few KB at
      // most): the rest of the filter is no larger than the largest local-only one, and the
      // whole stays under the operator's budget with the same room as the local-only one.
      const annotation = storedBytes(filter.metadata.annotations?.[ENGINE_DOMAIN_ANNOTATION]);
      assert.ok(annotation > 0 && annotation < 8192, `${fill} ${what}: annotation ${annotation}`);
      assert.ok(
        bytes - annotation <= localOnly,
        `${fill} ${what}: ${bytes} - ${annotation} > ${localOnly}`,
      );
      assert.ok(bytes <= ENVOYFILTER_MAX_BYTES && bytes <= 0.6 * 1.5 * 1024 * 1024, `${bytes}`);
      // status.rates, local buckets and global rules together, fits the CRD's bound on it.
      const status = RateLimitStatusSchema.safeParse(plan.status);
      assert.ok(status.success, `${fill} ${what}: ${JSON.stringify(status.error?.issues)}`);
    }
  }
  console.log(`largest EnvoyFilter with a global part: ${largest} bytes (local only ${localOnly})`);
});

Deno.test("storedBytes counts what Go's JSON writes: UTF-8, and <, >, & and U+2028 in six bytes", () => {
  assert.equal(storedBytes("a"), 3);
  assert.equal(storedBytes("<>&"), 2 + 18);
  assert.equal(storedBytes("é"), 2 + 2);
  assert.equal(storedBytes("日"), 2 + 3);
  assert.equal(storedBytes("🙂"), 2 + 4);
  assert.equal(storedBytes("\u2028"), 2 + 6);
  assert.equal(storedBytes('"\\\n\u0001'), 2 + 2 + 2 + 2 + 6);
  assert.equal(storedBytes({ a: [1, true, null] }), '{"a":[1,true,null]}'.length);
});

Deno.test("a filter over the byte budget is refused naming its size and the limit; the last good one stays", () => {
  const base = input(rateLimit({ generation: 1 }));
  const good = applyPlan({ rateLimit: base.rateLimit as never }, reconcileRateLimit(base));
  assert.ok(good.envoyFilter);
  const bytes = storedBytes(good.envoyFilter);
  const edited = rateLimit({
    generation: 2,
    buckets: [{ path: "/a", bucket: bucket(1, 1, "30s") }],
  });
  // Generation 2 renders a larger filter than generation 1's, which just fits the budget.
  const plan = reconcileWorld(
    { rateLimit: edited, envoyFilter: good.envoyFilter },
    { ...base, maxFilterBytes: bytes },
  );
  const status = plan.status as Ready;
  const ready = status.conditions.find((c) => c.type === "Ready")!;
  assert.equal(status.state, "Error");
  assert.equal(ready.reason, "InvalidSpec");
  assert.match(
    ready.message,
    new RegExp(
      `^Invalid spec, generation 2 rejected: spec: the EnvoyFilter it renders has \\d+ bytes, over the limit of ${bytes} \\(etcd stores at most 1\\.5 MiB an object\\); generation 1 still enforced by EnvoyFilter demo/httpbin$`,
    ),
  );
  assert.deepEqual(plan.apply, []);
  assert.deepEqual(plan.delete, []);
  // At the budget, the same spec is applied.
  const size = Number(/has (\d+) bytes/.exec(ready.message)![1]);
  const fits = reconcileRateLimit({ ...base, rateLimit: edited, maxFilterBytes: size });
  assert.equal((fits.status as Ready).state, "Ready");
  assert.equal(storedBytes(fits.apply[0]), size);
});

Deno.test("300 invalid rules: the message fits the CRD's limit and counts the problems left out", () => {
  const rules = Array.from({ length: 300 }, (_, i) => ({
    path: `/p${i}?q`,
    headers: { [`bad name ${i}`]: "v" },
    bucket: bucket(1, 1, "45s"),
  }));
  const rl = rateLimit({ buckets: rules });
  const ready = readyOf(rl);
  assert.equal(ready.reason, "InvalidSpec");
  assert.ok(ready.message.length <= CONDITION_MESSAGE_MAX, String(ready.message.length));
  // Over the list's bound, the schema refuses the list and reads none of its rules.
  assert.equal(
    ready.message,
    "Invalid spec, limit not applied: spec.local.buckets: must have at most 8 entries",
  );
});

/** The Ready message of `rl`, and that it fits the CRD's limit with the problems left out counted. */
function assertCut(rl: unknown, problems: number): void {
  const m = readyOf(rl);
  assert.equal(m.reason, "InvalidSpec");
  assert.ok(m.message.length <= CONDITION_MESSAGE_MAX, String(m.message.length));
  assert.ok(m.message.length > CONDITION_MESSAGE_MAX - 400, String(m.message.length));
  const left = Number(/; and (\d+) more problems$/.exec(m.message)?.[1]);
  const shown = m.message.split("; ").length - 1;
  assert.ok(left > 0, m.message.slice(-200));
  assert.equal(shown + left, problems, m.message.slice(-200));
}

Deno.test("hundreds of problems: the message fits the CRD's limit and counts the ones left out", () => {
  // Schema errors, as in a file no API server has checked (the preview reads such files).
  const labels = (n: number, value: (i: number) => string) =>
    Object.fromEntries(
      Array.from({ length: n }, (_, i) => [`key-${i}-${"k".repeat(200)}`, value(i)]),
    );
  const unchecked = rateLimit({ selectorLabels: labels(300, () => "v".repeat(64)) });
  const parsed = parseRateLimit(unchecked);
  assert.ok(!parsed.ok && parsed.errors.length === 300 + 1);
  assertCut(unchecked, parsed.errors.length);
  // A schema-valid RateLimit whose labels all break Kubernetes' label syntax: two problems each.
  const valid = rateLimit({ selectorLabels: labels(256, (i) => `bad value ${i}!`) });
  assert.ok(parseRateLimit(valid).ok);
  assertCut(valid, 512);
});

Deno.test("a long selector and many RateLimits in a message are cut, counting what was left out", () => {
  const selector = largestSelector();
  const peers = Array.from({ length: 500 }, (_, i) =>
    rateLimit({
      name: `older-${i}-${"x".repeat(200)}`,
      selectorLabels: selector,
      created: "2024-01-01T00:00:00Z",
    }));
  const conflict = readyOf(rateLimit({ selectorLabels: selector }), { peers });
  assert.equal(conflict.reason, "Conflict");
  assert.ok(conflict.message.length < 3000, String(conflict.message.length));
  const labels = /^spec\.selectorLabels (\S+) and (\d+) more labels selects/.exec(conflict.message);
  assert.ok(labels, conflict.message.slice(0, 200));
  assert.equal(labels[1].split(",").length + Number(labels[2]), 256);
  assert.match(
    conflict.message,
    /, demo\/older-\d+-x+ and \d+ more RateLimits; only one RateLimit/,
  );
  const applied = readyOf(rateLimit({ selectorLabels: selector }));
  assert.match(applied.message, /applied to Pods with p+0000\/n+=v+,\S+ and 254 more labels by /);
});

Deno.test("the largest RateLimit over Pods of both kinds doubles its filter: refused by size, not sent", () => {
  const rl = largestRateLimit("escaped");
  const meta = (rl as { metadata: { namespace: string } }).metadata;
  const labels = (rl.spec as { selectorLabels: Record<string, string> }).selectorLabels;
  const both = ["router", "sidecar"].map((kind, i) =>
    withProxy(pod(`p-${i}`, labels, meta.namespace), kind as "router" | "sidecar")
  );
  const ready = readyOf(rl, { pods: both });
  assert.equal(ready.state, "Error");
  assert.match(
    ready.message,
    /the EnvoyFilter it renders has \d+ bytes, over the limit of 1048576/,
  );
  // One kind alone fits (the test above): the second context's patches are what pushes it over.
  assert.equal(readyOf(rl, { pods: [both[1]] }).state, "Ready");
});
