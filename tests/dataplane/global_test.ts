/**
 * A request through both filters of the EnvoyFilter the operator writes, in Envoy's order: the
 * local_ratelimit filter first (a request it refuses never reaches the engine, so is not counted
 * globally), then envoy.filters.http.ratelimit asking the engine model for the descriptors of the
 * filter's route `rate_limits` entries (read from the EnvoyFilter, not written here), with the
 * limits the filter's engine-domain annotation carries; the failure mode when the engine is down.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseRateLimit, type RateLimit } from "../../src/api/ratelimit.ts";
import {
  engineConfigOfFilters,
  EngineModel,
  Mesh,
  type MeshPod,
  readEnvoyFilter,
  windowStart,
} from "../../src/dataplane/mod.ts";
import { renderEnvoyFilter } from "../../src/reconcile/ratelimit/render.ts";
import { globalDomain } from "../../src/api/global_engine.ts";
import type { KubeObject } from "../../src/api/object.ts";

const T0_MS = 1795877160_000; // a minute boundary
const LABELS = { app: "httpbin" };
const TO = { namespace: "demo", labels: LABELS };

function rateLimit(spec: Record<string, unknown>): RateLimit {
  const parsed = parseRateLimit({
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    metadata: { name: "orders", namespace: "demo", uid: "u1", generation: 1 },
    spec: { selectorLabels: LABELS, ...spec },
  });
  assert.ok(parsed.ok, JSON.stringify(parsed));
  return parsed.value;
}

const GLOBAL = {
  rules: [{
    path: "/orders",
    perClient: { header: "X-Api-Key" },
    limit: { requests: 4, unit: "Minute" },
  }],
  default: { limit: { requests: 6, unit: "Minute" } },
};

function filterOf(spec: Record<string, unknown>): KubeObject {
  return renderEnvoyFilter(rateLimit(spec), undefined, { global: true });
}

function pods(n: number): MeshPod[] {
  return Array.from({ length: n }, (_, i) => ({
    namespace: "demo",
    name: `httpbin-${i}`,
    labels: LABELS,
    ready: true,
  }));
}

/** A mesh of `n` Pods whose proxies ask a 2-replica engine loaded from the filter's annotation. */
function meshOf(filter: KubeObject, n = 3) {
  const { config, problems } = engineConfigOfFilters([filter]);
  assert.deepEqual(problems, []);
  const engine = new EngineModel([{ config, ready: true }, { config, ready: true }]);
  const mesh = new Mesh({ engine });
  mesh.sync([filter], pods(n), 0);
  assert.deepEqual(mesh.rejections(), []);
  return { mesh, engine };
}

/** The engine's counter of rule 0 for API key `client` in the window starting at T0. */
function key(client: string): string {
  return `demo/orders_rule_0_rule_headers_0_client_${client}_${T0_MS / 1000}`;
}

const LARGE_LOCAL = { defaultBucket: { maxTokens: 1000, tokensPerFill: 1000, fillInterval: "1s" } };

Deno.test("the model reads the global filter the operator writes: domain, stage, failure mode, body", () => {
  const read = readEnvoyFilter(filterOf({ local: LARGE_LOCAL, global: GLOBAL }));
  assert.ok(read.ok, JSON.stringify(read));
  const p = read.value.contexts.SIDECAR_INBOUND!;
  assert.equal(p.globalFilters.length, 1);
  const g = p.globalFilters[0];
  assert.equal(g.domain, globalDomain("demo", "orders"));
  assert.equal(g.stage, 1);
  assert.equal(g.failureModeDeny, false);
  assert.equal(g.timeoutMs, 100);
  assert.equal(g.position, 1, "after the local filter");
  assert.equal(g.xEnvoyRateLimited, false);
  assert.equal(p.rateLimitedBody, "local_rate_limited");
  // The rules' entries at stage 1 besides the local ones at stage 0.
  assert.ok(p.rateLimits.some((r) => r.stage === 1));
});

Deno.test("exactly `requests` admitted per window across 3 Pods and 2 engines, then 429; the next window admits again", () => {
  const { mesh, engine } = meshOf(filterOf({ local: LARGE_LOCAL, global: GLOBAL }));
  const send = (t: number, key = "alice", path = "/orders") =>
    mesh.send({ to: TO, path, headers: { "X-Api-Key": key } }, T0_MS + t);
  const first = Array.from({ length: 7 }, (_, i) => send(i * 1000));
  assert.deepEqual(first.map((r) => r.status), [200, 200, 200, 200, 429, 429, 429]);
  assert.deepEqual(new Set(first.map((r) => r.pod)).size, 3, "spread over the Pods");
  assert.deepEqual(engine.calls, [4, 3], "and over both engines");
  assert.deepEqual(first.map((r) => r.global?.limitRemaining), [3, 2, 1, 0, 0, 0, 0]);
  const refused = first[4];
  assert.equal(refused.body, "local_rate_limited");
  assert.equal(refused.globalRejected, true);
  assert.equal(refused.headers["x-envoy-ratelimited"], undefined);
  assert.deepEqual(refused.global?.keys, [key("alice")]);
  // Another client counts apart; the default counts what no rule matches.
  assert.equal(send(8000, "bob").status, 200);
  const other = Array.from({ length: 7 }, (_, i) => send(9000 + i, "alice", "/status"));
  assert.deepEqual(other.map((r) => r.status), [200, 200, 200, 200, 200, 200, 429]);
  // The next window.
  assert.equal(send(60_000).status, 200);
  assert.equal(send(60_001).global?.limitRemaining, 2);
});

