import assert from "node:assert/strict";
import {
  expectationRef,
  expectedObject,
  expectedSeenStatus,
  unwantedCondition,
} from "../../sim/scenario/expect.ts";
import { parseScenario } from "../../sim/scenario/format.ts";
import { firstDifference } from "../../sim/scenario/match.ts";

Deno.test("format: the issue's example parses, with durations in ms and count defaults", () => {
  const s = parseScenario(`
name: second Serverless is rejected and takes over later
seed: 7
steps:
  - at: 0s
    apply: {apiVersion: operator.platform-project.io/v1alpha1, kind: Serverless, metadata: {name: default, namespace: platform-system}, spec: {}}
  - at: 2s
    delete: {kind: Serverless, namespace: platform-system, name: default}
  - at: 3s
    fault: {kind: replicaFailure, target: {kind: Deployment, namespace: platform-system, name: x}}
  - at: 60s
    expect:
      - {kind: Serverless, namespace: platform-system, name: other,
         status: {state: Error, served: "False"},
         conditions: [{type: Configured, status: "False", reason: ServerlessDuplicated}]}
      - {kind: EnvoyFilter, namespace: demo, name: x, absent: true}
  - at: 1m1s
    requests:
      - {to: {namespace: demo, labels: {app: httpbin}}, path: /headers, headers: {X-Rate-Limited: "true"}, count: 2}
      - {to: gateway, path: /ip}
    expectResponses:
      - {status: 200, headers: {x-ratelimit-limit: "2", x-ratelimit-remaining: "1"}}
      - {status: 429, body: local_rate_limited, headers: {content-type: text/plain, x-ratelimit-remaining: "0"}}
`);
  assert.equal(s.seed, 7);
  assert.deepEqual(s.steps.map((x) => x.at), [0, 2000, 3000, 60000, 61000]);
  assert.equal(s.steps[0].apply?.length, 1);
  assert.equal(s.steps[4].requests?.[0].count, 2);
  assert.equal(s.steps[4].requests?.[1].count, 1);
});

Deno.test("format: mistakes are reported with their path", () => {
  const bad = (text: string, pattern: RegExp) =>
    assert.throws(() => parseScenario(text, "f.yaml"), pattern);
  bad(
    "name: x\nsteps:\n  - at: 5s\n  - at: 1s\n",
    /f\.yaml: steps\[1\]\.at: steps must be in time order/,
  );
  bad("name: x\nsteps:\n  - at: 1s\n    fault: {kind: meteor}\n", /steps\[0\]\.fault/);
  bad(
    "name: x\nsteps:\n  - at: 1s\n    expectResponses: [{status: 200}]\n",
    /needs requests in the same step/,
  );
  bad("name: x\nsteps: []\n", /steps/);
  bad("name: [unclosed\n", /f\.yaml:2: /); // the line of the YAML error (src/api/yaml.ts)
});

Deno.test("match: subset semantics and the first differing field", () => {
  const actual = {
    status: {
      state: "Error",
      conditions: [{ type: "Configured", status: "False", reason: "X" }, {
        type: "Installed",
        status: "True",
        reason: "Installed",
      }],
    },
    metadata: { labels: { "app.kubernetes.io/name": "a" } },
  };
  assert.equal(firstDifference({ status: { state: "Error" } }, actual), undefined);
  assert.equal(
    firstDifference(
      { status: { conditions: [{ type: "Installed", reason: "Installed" }] } },
      actual,
    ),
    undefined,
  );
  assert.equal(
    firstDifference({ status: { state: "Ready" } }, actual),
    'status.state: expected "Ready", got "Error"',
  );
  assert.equal(
    firstDifference({ status: { conditions: [{ type: "Configured", reason: "Y" }] } }, actual),
    'status.conditions[type=Configured].reason: expected "Y", got "X"',
  );
  assert.match(
    firstDifference({ status: { conditions: [{ type: "Deleted" }] } }, actual)!,
    /status\.conditions: no item with type "Deleted"/,
  );
  assert.equal(
    firstDifference({ metadata: { labels: { "app.kubernetes.io/name": "b" } } }, actual),
    'metadata.labels["app.kubernetes.io/name"]: expected "b", got "a"',
  );
  assert.equal(
    firstDifference({ spec: { x: 1 } }, actual),
    "spec: expected an object, got nothing",
  );
});

Deno.test("expectations: the object, seen status and unwanted conditions both runners check", () => {
  const e = parseScenario(`
name: x
steps:
  - at: 1s
    expect:
      - kind: Scaler
        apiVersion: operator.platform-project.io/v1alpha1
        namespace: platform-system
        name: default
        labels: { app: a }
        metadata: { finalizers: [f] }
        status: { state: Ready }
        conditions: [{ type: Installed, reason: Verified }]
        noConditions: [DeploymentFailure]
`).steps[0].expect![0];
  assert.equal(expectationRef(e), "Scaler platform-system/default");
  assert.equal(expectationRef({ kind: "Pod", namespace: "demo" }), "Pod demo/*");
  assert.deepEqual(expectedObject(e), {
    metadata: { finalizers: ["f"], labels: { app: "a" } },
    status: { state: "Ready", conditions: [{ type: "Installed", reason: "Verified" }] },
  });
  assert.deepEqual(expectedSeenStatus(e), {
    state: "Ready",
    conditions: [{ type: "Installed", reason: "Verified" }],
  });
  const failure = { type: "DeploymentFailure", status: "True" };
  assert.equal(
    unwantedCondition(e, { status: { conditions: [{ type: "Installed" }] } }),
    undefined,
  );
  assert.equal(
    unwantedCondition(e, { status: { conditions: [failure] } }),
    `status.conditions: expected no DeploymentFailure condition, got ${JSON.stringify(failure)}`,
  );
});
