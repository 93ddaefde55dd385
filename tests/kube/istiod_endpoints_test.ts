/**
 * Finding istiod's replicas from its Service's EndpointSlices (src/kube/istiod_endpoints.ts): which
 * endpoints are asked and on which port, and the discovery's view as the slices are listed,
 * change, empty, or cannot be read, through the runtime's Watcher on a simulated API server.
 */
import assert from "node:assert/strict";
import {
  discoveryChecks,
  ENDPOINT_SLICE,
  IstiodEndpoints,
  NO_READY_REPLICA,
  REPLICAS_UNKNOWN,
  replicasOf,
  type ReplicaView,
} from "../../src/kube/istiod_endpoints.ts";
import { ApiError, createLogger, systemRandom } from "../../src/runtime/mod.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { ManualClock } from "../runtime/helpers.ts";
import { TestCluster } from "../runtime/test_cluster.ts";

const log = createLogger({ clock: { now: () => 0 }, sink: () => {} });

interface Ep {
  ip: string;
  pod?: string;
  ready?: boolean | null;
  serving?: boolean;
  terminating?: boolean;
}

/** An EndpointSlice of Service `ns/service` as the endpointslice controller writes one. */
function slice(
  name: string,
  endpoints: Ep[],
  opts: { service?: string; ns?: string; ports?: unknown; addressType?: string } = {},
): KubeObject {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name,
      namespace: opts.ns ?? "istio-system",
      labels: { "kubernetes.io/service-name": opts.service ?? "istiod" },
    },
    addressType: opts.addressType ?? "IPv4",
    ports: opts.ports === undefined
      ? [
        { name: "grpc-xds", port: 15010, protocol: "TCP" },
        { name: "http-monitoring", port: 15014, protocol: "TCP" },
      ]
      : opts.ports,
    endpoints: endpoints.map((e) => ({
      addresses: [e.ip],
      ...(e.ready === undefined ? {} : {
        conditions: {
          ready: e.ready,
          ...(e.serving === undefined ? {} : { serving: e.serving }),
          ...(e.terminating === undefined ? {} : { terminating: e.terminating }),
        },
      }),
      ...(e.pod ? { targetRef: { kind: "Pod", namespace: "istio-system", name: e.pod } } : {}),
    })),
  } as KubeObject;
}

Deno.test("replicas: ready endpoints must answer, terminating ones still serving are asked, others not", () => {
  const r = replicasOf([
    slice("istiod-a", [
      { ip: "10.0.0.2", pod: "istiod-2", ready: true },
      { ip: "10.0.0.1", pod: "istiod-1" }, // no conditions: ready, as the API says
      { ip: "10.0.0.3", pod: "istiod-3", ready: false, serving: true, terminating: true },
      { ip: "10.0.0.4", pod: "istiod-4", ready: false, serving: false, terminating: true },
      { ip: "10.0.0.5", pod: "istiod-5", ready: false }, // starting: not asked
      { ip: "10.0.0.6", ready: null }, // null is absent
    ]),
  ]);
  assert.deepEqual(r, [
    { url: "http://10.0.0.1:15014", name: "istiod-1", required: true },
    { url: "http://10.0.0.2:15014", name: "istiod-2", required: true },
    { url: "http://10.0.0.3:15014", name: "istiod-3", required: false },
    { url: "http://10.0.0.6:15014", name: "10.0.0.6", required: true },
  ]);
});

