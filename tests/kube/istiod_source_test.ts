/** The istiod poller: ProxyStatus objects from istiod's answers, and backing off when it fails. */
import assert from "node:assert/strict";
import { pollIstiod, pollOnce } from "../../src/kube/istiod_source.ts";
import type { IstiodAnswer, IstiodClient } from "../../src/kube/istiod.ts";
import {
  ISTIOD_STATUS_NAME,
  istiodStatusOf,
  LISTENER_TYPE,
  parseSyncz,
  PROXY_STATUS,
  proxyStatusOf,
  ROUTE_TYPE,
  type Syncz,
} from "../../src/api/istiod.ts";
import { createLogger, LocalSource } from "../../src/runtime/mod.ts";

const UUID = "5b2e3c1a-9f0e-4d7b-8c6a-2f1e0d9c8b7a";
const nonce = (n: number) => `2026-11-28T11:00:00Z/${n}${UUID}`;
const log = createLogger({ clock: { now: () => 0 }, sink: () => {} });

function entry(id: string, acked: number, sent = acked, error = "") {
  return {
    proxy: id,
    proxy_type: "sidecar",
    istio_version: "1.31.0",
    resources: {
      [LISTENER_TYPE]: { sent: nonce(sent), acked: nonce(acked), lastError: error },
      [ROUTE_TYPE]: { sent: nonce(sent), acked: nonce(acked) },
    },
  };
}

function client(answers: IstiodAnswer<Syncz>[]): IstiodClient & { asked: number } {
  const c = {
    asked: 0,
    syncz: () => Promise.resolve(answers[Math.min(c.asked++, answers.length - 1)]),
  };
  return c;
}

const ok = (...entries: unknown[]): IstiodAnswer<Syncz> => ({
  ok: true,
  value: parseSyncz(entries),
});

Deno.test("each proxy becomes its Pod's ProxyStatus; istiod's own says it answered", async () => {
  const source = new LocalSource(PROXY_STATUS);
  const c = client([ok(entry("demo-0.apps", 3), entry("web.v2-1.apps", 4, 5, "bad listener"))]);
  assert.ok(
    await pollOnce({
      clients: [c],
      source,
      namespace: "platform-system",
      clock: { now: () => 0, sleep: () => Promise.resolve() },
      log,
    }),
  );
  const items = source.list().items;
  const by = (ns: string, name: string) =>
    items.find((o) => o.metadata.namespace === ns && o.metadata.name === name);
  assert.deepEqual(proxyStatusOf(by("apps", "demo-0"))?.verdict, { state: "Acked" });
  assert.deepEqual(proxyStatusOf(by("apps", "web.v2-1"))?.verdict, {
    state: "Rejected",
    type: "listeners",
    error: "bad listener",
  });
  assert.deepEqual(istiodStatusOf(by("platform-system", ISTIOD_STATUS_NAME)), {
    reachable: true,
    proxies: 2,
  });
  // The same answer again changes nothing: no version, no event.
  const v = source.version;
  await pollOnce({
    clients: [c],
    source,
    namespace: "platform-system",
    clock: { now: () => 0, sleep: () => Promise.resolve() },
    log,
  });
  assert.equal(source.version, v);
});

Deno.test("a failure keeps the proxies as last seen and says why in istiod's status", async () => {
  const source = new LocalSource(PROXY_STATUS);
  const c = client([
    ok(entry("demo-0.apps", 3)),
    { ok: false, reason: "Forbidden", message: "GET …/debug/syncz: 403" },
  ]);
  const opts = {
    clients: [c],
    source,
    namespace: "platform-system",
    clock: { now: () => 0, sleep: () => Promise.resolve() },
    log,
  };
  await pollOnce(opts);
  assert.equal(await pollOnce(opts), false);
  const items = source.list().items;
  assert.equal(items.length, 2);
  assert.deepEqual(istiodStatusOf(items.find((o) => o.metadata.name === ISTIOD_STATUS_NAME)), {
    reachable: false,
    reason: "Forbidden",
    message: "GET …/debug/syncz: 403",
  });
});

Deno.test("two replicas: a proxy listed by both keeps the later send", async () => {
  const source = new LocalSource(PROXY_STATUS);
  const older = entry("demo-0.apps", 3);
  const newer = entry("demo-0.apps", 5, 6, "nack");
  (older.resources[LISTENER_TYPE] as Record<string, string>).sentTime = "2026-11-28T11:00:01Z";
  (newer.resources[LISTENER_TYPE] as Record<string, string>).sentTime = "2026-11-28T11:00:09Z";
  await pollOnce({
    clients: [client([ok(newer)]), client([ok(older)])],
    source,
    namespace: "p",
    clock: { now: () => 0, sleep: () => Promise.resolve() },
    log,
  });
  const demo = source.list("apps").items[0];
  assert.equal(proxyStatusOf(demo)?.verdict.state, "Rejected");
});

Deno.test("pollIstiod backs off while istiod fails, up to five minutes, and comes back to the period", async () => {
  const waits: number[] = [];
  const ac = new AbortController();
  const failing: IstiodAnswer<Syncz> = { ok: false, reason: "Unreachable", message: "refused" };
  const c = client([...Array(12).fill(failing), ok(entry("a.b", 1))]);
  const clock = {
    now: () => 0,
    sleep: (ms: number) => {
      waits.push(ms);
      if (waits.length === 14) ac.abort();
      return ac.signal.aborted ? Promise.reject(new Error("aborted")) : Promise.resolve();
    },
  };
  await pollIstiod({
    clients: [c],
    source: new LocalSource(PROXY_STATUS),
    namespace: "p",
    clock,
    log,
    periodMs: 10_000,
  }, ac.signal);
  assert.deepEqual(waits, [
    20_000,
    40_000,
    80_000,
    160_000,
    300_000,
    300_000,
    300_000,
    300_000,
    300_000,
    300_000,
    300_000,
    300_000,
    10_000,
    10_000,
  ]);
});
