/**
 * The istiod poller: ProxyStatus objects from istiod's answers, what wanted proxies hold read once
 * per acknowledged push and confirmed by a later answer, and backing off when istiod fails.
 */
import assert from "node:assert/strict";
import { IstiodPoller, type IstiodPollOptions } from "../../src/kube/istiod_source.ts";
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
import type { KubeObject } from "../../src/api/object.ts";
import {
  NO_READY_REPLICA,
  type Replica,
  type ReplicaView,
} from "../../src/kube/istiod_endpoints.ts";

const UUID = "5b2e3c1a-9f0e-4d7b-8c6a-2f1e0d9c8b7a";
const nonce = (n: number) => `2026-11-28T11:00:00Z/${n}${UUID}`;
const log = createLogger({ clock: { now: () => 0 }, sink: () => {} });
const PREFIX = "http_local_rate_limiter";

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

/** A dump holding one route with the operator's config of `tokens` per 30 s. */
function dump(tokens: number): unknown {
  return {
    configs: [{
      dynamicListeners: [{
        activeState: {
          listener: {
            routes: [{
              typedPerFilterConfig: {
                "envoy.filters.http.local_ratelimit": {
                  statPrefix: PREFIX,
                  tokenBucket: { maxTokens: tokens, tokensPerFill: tokens, fillInterval: "30s" },
                  filterEnforced: { defaultValue: { numerator: 100 } },
                },
              },
            }],
          },
        },
      }],
    }],
  };
}

interface FakeIstiod extends IstiodClient {
  syncs: IstiodAnswer<Syncz>[];
  dumps: Map<string, IstiodAnswer<unknown>>;
  asked: string[];
}

function fake(...syncs: IstiodAnswer<Syncz>[]): FakeIstiod {
  const f: FakeIstiod = {
    syncs,
    dumps: new Map(),
    asked: [],
    syncz: () => {
      f.asked.push("syncz");
      return Promise.resolve(f.syncs.length > 1 ? f.syncs.shift()! : f.syncs[0]);
    },
    listenersAndRoutes: (id) => {
      f.asked.push(`dump ${id}`);
      return Promise.resolve(
        f.dumps.get(id) ?? { ok: false, reason: "NotFound", message: "not connected" },
      );
    },
  };
  return f;
}

const ok = (...entries: unknown[]): IstiodAnswer<Syncz> => ({
  ok: true,
  value: parseSyncz(entries),
});

function setup(clients: IstiodClient[], extra: Partial<IstiodPollOptions> = {}) {
  let now = 0;
  const source = new LocalSource(PROXY_STATUS);
  const clock = { now: () => now, sleep: () => Promise.resolve() };
  const poller = new IstiodPoller({
    clients,
    source,
    namespace: "platform-system",
    clock,
    log,
    statPrefix: PREFIX,
    followUpMs: 1000,
    ...extra,
  });
  const get = (ns: string, name: string): KubeObject | undefined =>
    source.list().items.find((o) => o.metadata.namespace === ns && o.metadata.name === name);
  return { source, poller, get, tick: (ms: number) => now += ms };
}

Deno.test("each proxy becomes its Pod's ProxyStatus; istiod's own says it answered", async () => {
  const istiod = fake(ok(entry("demo-0.apps", 3), entry("web.v2-1.apps", 4, 5, "bad listener")));
  const { source, poller, get } = setup([istiod]);
  assert.deepEqual(await poller.round(), { ok: true, followUp: false, backlog: false });
  assert.deepEqual(proxyStatusOf(get("apps", "demo-0"))?.verdict, { state: "Acked" });
  assert.deepEqual(proxyStatusOf(get("apps", "web.v2-1"))?.verdict, {
    state: "Rejected",
    type: "listeners",
    error: "bad listener",
  });
  assert.deepEqual(istiodStatusOf(get("platform-system", ISTIOD_STATUS_NAME)), {
    reachable: true,
    proxies: 2,
  });
  // Nothing wanted: no dump asked. The same answer again changes nothing: no version, no event.
  const v = source.version;
  await poller.round();
  assert.equal(source.version, v);
  assert.deepEqual(istiod.asked, ["syncz", "syncz"]);
});

