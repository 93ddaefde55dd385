import assert from "node:assert/strict";
import fc from "fast-check";
import { RESOURCES } from "../../src/api/resources.ts";
import { apiErrorFromStatus, parseRetryAfter } from "../../src/kube/errors.ts";
import { collectionPath, groupVersionPath, objectPath, withQuery } from "../../src/kube/paths.ts";

Deno.test("paths: core group under /api, others under /apis, namespaced or not", () => {
  assert.equal(groupVersionPath(RESOURCES.Pod), "/api/v1");
  assert.equal(collectionPath(RESOURCES.Pod), "/api/v1/pods");
  assert.equal(collectionPath(RESOURCES.Pod, "a"), "/api/v1/namespaces/a/pods");
  assert.equal(objectPath(RESOURCES.Namespace, undefined, "a"), "/api/v1/namespaces/a");
  assert.equal(
    objectPath(RESOURCES.CustomResourceDefinition, "ignored", "x.y"),
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x.y",
  );
  assert.equal(
    objectPath(RESOURCES.Scaler, "platform-system", "default", "status"),
    "/apis/operator.platform-project.io/v1alpha1/namespaces/platform-system/scalers/default/status",
  );
  assert.throws(() => objectPath(RESOURCES.Pod, undefined, "p"), /namespace is required/);
  assert.throws(() => objectPath(RESOURCES.Pod, "a", ""), /name is required/);
});

Deno.test("paths: every object path is its collection path plus the encoded name", () => {
  const types = Object.values(RESOURCES);
  fc.assert(
    fc.property(
      fc.constantFrom(...types),
      fc.string({ minLength: 1 }),
      fc.string({ minLength: 1 }),
      (t, ns, name) => {
        const path = objectPath(t, ns, name);
        assert.equal(path, `${collectionPath(t, ns)}/${encodeURIComponent(name)}`);
        assert.equal(path.split("/").length, collectionPath(t, ns).split("/").length + 1);
      },
    ),
    { seed: 42, numRuns: 300 },
  );
});

Deno.test("query strings leave out undefined and empty values and encode the rest", () => {
  assert.equal(withQuery("/p", {}), "/p");
  assert.equal(withQuery("/p", { a: undefined, b: "" }), "/p");
  assert.equal(
    withQuery("/p", { labelSelector: "a=b,c in (d)", limit: 5, watch: true }),
    "/p?labelSelector=a%3Db%2Cc+in+%28d%29&limit=5&watch=true",
  );
});

Deno.test("Status bodies map to ApiError; missing fields fall back to the HTTP code", () => {
  const e = apiErrorFromStatus({
    code: 429,
    reason: "TooManyRequests",
    message: "m",
    details: { retryAfterSeconds: 3 },
  }, 429);
  assert.deepEqual([e.code, e.reason, e.message, e.retryAfterSeconds], [
    429,
    "TooManyRequests",
    "m",
    3,
  ]);
  assert.equal(
    apiErrorFromStatus({ details: { retryAfterSeconds: 3 } }, 429, 9).retryAfterSeconds,
    9,
  );
  const bare = apiErrorFromStatus(undefined, 503);
  assert.deepEqual([bare.code, bare.reason], [503, "ServiceUnavailable"]);
  assert.equal(apiErrorFromStatus("nonsense", 599).reason, "InternalError");
  assert.equal(parseRetryAfter(" 12 "), 12);
  assert.equal(parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT"), undefined);
  assert.equal(parseRetryAfter(null), undefined);
});
