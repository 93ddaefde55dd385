/**
 * The engine model against the real engine (envoyproxy/ratelimit built here, tools/ratelimit-engine,
 * with redis-server), call by call: a RateLimit with global rules goes through the operator's
 * render; the real engines load the domain its EnvoyFilter carries (file mode); a mesh of three
 * proxies answers a traffic list through the EnvoyFilter's filters, its global filter asking the
 * engine model; every call the model's engine gets is also sent, with the same descriptors, to one
 * of two real engines sharing one Redis (alternating, as the model's replicas alternate), and the
 * answers must agree: overall code, and per descriptor its code, limit, limitRemaining and
 * durationUntilReset. Several one-second windows, per-client and shared counters, a minute rule,
 * and shadow mode.
 *
 * Needs Go (the engine is built once into .cache/ratelimit-engine) and redis-server.
 */
import assert from "node:assert/strict";
import {
  type DescriptorStatus,
  ensureRatelimitEngine,
  FileConfig,
  startEngine,
  startRedis,
  startTestClient,
} from "../../tools/ratelimit-engine/mod.ts";
import { parseRateLimit } from "../../src/api/ratelimit.ts";
import {
  type EngineClient,
  engineConfigOfFilters,
  EngineModel,
  type EngineRequest,
  type EngineResult,
  Mesh,
} from "../../src/dataplane/mod.ts";
import { renderEnvoyFilter } from "../../src/reconcile/ratelimit/render.ts";

const LABELS = { app: "httpbin" };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function filterOf(enforce: boolean) {
  const parsed = parseRateLimit({
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    metadata: {
      name: `diff-${enforce ? "on" : "shadow"}`,
      namespace: "demo",
      uid: "u",
      generation: 1,
    },
    spec: {
      selectorLabels: LABELS,
      enforce,
      local: { defaultBucket: { maxTokens: 1000, tokensPerFill: 1000, fillInterval: "1s" } },
      global: {
        rules: [
          {
            path: "/orders",
            perClient: { header: "X-Api-Key" },
            limit: { requests: 3, unit: "Second" },
          },
          { headers: { "X-Client": "batch" }, limit: { requests: 7, unit: "Minute" } },
        ],
        default: { limit: { requests: 4, unit: "Second" } },
      },
    },
  });
  assert.ok(parsed.ok);
  return renderEnvoyFilter(parsed.value, undefined, { global: true });
}

/**
 * The request list, in bursts (one a one-second window): 6 of alice and 2 of bob at the per-key
 * rule (3 a second), 5 the default takes (4 a second), 3 batch requests (7 a minute together).
 */
function bursts(): { path: string; headers: Record<string, string> }[][] {
  const burst = [
    ...Array(6).fill({ path: "/orders", headers: { "X-Api-Key": "alice" } }),
    ...Array(2).fill({ path: "/orders", headers: { "X-Api-Key": "bob" } }),
    ...Array(5).fill({ path: "/status", headers: {} }),
    ...Array(3).fill({ path: "/x", headers: { "X-Client": "batch" } }),
  ];
  return [burst, burst, burst];
}

/** The model's answer in the test client's JSON form, for comparison. */
function shown(result: EngineResult) {
  if (!result.ok) return { error: result.error };
  return {
    overallCode: result.answer.overallCode,
    statuses: result.answer.statuses.map((s) => ({
      code: s.code,
      limit: s.currentLimit ? `${s.currentLimit.requestsPerUnit}/${s.currentLimit.unit}` : null,
      limitRemaining: s.limitRemaining,
      reset: s.durationUntilReset ?? null,
    })),
  };
}

function shownReal(statuses: DescriptorStatus[], overallCode: string) {
  return {
    overallCode,
    statuses: statuses.map((s) => ({
      code: s.code,
      limit: s.currentLimit ? `${s.currentLimit.requestsPerUnit}/${s.currentLimit.unit}` : null,
      limitRemaining: s.limitRemaining,
      reset: s.durationUntilReset === null ? null : Number(s.durationUntilReset.replace(/s$/, "")),
    })),
  };
}

Deno.test("the engine model agrees with the real engine call by call, over several windows", async () => {
  const bins = await ensureRatelimitEngine((m) => console.error(`[build] ${m}`));
  const dir = await Deno.makeTempDir({ prefix: "engine-differential-" });
  const redis = await startRedis(dir);
  const client = startTestClient(bins);
  const engines = [];
  try {
    const filters = [filterOf(true), filterOf(false)];
    const { config, problems } = engineConfigOfFilters(filters);
    assert.deepEqual(problems, []);
    const files = await FileConfig.create(dir, config.domains);
    for (const name of ["a", "b"]) {
      engines.push(
        await startEngine({
          name,
          dir,
          redis: redis.addr,
          config: files.source(),
          env: { DISABLE_STATS: "true" },
          binaries: bins,
        }),
      );
    }
    let compared = 0;
    let overLimit = 0;
    for (const filter of filters) {
      const model = new EngineModel([{ config, ready: true }, { config, ready: true }]);
      const asks: { request: EngineRequest; result: EngineResult }[] = [];
      const recording: EngineClient = {
        ask(request, nowMs, timeoutMs) {
          const result = model.ask(request, nowMs, timeoutMs);
          asks.push({ request, result });
          return result;
        },
      };
      const mesh = new Mesh({ engine: recording });
      mesh.sync(
        [filter],
        [0, 1, 2].map((i) => ({
          namespace: "demo",
          name: `p${i}`,
          labels: LABELS,
          ready: true,
        })),
        0,
      );
      assert.deepEqual(mesh.rejections(), []);
      let call = 0;
      for (const [b, burst] of bursts().entries()) {
        // Each burst in one second: it starts just after a second starts, and its calls take a
        // few ms each on loopback (checked below, call by call).
        await sleep(1005 - (Date.now() % 1000));
        for (const [i, req] of burst.entries()) {
          const before = Date.now();
          mesh.send({ to: { namespace: "demo", labels: LABELS }, ...req }, before);
          assert.equal(asks.length, 1, `burst ${b} request ${i} asked the engine once`);
          const asked = asks.pop()!;
          const { request, result } = asked;
          const real = await client.ask(engines[call++ % 2].grpc, {
            domain: request.domain,
            descriptors: request.descriptors.map((entries) => ({ entries: [...entries] })),
          });
          assert.equal(
            Math.floor(Date.now() / 1000),
            Math.floor(before / 1000),
            "the call stayed in one second (the machine is too slow for this test)",
          );
          assert.ok(real.response, JSON.stringify(real.error));
          assert.deepEqual(
            shown(result),
            shownReal(real.response.statuses, real.response.overallCode),
            `${filter.metadata.name} burst ${b} request ${i} ${JSON.stringify(req)}`,
          );
          compared++;
          if (real.response.overallCode === "OVER_LIMIT") overLimit++;
        }
      }
    }
    console.error(`compared ${compared} calls, ${overLimit} of them OVER_LIMIT`);
    // Enforced: each burst has alice 3 over and the default 1 over; and the batch requests' 8th and
    // 9th of a minute (7 allowed) when the three bursts fall in one minute.
    assert.ok(overLimit === 3 * 4 + 2 || overLimit === 3 * 4, `${overLimit} OVER_LIMIT`);
  } finally {
    await client.stop();
    for (const e of engines) await e.stop();
    await redis.close();
    await Deno.remove(dir, { recursive: true });
  }
});
