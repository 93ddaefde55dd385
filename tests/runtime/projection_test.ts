/**
 * Projected watch caches (src/runtime/prepare.ts): a store keeps only what a projection keeps,
 * with a digest of the spec it dropped; the runner compares a desired spec with that digest; a
 * change the projection cannot see wakes nobody; two projections of one watch are refused.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { RESOURCES } from "../../src/api/resources.ts";
import { MANAGED_BY, MANAGED_BY_LABEL } from "../../src/reconcile/labels.ts";
import { emptyPlan } from "../../src/reconcile/plan.ts";
import { Cache, CacheStore } from "../../src/runtime/cache/mod.ts";
import type { KubeObject, Projection } from "../../src/api/object.ts";
import { type ControllerSpec, planWatches } from "../../src/runtime/controller_spec.ts";

import { setup } from "./runner_fixtures.ts";
import { ALL_CONTROLLERS } from "../../src/controllers/registry.ts";
import { FUNCTION_CRDS } from "../../src/controllers/embedded_crds.ts";
import { CRD_PRESENCE } from "../../src/controllers/cache_trust.ts";
import { ENVOYFILTER_CRD } from "../../src/controllers/ratelimit.ts";
import { preloadControllers } from "../../src/runtime/controller_spec.ts";
import { allControllers } from "./manager_fixtures.ts";
import { TestCluster } from "./test_cluster.ts";
import { ManualClock } from "./helpers.ts";

const WRITE_VERBS = new Set(["create", "update", "apply", "applyStatus", "patch", "delete"]);
import { canonical, specDigest, textDigest } from "../../src/reconcile/hash.ts";

const EF = RESOURCES.EnvoyFilter;
const SL = RESOURCES.Serverless;
const NS = "demo";

/** Keeps metadata and the spec's `selector`; digests the spec. */
const KEEP_SELECTOR: Projection = {
  name: "test.selector",
  digestSpec: true,
  keep: (o) => ({
    apiVersion: o.apiVersion,
    kind: o.kind,
    metadata: structuredClone(o.metadata),
    spec: { selector: (o.spec as { selector?: unknown } | undefined)?.selector },
  }),
};

function filter(spec: Record<string, unknown>, extra: Partial<KubeObject["metadata"]> = {}) {
  return {
    apiVersion: "networking.istio.io/v1alpha3",
    kind: "EnvoyFilter",
    metadata: {
      name: "f",
      namespace: NS,
      resourceVersion: "1",
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY },
      managedFields: [{ manager: "someone", operation: "Update", fieldsV1: { "f:spec": {} } }],
      ...extra,
    },
    spec,
  } as KubeObject;
}

Deno.test("specDigest: equal up to key order and omitted empty fields; otherwise different", () => {
  const a = { b: [{ x: 1, y: "2" }], c: { d: true } };
  assert.equal(specDigest(a), specDigest({ c: { d: true }, b: [{ y: "2", x: 1 }] }));
  assert.equal(specDigest(a), specDigest({ ...a, e: null, f: [], g: {}, h: undefined }));
  assert.notEqual(specDigest(a), specDigest({ ...a, c: { d: false } }));
  assert.notEqual(specDigest(a), specDigest({ b: [{ x: 1, y: "2" }, {}], c: { d: true } }));
  assert.notEqual(specDigest(a), specDigest({ b: [{ x: "1", y: "2" }], c: { d: true } }));
  assert.match(specDigest(a), /^[0-9a-f]{14}$/);
});

/** The digest of a spec's canonical copy, always made: what the path without a copy must give. */
function copiedDigest(spec: unknown): string {
  return textDigest(JSON.stringify(canonical(spec)) ?? "undefined");
}

Deno.test("specDigest skips the copy of a spec already canonical, and digests as if it copied", () => {
  // Keys in any order (integer-like ones too), what JSON escapes (quotes, backslashes, control
  // characters, lone surrogates), null and empty fields.
  const text = fc.oneof(
    fc.string(),
    fc.string({ unit: "binary" }),
    fc.constantFrom("0", "9", "10", "a", "b", 'a"b', "a\\b", "\u0001", "\ud800", "\ud83d\ude00"),
  );
  const leaf = fc.oneof(
    text,
    fc.double(),
    fc.boolean(),
    fc.constantFrom(null, undefined, {}, []),
  );
  const { value } = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: "small" },
      leaf,
      fc.array(tie("value"), { maxLength: 4 }),
      fc.dictionary(text, tie("value"), { maxKeys: 5 }),
    ),
  }));
  fc.assert(
    fc.property(value, (v) => {
      const want = copiedDigest(v);
      // The copy is canonical: its digest takes the path without a copy, and must agree.
      return specDigest(v) === want && specDigest(canonical(v)) === want;
    }),
    { numRuns: 3_000 },
  );
});

