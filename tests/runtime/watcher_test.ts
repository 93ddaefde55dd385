import assert from "node:assert/strict";
import { CacheStore, Watcher, type WatcherOptions } from "../../src/runtime/cache/mod.ts";
import { Metrics } from "../../src/runtime/metrics.ts";
import { ApiError } from "../../src/runtime/cluster.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";
import { TestCluster } from "./test_cluster.ts";
import { captureLogger, link, ManualClock, seededRandom } from "./helpers.ts";
import { RESOURCES } from "../../src/api/resources.ts";
import type { CacheChange } from "../../src/runtime/controller_spec.ts";

const CM = RESOURCES.ConfigMap;
const SECRET = RESOURCES.Secret;
const FN = RESOURCES.Function;

function cm(name: string, data = "x"): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: "ns" },
    data: { v: data },
  };
}

function setup(type: ResourceType, extra: Partial<WatcherOptions> = {}) {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  const { log, lines } = captureLogger(clock);
  const metrics = new Metrics();
  const store = new CacheStore(type);
  const changes: CacheChange[] = [];
  const watcher = new Watcher(
    { cluster, clock, random: seededRandom(), log, metrics, type, idleMs: 60_000, ...extra },
    (ev) => changes.push(...store.handle(ev)),
  );
  const stop = new AbortController();
  const done = watcher.run(stop.signal);
  const finish = async () => {
    stop.abort();
    await clock.flush();
    await done;
  };
  return { clock, cluster, lines, metrics, store, changes, watcher, finish };
}

const names = (changes: CacheChange[]) => changes.map((c) => `${c.type}:${c.object.metadata.name}`);

Deno.test("watcher lists in pages with continue tokens, then watches", async () => {
  const t = setup(CM, { pageSize: 3 });
  for (let i = 0; i < 7; i++) t.cluster.put(CM, cm(`c${i}`));
  await t.clock.advance(0);
  assert.equal(t.store.synced, true);
  assert.equal(t.store.size, 7);
  assert.equal(t.cluster.calls.filter((c) => c.verb === "list").length, 3);
  assert.equal(t.watcher.state.kind, "Watching");
  t.cluster.put(CM, cm("late"));
  await t.clock.flush();
  assert.equal(t.store.get("ns", "late")?.metadata.name, "late");
  assert.deepEqual(names(t.changes).at(-1), "apply:late");
  await t.finish();
  assert.equal(t.cluster.watchCount, 0);
});

Deno.test("the next page is asked for before the page before it is stored", async () => {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  for (let i = 0; i < 7; i++) cluster.put(CM, cm(`c${i}`));
  const store = new CacheStore(CM);
  // How many lists had been sent when each page's first object reached the store.
  const sentAtPage: number[] = [];
  const lists = () => cluster.calls.filter((c) => c.verb === "list").length;
  let received = 0;
  const watcher = new Watcher(
    {
      cluster,
      clock,
      random: seededRandom(),
      log: captureLogger(clock).log,
      type: CM,
      pageSize: 3,
    },
    (ev) => {
      if (ev.type === "init-apply" && received++ % 3 === 0) sentAtPage.push(lists());
      store.handle(ev);
    },
  );
  const stop = new AbortController();
  const done = watcher.run(stop.signal);
  await clock.advance(0);
  assert.equal(store.size, 7);
  // Pages 1 and 2 were stored with the page after them already asked for; page 3 is the last.
  assert.deepEqual(sentAtPage, [2, 3, 3]);
  assert.equal(lists(), 3);
  stop.abort();
  await clock.flush();
  await done;
});

for (const asEvent of [false, true]) {
  Deno.test(`watcher relists on 410 (${asEvent ? "ERROR event" : "thrown"}) and synthesises deletes`, async () => {
    const t = setup(CM);
    t.cluster.goneAsEvent = asEvent;
    t.cluster.put(CM, cm("a"));
    t.cluster.put(CM, cm("keep"));
    await t.clock.advance(0);
    assert.deepEqual(names(t.changes), ["apply:a", "apply:keep"]);
    // While the watch is down the world changes and history is compacted: the old rv is gone.
    t.cluster.dropWatches();
    t.cluster.remove(CM, "ns", "a");
    t.cluster.put(CM, cm("b"));
    t.cluster.compact();
    await t.clock.advance(2_000);
    assert.deepEqual(names(t.changes.slice(2)), ["delete:a", "apply:b"]);
    assert.deepEqual(t.store.list().map((o) => o.metadata.name), ["b", "keep"]);
    assert.equal(t.metrics.watchRestarts.get({ resource: "configmaps", reason: "gone" }), 1);
    await t.finish();
  });
}

Deno.test("watcher restarts a stalled watch after idleMs and catches up from its resourceVersion", async () => {
  const t = setup(CM);
  await t.clock.advance(0);
  t.cluster.stallWatches();
  t.cluster.put(CM, cm("missed"));
  await t.clock.advance(59_000);
  assert.equal(t.store.get("ns", "missed"), undefined);
  await t.clock.advance(1_000);
  assert.equal(t.store.get("ns", "missed")?.metadata.name, "missed");
  assert.equal(t.metrics.watchRestarts.get({ resource: "configmaps", reason: "idle" }), 1);
  // Only one relist ever: the restart resumed the watch instead of listing again.
  assert.equal(t.cluster.calls.filter((c) => c.verb === "list").length, 1);
  await t.finish();
});

