/** The store's read-your-writes: a write is seen at once, never replaced by older watch news. */
import assert from "node:assert/strict";
import { CacheStore } from "../../src/runtime/cache/mod.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { parseSelector } from "../../src/api/selector.ts";
import { RESOURCES } from "../../src/api/resources.ts";
import { FIELD_MANAGER } from "../../src/reconcile/labels.ts";

const CM = RESOURCES.ConfigMap;

function cm(name: string, rv: number, extra: Partial<KubeObject["metadata"]> = {}): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: "ns", resourceVersion: String(rv), ...extra },
    data: { rv: String(rv) },
  };
}

function listed(store: CacheStore, rv: number, ...objects: KubeObject[]): void {
  store.handle({ type: "init" });
  for (const object of objects) store.handle({ type: "init-apply", object });
  store.handle({ type: "init-done", resourceVersion: String(rv) });
}

const rvOf = (store: CacheStore, name: string) => store.get("ns", name)?.metadata.resourceVersion;

Deno.test("a write newer than the cache is cached at once; older watch events for it are ignored", () => {
  const store = new CacheStore(CM);
  listed(store, 5, cm("a", 5));
  const changes = store.written(cm("a", 7));
  assert.deepEqual(changes.map((c) => c.type), ["apply"]);
  assert.equal(rvOf(store, "a"), "7");
  // The watch still has someone else's change from before the write to deliver.
  assert.deepEqual(store.handle({ type: "apply", object: cm("a", 6) }), []);
  assert.equal(rvOf(store, "a"), "7", "never older");
  // The watch reaches the write: nothing changes, and later events are trusted again.
  assert.deepEqual(store.handle({ type: "apply", object: cm("a", 7) }), []);
  assert.equal(store.handle({ type: "apply", object: cm("a", 9) }).length, 1);
  assert.equal(rvOf(store, "a"), "9");
});

Deno.test("a write older than what the cache or the watch has shown is not cached", () => {
  const store = new CacheStore(CM);
  listed(store, 5, cm("a", 5));
  store.handle({ type: "apply", object: cm("a", 8) });
  assert.deepEqual(store.written(cm("a", 7)), []);
  assert.equal(rvOf(store, "a"), "8");
  // Deleted (rv 9) after the write (rv 7), and the watch said so before the write returned.
  store.handle({ type: "delete", object: cm("b", 9) });
  assert.deepEqual(store.written(cm("b", 7)), [], "no ghost of a deleted object");
  assert.equal(store.get("ns", "b"), undefined);
});

Deno.test("a relist keeps writes newer than the list and drops those the list has seen", () => {
  const store = new CacheStore(CM);
  listed(store, 5, cm("a", 5));
  store.written(cm("a", 7));
  store.written(cm("new", 8));
  listed(store, 6, cm("a", 5)); // a list from before the writes
  assert.equal(rvOf(store, "a"), "7");
  assert.equal(rvOf(store, "new"), "8");
  listed(store, 10, cm("a", 10)); // a list after them: authoritative (new was deleted meanwhile)
  assert.equal(rvOf(store, "a"), "10");
  assert.equal(store.get("ns", "new"), undefined);
});

Deno.test("a write that leaves the object gone removes it; the watch's last view of it does not bring it back", () => {
  const store = new CacheStore(CM);
  const deleting = { deletionTimestamp: "2026-01-01T00:00:00Z" };
  listed(store, 5, cm("a", 5, { ...deleting, finalizers: ["x/y"] }));
  const changes = store.written(cm("a", 6, deleting)); // last finalizer removed
  assert.deepEqual(changes.map((c) => c.type), ["delete"]);
  assert.deepEqual(store.handle({ type: "apply", object: cm("a", 6, deleting) }), []);
  assert.equal(store.get("ns", "a"), undefined);
  assert.deepEqual(store.handle({ type: "delete", object: cm("a", 7, deleting) }), []);
});

Deno.test("a write goes only into stores whose selector it matches; unparsable rvs are not compared", () => {
  const managed = new CacheStore(CM, "app.kubernetes.io/managed-by=platform-operator");
  listed(managed, 5);
  assert.deepEqual(managed.written(cm("a", 6)), [], "no labels: not this watch's object");
  const labelled = cm("a", 7, { labels: { "app.kubernetes.io/managed-by": "platform-operator" } });
  assert.equal(managed.written(labelled).length, 1);
  const store = new CacheStore(CM);
  listed(store, 5);
  assert.deepEqual(store.written({ ...cm("x", 1), metadata: { name: "x", namespace: "ns" } }), []);
  const unsynced = new CacheStore(CM);
  assert.deepEqual(unsynced.written(cm("x", 6)), [], "nothing before the first list");
});