Deno.test("a projected store keeps what the projection keeps, and the spec's digest", () => {
  const store = new CacheStore(EF, undefined, KEEP_SELECTOR);
  const spec = { selector: { app: "x" }, configPatches: [{ big: "x".repeat(1000) }] };
  store.handle({ type: "init" });
  store.handle({ type: "init-apply", object: filter(spec) });
  store.handle({ type: "init-done" });
  const cached = store.get(NS, "f")!;
  assert.deepEqual(cached.spec, { selector: { app: "x" } });
  assert.equal(cached.metadata.managedFields, undefined);
  assert.ok(Object.isFrozen(cached.spec));
  assert.equal(store.specDigest(NS, "f"), specDigest(spec));
  const cache = new Cache();
  const s = cache.store(EF, undefined, KEEP_SELECTOR);
  s.handle({ type: "init" });
  s.handle({ type: "init-apply", object: filter(spec) });
  s.handle({ type: "init-done" });
  assert.equal(cache.specDigest(EF, NS, "f"), specDigest(spec));
  assert.equal(cache.specDigest(EF, NS, "g"), undefined);
});

Deno.test("a change the projection cannot see wakes nobody; any other change does", () => {
  const store = new CacheStore(EF, undefined, KEEP_SELECTOR);
  const spec = { selector: { app: "x" }, configPatches: [{ n: 1 }] };
  store.handle({ type: "init" });
  store.handle({ type: "init-apply", object: filter(spec) });
  store.handle({ type: "init-done" });
  const at = (rv: string, s: Record<string, unknown>, extra = {}) =>
    store.handle({ type: "apply", object: filter(s, { resourceVersion: rv, ...extra }) });
  // Only the status and managedFields changed: the projection is the same.
  assert.deepEqual(at("2", spec, { managedFields: [] }), []);
  assert.equal(store.get(NS, "f")!.metadata.resourceVersion, "2", "the version is still taken");
  // A dropped part of the spec changed: its digest tells.
  assert.equal(at("3", { ...spec, configPatches: [{ n: 2 }] }).length, 1);
  assert.equal(store.specDigest(NS, "f"), specDigest({ ...spec, configPatches: [{ n: 2 }] }));
  // A kept field changed.
  assert.equal(at("4", { ...spec, configPatches: [{ n: 2 }], selector: { app: "y" } }).length, 1);
  // Without a projection every new version is a change.
  const plain = new CacheStore(EF);
  plain.handle({ type: "init" });
  plain.handle({ type: "init-apply", object: filter(spec) });
  plain.handle({ type: "init-done" });
  assert.equal(
    plain.handle({ type: "apply", object: filter(spec, { resourceVersion: "2" }) }).length,
    1,
  );
});

Deno.test("one watch projected two ways is refused, by the cache and by the manager's plan", () => {
  const other: Projection = { ...KEEP_SELECTOR, name: "test.other" };
  const cache = new Cache();
  cache.store(EF, undefined, KEEP_SELECTOR);
  assert.throws(
    () => cache.store(EF, undefined, other),
    /two projections: test.selector and test.other/,
  );
  assert.equal(
    cache.store(EF, undefined, KEEP_SELECTOR),
    cache.store(EF, undefined, KEEP_SELECTOR),
  );
  const spec = (project: Projection): ControllerSpec => ({
    name: project.name,
    primary: SL,
    watches: [{ type: EF, project }],
    reconcile: () => undefined,
  });
  assert.throws(
    () => planWatches([spec(KEEP_SELECTOR), spec(other)]),
    /project one watch two ways/,
  );
  assert.equal(planWatches([spec(KEEP_SELECTOR), spec(KEEP_SELECTOR)]).length, 2);
});

Deno.test("the runner compares a desired spec with a projected cache's digest", async () => {
  const { cluster, cache, runner, refresh } = setup([[SL], [EF, KEEP_SELECTOR]]);
  cluster.put(SL, {
    apiVersion: "operator.platform-project.io/v1alpha1",
    kind: "Serverless",
    metadata: { name: "default", namespace: NS },
  });
  const desired = (
    spec: Record<string, unknown>,
    labels: Record<string, string> = { [MANAGED_BY_LABEL]: MANAGED_BY },
  ) => ({ ...filter(spec), metadata: { name: "f", namespace: NS, labels } }) as KubeObject;
  const run = async (obj: KubeObject) => {
    await refresh();
    const primary = cache.get(SL, NS, "default")!;
    const plan = { ...emptyPlan(), apply: [obj] };
    await runner.run(SL, primary, plan, undefined, new AbortController().signal);
    return cluster.writes().map((c) => c.verb);
  };
  const spec = { selector: { app: "x" }, configPatches: [{ n: 1, m: "a" }] };
  assert.deepEqual(await run(desired(spec)), ["apply"], "nothing cached yet");
  assert.deepEqual(await run(desired(spec)), [], "the same spec: skipped");
  assert.deepEqual(
    await run(desired({ configPatches: [{ m: "a", n: 1 }], selector: { app: "x" }, extra: [] })),
    [],
    "the same spec in another key order, with an empty list: skipped",
  );
  assert.deepEqual(await run(desired({ ...spec, configPatches: [{ n: 2, m: "a" }] })), ["apply"]);
  assert.deepEqual(
    await run(desired({ ...spec, configPatches: [{ n: 2, m: "a" }] }, { other: "label" })),
    ["apply"],
    "metadata is still compared field by field",
  );
});