Deno.test("local first: a request the local bucket refuses is not counted globally", () => {
  const local = { defaultBucket: { maxTokens: 1, tokensPerFill: 1, fillInterval: "9999m" } };
  const { mesh, engine } = meshOf(filterOf({ local, global: GLOBAL }));
  const answers = Array.from(
    { length: 9 },
    (_, i) => mesh.send({ to: TO, path: "/orders", headers: { "X-Api-Key": "a" } }, T0_MS + i),
  );
  // One token a Pod: 3 pass the local filters, 6 are refused there.
  assert.equal(answers.filter((r) => r.status === 200).length, 3);
  assert.equal(answers.filter((r) => r.status === 429 && !r.globalRejected).length, 6);
  assert.equal(answers.filter((r) => r.global !== undefined).length, 3);
  assert.equal(
    engine.counters.get(key("a"), T0_MS / 1000),
    3,
  );
});

Deno.test("engine down: Allow lets requests on uncounted, Deny answers 500; Redis slow: the timeout", () => {
  for (const failureMode of ["Allow", "Deny"] as const) {
    const { mesh, engine } = meshOf(
      filterOf({ local: LARGE_LOCAL, global: { ...GLOBAL, failureMode } }),
    );
    for (const r of engine.replicas) r.ready = false;
    const down = mesh.send({ to: TO, path: "/orders", headers: { "X-Api-Key": "a" } }, T0_MS);
    assert.equal(down.global?.code, "ERROR");
    if (failureMode === "Allow") {
      assert.equal(down.status, 200);
      assert.equal(down.global?.failedOpen, true);
    } else {
      assert.equal(down.status, 500);
      assert.equal(down.body, "");
      assert.equal(down.globalRejected, true);
    }
    for (const r of engine.replicas) r.ready = true;
    engine.redisUp = false;
    const redisDown = mesh.send({ to: TO, path: "/orders", headers: { "X-Api-Key": "a" } }, T0_MS);
    assert.equal(redisDown.status, failureMode === "Allow" ? 200 : 500);
    engine.redisUp = true;
    engine.redisLatencyMs = 150; // beyond the filter's 100 ms
    const slow = mesh.send({ to: TO, path: "/orders", headers: { "X-Api-Key": "a" } }, T0_MS);
    assert.equal(slow.status, failureMode === "Allow" ? 200 : 500);
    assert.equal(
      engine.counters.get(key("a"), T0_MS / 1000),
      1,
    );
  }
  // No engine at all: every call fails, the failure mode decides.
  const mesh = new Mesh();
  mesh.sync([filterOf({ local: LARGE_LOCAL, global: GLOBAL })], pods(1), 0);
  assert.equal(mesh.send({ to: TO, path: "/orders" }, T0_MS).status, 200);
});

Deno.test("shadow mode: the engine counts, nothing is refused, the request is marked", () => {
  const { mesh } = meshOf(filterOf({ enforce: false, local: LARGE_LOCAL, global: GLOBAL }));
  const answers = Array.from(
    { length: 6 },
    (_, i) => mesh.send({ to: TO, path: "/orders", headers: { "X-Api-Key": "a" } }, T0_MS + i),
  );
  assert.deepEqual(answers.map((r) => r.status), [200, 200, 200, 200, 200, 200]);
  // The engine's own shadow_mode answers OK (the filter's filter_enforced 0% would also let it on).
  assert.deepEqual(answers.map((r) => r.global?.code), ["OK", "OK", "OK", "OK", "OK", "OK"]);
  assert.deepEqual(answers.map((r) => r.global?.limitRemaining), [3, 2, 1, 0, 0, 0]);
});

Deno.test("gRPC: a global refusal is HTTP 200 with grpc-status 14, or 8 with ResourceExhausted", () => {
  for (const grpcStatus of ["Unavailable", "ResourceExhausted"] as const) {
    const { mesh } = meshOf(filterOf({ grpcStatus, local: LARGE_LOCAL, global: GLOBAL }), 1);
    let last;
    for (let i = 0; i < 5; i++) {
      last = mesh.send({
        to: TO,
        path: "/orders",
        headers: { "X-Api-Key": "a", "content-type": "application/grpc" },
      }, T0_MS);
    }
    assert.equal(last?.status, 200);
    assert.equal(last?.globalRejected, true);
    assert.equal(last?.headers["grpc-status"], grpcStatus === "Unavailable" ? "14" : "8");
  }
});

Deno.test("property: within one window of one key at most `requests` are admitted, however many proxies", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 8 }),
      fc.constantFrom("Second", "Minute"),
      fc.integer({ min: 1, max: 6 }),
      fc.array(
        fc.record({
          dtMs: fc.integer({ min: 0, max: 700 }),
          key: fc.constantFrom("a", "b"),
          path: fc.constantFrom("/orders", "/other"),
        }),
        { maxLength: 80 },
      ),
      (requests, unit, replicas, sends) => {
        const filter = filterOf({
          local: LARGE_LOCAL,
          global: {
            rules: [{
              path: "/orders",
              perClient: { header: "X-Api-Key" },
              limit: { requests, unit },
            }],
          },
        });
        const { mesh } = meshOf(filter, replicas);
        const admitted = new Map<string, number>();
        let t = T0_MS + 250;
        for (const s of sends) {
          t += s.dtMs;
          const r = mesh.send({ to: TO, path: s.path, headers: { "X-Api-Key": s.key } }, t);
          if (s.path !== "/orders") {
            assert.equal(r.global, undefined, "no rule matches: nothing sent to the engine");
            continue;
          }
          const w = `${s.key}@${
            windowStart(Math.floor(t / 1000), unit === "Second" ? "SECOND" : "MINUTE")
          }`;
          if (r.status === 200) admitted.set(w, (admitted.get(w) ?? 0) + 1);
        }
        for (const [w, n] of admitted) assert.ok(n <= requests, `${w}: ${n} > ${requests}`);
      },
    ),
    { numRuns: 150 },
  );
});
