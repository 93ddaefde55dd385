/** Local types: a source's changes as list and watch answers, and the rest of the Cluster untouched. */
import assert from "node:assert/strict";
import { LocalSource, withLocalTypes } from "../../src/runtime/local_types.ts";
import { ApiError, type Cluster, type WatchEvent } from "../../src/runtime/mod.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";
import type { ControllerSpec } from "../../src/runtime/controller_spec.ts";
import { Manager } from "../../src/runtime/manager.ts";
import { images } from "./manager_fixtures.ts";
import { TestCluster, WIDGET } from "./test_cluster.ts";
import { captureLogger, ManualClock, seededRandom } from "./helpers.ts";

const TYPE: ResourceType = {
  group: "status.example.io",
  version: "v1",
  kind: "Thing",
  plural: "things",
  namespaced: true,
};

function thing(ns: string, name: string, state: string): KubeObject {
  return {
    apiVersion: "status.example.io/v1",
    kind: "Thing",
    metadata: { namespace: ns, name },
    status: { state },
  };
}

async function take(it: AsyncIterable<WatchEvent>, n: number): Promise<string[]> {
  const out: string[] = [];
  for await (const e of it) {
    out.push(
      `${e.type} ${e.object.metadata.namespace}/${e.object.metadata.name} ${
        (e.object.status as { state: string }).state
      }@${e.object.metadata.resourceVersion}`,
    );
    if (out.length === n) break;
  }
  return out;
}

Deno.test("publish: only differences are changes, and no difference keeps the version", () => {
  const s = new LocalSource(TYPE);
  assert.equal(s.publish([thing("a", "x", "Acked"), thing("b", "y", "Pending")]), 2);
  assert.equal(s.version, 1);
  assert.equal(s.publish([thing("a", "x", "Acked"), thing("b", "y", "Pending")]), 0);
  assert.equal(s.version, 1);
  assert.equal(s.publish([thing("a", "x", "Rejected")]), 2);
  assert.equal(s.version, 2);
  const page = s.list();
  assert.equal(page.resourceVersion, "2");
  assert.deepEqual(page.items.map((o) => [o.metadata.name, o.metadata.resourceVersion]), [[
    "x",
    "2",
  ]]);
  assert.ok(Object.isFrozen(page.items[0]));
});

Deno.test("watch: the changes after a version, then the ones that come, by namespace", async () => {
  const s = new LocalSource(TYPE);
  s.publish([thing("a", "x", "Pending")]);
  s.publish([thing("a", "x", "Acked"), thing("b", "y", "Pending")]);
  const ac = new AbortController();
  const all = take(s.watch(1, undefined, ac.signal), 4);
  const onlyB = take(s.watch(1, "b", ac.signal), 2);
  setTimeout(() => s.publish([thing("b", "y", "Acked")]), 10);
  assert.deepEqual(await all, [
    "MODIFIED a/x Acked@2",
    "ADDED b/y Pending@2",
    "MODIFIED b/y Acked@3",
    "DELETED a/x Acked@3",
  ]);
  assert.deepEqual(await onlyB, ["ADDED b/y Pending@2", "MODIFIED b/y Acked@3"]);
  ac.abort();
});

Deno.test("watch: a version it no longer remembers, or never gave, is 410 Gone", async () => {
  const s = new LocalSource(TYPE);
  for (let i = 0; i < 100; i++) s.publish([thing("a", "x", String(i))]);
  const ac = new AbortController();
  for (const from of [1, 101, Number.NaN]) {
    await assert.rejects(
      take(s.watch(from, undefined, ac.signal), 1),
      (e) => e instanceof ApiError && e.code === 410,
    );
  }
  assert.deepEqual(await take(s.watch(99, undefined, ac.signal), 1), ["MODIFIED a/x 99@100"]);
});

Deno.test("watch ends when its signal aborts, with nothing to say", async () => {
  const s = new LocalSource(TYPE);
  const ac = new AbortController();
  const done = take(s.watch(0, undefined, ac.signal), 1);
  setTimeout(() => ac.abort(), 10);
  assert.deepEqual(await done, []);
});

Deno.test("withLocalTypes: the source answers its type; other types reach the cluster", async () => {
  const calls: string[] = [];
  const inner = {
    list: (t: ResourceType) => {
      calls.push(`list ${t.plural}`);
      return Promise.resolve({ items: [], resourceVersion: "7" });
    },
  } as unknown as Cluster;
  const s = new LocalSource(TYPE);
  s.publish([thing("a", "x", "Acked")]);
  const c = withLocalTypes(inner, [s]);
  assert.equal((await c.list(TYPE)).items.length, 1);
  const pods = { ...TYPE, group: "", kind: "Pod", plural: "pods" };
  assert.equal((await c.list(pods)).resourceVersion, "7");
  assert.deepEqual(calls, ["list pods"]);
  assert.throws(() => c.list(TYPE, { labelSelector: "a=b" }), /served locally/);
});

Deno.test("a local type's watch is not restarted for being quiet (no connection to lose), and still delivers", async () => {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  const { log, lines } = captureLogger(clock);
  const source = new LocalSource(TYPE);
  source.publish([thing("demo", "a", "one")]);
  const reader: ControllerSpec = {
    name: "reader",
    primary: WIDGET,
    watches: [{ type: TYPE, local: true }],
    reconcile: () => undefined,
  };
  const m = new Manager({
    cluster,
    clock,
    random: seededRandom(7),
    log,
    controllers: [reader],
    images,
    identity: "op-0",
    leaderElection: false,
    localSources: [source],
    watchIdleMs: 25_000,
  });
  const done = m.start();
  await clock.advance(5_000);
  assert.equal(m.cache.list(TYPE).length, 1, "listed");
  await clock.advance(300_000); // twelve times the watchdog's 25 s, with nothing published
  const restarts = lines.filter((l) =>
    String(l.msg).includes("watch silent for too long") && JSON.stringify(l).includes("things")
  );
  assert.deepEqual(restarts, [], "the local watch was left open");
  source.publish([thing("demo", "a", "two")]);
  await clock.advance(100);
  const state = (m.cache.get(TYPE, "demo", "a")?.status as { state?: string })?.state;
  assert.equal(state, "two", "and still delivers");
  await m.stop();
  await done;
});
