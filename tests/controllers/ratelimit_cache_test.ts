/**
 * The RateLimit controller's projected Pods and EnvoyFilters (src/controllers/ratelimit_cache.ts)
 * answer every reading the controller and the cache make exactly as the whole object does, for any
 * Pod and for filters of any limits; filters of the same contexts and limits share what they keep;
 * the operator's owned fields of objects that differ only in list-item keys are one shared tree.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  inAmbientMesh,
  isActivePod,
  meshProxyOf,
  podName,
  proxyImageVersion,
} from "../../src/api/pod.ts";
import { FILTER_PROJECTION, POD_PROJECTION } from "../../src/controllers/ratelimit_cache.ts";
import { filterContexts, podLabelsOf } from "../../src/reconcile/ratelimit/scope.ts";
import {
  exportsLimitStats,
  renderedGeneration,
  renderEnvoyFilter,
} from "../../src/reconcile/ratelimit/render.ts";
import {
  filterLimits,
  filterSelector,
  isOurs,
  isRateLimitFilter,
} from "../../src/reconcile/ratelimit/input.ts";
import { parseRateLimit } from "../../src/api/ratelimit.ts";
import type { ProxyContext } from "../../src/api/mesh.ts";
import { LOCAL_RATELIMIT_FILTER } from "../../src/api/envoy.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { ownedFieldMissing } from "../../src/runtime/diff.ts";
import { ownedFieldsOf, prepare } from "../../src/runtime/cache/mod.ts";

const name = fc.constantFrom("app", "istio-proxy", "istio-init", "istio-validation", "sidecar");
const container = fc.record({
  name,
  // Proxy images as Istio's injector writes them (hub/proxyv2:tag, a variant, a digest), and
  // others: no tag, a digest alone, a registry port, a tag that is no Istio version.
  image: fc.constantFrom(
    "registry.example/x:1",
    "docker.io/istio/proxyv2:1.25.2",
    "docker.io/istio/proxyv2:1.25.2-distroless",
    "gcr.io/istio-release/proxyv2:1.26.0",
    "registry.example:5000/istio/proxyv2:1.27.1-debug",
    "gcr.io/gke-release/asm/proxyv2:1.11.2-asm.17-distroless",
    "docker.io/istio/proxyv2:1.26.0@sha256:0f5e7a1c",
    "docker.io/istio/proxyv2@sha256:0f5e7a1c",
    "registry.example:5000/istio/proxyv2",
    "docker.io/istio/proxyv2:latest",
    "auto",
  ),
  restartPolicy: fc.option(fc.constantFrom("Always", "OnFailure"), { nil: undefined }),
  args: fc.option(
    fc.constantFrom(["proxy", "router"], ["proxy", "sidecar"], ["router"], [
      "proxy",
      "router",
      "-v",
    ]),
    { nil: undefined },
  ),
}, { requiredKeys: ["name"] });
const pod = fc.record({
  labels: fc.dictionary(fc.constantFrom("app", "version", "tier"), fc.constantFrom("a", "b")),
  annotation: fc.option(fc.constantFrom('{"containers":["istio-proxy"]}', ""), { nil: undefined }),
  ambient: fc.option(fc.constantFrom("enabled", "pending", "disabled"), { nil: undefined }),
  templates: fc.option(fc.constantFrom("gateway", "sidecar", "sidecar, gateway", "gateways"), {
    nil: undefined,
  }),
  containers: fc.option(fc.array(container, { maxLength: 3 }), { nil: undefined }),
  inits: fc.option(fc.array(container, { maxLength: 2 }), { nil: undefined }),
  phase: fc.option(fc.constantFrom("Pending", "Running", "Succeeded", "Failed", "Unknown"), {
    nil: undefined,
  }),
  deleting: fc.boolean(),
  // Stats inclusion in each form Istio reads, naming our filters' stats or not.
  stats: fc.dictionary(
    fc.constantFrom(
      "sidecar.istio.io/statsInclusionPrefixes",
      "sidecar.istio.io/statsInclusionRegexps",
      "proxy.istio.io/config",
    ),
    fc.constantFrom(
      "http_local_rate_limiter",
      "cluster_manager",
      ".*local_rate_limit.*",
      "proxyStatsMatcher:\n  inclusionPrefixes:\n    - http_local_rate_limiter\n",
      "proxyStatsMatcher:\n  inclusionPrefixes: [cluster_manager]\n",
    ),
  ),
}).map((
  { labels, annotation, ambient, templates, containers, inits, phase, deleting, stats },
): KubeObject =>
  json({
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: "p-0",
      namespace: "ns",
      uid: "0b7e2d3c-1111-4a4a-8888-000000000000",
      resourceVersion: "7",
      creationTimestamp: "2026-11-23T10:00:00Z",
      labels,
      annotations: {
        other: "x",
        ...stats,
        ...(annotation !== undefined ? { "sidecar.istio.io/status": annotation } : {}),
        ...(templates !== undefined ? { "inject.istio.io/templates": templates } : {}),
        ...(ambient !== undefined ? { "ambient.istio.io/redirection": ambient } : {}),
      },
      ...(deleting ? { deletionTimestamp: "2026-11-23T11:00:00Z", finalizers: ["f"] } : {}),
    },
    spec: {
      ...(containers ? { containers } : {}),
      ...(inits ? { initContainers: inits } : {}),
      nodeName: "kwok-node-0",
    },
    ...(phase ? { status: { phase, podIP: "10.0.0.1" } } : {}),
  })
);

/** As the API server sends it: plain JSON (fast-check's dictionaries have no prototype). */
function json(obj: KubeObject): KubeObject {
  return JSON.parse(JSON.stringify(obj));
}