Deno.test("a wanted proxy's holdings: read once per acknowledged push, confirmed by a later answer", async () => {
  const istiod = fake(ok(entry("demo-0.apps", 3)));
  istiod.dumps.set("demo-0.apps", { ok: true, value: dump(10) });
  const { poller, get, tick, source } = setup([istiod], {
    wants: (p) => p.namespace === "apps",
  });
  assert.deepEqual(await poller.round(), { ok: true, followUp: true, backlog: false });
  const first = proxyStatusOf(get("apps", "demo-0"))?.held;
  assert.ok(first && "limits" in first);
  assert.equal(first.confirmed, false);
  assert.deepEqual(first.limits[0].buckets, [
    { maxTokens: 10, tokensPerFill: 10, fillInterval: "30s" },
  ]);
  // Too soon after the dump: still unconfirmed, and no second dump for the same push.
  tick(500);
  assert.deepEqual(await poller.round(), { ok: true, followUp: true, backlog: false });
  tick(600);
  assert.deepEqual(await poller.round(), { ok: true, followUp: false, backlog: false });
  const held = proxyStatusOf(get("apps", "demo-0"))?.held;
  assert.ok(held && "limits" in held && held.confirmed);
  assert.deepEqual(istiod.asked, ["syncz", "dump demo-0.apps", "syncz", "syncz"]);
  // A new push that changes nothing of ours: read again, and it stays confirmed (no flap), but
  // the next round comes soon to check that no push was under way.
  istiod.syncs = [ok(entry("demo-0.apps", 4))];
  const v = source.version;
  assert.deepEqual(await poller.round(), { ok: true, followUp: true, backlog: false });
  assert.equal(source.version, v, "nothing published changed");
  // A new push with other limits: read again, unconfirmed until answered again.
  istiod.syncs = [ok(entry("demo-0.apps", 5))];
  istiod.dumps.set("demo-0.apps", { ok: true, value: dump(20) });
  await poller.round();
  const again = proxyStatusOf(get("apps", "demo-0"))?.held;
  assert.ok(again && "limits" in again && !again.confirmed);
  assert.equal(again.limits[0].buckets[0].tokensPerFill, 20);
});

Deno.test("a push under way keeps the reading of the push acknowledged before; an older one goes", async () => {
  const istiod = fake(ok(entry("demo-0.apps", 3)));
  istiod.dumps.set("demo-0.apps", { ok: true, value: dump(10) });
  const { poller, get, tick } = setup([istiod], { wants: () => true });
  await poller.round();
  tick(1_000);
  await poller.round();
  const held = proxyStatusOf(get("apps", "demo-0"))?.held;
  assert.ok(held && "limits" in held && held.confirmed);
  // Push 4 sent, not yet acknowledged: Envoy still holds push 3's config, and so does the status;
  // no dump is asked (it would show push 4).
  istiod.syncs = [ok(entry("demo-0.apps", 3, 4))];
  await poller.round();
  const mid = proxyStatusOf(get("apps", "demo-0"));
  assert.deepEqual(mid?.verdict, { state: "Pending" });
  assert.deepEqual(mid?.held, held);
  // Push 4 acknowledged, push 5 under way: what was read at push 3 is no longer what it holds.
  istiod.syncs = [ok(entry("demo-0.apps", 4, 5))];
  await poller.round();
  assert.equal(proxyStatusOf(get("apps", "demo-0"))?.held, undefined);
  assert.deepEqual(istiod.asked.filter((a) => a.startsWith("dump")), ["dump demo-0.apps"]);
});

Deno.test("a backlog is read oldest reading first, not in istiod's order", async () => {
  const ids = ["a.apps", "b.apps", "c.apps"];
  const istiod = fake(ok(...ids.map((id) => entry(id, 3))));
  for (const id of ids) istiod.dumps.set(id, { ok: true, value: dump(10) });
  const { poller, tick } = setup([istiod], { wants: () => true, maxDumpsPerRound: 1 });
  for (let i = 0; i < 3; i++) {
    await poller.round();
    tick(1_000);
  }
  // All three take a new push; istiod now lists them the other way round.
  istiod.syncs = [ok(...ids.toReversed().map((id) => entry(id, 4)))];
  const r = await poller.round();
  assert.equal(r.backlog, true);
  const dumps = istiod.asked.filter((a) => a.startsWith("dump"));
  assert.deepEqual(dumps, ["dump a.apps", "dump b.apps", "dump c.apps", "dump a.apps"]);
});

