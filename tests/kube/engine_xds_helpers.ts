/**
 * What the tests of the operator's xDS server with real engines share (engine_xds_test.ts,
 * engine_xds_tls_test.ts): RateLimits and their filters, asking engines, waiting.
 */
import assert from "node:assert/strict";
import type { Engine, RateLimitRequest, TestClient } from "../../tools/ratelimit-engine/mod.ts";
import { globalEntries, renderEnvoyFilter } from "../../src/reconcile/ratelimit/render.ts";
import { parseRateLimit, type RateLimit } from "../../src/api/ratelimit.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { createLogger, systemClock } from "../../src/runtime/mod.ts";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Log lines, parsed, kept for the test to read. */
export function testLog() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({
    clock: systemClock,
    level: "debug",
    sink: (line) => lines.push(JSON.parse(line)),
  });
  return { log, lines };
}

/** A RateLimit `demo/<name>` with `global`, parsed. */
export function rateLimitOf(name: string, global: unknown, enforce = true): RateLimit {
  const r = parseRateLimit({
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    metadata: { name, namespace: "demo", uid: `uid-${name}`, generation: 1 },
    spec: { selectorLabels: { app: name }, enforce, global },
  });
  assert.ok(r.ok, JSON.stringify(!r.ok && r.errors));
  return r.value;
}

/** The EnvoyFilter the operator renders for it with the global part. */
export const filterOf = (rl: RateLimit): KubeObject =>
  renderEnvoyFilter(rl, undefined, { global: true });

/** The API RateLimit: a path rule, a per-client rule and a default, limits large (no refusal). */
export function apiLimits(orders: number, perClient = 100, all = 5000) {
  return {
    rules: [
      { path: "/orders", limit: { requests: orders, unit: "Minute" } },
      { perClient: { header: "X-Key" }, limit: { requests: perClient, unit: "Minute" } },
    ],
    default: { limit: { requests: all, unit: "Hour" } },
  };
}

/** The request descriptor rule `i` of `rl` sends, the per-client value filled. */
export function requestOf(rl: RateLimit, i: number, client = "alice"): RateLimitRequest {
  const entries = globalEntries(rl.spec.global!)[i].entries.map((e) =>
    e.value === "" ? { key: e.key, value: client } : e
  );
  return { domain: `demo/${rl.metadata.name}`, descriptors: [{ entries }] };
}

/** The limit an engine answers for `req` (0: none; -1: an error). */
export async function limitOf(
  client: TestClient,
  engine: Engine,
  req: RateLimitRequest,
): Promise<number> {
  const a = await client.ask(engine.grpc, req);
  if (!a.response) return -1;
  return a.response.statuses[0]?.currentLimit?.requestsPerUnit ?? 0;
}

/** Resolves with the ms until every engine answers `want` for `req`; fails after `timeoutMs`. */
export async function untilAnswering(
  client: TestClient,
  engines: readonly Engine[],
  req: RateLimitRequest,
  want: number,
  t0: number,
  timeoutMs = 10_000,
): Promise<number> {
  for (const e of engines) {
    for (;;) {
      if (await limitOf(client, e, req) === want) break;
      if (Date.now() - t0 > timeoutMs) {
        throw new Error(`engine ${e.name} does not answer ${want} within ${timeoutMs} ms`);
      }
      await sleep(5);
    }
  }
  return Date.now() - t0;
}

/** Waits until `ok()` holds, polling; fails naming `what` after `timeoutMs`. */
export async function until(ok: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const t0 = Date.now();
  while (!ok()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await sleep(10);
  }
}

/** The lines of an engine's `/rlconfig` answer that belong to `domain` (tools/ratelimit-engine). */
export { linesOfDomain } from "../../tools/ratelimit-engine/mod.ts";
