/**
 * The CRD of issue 26's fields: the API server holds spec.enforce to a boolean and spec.grpcStatus
 * to its two values, and bounds the status figures; `kubectl explain` says what each does.
 */
import assert from "node:assert/strict";
import { customResourceDefinitions } from "../../src/crd/definitions.ts";
import { MAX_BUCKET_RULES } from "../../src/api/ratelimit_bounds.ts";
import { SHADOW_HEADER } from "../../src/api/envoy.ts";

type Schema = {
  type?: string;
  description?: string;
  enum?: string[];
  maxItems?: number;
  maxLength?: number;
  properties?: Record<string, Schema>;
  items?: Schema;
};

function root(): Schema {
  const crd = customResourceDefinitions().find((c) =>
    (c as { metadata: { name: string } }).metadata.name === "ratelimits.gateway.platform-project.io"
  ) as { spec: { versions: Array<{ schema: { openAPIV3Schema: Schema } }> } } | undefined;
  assert.ok(crd);
  return crd.spec.versions[0].schema.openAPIV3Schema;
}

Deno.test("spec.enforce: a boolean, explained as Kyma's shadow mode switch", () => {
  const enforce = root().properties!.spec.properties!.enforce;
  assert.equal(enforce.type, "boolean");
  assert.match(enforce.description ?? "", /^When false, shadow mode: /);
  assert.ok(enforce.description!.includes(SHADOW_HEADER));
  assert.match(enforce.description ?? "", /Kyma's RateLimit field of the same name.*Default true/);
});

Deno.test("spec.grpcStatus: ResourceExhausted or Unavailable, and why", () => {
  const grpc = root().properties!.spec.properties!.grpcStatus;
  assert.deepEqual(grpc.enum, ["ResourceExhausted", "Unavailable"]);
  assert.match(grpc.description ?? "", /do not retry by default/);
  assert.match(grpc.description ?? "", /Other requests get 429 either way/);
});

Deno.test("status.mode and status.rates are bounded in the CRD", () => {
  const status = root().properties!.status.properties!;
  assert.deepEqual(status.mode.enum, ["Enforcing", "Shadow"]);
  assert.equal(status.rates.maxItems, MAX_BUCKET_RULES + 1);
  const item = status.rates.items!.properties!;
  assert.deepEqual(Object.keys(item).sort(), ["bucket", "perPod", "workload"]);
  // The longest figure: 4294967295 × Pods over 999999999s fits.
  for (const k of ["perPod", "workload"]) assert.equal(item[k].maxLength, 64);
  assert.ok(`${4294967295n * 1_000_000n}/999999999s`.length <= 64);
});