Deno.test("a failed reading of a later push replaces the earlier one", async () => {
  const istiod = fake(ok(entry("demo-0.apps", 3)));
  istiod.dumps.set("demo-0.apps", { ok: true, value: dump(10) });
  const { poller, get } = setup([istiod], { wants: () => true });
  await poller.round();
  assert.ok(proxyStatusOf(get("apps", "demo-0"))?.held);
  // The next push's dump fails to come in this round (istiod answers 500): nothing held is shown.
  istiod.syncs = [ok(entry("demo-0.apps", 4))];
  istiod.dumps.set("demo-0.apps", { ok: false, reason: "BadAnswer", message: "HTTP 500" });
  await poller.round();
  assert.deepEqual(proxyStatusOf(get("apps", "demo-0"))?.held, {
    error: "BadAnswer",
    message: "HTTP 500",
  });
});

Deno.test("a dump istiod refuses is recorded with its reason, and asked again a period later or for a new push", async () => {
  const istiod = fake(ok(entry("demo-0.apps", 3)));
  istiod.dumps.set("demo-0.apps", { ok: false, reason: "NotFound", message: "404, not connected" });
  const { poller, get, tick } = setup([istiod], { wants: () => true, periodMs: 15_000 });
  assert.deepEqual(await poller.round(), { ok: true, followUp: false, backlog: false });
  assert.deepEqual(proxyStatusOf(get("apps", "demo-0"))?.held, {
    error: "NotFound",
    message: "404, not connected",
  });
  const dumps = () => istiod.asked.filter((a) => a.startsWith("dump")).length;
  tick(14_000);
  await poller.round();
  assert.equal(dumps(), 1, "not again within a period");
  // The token was given more rights meanwhile: a period after the refusal, the same push is read.
  istiod.dumps.set("demo-0.apps", { ok: true, value: dump(10) });
  tick(1_000);
  await poller.round();
  assert.equal(dumps(), 2);
  const held = proxyStatusOf(get("apps", "demo-0"))?.held;
  assert.ok(held && "limits" in held && held.limits.length === 1);
});

Deno.test("dumps beyond a round's bound wait; what was read at an earlier push is not shown meanwhile", async () => {
  const istiod = fake(ok(entry("a.apps", 3), entry("b.apps", 3)));
  istiod.dumps.set("a.apps", { ok: true, value: dump(10) });
  istiod.dumps.set("b.apps", { ok: true, value: dump(10) });
  const { poller, get } = setup([istiod], { wants: () => true, maxDumpsPerRound: 1 });
  assert.deepEqual(await poller.round(), { ok: true, followUp: true, backlog: true });
  assert.deepEqual(await poller.round(), { ok: true, followUp: true, backlog: false });
  assert.ok(proxyStatusOf(get("apps", "a"))?.held && proxyStatusOf(get("apps", "b"))?.held);
  // Both move to a new push; only one is read in this round: the other shows nothing held.
  istiod.syncs = [ok(entry("a.apps", 4), entry("b.apps", 4))];
  await poller.round();
  const held = ["a", "b"].map((n) => proxyStatusOf(get("apps", n))?.held !== undefined);
  assert.deepEqual(held.sort(), [false, true]);
});

Deno.test("pending and rejected proxies are not read; a proxy that leaves is forgotten", async () => {
  const istiod = fake(ok(entry("a.apps", 3, 4), entry("b.apps", 3, 4, "nack")));
  const { poller, source } = setup([istiod], { wants: () => true });
  await poller.round();
  assert.deepEqual(istiod.asked, ["syncz"]);
  istiod.syncs = [ok()];
  await poller.round();
  assert.deepEqual(source.list("apps").items, []);
});

Deno.test("a failure keeps the proxies as last seen and says why in istiod's status", async () => {
  const istiod = fake(
    ok(entry("demo-0.apps", 3)),
    { ok: false, reason: "Forbidden", message: "GET …/debug/syncz: 403" },
  );
  const { poller, source, get } = setup([istiod]);
  await poller.round();
  assert.deepEqual(await poller.round(), { ok: false, followUp: false, backlog: false });
  assert.equal(source.list().items.length, 2);
  assert.deepEqual(istiodStatusOf(get("platform-system", ISTIOD_STATUS_NAME)), {
    reachable: false,
    reason: "Forbidden",
    message: "GET …/debug/syncz: 403",
  });
});

