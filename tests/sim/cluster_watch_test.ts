import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import type { WatchEvent } from "../../src/runtime/cluster.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { codeOf, drive, world } from "./helpers.ts";

const cm = (
  name: string,
  labels: Record<string, string> = {},
  namespace = "default",
): KubeObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace, labels },
  data: {},
});

/** Collects a watch's events into an array until aborted. */
function collect(it: AsyncIterable<WatchEvent>): { events: WatchEvent[]; ended: Promise<unknown> } {
  const events: WatchEvent[] = [];
  const ended = (async () => {
    for await (const ev of it) events.push(ev);
  })().catch((e) => e);
  return { events, ended };
}

const summary = (events: WatchEvent[]) => events.map((e) => `${e.type} ${e.object.metadata.name}`);

Deno.test("watch: replays from a resourceVersion, then live changes in order", async () => {
  const { driver, client } = world();
  const start = (await drive(driver, client.list(RESOURCES.ConfigMap))).resourceVersion;
  const a = await drive(driver, client.create(RESOURCES.ConfigMap, cm("a")));
  const ac = new AbortController();
  const w = collect(client.watch(RESOURCES.ConfigMap, { resourceVersion: start }, ac.signal));
  await driver.runFor(100);
  await drive(driver, client.update(RESOURCES.ConfigMap, { ...a, data: { x: "1" } }));
  await drive(driver, client.delete(RESOURCES.ConfigMap, "default", "a"));
  await driver.runFor(100);
  ac.abort();
  await drive(driver, w.ended);
  assert.deepEqual(summary(w.events), ["ADDED a", "MODIFIED a", "DELETED a"]);
  const rvs = w.events.map((e) => Number(e.object.metadata.resourceVersion));
  assert.deepEqual(rvs, [...rvs].sort((x, y) => x - y));
});

Deno.test("watch: a label selector turns objects leaving it into DELETED and entering it into ADDED", async () => {
  const { driver, client } = world();
  const rv = (await drive(driver, client.list(RESOURCES.ConfigMap))).resourceVersion;
  const ac = new AbortController();
  const w = collect(
    client.watch(
      RESOURCES.ConfigMap,
      { resourceVersion: rv, labelSelector: "tier in (web),!skip" },
      ac.signal,
    ),
  );
  const a = await drive(driver, client.create(RESOURCES.ConfigMap, cm("a", { tier: "web" })));
  await drive(driver, client.create(RESOURCES.ConfigMap, cm("b", { tier: "db" })));
  const a2 = await drive(
    driver,
    client.update(RESOURCES.ConfigMap, {
      ...a,
      metadata: { ...a.metadata, labels: { tier: "web", skip: "1" } },
    }),
  );
  await drive(
    driver,
    client.update(RESOURCES.ConfigMap, {
      ...a2,
      metadata: { ...a2.metadata, labels: { tier: "web" } },
    }),
  );
  await driver.runFor(100);
  ac.abort();
  await drive(driver, w.ended);
  assert.deepEqual(summary(w.events), ["ADDED a", "DELETED a", "ADDED a"]);
});

Deno.test("watch: a version older than the retained history is 410 Gone (ERROR event)", async () => {
  const { driver, client } = world({ historySize: 3 });
  const rv = (await drive(driver, client.list(RESOURCES.ConfigMap))).resourceVersion;
  for (let i = 0; i < 10; i++) await drive(driver, client.create(RESOURCES.ConfigMap, cm(`c${i}`)));
  const w = collect(
    client.watch(RESOURCES.ConfigMap, { resourceVersion: rv }, new AbortController().signal),
  );
  await drive(driver, w.ended);
  assert.equal(w.events.length, 1);
  assert.equal(w.events[0].type, "ERROR");
  assert.equal((w.events[0].object as unknown as { code: number }).code, 410);
});

Deno.test("watch: the server ends it after timeoutSeconds and sends bookmarks when asked", async () => {
  const { driver, client, clock } = world();
  const rv = (await drive(driver, client.list(RESOURCES.ConfigMap))).resourceVersion;
  const t0 = clock.now();
  const w = collect(
    client.watch(RESOURCES.ConfigMap, {
      resourceVersion: rv,
      timeoutSeconds: 150,
      allowWatchBookmarks: true,
    }, new AbortController().signal),
  );
  await drive(driver, w.ended, 200_000);
  const elapsed = clock.now() - t0;
  assert.ok(elapsed >= 150_000 && elapsed < 151_000, `ended after ${elapsed} ms`);
  assert.deepEqual(w.events.map((e) => e.type), ["BOOKMARK", "BOOKMARK"]);
  assert.ok(Number(w.events[1].object.metadata.resourceVersion) >= Number(rv));
});

