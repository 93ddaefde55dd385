/**
 * The RateLimit controller's projected Pods (src/controllers/ratelimit_cache.ts) answer every
 * reading the controller and the cache make exactly as the whole Pod does, for any Pod; the
 * operator's owned fields of objects that differ only in list-item keys are one shared tree.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { isActivePod, meshProxyOf, podName } from "../../src/api/pod.ts";
import { POD_PROJECTION } from "../../src/controllers/ratelimit_cache.ts";
import { podLabelsOf } from "../../src/reconcile/ratelimit/scope.ts";
import { exportsLimitStats } from "../../src/reconcile/ratelimit/render.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { ownedFieldMissing } from "../../src/runtime/diff.ts";
import { ownedFieldsOf, prepare } from "../../src/runtime/cache/mod.ts";

const name = fc.constantFrom("app", "istio-proxy", "istio-init", "istio-validation", "sidecar");
const container = fc.record({
  name,
  image: fc.constant("registry.example/x:1"),
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
  { labels, annotation, templates, containers, inits, phase, deleting, stats },
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
      assert.equal(isActivePod(kept), isActivePod(p), "active");
      assert.equal(exportsLimitStats(kept), exportsLimitStats(p), "exports the limit's stats");
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