Deno.test("two replicas: a proxy listed by both keeps the later send, and is read from that one", async () => {
  const older = entry("demo-0.apps", 3);
  const newer = entry("demo-0.apps", 5);
  (older.resources[LISTENER_TYPE] as Record<string, string>).sentTime = "2026-11-28T11:00:01Z";
  (newer.resources[LISTENER_TYPE] as Record<string, string>).sentTime = "2026-11-28T11:00:09Z";
  const a = fake(ok(older));
  const b = fake(ok(newer));
  b.dumps.set("demo-0.apps", { ok: true, value: dump(10) });
  const { poller, get } = setup([a, b], { wants: () => true });
  await poller.round();
  const held = proxyStatusOf(get("apps", "demo-0"))?.held;
  assert.ok(held && "limits" in held && held.limits.length === 1);
  assert.deepEqual([a.asked, b.asked], [["syncz"], ["syncz", "dump demo-0.apps"]]);
});

Deno.test("run backs off while istiod fails, from a second up to the period, and keeps the period", async () => {
  const waits: number[] = [];
  const ac = new AbortController();
  const failing: IstiodAnswer<Syncz> = { ok: false, reason: "Unreachable", message: "refused" };
  const istiod = fake(...Array(12).fill(failing), ok(entry("a.b", 1)));
  const clock = {
    now: () => 0,
    sleep: (ms: number) => {
      waits.push(ms);
      if (waits.length === 14) ac.abort();
      return ac.signal.aborted ? Promise.reject(new Error("aborted")) : Promise.resolve();
    },
  };
  const poller = new IstiodPoller({
    clients: [istiod],
    source: new LocalSource(PROXY_STATUS),
    namespace: "p",
    clock,
    log,
    statPrefix: PREFIX,
    periodMs: 10_000,
  });
  await poller.run(ac.signal);
  // An istiod restarted is asked again a second later; a long outage is asked once a period, as a
  // healthy istiod is, so one that is back is seen within a period.
  assert.deepEqual(waits, [
    1_000,
    2_000,
    4_000,
    8_000,
    ...Array(8).fill(10_000),
    10_000,
    10_000,
  ]);
});

/**
 * A clock whose sleeps pass at once, telling `at` the time after each; aborts `ac` at `endMs`.
 */
function virtualClock(ac: AbortController, endMs: number, at: (t: number) => void) {
  let slept = 0;
  return {
    now: () => slept,
    sleep: (ms: number) => {
      slept += ms;
      at(slept);
      if (slept >= endMs) ac.abort();
      return ac.signal.aborted ? Promise.reject(new Error("aborted")) : Promise.resolve();
    },
  };
}

Deno.test("run: while proxies are left to read, the next round comes at once", async () => {
  const ac = new AbortController();
  const ids = ["a.apps", "b.apps", "c.apps"];
  const istiod = fake(ok(...ids.map((id) => entry(id, 3))));
  for (const id of ids) istiod.dumps.set(id, { ok: true, value: dump(10) });
  const waits: number[] = [];
  const clock = virtualClock(ac, 20_000, () => {});
  const poller = new IstiodPoller({
    clients: [istiod],
    source: new LocalSource(PROXY_STATUS),
    namespace: "p",
    clock: { now: clock.now, sleep: (ms) => (waits.push(ms), clock.sleep(ms)) },
    log,
    statPrefix: PREFIX,
    wants: () => true,
    maxDumpsPerRound: 1,
    periodMs: 10_000,
    followUpMs: 1_000,
  });
  await poller.run(ac.signal);
  // Two rounds at once, the third reads the last: then a followUp to confirm, then the period.
  assert.deepEqual(waits, [0, 0, 1_000, 10_000, 10_000]);
});

Deno.test("run: a change of the filters brings a round at once, and a few a second apart after", async () => {
  const ac = new AbortController();
  const istiod = fake(ok(entry("a.b", 1)));
  let filters = 0;
  const timeline: string[] = [];
  const clock = virtualClock(ac, 40_000, (t) => {
    // The operator applies a filter 3.5 s after the first round.
    if (t === 4_000) filters++;
  });
  const counting: IstiodClient = {
    syncz: () => {
      timeline.push(`round at ${clock.now() / 1000}s`);
      return istiod.syncz();
    },
    listenersAndRoutes: istiod.listenersAndRoutes,
  };
  const poller = new IstiodPoller({
    clients: [counting],
    source: new LocalSource(PROXY_STATUS),
    namespace: "p",
    clock,
    log,
    statPrefix: PREFIX,
    periodMs: 15_000,
    followUpMs: 1_000,
    changed: () => filters,
  });
  await poller.run(ac.signal);
  assert.deepEqual(timeline, [
    "round at 0s",
    "round at 4s", // the change, seen at the next 1 s look
    "round at 5s",
    "round at 6s",
    "round at 7s",
    "round at 8s",
    "round at 9s", // five settling rounds, then the period again
    "round at 24s",
    "round at 39s",
  ]);
});