Deno.test("a projected Pod answers every reading as the whole Pod does", () => {
  fc.assert(
    fc.property(pod, (p) => {
      const kept = prepare(p, POD_PROJECTION).object;
      assert.equal(meshProxyOf(kept), meshProxyOf(p), "mesh proxy");
      assert.equal(proxyImageVersion(kept), proxyImageVersion(p), "proxy image version");
      assert.equal(isActivePod(kept), isActivePod(p), "active");
      assert.equal(exportsLimitStats(kept), exportsLimitStats(p), "exports the limit's stats");
      // What enforcement says of a Pod without a proxy: whether ambient mode carries it.
      if (!meshProxyOf(p)) assert.equal(inAmbientMesh(kept), inAmbientMesh(p), "ambient");
      assert.deepEqual(podLabelsOf(kept), podLabelsOf(p), "labels");
      assert.equal(podName(kept), podName(p), "name");
      for (const k of ["name", "namespace", "resourceVersion", "deletionTimestamp"] as const) {
        assert.equal(kept.metadata[k], p.metadata[k], k);
      }
      assert.deepEqual(kept.metadata.finalizers, p.metadata.finalizers, "finalizers");
      assert.ok(Object.isFrozen(kept.metadata), "frozen");
    }),
    { numRuns: 2_000 },
  );
});

Deno.test("projected Pods of one proxy kind and image version share the container they keep", () => {
  const of = (name: string, image: string) =>
    prepare(
      json({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name, namespace: "ns" },
        spec: { containers: [{ name: "istio-proxy", image, args: ["proxy", "sidecar"] }] },
      }),
      POD_PROJECTION,
    ).object;
  const a = of("a", "docker.io/istio/proxyv2:1.25.2");
  const b = of("b", "gcr.io/istio-release/proxyv2:1.25.2-distroless");
  const c = of("c", "docker.io/istio/proxyv2:1.26.0");
  const spec = (p: KubeObject) => p.spec as { containers: unknown[] };
  assert.equal(spec(a).containers, spec(b).containers, "one shared list for 1.25.2");
  assert.notEqual(spec(a).containers, spec(c).containers);
  // Of the image only the version is kept (the hub and the variant are dropped).
  assert.deepEqual(spec(b).containers, [{ name: "istio-proxy", image: "proxyv2:1.25.2" }]);
  assert.equal(proxyImageVersion(c), "1.26.0");
});