Deno.test("replicas: the port named http-monitoring, else 15014; IPv6 in brackets; a dual-stack Pod once", () => {
  const custom = [{ name: "http-monitoring", port: 9014 }, { name: "grpc-xds", port: 15010 }];
  assert.deepEqual(
    replicasOf([slice("s", [{ ip: "10.0.0.1" }], { ports: custom })])[0].url,
    "http://10.0.0.1:9014",
  );
  assert.deepEqual(
    replicasOf([slice("s", [{ ip: "10.0.0.1" }], { ports: null })])[0].url,
    "http://10.0.0.1:15014",
  );
  assert.deepEqual(
    replicasOf([slice("s", [{ ip: "10.0.0.1" }], { ports: [{ name: "http", port: 80 }] })])[0].url,
    "http://10.0.0.1:15014",
  );
  assert.deepEqual(
    replicasOf([
      slice("v4", [{ ip: "10.0.0.1", pod: "istiod-1" }]),
      slice("v6", [{ ip: "fd00::1", pod: "istiod-1" }, { ip: "fd00::2", pod: "istiod-2" }], {
        addressType: "IPv6",
      }),
    ]),
    [
      { url: "http://10.0.0.1:15014", name: "istiod-1", required: true },
      { url: "http://[fd00::2]:15014", name: "istiod-2", required: true },
    ],
  );
  // The same Pod in two slices while it moves between them, ready in one: it must answer.
  assert.deepEqual(
    replicasOf([
      slice("a", [{ ip: "10.0.0.1", pod: "p", ready: false, serving: true, terminating: true }]),
      slice("b", [{ ip: "10.0.0.1", pod: "p", ready: true }]),
    ]).map((r) => r.required),
    [true],
  );
});

Deno.test("startup checks: list and watch of endpointslices in each Service's namespace, no more", () => {
  const checks = discoveryChecks([
    { namespace: "istio-system", name: "istiod" },
    { namespace: "istio-system", name: "istiod-canary" },
  ]);
  assert.deepEqual(
    checks.map((c) => `${c.check.verb} ${c.check.type.plural} in ${c.check.namespace}`),
    ["list endpointslices in istio-system", "watch endpointslices in istio-system"],
  );
  assert.match(checks[0].grantedBy, /Role platform-operator-istiod in namespace istio-system/);
  assert.deepEqual(discoveryChecks([]), []);
});

function setup(services = [{ namespace: "istio-system", name: "istiod" }]) {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock, ["istio-system", "other"]);
  cluster.serve(ENDPOINT_SLICE);
  const endpoints = new IstiodEndpoints({ cluster, services, clock, random: systemRandom, log });
  const ac = new AbortController();
  const running = endpoints.run(ac.signal);
  const stop = async () => {
    ac.abort();
    await clock.advance(1);
    await running;
  };
  return { clock, cluster, endpoints, stop };
}

const urls = (v: ReplicaView) => v.state === "listed" ? v.replicas.map((r) => r.url) : v.state;

Deno.test("discovery: follows replicas as the slices change, with one list and one watch", async () => {
  const { clock, cluster, endpoints, stop } = setup();
  try {
    cluster.put(ENDPOINT_SLICE, slice("istiod-abc", [{ ip: "10.0.0.1", pod: "istiod-1" }]));
    // Another Service's slices, and slices of istiod in another namespace, are not replicas.
    cluster.put(ENDPOINT_SLICE, slice("other-x", [{ ip: "10.9.9.9" }], { service: "other" }));
    cluster.put(ENDPOINT_SLICE, slice("istiod-x", [{ ip: "10.8.8.8" }], { ns: "other" }));
    await clock.advance(10);
    const first = endpoints.view();
    assert.deepEqual(urls(first), ["http://10.0.0.1:15014"]);
    // Asked again with nothing changed: the same version.
    assert.deepEqual(endpoints.view(), first);
    // Scaled up: a second replica in a second slice.
    cluster.put(ENDPOINT_SLICE, slice("istiod-def", [{ ip: "10.0.0.2", pod: "istiod-2" }]));
    await clock.advance(10);
    const second = endpoints.view();
    assert.deepEqual(urls(second), ["http://10.0.0.1:15014", "http://10.0.0.2:15014"]);
    assert.ok(
      second.state === "listed" && first.state === "listed" && second.version > first.version,
    );
    // A rolling upgrade: the old one terminates (still asked, need not answer), then goes.
    cluster.put(
      ENDPOINT_SLICE,
      slice("istiod-abc", [{
        ip: "10.0.0.1",
        pod: "istiod-1",
        ready: false,
        serving: true,
        terminating: true,
      }]),
    );
    await clock.advance(10);
    const third = endpoints.view();
    assert.deepEqual(third.state === "listed" && third.replicas.map((r) => r.required), [
      false,
      true,
    ]);
    cluster.remove(ENDPOINT_SLICE, "istio-system", "istiod-abc");
    await clock.advance(10);
    assert.deepEqual(urls(endpoints.view()), ["http://10.0.0.2:15014"]);
    const calls = cluster.calls.filter((c) => c.kind === "EndpointSlice").map((c) => c.verb);
    assert.deepEqual(calls, ["list", "watch"], "one list and one watch, whatever changed");
  } finally {
    await stop();
  }
});