Deno.test("a metadata-only projection lists and watches metadata only; where a whole store holds the object, readers get it whole", async () => {
  await preloadControllers(ALL_CONTROLLERS); // before the manual clock runs
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  // What each CRD list and watch asked for: its selector, and whether metadata only.
  const asked = new Set<string>();
  const say = (verb: string, o?: { labelSelector?: string; metadataOnly?: boolean }) =>
    asked.add(`${verb} ${o?.labelSelector ? "labelled" : "all"} ${o?.metadataOnly === true}`);
  const list = cluster.list.bind(cluster);
  cluster.list = (type, opts) => {
    if (type.kind === "CustomResourceDefinition") say("list", opts);
    return list(type, opts);
  };
  const watch = cluster.watch.bind(cluster);
  cluster.watch = (type, opts, signal) => {
    if (type.kind === "CustomResourceDefinition") say("watch", opts);
    return watch(type, opts, signal);
  };
  const m = allControllers(cluster, clock);
  const done = m.start();
  await clock.advance(10_000);
  // The RateLimit controller asks whether Istio's CRD is there: names only, everything else's
  // schema neither sent nor kept.
  const mesh = m.cache.get(RESOURCES.CustomResourceDefinition, undefined, ENVOYFILTER_CRD);
  assert.ok(mesh, "the mesh's CRD is seen");
  assert.equal(mesh.kind, "CustomResourceDefinition");
  assert.equal(mesh.spec, undefined, "metadata only");
  assert.deepEqual([...asked].sort(), ["list all true", "watch all true"]);

  // The Serverless module installs its CRDs and watches them, labelled and whole.
  cluster.put(SL, {
    apiVersion: "operator.platform-project.io/v1alpha1",
    kind: "Serverless",
    metadata: { name: "default", namespace: "platform-system" },
    spec: {},
  });
  await clock.advance(60_000);
  assert.equal(
    (cluster.peek(SL, "platform-system", "default")?.status as { state?: string })?.state,
    "Ready",
  );
  assert.deepEqual([...asked].sort(), [
    "list all true",
    "list labelled false",
    "watch all true",
    "watch labelled false",
  ]);
  const installed = (await FUNCTION_CRDS.load()).map((c) => c.metadata.name);
  assert.ok(installed.length > 0);
  for (const name of installed) {
    const got = m.cache.get(RESOURCES.CustomResourceDefinition, undefined, name);
    assert.ok(got?.spec, `${name}: get gives the module's whole copy`);
    const listed = m.cache.list(RESOURCES.CustomResourceDefinition).find((c) =>
      c.metadata.name === name
    );
    assert.ok(listed?.spec, `${name}: list gives the module's whole copy`);
  }
  // Whole copies, so the module finds nothing to mend: it writes nothing more.
  const writes = () => cluster.calls.filter((c) => WRITE_VERBS.has(c.verb) && c.kind !== "Lease");
  const before = writes().length;
  await clock.advance(120_000);
  assert.deepEqual(writes().slice(before), [], "at rest");
  await m.stop();
  await done;
});

Deno.test("an object in a projected store and a whole one reads whole, whichever store came first", () => {
  const CRD = RESOURCES.CustomResourceDefinition;
  const crd = (name: string, labels?: Record<string, string>): KubeObject => ({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name, resourceVersion: "1", ...(labels ? { labels } : {}) },
    spec: { group: "g" },
  });
  const managed = { [MANAGED_BY_LABEL]: MANAGED_BY };
  for (const projectedFirst of [true, false]) {
    const cache = new Cache();
    const make = [
      () => cache.store(CRD, undefined, CRD_PRESENCE),
      () => cache.store(CRD, `${MANAGED_BY_LABEL}=${MANAGED_BY}`),
    ];
    const [presence, whole] = projectedFirst
      ? make.map((f) => f())
      : make.reverse().map((f) => f()).reverse();
    cache.addIndex(CRD, "group", () => ["g"]);
    presence.handle({ type: "init" });
    for (const o of [crd("a.g", managed), crd("b.g")]) {
      presence.handle({ type: "init-apply", object: o });
    }
    presence.handle({ type: "init-done" });
    whole.handle({ type: "init" });
    whole.handle({ type: "init-apply", object: crd("a.g", managed) });
    whole.handle({ type: "init-done" });
    const what = `projected store made ${projectedFirst ? "first" : "second"}`;
    assert.deepEqual(cache.get(CRD, undefined, "a.g")?.spec, { group: "g" }, what);
    assert.equal(cache.get(CRD, undefined, "b.g")?.spec, undefined, what);
    assert.deepEqual(cache.list(CRD).map((o) => [o.metadata.name, o.spec !== undefined]), [
      ["a.g", true],
      ["b.g", false],
    ], what);
    assert.deepEqual(
      cache.byIndex(CRD, "group", "g").map((o) => [o.metadata.name, o.spec !== undefined]),
      [
        ["a.g", true],
        ["b.g", false],
      ],
      what,
    );
  }
});