Deno.test("owned fields: map keys only, one shared tree for objects that differ in list-item keys", () => {
  const filter = (uid: string): KubeObject => ({
    apiVersion: "networking.istio.io/v1alpha3",
    kind: "EnvoyFilter",
    metadata: {
      name: `f-${uid}`,
      namespace: "ns",
      managedFields: [{
        manager: "platform-operator",
        operation: "Apply",
        fieldsV1: {
          "f:metadata": {
            "f:labels": { "f:app": {} },
            "f:ownerReferences": { [`k:{"uid":"${uid}"}`]: { ".": {}, "f:name": {} } },
          },
          "f:spec": { "f:configPatches": {} },
        },
      }],
    },
  });
  const a = ownedFieldsOf(filter("u-1"));
  const b = ownedFieldsOf(filter("u-2"));
  assert.deepEqual(a, {
    "f:metadata": { "f:labels": { "f:app": {} }, "f:ownerReferences": {} },
    "f:spec": { "f:configPatches": {} },
  });
  assert.equal(a, b, "the same tree, not two equal ones");
  assert.ok(Object.isFrozen(a));
  // What the runner asks of it is unchanged: a dropped label is found, a full desired state is not.
  const desired = {
    metadata: { labels: { app: "x" }, ownerReferences: [] },
    spec: { configPatches: [] },
  };
  assert.equal(ownedFieldMissing(a, desired), undefined);
  assert.equal(
    ownedFieldMissing(a, { ...desired, metadata: { ownerReferences: [] } }),
    ".metadata.labels",
  );
});

const bucketArb = fc.record({
  maxTokens: fc.constant(100),
  tokensPerFill: fc.constantFrom(1, 10, 100),
  fillInterval: fc.constantFrom("1s", "30s", "2m"),
});

/**
 * An EnvoyFilter as the API server sends it: one the operator renders (any mode, buckets and
 * contexts), or such a filter someone changed: a token bucket unreadable, the patches gone.
 */
const filter = fc.record({
  enforce: fc.boolean(),
  defaultBucket: bucketArb,
  buckets: fc.array(bucketArb, { maxLength: 3 }),
  contexts: fc.constantFrom<ProxyContext[]>(
    ["SIDECAR_INBOUND"],
    ["GATEWAY"],
    ["SIDECAR_INBOUND", "GATEWAY"],
  ),
  change: fc.constantFrom("none", "none", "none", "tokens", "interval", "patches", "mode"),
}).map(({ enforce, defaultBucket, buckets, contexts, change }): KubeObject => {
  const parsed = parseRateLimit({
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    metadata: { name: "rl", namespace: "ns", uid: "u-1", generation: 3 },
    spec: {
      selectorLabels: { app: "a" },
      enforce,
      local: {
        defaultBucket,
        buckets: buckets.map((bucket, i) => ({ path: `/p${i}`, bucket })),
      },
    },
  });
  if (!parsed.ok) throw new Error("the fixture RateLimit is invalid");
  const ef = json(renderEnvoyFilter(parsed.value, contexts));
  const patches = (ef.spec as { configPatches: unknown[] }).configPatches;
  const text = JSON.stringify(patches);
  const changed = {
    none: patches,
    tokens: JSON.parse(text.replace('"tokens_per_fill":', '"tokens_per_fill":-')),
    interval: JSON.parse(text.replaceAll('"fill_interval":"', '"fill_interval":"x')),
    patches: undefined,
    mode: JSON.parse(text.replace('"numerator":', '"numerator":0.')),
  }[change];
  return { ...ef, spec: { ...ef.spec as object, configPatches: changed } };
});

