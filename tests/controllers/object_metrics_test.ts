import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { RESOURCES } from "../../src/api/resources.ts";
import { ObjectMetrics } from "../../src/controllers/object_metrics.ts";
import { Metrics } from "../../src/runtime/metrics.ts";

const { RateLimit, Serverless } = RESOURCES;

function rateLimit(i: number, state?: string, enforced?: string, reason = ""): KubeObject {
  const conditions = enforced === undefined ? [] : [
    { type: "Ready", status: state === "Ready" ? "True" : "False", reason: "R" },
    { type: "Enforced", status: enforced, reason },
  ];
  return {
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    metadata: { namespace: `ns${i % 10}`, name: `rl${i}` },
    ...(state ? { status: { state, conditions } } : {}),
  };
}

function metricsOver(objects: Record<string, readonly KubeObject[]>): Metrics {
  const metrics = new Metrics();
  new ObjectMetrics().register(metrics, () => ({
    cache: { list: (t) => objects[t.kind] ?? [], get: () => undefined },
    primaries: [Serverless, RateLimit],
  }));
  return metrics;
}

Deno.test("the object gauges count states, Enforced and unmet conditions from what the cache holds", () => {
  const text = metricsOver({
    RateLimit: [
      rateLimit(1, "Ready", "True", "Enforced"),
      rateLimit(2, "Ready", "False", "SidecarMissing"),
      rateLimit(3),
    ],
    Serverless: [{
      apiVersion: "operator.platform-project.io/v1alpha1",
      kind: "Serverless",
      metadata: { namespace: "kyma-system", name: "default" },
      status: { state: "Error", served: "True" },
    }],
  }).render();
  for (
    const line of [
      'platform_operator_objects{kind="RateLimit",state="Ready"} 2',
      'platform_operator_objects{kind="RateLimit",state="Unknown"} 1',
      'platform_operator_objects{kind="Serverless",state="Error"} 1',
      'platform_operator_ratelimits_enforced{reason="Enforced",status="True"} 1',
      'platform_operator_ratelimits_enforced{reason="SidecarMissing",status="False"} 1',
      'platform_operator_ratelimits_enforced{reason="",status="Unknown"} 1',
      'platform_operator_ratelimit_unmet{condition="Enforced",name="rl2",namespace="ns2",reason="SidecarMissing",status="False"} 1',
      'platform_operator_ratelimit_unmet{condition="Ready",name="rl3",namespace="ns3",reason="",status="Unknown"} 1',
      'platform_operator_module{kind="Serverless",name="default",namespace="kyma-system",served="True",state="Error"} 1',
    ]
  ) assert.ok(text.split("\n").includes(line), `${line} in\n${text}`);
  // A RateLimit whose conditions are True has no unmet series.
  assert.doesNotMatch(text, /ratelimit_unmet\{[^}]*name="rl1"/);
});