Deno.test("a write goes only into a namespaced store of its own namespace", () => {
  const scoped = new CacheStore(CM, undefined, undefined, "ns");
  listed(scoped, 5);
  const elsewhere = { ...cm("a", 6), metadata: { ...cm("a", 6).metadata, namespace: "other" } };
  assert.deepEqual(scoped.written(elsewhere), [], "its watch would never update or remove it");
  assert.equal(scoped.get("other", "a"), undefined);
  assert.equal(scoped.written(cm("a", 7)).length, 1);
  assert.equal(rvOf(scoped, "a"), "7");
});

Deno.test("label selectors: equality, inequality, existence and sets", () => {
  const m = (sel: string, labels: Record<string, string>) => parseSelector(sel)!(labels);
  assert.equal(m("a=1", { a: "1" }), true);
  assert.equal(m("a==1,b", { a: "1" }), false);
  assert.equal(m("a!=1", {}), true);
  assert.equal(m("!a", { a: "" }), false);
  assert.equal(m("a in (1, 2),b notin (3)", { a: "2", b: "4" }), true);
  assert.equal(m("a in (1,2)", { a: "3" }), false);
  assert.equal(m("constructor", {}), false);
  assert.equal(m("", { any: "x" }), true);
  assert.equal(parseSelector("a=(b"), undefined);
});

Deno.test("managedFields: the store strips them itself and keeps the operator's own applied fields", () => {
  const mf = (fields: Record<string, unknown>) => [
    { manager: "kubectl", operation: "Update", fieldsV1: { "f:data": { "f:other": {} } } },
    { manager: "platform-operator", operation: "Apply", fieldsV1: fields },
    {
      manager: "platform-operator",
      operation: "Apply",
      subresource: "status",
      fieldsV1: { "f:status": {} },
    },
  ];
  const store = new CacheStore(CM);
  listed(store, 5, cm("a", 5, { managedFields: mf({ "f:data": { "f:rv": {} } }) }));
  assert.equal(store.get("ns", "a")?.metadata.managedFields, undefined);
  assert.deepEqual(store.ownedFields("ns", "a"), { "f:data": { "f:rv": {} } });
  // A write that came back with managedFields updates them; one without leaves them unknown...
  store.written(cm("a", 6, { managedFields: mf({ "f:data": {} }) }));
  assert.equal(store.get("ns", "a")?.metadata.managedFields, undefined);
  assert.deepEqual(store.ownedFields("ns", "a"), { "f:data": {} });
  store.written(cm("a", 7));
  assert.equal(store.ownedFields("ns", "a"), undefined);
  // ...until the watch delivers the same version with them.
  store.handle({ type: "apply", object: cm("a", 7, { managedFields: mf({ "f:x": {} }) }) });
  assert.deepEqual(store.ownedFields("ns", "a"), { "f:x": {} });
});

Deno.test("the watch's copy of a write that came back whole is not prepared again; one without managedFields is", () => {
  let kept = 0;
  const counting = {
    name: "counting",
    keep: (o: KubeObject) => {
      kept++;
      return o;
    },
  };
  const own = (fields: Record<string, unknown>) => [{
    manager: FIELD_MANAGER,
    operation: "Apply",
    fieldsV1: fields,
  }];
  const store = new CacheStore(CM, undefined, counting);
  listed(store, 5, cm("a", 5), cm("b", 5));
  kept = 0;
  store.written(cm("a", 7, { managedFields: own({ "f:data": { "f:rv": {} } }) }));
  assert.equal(kept, 1);
  store.handle({
    type: "apply",
    object: cm("a", 7, { managedFields: own({ "f:data": { "f:rv": {} } }) }),
  });
  assert.equal(kept, 1, "the same version, whole already: not prepared again");
  assert.deepEqual(store.ownedFields("ns", "a"), { "f:data": { "f:rv": {} } });
  // A write answered without managedFields: the watch's copy brings the owned fields.
  store.written(cm("b", 8));
  assert.equal(store.ownedFields("ns", "b"), undefined);
  store.handle({ type: "apply", object: cm("b", 8, { managedFields: own({ "f:data": {} }) }) });
  assert.equal(kept, 3);
  assert.deepEqual(store.ownedFields("ns", "b"), { "f:data": {} });
});
