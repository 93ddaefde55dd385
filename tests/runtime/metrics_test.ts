import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { ApiError } from "../../src/runtime/cluster.ts";
import { Counter, Gauge, Histogram, Metrics } from "../../src/runtime/metrics.ts";
import { instrumentCluster } from "../../src/runtime/instrumented_cluster.ts";
import { TestCluster } from "./test_cluster.ts";
import { ManualClock } from "./helpers.ts";

Deno.test("counters render in Prometheus text format with sorted, escaped labels", () => {
  const c = new Counter("x_total", "Things.");
  c.inc({ b: "2", a: 'q"\\\n' });
  c.inc({ a: "1", b: "2" }, 3);
  assert.equal(
    c.render().join("\n"),
    [
      "# HELP x_total Things.",
      "# TYPE x_total counter",
      'x_total{a="1",b="2"} 3',
      'x_total{a="q\\"\\\\\\n",b="2"} 1',
    ].join("\n"),
  );
});

Deno.test("a gauge's setter writes the series of its labels, which appears only once set", () => {
  const g = new Gauge("depth", "Keys.");
  const setA = g.setter({ controller: "a" });
  g.set({ controller: "b" }, 7);
  assert.deepEqual(g.render().slice(2), ['depth{controller="b"} 7'], "no series before a set");
  setA(3);
  setA(5);
  assert.equal(g.get({ controller: "a" }), 5);
  g.set({ controller: "a" }, 1);
  setA(2);
  assert.deepEqual(g.render().slice(2), ['depth{controller="a"} 2', 'depth{controller="b"} 7']);
});

Deno.test("histograms render cumulative buckets, +Inf, sum and count", () => {
  const h = new Histogram("d_seconds", "Durations.", [0.1, 1]);
  h.observe({ c: "x" }, 0.05);
  h.observe({ c: "x" }, 0.5);
  h.observe({ c: "x" }, 5);
  assert.deepEqual(h.render().slice(2), [
    'd_seconds_bucket{c="x",le="0.1"} 1',
    'd_seconds_bucket{c="x",le="1"} 2',
    'd_seconds_bucket{c="x",le="+Inf"} 3',
    'd_seconds_sum{c="x"} 5.55',
    'd_seconds_count{c="x"} 3',
  ]);
});

Deno.test("the operator's metric set renders every family, with a trailing newline", () => {
  const m = new Metrics();
  m.reconcileTotal.inc({ controller: "serverless", result: "success" });
  m.queueDepth.set({ controller: "serverless" }, 4);
  m.leader.set({}, 1);
  const text = m.render();
  assert.ok(text.endsWith("\n"));
  for (
    const name of [
      "reconcile_total",
      "reconcile_errors_total",
      "reconcile_duration_seconds",
      "queue_depth",
      "api_requests_total",
      "leader",
    ]
  ) assert.match(text, new RegExp(`^# TYPE platform_operator_${name} `, "m"));
  assert.match(text, /^platform_operator_queue_depth\{controller="serverless"\} 4$/m);
  assert.match(text, /^platform_operator_leader 1$/m);
  // Every sample line is `name{labels} value` or `name value`.
  for (const line of text.trim().split("\n").filter((l) => !l.startsWith("#"))) {
    assert.match(line, /^[a-z_]+(\{([a-z_]+="[^"]*",?)+\})? -?[0-9.e+]+$/);
  }
});

Deno.test("instrumentCluster counts every call by verb and code", async () => {
  const clock = new ManualClock();
  const sim = new TestCluster(clock);
  const m = new Metrics();
  const c = instrumentCluster(sim, m);
  const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: "ns" } };
  await c.create(RESOURCES.ConfigMap, cm);
  await assert.rejects(c.create(RESOURCES.ConfigMap, cm), ApiError);
  await c.get(RESOURCES.ConfigMap, "ns", "a");
  await c.apply(RESOURCES.ConfigMap, cm, { fieldManager: "x" });
  sim.failNext("list", new ApiError(0, "", "connection refused"));
  await assert.rejects(c.list(RESOURCES.ConfigMap));
  const r = m.apiRequests;
  assert.equal(r.get({ verb: "create", code: "201" }), 1);
  assert.equal(r.get({ verb: "create", code: "409" }), 1);
  assert.equal(r.get({ verb: "get", code: "200" }), 1);
  assert.equal(r.get({ verb: "patch", code: "200" }), 1);
  assert.equal(r.get({ verb: "list", code: "0" }), 1);
});

Deno.test("instrumenting twice into the same metrics counts once", async () => {
  const sim = new TestCluster(new ManualClock());
  const m = new Metrics();
  const once = instrumentCluster(sim, m);
  const twice = instrumentCluster(once, m);
  assert.equal(twice, once);
  await twice.get(RESOURCES.ConfigMap, "n", "a");
  assert.equal(m.apiRequests.get({ verb: "get", code: "200" }), 1);
  const other = new Metrics();
  await instrumentCluster(once, other).get(RESOURCES.ConfigMap, "n", "a");
  assert.equal(other.apiRequests.get({ verb: "get", code: "200" }), 1);
});
