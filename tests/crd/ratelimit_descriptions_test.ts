/**
 * `kubectl explain ratelimit.spec.local.defaultBucket` describes the refill users get: that of the
 * default Envoy (the newest supported Istio's), with the older timer named as the exception.
 */
import assert from "node:assert/strict";
import { customResourceDefinitions } from "../../src/crd/definitions.ts";
import { DEFAULT_BEHAVIOUR } from "../../src/dataplane/mod.ts";

type Schema = { description?: string; properties?: Record<string, Schema>; items?: Schema };

function ratelimitSpec(): Schema {
  const crd = customResourceDefinitions().find((c) =>
    (c as { metadata: { name: string } }).metadata.name === "ratelimits.gateway.platform-project.io"
  ) as { spec: { versions: Array<{ schema: { openAPIV3Schema: Schema } }> } } | undefined;
  assert.ok(crd);
  return crd.spec.versions[0].schema.openAPIV3Schema.properties!.spec;
}

Deno.test("bucket descriptions describe the default Envoy's refill", () => {
  assert.equal(DEFAULT_BEHAVIOUR.refill, "continuous", "the descriptions below assume it");
  const local = ratelimitSpec().properties!.local;
  const def = local.properties!.defaultBucket;
  const rule = local.properties!.buckets.items!.properties!.bucket;
  for (const bucket of [def, rule]) {
    const per = bucket.properties!.tokensPerFill.description ?? "";
    assert.match(per, /adds them continuously, one every fillInterval \/ tokensPerFill/);
    assert.match(per, /admits a request once a whole token has accrued/);
    assert.match(
      per,
      /Envoy 1\.30 and older added them all at once at the end of each fillInterval/,
    );
    assert.match(bucket.properties!.fillInterval.description ?? "", /continuously/);
    assert.match(bucket.properties!.maxTokens.description ?? "", /starts full/);
    assert.doesNotMatch(JSON.stringify(bucket), /Tokens added at each fill|Time between fills/);
  }
  assert.match(def.description ?? "", /continuously \(one every fillInterval \/ tokensPerFill\)/);
  assert.match(local.description ?? "", /every route on it .* has its own buckets/);
  assert.match(
    ratelimitSpec().properties!.enableResponseHeaders.description ?? "",
    /x-ratelimit-reset \(seconds until the next whole token, 0 while one is left\)/,
  );
});
