import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { ApiError, type Cluster } from "../../src/runtime/cluster.ts";
import {
  type AccessCheck,
  CLUSTER_SCOPE_NAMESPACE,
  type ResourceRule,
  reviewAccess,
  ruleAllows,
} from "../../src/kube/self_access.ts";

const { RateLimit, CustomResourceDefinition: Crd, Event, Lease, Pod } = RESOURCES;

Deno.test("a rule allows a check as Kubernetes' RBAC matches it", () => {
  const status: AccessCheck = { type: RateLimit, verb: "patch", subresource: "status" };
  const named: AccessCheck = { type: Crd, verb: "delete", name: "a.example.com" };
  const cases: [ResourceRule, AccessCheck, boolean][] = [
    [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }, status, true],
    [{ verbs: ["list"], apiGroups: [""], resources: ["pods"] }, { type: Pod, verb: "list" }, true],
    [
      { verbs: ["list"], apiGroups: ["apps"], resources: ["pods"] },
      { type: Pod, verb: "list" },
      false,
    ],
    [{ verbs: ["list"], resources: ["pods"] }, { type: Pod, verb: "list" }, false],
    [{ verbs: ["get"], apiGroups: [""], resources: ["pods"] }, { type: Pod, verb: "list" }, false],
    // A subresource is its own resource: the parent's rule does not grant it, `*/status` does.
    [{ verbs: ["patch"], apiGroups: ["*"], resources: ["ratelimits"] }, status, false],
    [{ verbs: ["patch"], apiGroups: ["*"], resources: ["ratelimits/status"] }, status, true],
    [{ verbs: ["patch"], apiGroups: ["*"], resources: ["*/status"] }, status, true],
    [{ verbs: ["patch"], apiGroups: ["*"], resources: ["*/scale"] }, status, false],
    [
      { verbs: ["patch"], apiGroups: ["*"], resources: ["*/status"] },
      { type: RateLimit, verb: "patch" },
      false,
    ],
    // Names: a named rule grants only those names, never a request without one.
    [{ verbs: ["delete"], apiGroups: ["*"], resources: ["*"], resourceNames: [] }, named, true],
    [
      { verbs: ["delete"], apiGroups: ["*"], resources: ["*"], resourceNames: ["a.example.com"] },
      named,
      true,
    ],
    [
      { verbs: ["delete"], apiGroups: ["*"], resources: ["*"], resourceNames: ["b.example.com"] },
      named,
      false,
    ],
    [
      { verbs: ["delete"], apiGroups: ["*"], resources: ["*"], resourceNames: ["a.example.com"] },
      { type: Crd, verb: "delete" },
      false,
    ],
  ];
  for (const [rule, check, want] of cases) {
    assert.equal(ruleAllows(rule, check), want, `${JSON.stringify(rule)} ${JSON.stringify(check)}`);
  }
});

/** A cluster answering rules reviews with `rules(namespace)` and access reviews with `allowed`. */
function reviewer(
  rules: (namespace: string) => unknown,
  allowed: (a: Record<string, string>) => boolean = () => true,
) {
  const seen: { rules: string[]; access: Record<string, string>[] } = { rules: [], access: [] };
  type Review = { spec: { namespace?: string; resourceAttributes?: Record<string, string> } };
  const cluster = {
    create: (_type: unknown, review: Review) => {
      const a = review.spec.resourceAttributes;
      if (!a) {
        const ns = review.spec.namespace!;
        seen.rules.push(ns);
        const status = rules(ns);
        return status instanceof Error ? Promise.reject(status) : Promise.resolve({ status });
      }
      seen.access.push(a);
      return Promise.resolve({ status: { allowed: allowed(a) } });
    },
  } as unknown as Cluster;
  return { cluster, seen };
}

const CHECKS: AccessCheck[] = [
  { type: RateLimit, verb: "list" },
  { type: RateLimit, verb: "patch", subresource: "status" },
  { type: Event, verb: "create" },
  { type: Lease, verb: "update", namespace: "platform-system" },
];
const all = (incomplete = false) => ({
  resourceRules: [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }],
  incomplete,
});

Deno.test("rules that cover every check: one rules review per scope and no access review", async () => {
  const { cluster, seen } = reviewer(() => all());
  const answers = await reviewAccess(cluster, CHECKS, 4);
  assert.deepEqual(answers, CHECKS.map(() => ({ allowed: true })));
  // The cluster's rules alone: a namespace no RoleBinding can be in.
  assert.deepEqual(seen.rules.sort(), [CLUSTER_SCOPE_NAMESPACE, "platform-system"].sort());
  assert.match(CLUSTER_SCOPE_NAMESPACE, /[^a-z0-9-]/, "not a valid namespace name");
  assert.deepEqual(seen.access, []);
});

Deno.test("a check the rules do not cover is asked alone, and its review decides", async () => {
  const noEvents = {
    resourceRules: [{ verbs: ["list", "patch"], apiGroups: ["*"], resources: ["*"] }],
    incomplete: false,
  };
  const { cluster, seen } = reviewer(
    (ns) => ns === CLUSTER_SCOPE_NAMESPACE ? noEvents : all(),
    (a) => a.resource !== "events",
  );
  const answers = await reviewAccess(cluster, CHECKS, 4);
  assert.deepEqual(answers.map((a) => "allowed" in a && a.allowed), [true, true, false, true]);
  assert.deepEqual(seen.access.map((a) => `${a.verb} ${a.resource}`), ["create events"]);
});

Deno.test("incomplete or failed rules reviews: every check of that scope is asked alone", async () => {
  // Incomplete (a webhook authorizer may deny what the listed rules allow): not trusted.
  const partly = reviewer((ns) => all(ns === "platform-system"), (a) => a.resource !== "leases");
  const answers = await reviewAccess(partly.cluster, CHECKS, 4);
  assert.deepEqual(answers.map((a) => "allowed" in a && a.allowed), [true, true, true, false]);
  assert.deepEqual(partly.seen.access.map((a) => `${a.verb} ${a.resource} ${a.namespace}`), [
    "update leases platform-system",
  ]);
  // Not served, or refused: asked alone; an access review's error is that check's answer.
  const gone = new ApiError(404, "NotFound", "the server could not find the requested resource");
  const failed = reviewer(() => gone);
  assert.deepEqual(
    await reviewAccess(failed.cluster, CHECKS, 2),
    CHECKS.map(() => ({
      allowed: true,
    })),
  );
  assert.equal(failed.seen.access.length, CHECKS.length);
  const denied = new ApiError(403, "Forbidden", "no");
  const erring = {
    create: () => Promise.reject(denied),
  } as unknown as Cluster;
  assert.deepEqual(await reviewAccess(erring, CHECKS.slice(0, 1), 1), [{ error: denied }]);
  // Anything but an API error is a bug, not an answer.
  const broken = reviewer(() => new TypeError("bug"));
  await assert.rejects(reviewAccess(broken.cluster, CHECKS, 1), TypeError);
});
