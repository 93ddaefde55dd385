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

/**
 * An API server that knows two tokens (and any `user-*`) and lets READER get /metrics; it records
 * what it is sent, and answers `delayMs` later (on the system clock).
 */
function apiServer(delayMs = 0) {
  const sent: KubeObject[] = [];
  let down = false;
  const cluster = {
    create: async (type: ResourceType, obj: KubeObject): Promise<KubeObject> => {
      sent.push(obj);
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
      if (down) return Promise.reject(new ApiError(0, "NetworkError", "connection refused"));
      const spec = obj.spec as Record<string, unknown>;
      if (type.kind === "TokenReview") {
        const token = spec.token as string;
        const user = token.startsWith("user-")
          ? { username: token }
          : { reader: READER, nobody: NOBODY }[token];
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

Deno.test("a flood of tokens does not grow the caches past their bound, and forged ones do not push out an authenticated one", async () => {
  const api = apiServer();
  const access = new AccessReview(api.cluster, new ManualClock(), { maxEntries: 2 });
  const reviews = () => api.sent.filter((o) => o.kind === "TokenReview").length;
  await access.decide("Bearer reader", "GET", "/metrics");
  for (let i = 0; i < 3; i++) await access.decide(`Bearer forged-${i}`, "GET", "/metrics");
  assert.equal(reviews(), 4);
  await access.decide("Bearer reader", "GET", "/metrics");
  assert.equal(reviews(), 4, "the authenticated token is kept apart from the forged ones");
  await access.decide("Bearer forged-2", "GET", "/metrics");
  assert.equal(reviews(), 4, "the newest rejection is kept");
  await access.decide("Bearer forged-0", "GET", "/metrics");
  assert.equal(reviews(), 5, "the oldest rejection was dropped (2 kept) and reviewed again");
  await access.decide("Bearer nobody", "GET", "/metrics");
  await access.decide("Bearer user-x", "GET", "/metrics");
  await access.decide("Bearer reader", "GET", "/metrics");
  assert.equal(reviews(), 8, "authenticated tokens are bounded too: reader was the oldest of 3");
});

Deno.test("a token in use stays known however many other valid tokens come, so a flood of them cannot hold it back", async () => {
  const api = apiServer();
  const clock = new ManualClock();
  const access = new AccessReview(api.cluster, clock, { maxEntries: 3 });
  const reviews = () => api.sent.filter((o) => o.kind === "TokenReview").length;
  assert.equal((await access.decide("Bearer reader", "GET", "/metrics")).status, 200);
  // Valid tokens (every ServiceAccount's is one), as fast as new tokens are reviewed, three times
  // the cache's size; the reader scrapes between them.
  for (let i = 0; i < 9; i++) {
    clock.advanceTo(clock.now() + 200);
    assert.equal((await access.decide(`Bearer user-${i}`, "GET", "/metrics")).status, 403);
    assert.equal((await access.decide("Bearer reader", "GET", "/metrics")).status, 200);
  }
  assert.equal(reviews(), 1 + 9, "the reader's token was reviewed once");
  // With the budget for new tokens spent (429 to them), the reader is still served.
  const statuses: number[] = [];
  for (let i = 100; i < 125; i++) {
    statuses.push((await access.decide(`Bearer user-${i}`, "GET", "/metrics")).status);
    assert.equal((await access.decide("Bearer reader", "GET", "/metrics")).status, 200);
  }
  assert.deepEqual([...new Set(statuses)], [403, 429]);
  assert.equal(reviews(), 1 + 9 + statuses.filter((s) => s === 403).length);
});

Deno.test("new tokens are reviewed at most 20 at once and 5 a second; the rest get 429 with Retry-After", async () => {
  const api = apiServer();
  const clock = new ManualClock();
  const access = new AccessReview(api.cluster, clock);
  const reviews = () => api.sent.filter((o) => o.kind === "TokenReview").length;
  assert.equal((await access.decide("Bearer reader", "GET", "/metrics")).status, 200);
  const statuses: number[] = [];
  for (let i = 0; i < 25; i++) {
    statuses.push((await access.decide(`Bearer forged-${i}`, "GET", "/metrics")).status);
  }
  // The reader took one of the 20.
  assert.deepEqual(statuses, [...Array(19).fill(401), ...Array(6).fill(429)]);
  assert.equal(reviews(), 20);
  assert.deepEqual(await access.decide("Bearer forged-99", "GET", "/metrics"), {
    status: 429,
    message: "Too many new bearer tokens: at most 20 at once and 5 a second are reviewed",
    retryAfterSeconds: 1,
  });
  // A token seen before is not held back: rejected ones are answered from the cache, and the
  // reader is served, its review kept for a minute.
  assert.equal((await access.decide("Bearer forged-3", "GET", "/metrics")).status, 401);
  assert.equal((await access.decide("Bearer reader", "GET", "/metrics")).status, 200);
  assert.equal(reviews(), 20);
  // A second later, 5 more.
  clock.advanceTo(clock.now() + 1_000);
  const next: number[] = [];
  for (let i = 100; i < 107; i++) {
    next.push((await access.decide(`Bearer forged-${i}`, "GET", "/metrics")).status);
  }
  assert.deepEqual(next, [401, 401, 401, 401, 401, 429, 429]);
  assert.equal(reviews(), 25);
  // The reader's minute is up while the flood goes on: its review is made again, not refused.
  clock.advanceTo(clock.now() + 60_000);
  for (let i = 200; i < 230; i++) await access.decide(`Bearer forged-${i}`, "GET", "/metrics");
  assert.equal((await access.decide("Bearer forged-300", "GET", "/metrics")).status, 429);
  const before = reviews();
  assert.equal((await access.decide("Bearer reader", "GET", "/metrics")).status, 200);
  assert.equal(reviews(), before + 1);
});

Deno.test("one review serves every request waiting on the same new token", async () => {
  // The API server answers late, so that the requests wait on it together.
  const api = apiServer(20);
  const access = new AccessReview(api.cluster, new ManualClock());
  const answers = await Promise.all(
    Array.from({ length: 10 }, () => access.decide("Bearer reader", "GET", "/metrics")),
  );
  assert.deepEqual(answers.map((a) => a.status), Array(10).fill(200));
  assert.equal(api.sent.filter((o) => o.kind === "TokenReview").length, 1);
});
