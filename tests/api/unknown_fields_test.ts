/**
 * Unknown fields, refused as kubectl's strict field validation refuses them: each named by its
 * path with a guess at the field meant, found from the plan (so the schema decides what is known),
 * and none where the schema keeps unknown fields (metadata).
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseRateLimit } from "../../src/api/ratelimit.ts";
import { closest } from "../../src/api/suggest.ts";
import { PLANS } from "../../src/api/validation/plans.ts";
import { unknownFields } from "../../src/api/validation/unknown.ts";
import { validate } from "../../src/api/validation/run.ts";
import { errorsOf, rateLimit, valueOf } from "./fixtures.ts";

const refuse = { unknown: "refuse" } as const;

Deno.test("a misspelt field is named with the one meant, and is the only error", () => {
  const rl = rateLimit();
  const bucket = rl.spec.local.defaultBucket as Record<string, unknown>;
  bucket.maxToken = bucket.maxTokens;
  delete bucket.maxTokens;
  assert.deepEqual(errorsOf(parseRateLimit(rl, refuse)), [
    "spec.local.defaultBucket.maxToken: unknown field; did you mean maxTokens?",
  ]);
  // The operator reads what the API server stored (already pruned): there the typo is a missing field.
  assert.deepEqual(errorsOf(parseRateLimit(rl)), [
    "spec.local.defaultBucket.maxTokens: is required (expected integer)",
  ]);
});

Deno.test("a field like no other gets no guess; fields in lists and at the top are found", () => {
  const rl = {
    ...rateLimit([{ path: "/a", bucket: { maxTokens: 1, tokensPerFill: 1, fillInterval: "30s" } }]),
    extra: 1,
  };
  (rl.spec.local.buckets as Record<string, unknown>[])[0].pth = "/b";
  assert.deepEqual(errorsOf(parseRateLimit(rl, refuse)), [
    "spec.local.buckets[0].pth: unknown field",
    "extra: unknown field",
  ]);
  valueOf(parseRateLimit(rl));
});

Deno.test("metadata: every field of Kubernetes' ObjectMeta passes, any other is unknown", () => {
  // The API server's strict field validation decodes a custom resource's metadata strictly too
  // (apiextensions-apiserver schema/objectmeta GetObjectMetaWithOptions, ReturnUnknownFieldPaths).
  const rl = rateLimit();
  Object.assign(rl.metadata, {
    labels: { a: "b" },
    managedFields: [],
    generateName: "x-",
    selfLink: "",
    deletionGracePeriodSeconds: 30,
  });
  valueOf(parseRateLimit(rl, refuse));
  Object.assign(rl.metadata, { lables: { a: "b" }, whatever: { x: 1 } });
  const r = parseRateLimit(rl, refuse);
  assert.ok(!r.ok);
  assert.deepEqual(r.errors.map((e) => `${e.path}: ${e.message}`), [
    "metadata.lables: unknown field",
    "metadata.whatever: unknown field",
  ]);
  // Stripping (what the operator reads from the API server) keeps them, as before.
  valueOf(parseRateLimit(rl));
});

Deno.test("metadata: the entries of ownerReferences and managedFields are ObjectMeta's too", () => {
  // Strict decoding into ObjectMeta reaches inside its lists: OwnerReference and
  // ManagedFieldsEntry have their own fields; fieldsV1 is free-form.
  const rl = rateLimit();
  Object.assign(rl.metadata, {
    ownerReferences: [{
      apiVersion: "v1",
      kind: "ConfigMap",
      name: "owner",
      uid: "u1",
      controller: false,
      blockOwnerDeletion: false,
    }],
    managedFields: [{
      manager: "kubectl",
      operation: "Apply",
      apiVersion: "v1",
      time: "2026-01-01T00:00:00Z",
      fieldsType: "FieldsV1",
      fieldsV1: { "f:spec": { "f:anything": {} } },
      subresource: "",
    }],
  });
  valueOf(parseRateLimit(rl, refuse));
  Object.assign(rl.metadata, {
    ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: "u1" }, {
      apiVersion: "v1",
      kind: "ConfigMap",
      nme: "other",
      uid: "u2",
    }],
    managedFields: [{ manager: "kubectl", operaton: "Apply" }],
  });
  const r = parseRateLimit(rl, refuse);
  assert.ok(!r.ok);
  assert.deepEqual(r.errors.map((e) => `${e.path}: ${e.message}`), [
    "metadata.ownerReferences[1].nme: unknown field; did you mean name?",
    "metadata.managedFields[0].operaton: unknown field; did you mean operation?",
  ]);
  valueOf(parseRateLimit(rl));
});

Deno.test("refuse accepts exactly the objects that stripping leaves whole", () => {
  // Oracle: the plan's own strip mode. An object has no unknown field iff every field it has
  // survives validation.
  const keys = fc.constantFrom("spec", "local", "extra", "maxToken", "path", "selectorLabels");
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.nat(4), keys, fc.integer()), { maxLength: 3 }), (edits) => {
      const rl = rateLimit([{
        path: "/a",
        bucket: { maxTokens: 1, tokensPerFill: 1, fillInterval: "30s" },
      }]);
      const spots: Record<string, unknown>[] = [
        rl,
        rl.spec,
        rl.spec.local,
        rl.spec.local.defaultBucket,
        (rl.spec.local.buckets as Record<string, unknown>[])[0],
      ];
      for (const [at, key, v] of edits) if (!(key in spots[at])) spots[at][key] = v;
      const stripped = validate(PLANS.RateLimit, rl);
      const found = unknownFields(PLANS.RateLimit, rl);
      if (!stripped.ok) return;
      const kept = (a: unknown, b: unknown): boolean =>
        typeof a !== "object" || a === null ||
        Object.entries(a).every(([k, v]) =>
          k in (b as Record<string, unknown>) && kept(v, (b as Record<string, unknown>)[k])
        );
      assert.equal(found.length === 0, kept(rl, stripped.value), JSON.stringify(found));
    }),
    { numRuns: 300 },
  );
});

Deno.test("closest: case, one slip, a swap; nothing for a stranger", () => {
  assert.equal(closest("maxtokens", ["maxTokens", "tokensPerFill"]), "maxTokens");
  assert.equal(closest("fillIntervl", ["fillInterval", "maxTokens"]), "fillInterval");
  assert.equal(closest("--jsno", ["--json", "--svg"]), "--json");
  assert.equal(closest("extra", ["spec", "status", "metadata"]), undefined);
});

Deno.test("spec only: a stored object's unknown spec fields are refused saying a CRD may be newer; metadata and status are not judged", () => {
  const rl = rateLimit() as Record<string, unknown> & {
    spec: { local: { buckets?: Record<string, unknown>[]; defaultBucket: unknown } };
    metadata: Record<string, unknown>;
  };
  rl.metadata.newMetaField = "x";
  rl.status = { state: "Ready", fromANewerOperator: 1 };
  assert.ok(parseRateLimit(rl, { unknown: "spec" }).ok);
  rl.spec.local.buckets = [{
    path: "/a",
    sourceCIDRs: ["10.0.0.0/8"],
    bucket: rl.spec.local.defaultBucket,
  }];
  assert.deepEqual(errorsOf(parseRateLimit(rl, { unknown: "spec" })), [
    "spec.local.buckets[0].sourceCIDRs: unknown field (this operator does not know it: is the CRD newer than the operator?)",
  ]);
  // Stripped by default, as before.
  assert.ok(parseRateLimit(rl).ok);
});