Deno.test("discovery: no ready endpoint says istiod has no ready replica", async () => {
  const { clock, cluster, endpoints, stop } = setup();
  try {
    assert.deepEqual(endpoints.view(), { state: "listing" });
    await clock.advance(10);
    const none = endpoints.view();
    assert.equal(none.state, "failed");
    assert.equal(none.state === "failed" && none.reason, NO_READY_REPLICA);
    assert.match(
      none.state === "failed" ? none.message : "",
      /istiod has no ready replica: the EndpointSlices of Service istio-system\/istiod list no ready endpoint/,
    );
    cluster.put(ENDPOINT_SLICE, slice("istiod-abc", [{ ip: "10.0.0.1", ready: false }]));
    await clock.advance(10);
    assert.equal(endpoints.view().state, "failed");
    cluster.put(ENDPOINT_SLICE, slice("istiod-abc", [{ ip: "10.0.0.1", ready: true }]));
    await clock.advance(10);
    assert.deepEqual(urls(endpoints.view()), ["http://10.0.0.1:15014"]);
  } finally {
    await stop();
  }
});

Deno.test("discovery: slices that cannot be listed say why, until a list succeeds", async () => {
  const { clock, cluster, endpoints, stop } = setup();
  try {
    cluster.failNext("list", new ApiError(403, "Forbidden", "endpointslices is forbidden"));
    await clock.advance(10);
    const v = endpoints.view();
    assert.equal(v.state === "failed" && v.reason, REPLICAS_UNKNOWN);
    assert.match(
      v.state === "failed" ? v.message : "",
      /EndpointSlices of Service istio-system\/istiod: list endpointslices in namespace istio-system: forbidden \(endpointslices is forbidden\): apply deploy\/istiod's Role platform-operator-istiod there/,
    );
    cluster.put(ENDPOINT_SLICE, slice("istiod-abc", [{ ip: "10.0.0.1" }]));
    await clock.advance(60_000); // the watcher's backoff
    assert.deepEqual(urls(endpoints.view()), ["http://10.0.0.1:15014"]);
  } finally {
    await stop();
  }
});

Deno.test("discovery: several Services (revisions) are each listed; one without replicas is said", async () => {
  const { clock, cluster, endpoints, stop } = setup([
    { namespace: "istio-system", name: "istiod" },
    { namespace: "istio-system", name: "istiod-canary" },
  ]);
  try {
    cluster.put(ENDPOINT_SLICE, slice("istiod-abc", [{ ip: "10.0.0.1" }]));
    await clock.advance(10);
    const v = endpoints.view();
    assert.match(
      v.state === "failed" ? v.message : "",
      /Service istio-system\/istiod-canary list no ready/,
    );
    cluster.put(
      ENDPOINT_SLICE,
      slice("istiod-canary-x", [{ ip: "10.0.0.7" }], { service: "istiod-canary" }),
    );
    await clock.advance(10);
    assert.deepEqual(urls(endpoints.view()), ["http://10.0.0.1:15014", "http://10.0.0.7:15014"]);
  } finally {
    await stop();
  }
});