Deno.test("a scrape at 10,000 RateLimits lists the cache a few times and counts them all", () => {
  // Its time is printed, not judged (speed lives in the benchmarks): what is asserted is that a
  // scrape lists the cache a few times, whatever the number of objects.
  const many = Array.from(
    { length: 10_000 },
    (_, i) =>
      i % 100 === 0
        ? rateLimit(i, "Error", "False", "NotApplied")
        : rateLimit(i, "Ready", "True", "Enforced"),
  );
  const lists: string[] = [];
  const metrics = new Metrics();
  new ObjectMetrics().register(metrics, () => ({
    cache: {
      list: (t) => (lists.push(t.kind), t.kind === "RateLimit" ? many : []),
      get: () => undefined,
    },
    primaries: [Serverless, RateLimit],
  }));
  metrics.render();
  const perScrape = lists.length;
  lists.length = 0;
  const runs = 20;
  const start = performance.now();
  let text = "";
  for (let i = 0; i < runs; i++) text = metrics.render();
  const ms = (performance.now() - start) / runs;
  assert.match(text, /platform_operator_objects\{kind="RateLimit",state="Ready"\} 9900/);
  assert.equal(text.match(/^platform_operator_ratelimit_unmet\{/gm)?.length, 200);
  // A list a gauge family and kind, not one an object: a few, the same at every scrape.
  assert.ok(perScrape <= 8, `${perScrape} lists a scrape`);
  assert.equal(lists.length, perScrape * runs, `lists: ${lists.length} in ${runs} scrapes`);
  console.log(`one scrape at 10,000 RateLimits: ${ms.toFixed(2)} ms`);
});

Deno.test("metrics.add refuses a second family of one name", () => {
  const metrics = new Metrics();
  new ObjectMetrics().register(metrics, () => undefined);
  assert.throws(() => new ObjectMetrics().register(metrics, () => undefined), /exists already/);
  // Without a scope the families are listed with no series.
  assert.match(metrics.render(), /# TYPE platform_operator_objects gauge\n# HELP/);
});

Deno.test("Accepted: counted by status and reason; unmet only when a proxy rejected (False)", () => {
  const withAccepted = (i: number, status: string, reason: string): KubeObject => {
    const rl = rateLimit(i, "Ready", "True", "Enforced");
    const s = rl.status as { conditions: unknown[] };
    s.conditions.push({ type: "Accepted", status, reason });
    return rl;
  };
  const text = metricsOver({
    RateLimit: [
      withAccepted(1, "True", "Accepted"),
      withAccepted(2, "False", "ProxyRejected"),
      withAccepted(3, "Unknown", "IstiodNotAsked"),
    ],
  }).render();
  for (
    const line of [
      'platform_operator_ratelimits_accepted{reason="Accepted",status="True"} 1',
      'platform_operator_ratelimits_accepted{reason="ProxyRejected",status="False"} 1',
      'platform_operator_ratelimits_accepted{reason="IstiodNotAsked",status="Unknown"} 1',
      'platform_operator_ratelimit_unmet{condition="Accepted",name="rl2",namespace="ns2",reason="ProxyRejected",status="False"} 1',
    ]
  ) assert.ok(text.split("\n").includes(line), `${line} in\n${text}`);
  assert.doesNotMatch(text, /ratelimit_unmet\{condition="Accepted",name="rl3"/);
});

Deno.test("GlobalEnforced: counted for RateLimits that have it; unmet only when False", () => {
  const withGlobal = (i: number, status?: string, reason?: string): KubeObject => {
    const rl = rateLimit(i, "Ready", "True", "Enforced");
    const s = rl.status as { conditions: unknown[] };
    if (status) s.conditions.push({ type: "GlobalEnforced", status, reason });
    return rl;
  };
  const text = metricsOver({
    RateLimit: [
      withGlobal(1, "True", "Enforced"),
      withGlobal(2, "False", "DomainNotLoaded"),
      withGlobal(3, "Unknown", "DomainNotLoaded"),
      withGlobal(4),
    ],
  }).render();
  for (
    const line of [
      'platform_operator_ratelimits_global_enforced{reason="Enforced",status="True"} 1',
      'platform_operator_ratelimits_global_enforced{reason="DomainNotLoaded",status="False"} 1',
      'platform_operator_ratelimits_global_enforced{reason="DomainNotLoaded",status="Unknown"} 1',
      'platform_operator_ratelimit_unmet{condition="GlobalEnforced",name="rl2",namespace="ns2",reason="DomainNotLoaded",status="False"} 1',
    ]
  ) assert.ok(text.split("\n").includes(line), `${line} in\n${text}`);
  // Without spec.global there is no condition: neither counted nor unmet.
  assert.doesNotMatch(text, /global_enforced\{reason="",/);
  assert.doesNotMatch(text, /ratelimit_unmet\{condition="GlobalEnforced",name="rl[34]"/);
});