Deno.test("relist() closes a stalled watch and lists at once, so the store sees what the watch missed", async () => {
  const t = setup(CM);
  await t.clock.advance(0);
  t.cluster.stallWatches();
  t.cluster.put(CM, cm("missed"));
  await t.clock.advance(1_000);
  assert.equal(t.store.get("ns", "missed"), undefined);
  assert.equal(t.watcher.relist(), true);
  await t.clock.advance(0);
  assert.equal(t.store.get("ns", "missed")?.metadata.name, "missed");
  assert.equal(t.cluster.calls.filter((c) => c.verb === "list").length, 2);
  assert.equal(t.metrics.watchRestarts.get({ resource: "configmaps", reason: "relist" }), 1);
  assert.equal(t.watcher.state.kind, "Watching");
  // No error logged for the watch it closed itself.
  assert.deepEqual(t.lines.filter((l) => l.level === "error"), []);
  await t.finish();
});

Deno.test("relist() before the first list is sent adds no second list", async () => {
  const t = setup(CM);
  assert.equal(t.watcher.relist(), false);
  await t.clock.advance(0);
  assert.equal(t.cluster.calls.filter((c) => c.verb === "list").length, 1);
  await t.finish();
});

Deno.test("relist() during a backoff lists at once", async () => {
  const t = setup(CM, { backoff: { initialMs: 30_000, maxMs: 30_000 } });
  t.cluster.failNext("list", new ApiError(500, "InternalError", "boom"));
  await t.clock.advance(0);
  assert.equal(t.watcher.state.kind, "Backoff");
  assert.equal(t.watcher.relist(), true);
  await t.clock.advance(0);
  assert.equal(t.store.synced, true);
  assert.equal(t.cluster.calls.filter((c) => c.verb === "list").length, 2);
  await t.finish();
});

Deno.test("a list answered 429 with Retry-After waits as long as the server asked, not the shorter backoff", async () => {
  const t = setup(CM);
  t.cluster.failNext("list", new ApiError(429, "TooManyRequests", "slow down", 7));
  await t.clock.advance(0);
  assert.equal(t.watcher.state.kind, "Backoff");
  assert.equal(backoffMs(t.watcher), 7_000, "the backoff alone is under a second");
  await t.clock.advance(6_999);
  assert.equal(t.cluster.calls.filter((c) => c.verb === "list").length, 1);
  await t.clock.advance(1);
  assert.equal(t.store.synced, true);
  // An absurd Retry-After is held to five minutes.
  t.cluster.failNext("watch", new ApiError(503, "ServiceUnavailable", "starting", 86_400));
  t.cluster.dropWatches(); // closed with nothing received: a short backoff, then the failing watch
  await t.clock.advance(1_000);
  assert.equal(backoffMs(t.watcher), 300_000);
  await t.finish();
});

/** The delay of the backoff the watcher is in (jittered: 15-30 s for a 30 s backoff), else 0. */
const backoffMs = (w: Watcher) => w.state.kind === "Backoff" ? w.state.delayMs : 0;

/** A watcher of ConfigMaps whose first list is answered after `delayMs`, with what was there when sent. */
function slowFirstList(delayMs: number, extra: Partial<WatcherOptions> = {}) {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  const direct = link(cluster).cluster;
  let first = true;
  const list: typeof direct.list = async (type, opts) => {
    const page = await direct.list(type, opts);
    if (first) {
      first = false;
      await clock.sleep(delayMs);
    }
    return page;
  };
  const store = new CacheStore(CM);
  const seen: string[] = [];
  const watcher = new Watcher({
    cluster: { ...direct, list },
    clock,
    random: seededRandom(),
    log: captureLogger(clock).log,
    type: CM,
    ...extra,
  }, (ev) => {
    seen.push(ev.type === "init-apply" ? `init-apply:${ev.object.metadata.name}` : ev.type);
    store.handle(ev);
  });
  const stop = new AbortController();
  const done = watcher.run(stop.signal);
  const finish = async () => {
    stop.abort();
    await clock.flush();
    await done;
  };
  const lists = () => cluster.calls.filter((c) => c.verb === "list").length;
  return { clock, cluster, store, seen, watcher, lists, finish };
}

Deno.test("relist() during a list discards that list (sent before) and lists again", async () => {
  const t = slowFirstList(10_000);
  t.cluster.put(CM, cm("old"));
  await t.clock.advance(1_000);
  assert.equal(t.watcher.state.kind, "InitPage");
  t.cluster.put(CM, cm("new"));
  assert.equal(t.watcher.relist(), true);
  await t.clock.advance(10_000);
  assert.equal(t.store.synced, true);
  assert.equal(t.lists(), 2);
  // The first list's answer was dropped: the one list that completed was sent after relist().
  assert.deepEqual(t.seen, ["init", "init", "init-apply:new", "init-apply:old", "init-done"]);
  await t.finish();
});

