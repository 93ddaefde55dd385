/** The condition helpers: transition times, updates, events, reading conditions off any status. */
import assert from "node:assert/strict";
import {
  conditionEvents,
  conditionsOf,
  rowCondition,
  rowFor,
  rowOfStatus,
  setCondition,
  updateConditions,
} from "../../src/reconcile/conditions.ts";
import { SERVERLESS_STATES } from "../../src/reconcile/serverless/mod.ts";
import { parseCondition } from "../../src/api/common.ts";
import { CONDITION_MESSAGE_MAX } from "../../src/api/message.ts";

const T0 = "2026-01-01T00:00:00Z";
const T1 = "2026-01-01T00:05:00Z";

Deno.test("lastTransitionTime changes only when the status changes", () => {
  const a = setCondition(
    [],
    { type: "Installed", status: "Unknown", reason: "Installation", message: "m1" },
    T0,
    1,
  );
  assert.equal(a[0].lastTransitionTime, T0);
  const b = setCondition(
    a,
    { type: "Installed", status: "Unknown", reason: "Other", message: "m2" },
    T1,
    2,
  );
  assert.equal(b[0].lastTransitionTime, T0, "same status, other reason and message: time kept");
  assert.equal(b[0].observedGeneration, 2);
  assert.equal(b[0].message, "m2");
  const c = setCondition(
    b,
    { type: "Installed", status: "True", reason: "Installed", message: "ok" },
    T1,
    2,
  );
  assert.equal(c[0].lastTransitionTime, T1);
  assert.equal(a[0].message, "m1", "inputs are not changed");
});

Deno.test("updateConditions drops, keeps only, and sets in order", () => {
  const prev = [
    ...setCondition(
      [],
      { type: "Configured", status: "True", reason: "Configured", message: "" },
      T0,
      1,
    ),
    ...setCondition(
      [],
      {
        type: "DeploymentFailure",
        status: "True",
        reason: "DeploymentReplicaFailure",
        message: "",
      },
      T0,
      1,
    ),
    ...setCondition(
      [],
      { type: "Installed", status: "True", reason: "Installed", message: "" },
      T0,
      1,
    ),
  ];
  const dropped = updateConditions(
    prev,
    {
      set: [{ type: "Installed", status: "True", reason: "Installed", message: "x" }],
      drop: ["DeploymentFailure"],
    },
    T1,
    2,
  );
  assert.deepEqual(dropped.map((c) => c.type), ["Configured", "Installed"]);
  assert.equal(dropped[1].lastTransitionTime, T0);
  const only = updateConditions(
    prev,
    {
      set: [{ type: "Installed", status: "False", reason: "KedaDuplicated", message: "dup" }],
      keepOnly: [],
    },
    T1,
    2,
  );
  assert.deepEqual(only.map((c) => [c.type, c.lastTransitionTime]), [["Installed", T1]]);
});

Deno.test("conditionEvents: one event per new or changed condition, typed by the caller", () => {
  const none = { now: [], before: [] };
  const before = setCondition(
    [],
    { type: "Installed", status: "Unknown", reason: "Installation", message: "a" },
    T0,
    1,
  );
  const same = conditionEvents(before, before, none);
  assert.deepEqual(same, []);
  const after = setCondition(
    before,
    { type: "Installed", status: "False", reason: "InstallationErr", message: "boom" },
    T1,
    1,
  );
  assert.deepEqual(conditionEvents(before, after, { now: ["Installed"], before: [] }), [
    { type: "Warning", reason: "InstallationErr", message: "boom" },
  ]);
  const added = setCondition(
    after,
    { type: "Configured", status: "True", reason: "Configured", message: "c" },
    T1,
    1,
  );
  assert.deepEqual(conditionEvents(after, added, { now: ["Installed"], before: ["Installed"] }), [
    { type: "Normal", reason: "Configured", message: "c" },
  ]);
});

Deno.test("conditionsOf keeps only well-formed conditions, first of each type", () => {
  const good = {
    type: "Installed",
    status: "True",
    reason: "Installed",
    message: "",
    lastTransitionTime: T0,
  };
  for (
    const status of [undefined, null, 5, "x", [], { conditions: "no" }, { conditions: [1, null] }]
  ) {
    assert.deepEqual(conditionsOf(status), []);
  }
  const got = conditionsOf({
    conditions: [good, { ...good, status: "Maybe" }, { ...good, reason: "" }, {
      ...good,
      message: "second",
    }],
  });
  assert.deepEqual(got, [good]);
});

Deno.test("rowFor finds rows by reason, and by state when a reason repeats", () => {
  assert.equal(rowFor(SERVERLESS_STATES, "Installed").no, 5);
  assert.equal(rowFor(SERVERLESS_STATES, "Deletion", "Deleting").no, 9);
  assert.throws(() => rowFor(SERVERLESS_STATES, "Installed", "Error"), /no state-table row/);
  assert.throws(() => rowFor(SERVERLESS_STATES, "Nope"), /no state-table row with reason Nope/);
  assert.deepEqual(rowCondition(rowFor(SERVERLESS_STATES, "Deleted"), "gone"), {
    type: "Deleted",
    status: "True",
    reason: "Deleted",
    message: "gone",
  });
});

Deno.test("every state-table reason is a non-empty CamelCase identifier", () => {
  for (const row of SERVERLESS_STATES) {
    assert.match(row.reason, /^[A-Z][A-Za-z0-9]*$/);
    assert.match(row.type, /^[A-Z][A-Za-z0-9]*$/);
    const status = { state: row.state, conditions: setCondition([], rowCondition(row, ""), T0, 1) };
    assert.equal(rowOfStatus(SERVERLESS_STATES, status)?.no, row.no);
  }
});

Deno.test("setCondition cuts a message over the CRDs' limit, counting the characters left out", () => {
  const long = "m".repeat(CONDITION_MESSAGE_MAX * 2);
  const [c] = setCondition(
    [],
    { type: "Ready", status: "False", reason: "Failed", message: long },
    T0,
    1,
  );
  assert.ok(c.message.length <= CONDITION_MESSAGE_MAX);
  assert.match(c.message, /^m+\.\.\. and \d+ more characters$/);
  assert.ok(parseCondition(c).ok);
  const [short] = setCondition([], { ...c, message: "fits" }, T0, 1);
  assert.equal(short.message, "fits");
});