Deno.test("a projected EnvoyFilter answers every reading as the whole filter does", () => {
  let read = 0;
  fc.assert(
    fc.property(filter, (ef) => {
      const kept = prepare(ef, FILTER_PROJECTION).object;
      if (filterLimits(ef) !== undefined) read++;
      assert.deepEqual(filterLimits(kept), filterLimits(ef), "limits");
      assert.deepEqual(filterContexts(kept), filterContexts(ef), "contexts");
      assert.deepEqual(filterSelector(kept), filterSelector(ef), "selector");
      assert.equal(renderedGeneration(kept), renderedGeneration(ef), "generation");
      assert.equal(isRateLimitFilter(kept), isRateLimitFilter(ef), "ours at all");
      assert.equal(
        isOurs(kept, { name: "rl", uid: "u-1" }),
        isOurs(ef, { name: "rl", uid: "u-1" }),
      );
      assert.ok(Object.isFrozen(kept.spec), "frozen");
    }),
    { numRuns: 1_000 },
  );
  // Most filters' limits can be read, some cannot: both kinds were tried.
  assert.ok(read > 300 && read < 900, `${read} of 1000 read`);
});

Deno.test("projected EnvoyFilters of the same contexts and limits share the patches they keep", () => {
  let digests = 0;
  fc.assert(
    fc.property(filter, (ef) => {
      const other = json({ ...ef, metadata: { ...ef.metadata, name: "other", uid: "u-2" } });
      const a = prepare(ef, FILTER_PROJECTION).object.spec as { configPatches?: unknown[] };
      const b = prepare(other, FILTER_PROJECTION).object.spec as { configPatches?: unknown[] };
      if (filterLimits(ef)?.digest === undefined) {
        assert.equal(a.configPatches, b.configPatches, "one list, not two equal ones");
        return;
      }
      // Each its own list, of the shared patches, then its own route digest.
      digests++;
      const [pa, pb] = [a.configPatches!, b.configPatches!];
      assert.equal(pa.length, pb.length);
      pa.slice(0, -1).forEach((p, i) => assert.equal(p, pb[i], `patch ${i} shared`));
      assert.deepEqual(pa.at(-1), pb.at(-1), "the same digest");
    }),
    { numRuns: 300 },
  );
  assert.ok(digests > 50, `${digests} of 300 with a digest`);
});

Deno.test("projected EnvoyFilters of other limits share the buckets they repeat", () => {
  const kept = (defaultTokens: number, enforce: boolean) => {
    const parsed = parseRateLimit({
      apiVersion: "gateway.platform-project.io/v1alpha1",
      kind: "RateLimit",
      metadata: { name: `rl-${defaultTokens}`, namespace: "ns", uid: `u-${defaultTokens}` },
      spec: {
        selectorLabels: { app: "a" },
        enforce,
        local: {
          defaultBucket: { maxTokens: 100, tokensPerFill: defaultTokens, fillInterval: "30s" },
          buckets: [1, 2].map((i) => ({
            path: `/p${i}`,
            bucket: { maxTokens: 100, tokensPerFill: 5, fillInterval: "30s" },
          })),
        },
      },
    });
    if (!parsed.ok) throw new Error("the fixture RateLimit is invalid");
    const ef = prepare(json(renderEnvoyFilter(parsed.value)), FILTER_PROJECTION).object;
    const patches = (ef.spec as { configPatches: unknown[] }).configPatches;
    const config = patches.map((p) =>
      (p as { patch?: { value?: { typed_per_filter_config?: Record<string, unknown> } } }).patch
        ?.value?.typed_per_filter_config?.[LOCAL_RATELIMIT_FILTER]
    ).find((c) => c !== undefined) as Record<string, unknown>;
    assert.ok(config, "the limits are kept");
    return config;
  };
  const [a, b] = [kept(7, true), kept(9, false)];
  assert.notEqual(a, b);
  assert.equal(a.descriptors, b.descriptors, "the rules' buckets: one list");
  const [d0, d1] = a.descriptors as { token_bucket: unknown }[];
  assert.equal(d0.token_bucket, d1.token_bucket, "one bucket for two equal rules");
  assert.equal(kept(7, false).token_bucket, a.token_bucket, "the default bucket, in either mode");
});
