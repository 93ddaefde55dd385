/**
 * AccessReview against a scripted API server: the statuses controller-runtime's secure metrics
 * answer (401 without a token or with one the API server does not authenticate, 403 without the
 * grant, 500 when the API server gives no decision), what it asks the API server, and how long it
 * keeps the answers.
 */
import assert from "node:assert/strict";
import { AccessReview } from "../../src/runtime/access_review.ts";
import { ApiError } from "../../src/runtime/cluster.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";
import { ManualClock } from "./helpers.ts";

const READER = {
  username: "system:serviceaccount:monitoring:prometheus",
  uid: "u-1",
  groups: ["system:serviceaccounts", "system:authenticated"],
  extra: { "authentication.kubernetes.io/pod-name": ["prometheus-0"] },
};
const NOBODY = { username: "nobody", groups: ["system:authenticated"] };

/** An API server that knows two tokens and lets READER get /metrics; it records what it is sent. */
function apiServer() {
  const sent: KubeObject[] = [];
  let down = false;
  const cluster = {
    create: (type: ResourceType, obj: KubeObject): Promise<KubeObject> => {
      sent.push(obj);
      if (down) return Promise.reject(new ApiError(0, "NetworkError", "connection refused"));
      const spec = obj.spec as Record<string, unknown>;
      if (type.kind === "TokenReview") {
        const user = { reader: READER, nobody: NOBODY }[spec.token as string];
        return Promise.resolve({ ...obj, status: user ? { authenticated: true, user } : {} });
      }
      const attrs = spec.nonResourceAttributes as { path: string; verb: string };
      const allowed = spec.user === READER.username && attrs.path === "/metrics" &&
        attrs.verb === "get";
      return Promise.resolve({ ...obj, status: { allowed } });
    },
  };
  return { cluster, sent, setDown: (d: boolean) => (down = d) };
}

Deno.test("401 without a bearer token or with one the API server does not authenticate", async () => {
  const api = apiServer();
  const access = new AccessReview(api.cluster, new ManualClock());
  for (const header of [null, "", "Basic YTpi", "Bearer"]) {
    assert.equal((await access.decide(header, "GET", "/metrics")).status, 401, String(header));
  }
  assert.equal(api.sent.length, 0, "nothing to review without a token");
  assert.deepEqual(await access.decide("Bearer forged", "GET", "/metrics"), {
    status: 401,
    message: "Unauthorized",
  });
  assert.deepEqual(api.sent.map((o) => [o.kind, o.spec]), [["TokenReview", { token: "forged" }]]);
});

Deno.test("403 for an authenticated user without get on /metrics; 200 with it; the SubjectAccessReview carries the user", async () => {
  const api = apiServer();
  const access = new AccessReview(api.cluster, new ManualClock());
  assert.deepEqual(await access.decide("Bearer nobody", "GET", "/metrics"), {
    status: 403,
    message: "Authorization denied for user nobody",
  });
  assert.equal((await access.decide("Bearer reader", "GET", "/metrics")).status, 200);
  assert.equal((await access.decide("Bearer reader", "POST", "/metrics")).status, 403, "verb");
  assert.equal((await access.decide("Bearer reader", "GET", "/other")).status, 403, "path");
  const sar = api.sent.find((o) =>
    o.kind === "SubjectAccessReview" && (o.spec as { user?: string }).user === READER.username
  );
  assert.deepEqual(sar?.spec, {
    user: READER.username,
    uid: READER.uid,
    groups: READER.groups,
    extra: READER.extra,
    nonResourceAttributes: { path: "/metrics", verb: "get" },
  });
  assert.equal(sar?.apiVersion, "authorization.k8s.io/v1");
});

Deno.test("answers are kept as controller-runtime keeps them: token 1 min, allow 5 min, deny 30 s; errors not at all", async () => {
  const api = apiServer();
  const clock = new ManualClock();
  const access = new AccessReview(api.cluster, clock);
  const reviews = (kind: string) => api.sent.filter((o) => o.kind === kind).length;
  await access.decide("Bearer reader", "GET", "/metrics");
  await access.decide("Bearer nobody", "GET", "/metrics");
  assert.equal(reviews("TokenReview"), 2);
  assert.equal(reviews("SubjectAccessReview"), 2);
  clock.advanceTo(clock.now() + 29_000);
  await access.decide("Bearer reader", "GET", "/metrics");
  await access.decide("Bearer nobody", "GET", "/metrics");
  assert.equal(reviews("TokenReview"), 2, "tokens kept for a minute");
  assert.equal(reviews("SubjectAccessReview"), 2, "both decisions kept for 30 s");
  clock.advanceTo(clock.now() + 2_000);
  await access.decide("Bearer reader", "GET", "/metrics");
  await access.decide("Bearer nobody", "GET", "/metrics");
  assert.equal(reviews("SubjectAccessReview"), 3, "the deny expired after 30 s, the allow did not");
  clock.advanceTo(clock.now() + 30_000);
  await access.decide("Bearer reader", "GET", "/metrics");
  assert.equal(reviews("TokenReview"), 3, "the token reviewed again after a minute");
  clock.advanceTo(clock.now() + 300_000);
  api.setDown(true);
  const failed = await access.decide("Bearer reader", "GET", "/metrics");
  assert.equal(failed.status, 500);
  assert.match(failed.message, /^Authentication failed: connection refused/);
  api.setDown(false);
  assert.equal((await access.decide("Bearer reader", "GET", "/metrics")).status, 200);
});

Deno.test("a flood of tokens does not grow the caches past their bound", async () => {
  const api = apiServer();
  const access = new AccessReview(api.cluster, new ManualClock(), { maxEntries: 2 });
  await access.decide("Bearer reader", "GET", "/metrics");
  for (let i = 0; i < 3; i++) await access.decide(`Bearer forged-${i}`, "GET", "/metrics");
  const before = api.sent.length;
  await access.decide("Bearer reader", "GET", "/metrics");
  assert.equal(api.sent.length, before + 1, "the oldest token was dropped and reviewed again");
});
