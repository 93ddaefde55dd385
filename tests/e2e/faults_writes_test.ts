/**
 * The fault suites' duplicate check (faults_deployed.ts `duplicateWrites`) on audit-log writes
 * made here: a RateLimit status that says again what the last one said is a duplicate, a status
 * that changed is not; any other write is held to its RateLimit's new generations.
 */
import assert from "node:assert/strict";
import type { PodWrite } from "../../tools/cluster/faults.ts";
import { duplicateWrites } from "./faults_deployed.ts";

const T0 = Date.parse("2026-11-29T08:00:00Z");

function status(at: number, state: string, generation: number, time: string, code = 200): PodWrite {
  return {
    pod: "platform-operator-a",
    at: T0 + at,
    verb: "patch",
    resource: "ratelimits",
    subresource: "status",
    namespace: "faults",
    name: "w-00007",
    code,
    body: {
      status: {
        state,
        observedGeneration: generation,
        conditions: [{
          type: "Enforced",
          status: state === "Ready" ? "True" : "False",
          reason: state === "Ready" ? "Applied" : "ApplyFailed",
          lastTransitionTime: time,
        }],
      },
    },
  };
}

function filter(at: number, code = 200): PodWrite {
  return {
    pod: "platform-operator-a",
    at: T0 + at,
    verb: "patch",
    resource: "envoyfilters",
    subresource: "",
    namespace: "faults",
    name: "w-00007",
    code,
  };
}

Deno.test("a status that says again what the last one said is a duplicate, times aside", () => {
  const dup = duplicateWrites([
    status(0, "Ready", 2, "2026-11-29T08:00:00Z"),
    status(900, "Ready", 2, "2026-11-29T08:00:01Z"),
  ]);
  assert.equal(dup.length, 1);
  assert.match(dup[0], /^ratelimits\/status faults\/w-00007: the write at .* says what the one at/);
});

Deno.test("a status that changed is news: a failure seen, then Ready again, then a new generation", () => {
  assert.deepEqual(
    duplicateWrites([
      status(0, "Ready", 2, "a"),
      status(100, "Error", 2, "b"),
      status(200, "Ready", 2, "c"),
      status(300, "Ready", 3, "c"),
    ]),
    [],
  );
});

Deno.test("a refused status write is not a write: the next one is compared with the last made", () => {
  assert.deepEqual(
    duplicateWrites([
      status(0, "Ready", 2, "a"),
      status(100, "Error", 2, "b", 403),
      status(200, "Ready", 3, "a"),
    ]),
    [],
  );
  assert.equal(
    duplicateWrites([
      status(0, "Ready", 2, "a"),
      status(100, "Ready", 3, "b", 500),
      status(200, "Ready", 2, "a"),
    ]).length,
    1,
  );
});

Deno.test("an EnvoyFilter is held to its RateLimit's new generations, at least one write", () => {
  assert.deepEqual(duplicateWrites([filter(0)]), []);
  assert.deepEqual(
    duplicateWrites([filter(0), filter(10, 409), filter(20)], new Map([["w-00007", 2]])),
    [],
  );
  assert.deepEqual(
    duplicateWrites([filter(0), filter(20)], new Map([["w-00007", 1]])),
    ["envoyfilters/ faults/w-00007: 2 writes for 1 change(s)"],
  );
});
