import assert from "node:assert/strict";
import { type CacheChange, Store } from "../../src/runtime/cache.ts";
import { Metrics } from "../../src/runtime/metrics.ts";
import { Watcher, type WatcherOptions } from "../../src/runtime/watcher.ts";
import type { KubeObject, ResourceType } from "../../src/runtime/cluster.ts";
import { TestCluster } from "./test_cluster.ts";
import { captureLogger, ManualClock, seededRandom } from "./helpers.ts";
import { RESOURCES } from "../../src/api/resources.ts";

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
  const store = new Store(type);
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