Deno.test("watch: aborting the signal ends the iteration", async () => {
  const { driver, client } = world();
  const ac = new AbortController();
  const w = collect(client.watch(RESOURCES.ConfigMap, { resourceVersion: "0" }, ac.signal));
  await driver.runFor(50);
  ac.abort();
  assert.equal(await drive(driver, w.ended), undefined);
});

Deno.test("list: selectors, namespaces and paging with continue over a fixed snapshot", async () => {
  const { driver, client } = world({ historySize: 2 });
  for (let i = 0; i < 5; i++) {
    await drive(driver, client.create(RESOURCES.ConfigMap, cm(`c${i}`, { n: String(i % 2) })));
  }
  await drive(driver, client.create(RESOURCES.ConfigMap, cm("other", {}, "mesh-system")));
  const odd = await drive(
    driver,
    client.list(RESOURCES.ConfigMap, { namespace: "default", labelSelector: "n=1" }),
  );
  assert.deepEqual(odd.items.map((o) => o.metadata.name), ["c1", "c3"]);
  const p1 = await drive(
    driver,
    client.list(RESOURCES.ConfigMap, { namespace: "default", limit: 2 }),
  );
  assert.deepEqual(p1.items.map((o) => o.metadata.name), ["c0", "c1"]);
  await drive(driver, client.create(RESOURCES.ConfigMap, cm("c2a")));
  const p2 = await drive(
    driver,
    client.list(RESOURCES.ConfigMap, { namespace: "default", limit: 2, continue: p1.continue }),
  );
  assert.deepEqual(
    p2.items.map((o) => o.metadata.name),
    ["c2", "c3"],
    "the snapshot does not see c2a",
  );
  assert.equal(p2.resourceVersion, p1.resourceVersion);
  for (let i = 0; i < 6; i++) {
    await drive(driver, client.create(RESOURCES.ConfigMap, cm(`late${i}`)));
  }
  assert.equal(
    await drive(
      driver,
      codeOf(
        client.list(RESOURCES.ConfigMap, { namespace: "default", limit: 2, continue: p2.continue }),
      ),
    ),
    410,
  );
  assert.equal(
    await drive(driver, codeOf(client.list(RESOURCES.ConfigMap, { labelSelector: "a in (" }))),
    400,
  );
});

Deno.test("list and watch of metadata only answer PartialObjectMetadata, as the API server does", async () => {
  const { driver, client } = world();
  const partial = (o: KubeObject) => [o.apiVersion, o.kind, o.metadata.name, "data" in o];
  const page = await drive(driver, client.list(RESOURCES.ConfigMap, { metadataOnly: true }));
  const ac = new AbortController();
  const w = collect(
    client.watch(
      RESOURCES.ConfigMap,
      { resourceVersion: page.resourceVersion, metadataOnly: true },
      ac.signal,
    ),
  );
  await driver.runFor(100);
  await drive(driver, client.create(RESOURCES.ConfigMap, cm("a", { app: "x" })));
  const listed = await drive(driver, client.list(RESOURCES.ConfigMap, { metadataOnly: true }));
  const whole = await drive(driver, client.list(RESOURCES.ConfigMap));
  await driver.runFor(100);
  ac.abort();
  await drive(driver, w.ended);
  const a = (l: readonly KubeObject[]) => l.filter((o) => o.metadata.name === "a");
  assert.deepEqual(a(listed.items).map(partial), [[
    "meta.k8s.io/v1",
    "PartialObjectMetadata",
    "a",
    false,
  ]]);
  assert.deepEqual(a(listed.items)[0].metadata.labels, { app: "x" }, "the whole metadata");
  assert.deepEqual(a(whole.items).map(partial), [["v1", "ConfigMap", "a", true]]);
  assert.deepEqual(w.events.map((e) => [e.type, ...partial(e.object)]), [
    ["ADDED", "meta.k8s.io/v1", "PartialObjectMetadata", "a", false],
  ]);
});