Deno.test("relist() during a list cuts short no later backoff: only a backoff under way", async () => {
  const t = slowFirstList(10_000, { backoff: { initialMs: 30_000, maxMs: 30_000 } });
  await t.clock.advance(1_000);
  assert.equal(t.watcher.state.kind, "InitPage");
  assert.equal(t.watcher.relist(), true);
  // The list sent again (when the first answers, at 10 s) fails: its backoff runs in full.
  t.cluster.failNext("list", new ApiError(500, "InternalError", "boom"));
  await t.clock.advance(9_000);
  const delayMs = backoffMs(t.watcher);
  assert.ok(delayMs >= 15_000, `in a backoff of ${delayMs} ms`);
  await t.clock.advance(delayMs - 1_000);
  assert.equal(t.lists(), 2, "no list during the backoff");
  assert.equal(t.store.synced, false);
  await t.clock.advance(1_000);
  assert.equal(t.lists(), 3);
  assert.equal(t.store.synced, true);
  await t.finish();
});

Deno.test("bookmarks move the resourceVersion and keep the watchdog quiet", async () => {
  const t = setup(CM);
  t.cluster.put(CM, cm("a"));
  await t.clock.advance(0);
  // Moves the rv without an event for this watch.
  t.cluster.put(SECRET, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "other", namespace: "ns" },
  });
  for (let i = 0; i < 5; i++) {
    await t.clock.advance(30_000);
    t.cluster.bookmark();
    await t.clock.flush();
  }
  assert.equal(t.metrics.watchRestarts.get({ resource: "configmaps", reason: "idle" }), 0);
  const st = t.watcher.state;
  assert.equal(st.kind, "Watching");
  assert.ok(
    st.kind === "Watching" &&
      Number(st.resourceVersion) > Number(t.store.get("ns", "a")?.metadata.resourceVersion),
  );
  await t.finish();
});

Deno.test("an optional watch of a missing CRD is empty and synced, logged once, and picks the CRD up later", async () => {
  const t = setup(FN, { optional: true });
  t.cluster.unserve(FN);
  await t.clock.advance(0);
  assert.equal(t.store.synced, true);
  assert.equal(t.store.size, 0);
  await t.clock.advance(120_000);
  const lists = t.cluster.calls.filter((c) => c.verb === "list").length;
  assert.ok(lists >= 3 && lists <= 12, `retried with backoff, not in a storm (${lists} lists)`);
  assert.equal(t.lines.filter((l) => String(l.msg).includes("not served")).length, 1);
  assert.equal(t.lines.filter((l) => l.level === "error").length, 0);
  t.cluster.serve(FN);
  t.cluster.put(FN, {
    apiVersion: "serverless.platform-project.io/v1alpha2",
    kind: "Function",
    metadata: { name: "f", namespace: "ns" },
  });
  await t.clock.advance(31_000);
  assert.equal(t.store.get("ns", "f")?.metadata.name, "f");
  assert.equal(t.lines.filter((l) => String(l.msg).includes("served now")).length, 1);
  await t.finish();
});

Deno.test("a required watch of a missing CRD stays unsynced and logs one clear error", async () => {
  const t = setup(FN);
  t.cluster.unserve(FN);
  await t.clock.advance(300_000);
  assert.equal(t.store.synced, false);
  const errors = t.lines.filter((l) => l.level === "error");
  assert.equal(errors.length, 1);
  assert.match(
    String(errors[0].msg),
    /functions\.serverless\.platform-project\.io: not found; is its CRD installed/,
  );
  await t.finish();
});

Deno.test("while quiet (start-up checks running) a failure logs at debug; one that outlasts them once as an error", async () => {
  let quiet = true;
  const t = setup(FN, { quiet: () => quiet });
  t.cluster.unserve(FN);
  await t.clock.advance(60_000);
  const failures = () =>
    t.lines.filter((l) => /functions\.serverless.*not found/.test(String(l.msg)));
  assert.ok(failures().length >= 2, "retried while quiet");
  assert.deepEqual(failures().map((l) => l.level).filter((l) => l !== "debug"), []);
  quiet = false;
  await t.clock.advance(300_000);
  assert.equal(failures().filter((l) => l.level === "error").length, 1);
  await t.finish();
});

Deno.test("a watch that closes at once is retried with backoff, not in a loop", async () => {
  const t = setup(CM);
  await t.clock.advance(0);
  for (let i = 0; i < 20; i++) {
    t.cluster.dropWatches();
    await t.clock.advance(1_000);
  }
  const watches = t.cluster.calls.filter((c) => c.verb === "watch").length;
  assert.ok(watches <= 21, `${watches} watches in 20 s`);
  t.cluster.put(CM, cm("still-works"));
  await t.clock.advance(60_000);
  assert.ok(t.store.get("ns", "still-works"));
  await t.finish();
});