/** A discovery whose view the test sets; clients by URL from `istiods`. */
function discovered(istiods: Record<string, IstiodClient>) {
  let version = 1;
  let view: ReplicaView = { state: "listing" };
  const made: string[] = [];
  return {
    made,
    set(replicas: Replica[] | Exclude<ReplicaView, { state: "listed" }>) {
      view = Array.isArray(replicas) ? { state: "listed", version: version++, replicas } : replicas;
    },
    discovery: {
      view: () => view,
      clientOf: (url: string) => {
        made.push(url);
        return istiods[url];
      },
    },
  };
}

const replica = (url: string, name: string, required = true): Replica => ({ url, name, required });

Deno.test("discovered replicas: a proxy connected to replica B is seen; answers merge as with fixed URLs", async () => {
  const a = fake(ok(entry("demo-0.apps", 3)));
  const b = fake(ok(entry("web-1.apps", 4), entry("demo-0.apps", 5)));
  const d = discovered({ "http://a:15014": a, "http://b:15014": b });
  const { poller, get } = setup([], { clients: undefined, discovery: d.discovery });
  // Not listed yet: nothing asked, nothing said, look again soon.
  assert.deepEqual(await poller.round(), { ok: true, followUp: true, backlog: false });
  assert.equal(get("platform-system", ISTIOD_STATUS_NAME), undefined);
  d.set([replica("http://a:15014", "istiod-a")]);
  await poller.round();
  assert.equal(get("apps", "web-1"), undefined);
  // Scaled up: B is asked from the next round (merging as with fixed URLs: tested above).
  d.set([replica("http://a:15014", "istiod-a"), replica("http://b:15014", "istiod-b")]);
  await poller.round();
  assert.deepEqual(proxyStatusOf(get("apps", "web-1"))?.verdict, { state: "Acked" });
  assert.deepEqual(istiodStatusOf(get("platform-system", ISTIOD_STATUS_NAME)), {
    reachable: true,
    proxies: 2,
  });
  // One client a URL, made once.
  await poller.round();
  assert.deepEqual(d.made, ["http://a:15014", "http://b:15014"]);
});

Deno.test("discovered replicas: one listed but unreachable fails, naming it; one gone or terminating does not", async () => {
  const down: IstiodAnswer<Syncz> = { ok: false, reason: "Unreachable", message: "GET x: refused" };
  const a = fake(ok(entry("demo-0.apps", 3)));
  const b = fake(down);
  const d = discovered({ "http://a:15014": a, "http://b:15014": b });
  const { poller, get } = setup([], { clients: undefined, discovery: d.discovery });
  d.set([replica("http://a:15014", "istiod-a"), replica("http://b:15014", "istiod-b")]);
  assert.deepEqual(await poller.round(), { ok: false, followUp: false, backlog: false });
  assert.deepEqual(istiodStatusOf(get("platform-system", ISTIOD_STATUS_NAME)), {
    reachable: false,
    reason: "Unreachable",
    message: "istiod replica istiod-b: GET x: refused",
  });
  // B terminating (still serving): asked, but its silence is no failure.
  d.set([replica("http://a:15014", "istiod-a"), replica("http://b:15014", "istiod-b", false)]);
  assert.deepEqual(await poller.round(), { ok: true, followUp: false, backlog: false });
  assert.equal(istiodStatusOf(get("platform-system", ISTIOD_STATUS_NAME))?.reachable, true);
  // B listed when the round began, gone by the time its answer failed: no failure either.
  d.set([replica("http://a:15014", "istiod-a"), replica("http://b:15014", "istiod-b")]);
  b.syncz = () => {
    d.set([replica("http://a:15014", "istiod-a")]);
    return Promise.resolve(down);
  };
  assert.deepEqual(await poller.round(), { ok: true, followUp: false, backlog: false });
  assert.deepEqual(proxyStatusOf(get("apps", "demo-0"))?.verdict, { state: "Acked" });
  assert.equal(istiodStatusOf(get("platform-system", ISTIOD_STATUS_NAME))?.reachable, true);
});

