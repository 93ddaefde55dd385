/**
 * The CRD of spec.global (issue #43): what the API server stores and refuses, checked with the
 * generated schema through tests/crd/admission.ts, and what `kubectl explain` says of the fields.
 */
import assert from "node:assert/strict";
import { customResourceDefinitions } from "../../src/crd/definitions.ts";
import type { JsonSchema } from "../../src/crd/schema.ts";
import { MAX_GLOBAL_RULES } from "../../src/api/ratelimit_bounds.ts";
import { admits } from "./admission.ts";

function schema(): JsonSchema {
  const crd = customResourceDefinitions().find((c) => c.spec.names.kind === "RateLimit")!;
  return crd.spec.versions[0].schema.openAPIV3Schema;
}

const limit = (requests: unknown = 10, unit: unknown = "Minute") => ({ requests, unit });

function rl(spec: Record<string, unknown>) {
  return {
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    metadata: { name: "a", namespace: "demo" },
    spec: { selectorLabels: { app: "a" }, ...spec },
  };
}

const LOCAL = { defaultBucket: { maxTokens: 1, tokensPerFill: 1, fillInterval: "1s" } };

Deno.test("the CRD stores local, global or both, and refuses neither", () => {
  const s = schema();
  const global = { default: { limit: limit() } };
  assert.ok(admits(s, rl({ local: LOCAL })));
  assert.ok(admits(s, rl({ global })));
  assert.ok(admits(s, rl({ local: LOCAL, global })));
  assert.ok(!admits(s, rl({})));
});

Deno.test("the CRD holds each global field to its bound", () => {
  const s = schema();
  const ok = (global: unknown) => admits(s, rl({ global }));
  const rules = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ path: `/p${i}`, limit: limit() }));
  for (const unit of ["Second", "Minute", "Hour", "Day"]) {
    assert.ok(ok({ default: { limit: limit(1, unit) } }), unit);
  }
  assert.ok(ok({ rules: rules(MAX_GLOBAL_RULES), failureMode: "Deny" }));
  assert.ok(ok({ default: { limit: limit(4294967295) } }));
  const refused: [string, unknown][] = [
    ["a unit it does not know", { default: { limit: limit(1, "Week") } }],
    ["no request", { default: { limit: limit(0) } }],
    ["more than a uint32", { default: { limit: limit(4294967296) } }],
    ["a rule without a limit", { rules: [{ path: "/a" }] }],
    ["a rule matching nothing", { rules: [{ limit: limit() }] }],
    ["too many rules", { rules: rules(MAX_GLOBAL_RULES + 1) }],
    ["no rule", { rules: [] }],
    ["neither rules nor a default", {}],
    ["another failure mode", { default: { limit: limit() }, failureMode: "Open" }],
    ["a path without /", { rules: [{ path: "a", limit: limit() }] }],
    ["perClient without a key", { rules: [{ perClient: {}, limit: limit() }] }],
  ];
  for (const [what, global] of refused) assert.ok(!ok(global), what);
});

Deno.test("kubectl explain: the global fields say what they count and how they fail", () => {
  const spec = schema().properties!.spec;
  const global = spec.properties!.global;
  assert.match(global.description!, /engine/);
  assert.match(global.description!, /GlobalEnforced/);
  const unit = global.properties!.rules.items!.properties!.limit.properties!.unit;
  assert.deepEqual(unit.enum, ["Second", "Minute", "Hour", "Day"]);
  assert.match(unit.description!, /aligned to the unit from the Unix epoch/);
  assert.match(global.properties!.failureMode.description!, /Default Allow/);
  assert.equal(global.properties!.rules.maxItems, MAX_GLOBAL_RULES);
});
