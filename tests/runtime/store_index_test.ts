/** Secondary indexes of the watch caches: kept in step with every way the cache changes. */
import assert from "node:assert/strict";
import { Cache, CacheStore } from "../../src/runtime/cache/mod.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { RESOURCES } from "../../src/api/resources.ts";

const CM = RESOURCES.ConfigMap;

function cm(name: string, rv: number, team?: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name,
      namespace: "ns",
      resourceVersion: String(rv),
      ...(team ? { labels: { team } } : {}),
    },
  };
}

const byTeam = (o: KubeObject) => (o.metadata.labels?.team ? [o.metadata.labels.team] : []);
const names = (objs: readonly KubeObject[]) => objs.map((o) => o.metadata.name);

function listed(store: CacheStore, rv: number, ...objects: KubeObject[]): void {
  store.handle({ type: "init" });
  for (const object of objects) store.handle({ type: "init-apply", object });
  store.handle({ type: "init-done", resourceVersion: String(rv) });
}

Deno.test("an index follows lists, watch events, relists and the replica's own writes", () => {
  const store = new CacheStore(CM);
  store.addIndex("team", byTeam);
  listed(store, 5, cm("b", 1, "red"), cm("a", 2, "red"), cm("c", 3, "blue"));
  assert.deepEqual(names(store.byIndex("team", "red")), ["a", "b"], "in name order");
  assert.deepEqual(names(store.byIndex("team", "green")), []);
  // A label moves: filed under the new value only.
  store.handle({ type: "apply", object: cm("a", 6, "blue") });
  assert.deepEqual(names(store.byIndex("team", "red")), ["b"]);
  assert.deepEqual(names(store.byIndex("team", "blue")), ["a", "c"]);
  store.handle({ type: "delete", object: cm("c", 7, "blue") });
  assert.deepEqual(names(store.byIndex("team", "blue")), ["a"]);
  // This replica's write, ahead of the watch.
  store.written(cm("d", 8, "red"));
  assert.deepEqual(names(store.byIndex("team", "red")), ["b", "d"]);
  // A relist replaces everything (the write is newer than the list, so it stays).
  listed(store, 7, cm("e", 4, "blue"));
  assert.deepEqual(names(store.byIndex("team", "blue")), ["e"]);
  assert.deepEqual(names(store.byIndex("team", "red")), ["d"]);
  // The type goes away.
  store.handle({ type: "missing" });
  assert.deepEqual(names(store.byIndex("team", "red")), []);
});

Deno.test("an index added to a filled store files what is there; a repeated name is refused", () => {
  const store = new CacheStore(CM);
  listed(store, 2, cm("a", 1, "red"));
  store.addIndex("team", byTeam);
  assert.deepEqual(names(store.byIndex("team", "red")), ["a"]);
  assert.throws(() => store.addIndex("team", byTeam), /exists/);
  assert.throws(() => store.byIndex("other", "red"), /no index other/);
});

Deno.test("Cache: an index reaches every store of the type, made before or after", () => {
  const cache = new Cache();
  const early = cache.store(CM);
  cache.addIndex(CM, "team", byTeam);
  const late = cache.store(CM, "x=y");
  listed(early, 2, cm("a", 1, "red"));
  listed(late, 2, cm("b", 1, "red"), cm("a", 1, "red"));
  assert.deepEqual(names(cache.byIndex(CM, "team", "red")), ["a", "b"]);
  assert.throws(() => cache.addIndex(CM, "team", byTeam), /exists/);
  assert.throws(() => cache.byIndex(RESOURCES.Pod, "team", "red"), /not watched/);
});