Deno.test("discovered replicas: none ready, or not known, is said as istiod's status, without a request", async () => {
  const a = fake(ok(entry("demo-0.apps", 3)));
  const d = discovered({ "http://a:15014": a });
  const { poller, get } = setup([], { clients: undefined, discovery: d.discovery });
  d.set([replica("http://a:15014", "istiod-a")]);
  await poller.round();
  d.set({ state: "failed", reason: NO_READY_REPLICA, message: "istiod has no ready replica: ..." });
  assert.deepEqual(await poller.round(), { ok: true, followUp: false, backlog: false });
  assert.deepEqual(istiodStatusOf(get("platform-system", ISTIOD_STATUS_NAME)), {
    reachable: false,
    reason: NO_READY_REPLICA,
    message: "istiod has no ready replica: ...",
  });
  // The proxies stay as last seen (a reader sees istiod's status first), and A was not asked.
  assert.ok(get("apps", "demo-0"));
  assert.deepEqual(a.asked, ["syncz"]);
});

Deno.test("run: a change of the replicas brings a round at once, also while backing off", async () => {
  const ac = new AbortController();
  const failing: IstiodAnswer<Syncz> = { ok: false, reason: "Unreachable", message: "refused" };
  const a = fake(failing);
  const b = fake(ok(entry("demo-0.apps", 3)));
  const d = discovered({ "http://a:15014": a, "http://b:15014": b });
  d.set([replica("http://a:15014", "istiod-a")]);
  const timeline: string[] = [];
  const clock = virtualClock(ac, 40_000, (t) => {
    // A is replaced by B 25 s in, while the poller backs off (1 s, doubling).
    if (t === 25_000) d.set([replica("http://b:15014", "istiod-b")]);
  });
  const at = (name: string, c: IstiodClient): IstiodClient => ({
    syncz: () => {
      timeline.push(`${name} at ${clock.now() / 1000}s`);
      return c.syncz();
    },
    listenersAndRoutes: c.listenersAndRoutes,
  });
  const poller = new IstiodPoller({
    discovery: {
      view: d.discovery.view,
      clientOf: (url) => at(url === "http://a:15014" ? "A" : "B", d.discovery.clientOf(url)),
    },
    source: new LocalSource(PROXY_STATUS),
    namespace: "p",
    clock,
    log,
    statPrefix: PREFIX,
    periodMs: 10_000,
    followUpMs: 1_000,
  });
  await poller.run(ac.signal);
  // Backing off: A at 0, 1, 3, 7 and 15 s (a 16 s wait next); B at 25 s, as soon as it is listed.
  assert.deepEqual(timeline, [
    "A at 0s",
    "A at 1s",
    "A at 3s",
    "A at 7s",
    "A at 15s",
    "B at 25s",
    "B at 35s",
  ]);
});

Deno.test("the poller takes fixed clients or a discovery, not both, not neither", () => {
  const base = {
    source: new LocalSource(PROXY_STATUS),
    namespace: "p",
    clock: { now: () => 0, sleep: () => Promise.resolve() },
    log,
    statPrefix: PREFIX,
  };
  assert.throws(() => new IstiodPoller(base), /either clients or a discovery/);
  const d = discovered({});
  assert.throws(
    () => new IstiodPoller({ ...base, clients: [], discovery: d.discovery }),
    /either clients or a discovery/,
  );
});

Deno.test("a failure is warned once while it stays the same; answering again is said", async () => {
  const lines: string[] = [];
  const logged = createLogger({
    clock: { now: () => 0 },
    sink: (l) => lines.push(l),
    level: "info",
  });
  const down: IstiodAnswer<Syncz> = { ok: false, reason: "Unreachable", message: "refused" };
  const istiod = fake(down, down, { ...down, message: "reset" }, ok(entry("a.b", 1)));
  const { poller } = setup([istiod], { log: logged });
  for (let i = 0; i < 4; i++) await poller.round();
  const said = lines.map((l) => JSON.parse(l) as { level: string; msg: string; error?: string });
  assert.deepEqual(said.map((l) => `${l.level} ${l.msg}${l.error ? `: ${l.error}` : ""}`), [
    "warn istiod could not be asked: refused",
    "warn istiod could not be asked: reset",
    "info istiod answers again",
  ]);
});
