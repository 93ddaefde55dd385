/**
 * What an installation serves and what its ServiceAccount may do, as the control plane's kubectl
 * renders deploy/ and deploy/variants/<name>: the `--controllers` the Deployment runs and the roles
 * bound agree (every start-up check of the controllers it runs is granted, and no other
 * controller's ClusterRole is there), the RateLimit-only variant's ServiceAccount has no access to
 * Secrets, no wildcard and only the cluster-scoped rules RateLimits need, and Scalers and
 * Serverlesses are refused there as not served by an admission policy.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parseRunFlags } from "../../src/cli/run_flags.ts";
import {
  CONTROLLER_NAMES,
  type ControllerName,
  CONTROLLERS,
} from "../../src/controllers/registry.ts";
import { RESOURCES } from "../../src/api/resources.ts";
import { type AccessCheck, ruleAllows } from "../../src/kube/self_access.ts";
import { DEFAULT_RBAC_NAMES, partRoleName, type RbacPart } from "../../src/kube/rbac.ts";
import { enabledAccess, forbiddenByPart } from "../../src/cli/run_checks.ts";
import { notServedName, VARIANTS } from "../../src/deploy/variants.ts";
import { DEPLOY, kustomizeObjects, withComponent } from "./kustomize.ts";
import { engineControllerFor } from "../../src/controllers/engine.ts";
import { DEFAULT_ENGINE_RESOURCES } from "../../src/reconcile/engine/mod.ts";
import { GLOBAL_ENGINE_SERVICE } from "../../src/api/global_engine.ts";

type Rule = {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
};
type Obj = {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: Rule[];
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
  spec?: Record<string, unknown>;
};

const SA = DEFAULT_RBAC_NAMES;
const key = (o: Obj) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/** The rules bound to the operator's ServiceAccount: cluster-wide, and per namespace. */
function saRules(objs: Obj[]): { cluster: Rule[]; namespaced: Map<string, Rule[]> } {
  const toSa = (b: Obj) =>
    b.subjects?.some((s) =>
      s.kind === "ServiceAccount" && s.name === SA.serviceAccount && s.namespace === SA.namespace
    );
  const roleOf = (kind: string, name: string, ns?: string) =>
    objs.find((o) => o.kind === kind && o.metadata.name === name && o.metadata.namespace === ns)
      ?.rules ?? [];
  const cluster = objs.filter((b) => b.kind === "ClusterRoleBinding" && toSa(b))
    .flatMap((b) => roleOf("ClusterRole", b.roleRef!.name));
  const namespaced = new Map<string, Rule[]>();
  for (const b of objs.filter((b) => b.kind === "RoleBinding" && toSa(b))) {
    const ns = b.metadata.namespace!;
    const rules = b.roleRef!.kind === "ClusterRole"
      ? roleOf("ClusterRole", b.roleRef!.name)
      : roleOf("Role", b.roleRef!.name, ns);
    namespaced.set(ns, [...namespaced.get(ns) ?? [], ...rules]);
  }
  return { cluster, namespaced };
}

/** Whether the ServiceAccount's rules allow `check`, as RBAC would. */
function allows(rules: ReturnType<typeof saRules>, check: AccessCheck): boolean {
  const inNs = check.namespace ? rules.namespaced.get(check.namespace) ?? [] : [];
  return [...rules.cluster, ...inNs].some((r) => r.verbs && ruleAllows(r, check));
}

/** The controllers the rendered Deployment runs (its args, read as the operator reads them). */
function runs(objs: Obj[]): ControllerName[] {
  const d = objs.find((o) => o.kind === "Deployment" && o.metadata.name === "platform-operator");
  const c = (d!.spec as { template: { spec: { containers: { name: string; args: string[] }[] } } })
    .template.spec.containers.find((c) => c.name === "operator")!;
  const parsed = parseRunFlags(c.args, () => undefined);
  assert.equal(parsed.kind, "options");
  return parsed.kind === "options" ? parsed.options.controllers : [];
}

/** The start-up checks of an operator running `controllers` with deploy/'s flags. */
function checksOf(controllers: readonly ControllerName[]) {
  const alsoUses = [
    RESOURCES.Event,
    RESOURCES.Lease,
    RESOURCES.TokenReview,
    RESOURCES.SubjectAccessReview,
  ];
  return enabledAccess(controllers.map((c) => CONTROLLERS[c]), alsoUses, SA.namespace);
}

const installs = [
  { dir: DEPLOY, name: "deploy/", controllers: CONTROLLER_NAMES },
  ...VARIANTS.map((v) => ({
    dir: join(DEPLOY, "variants", v.name),
    name: `deploy/variants/${v.name}`,
    controllers: v.controllers,
  })),
];

for (const install of installs) {
  Deno.test(`${install.name}: --controllers and the roles agree; what it does not serve is refused`, async () => {
    const objs = await kustomizeObjects<Obj>(install.dir);
    assert.deepEqual(runs(objs), [...install.controllers]);
    const roles = new Set(objs.filter((o) => o.kind === "ClusterRole").map((o) => o.metadata.name));
    for (const c of CONTROLLER_NAMES) {
      assert.equal(roles.has(partRoleName(c)), install.controllers.includes(c), c);
      const refused = objs.some((o) =>
        o.kind === "ValidatingAdmissionPolicy" && o.metadata.name === notServedName(c)
      );
      assert.equal(refused, !install.controllers.includes(c), `${c} refused`);
    }
    // Every check the operator makes at start-up with these controllers is granted.
    const rules = saRules(objs);
    const checks = checksOf(runs(objs));
    const denied = checks.filter((a) => !allows(rules, a.check));
    assert.deepEqual(denied, []);
  });
}

Deno.test("deploy/variants/ratelimit-only: no Secrets, no wildcard, only the cluster-scoped rules RateLimits need", async () => {
  const objs = await kustomizeObjects<Obj>(join(DEPLOY, "variants", "ratelimit-only"));
  const rules = saRules(objs);
  const all = [...rules.cluster, ...[...rules.namespaced.values()].flat()];
  for (const r of all) {
    const words = [
      ...r.apiGroups ?? [],
      ...r.resources ?? [],
      ...r.verbs,
      ...r.resourceNames ?? [],
    ];
    assert.ok(!words.some((w) => w.includes("*")), `wildcard: ${JSON.stringify(r)}`);
    assert.ok(!(r.resources ?? []).some((x) => x.startsWith("secrets")), JSON.stringify(r));
  }
  // Cluster-scoped: exactly these (docs/operations.md lists them).
  const atoms = (rs: Rule[]) =>
    rs.flatMap((r) =>
      (r.apiGroups ?? []).flatMap((g) =>
        (r.resources ?? []).map((x) => `${g}/${x}: ${r.verbs.join(",")}`)
      )
    ).sort();
  assert.deepEqual(atoms(rules.cluster), [
    "/events: get,create,patch",
    "/pods: list,watch",
    "apiextensions.k8s.io/customresourcedefinitions: list,watch",
    "authentication.k8s.io/tokenreviews: create",
    "authorization.k8s.io/subjectaccessreviews: create",
    "gateway.platform-project.io/ratelimits/finalizers: update",
    "gateway.platform-project.io/ratelimits/status: patch",
    "gateway.platform-project.io/ratelimits: get,list,watch,patch",
    "networking.istio.io/envoyfilters: get,list,watch,create,patch,delete",
  ]);
  assert.deepEqual([...rules.namespaced.keys()], [SA.namespace]);
  assert.deepEqual(atoms(rules.namespaced.get(SA.namespace)!), [
    // Its own Pod, read on start (was it OOM-killed).
    "/pods: get",
    "coordination.k8s.io/leases: get,list,watch,create,update,delete",
  ]);
  // No module grants; no roles beyond the operator's own, the RateLimit's and the metrics reader.
  assert.deepEqual(
    objs.filter((o) => o.kind.endsWith("Role")).map(key).sort(),
    [
      "ClusterRole//platform-operator",
      "ClusterRole//platform-operator-metrics-reader",
      "ClusterRole//platform-operator-ratelimit",
      "Role/platform-system/platform-operator-leader-election",
    ],
  );
  // Scalers and Serverlesses: their CRDs are there, their creation is refused with a message.
  for (const c of ["scaler", "serverless"] as const) {
    const type = CONTROLLERS[c].primary;
    assert.ok(
      objs.some((o) =>
        o.kind === "CustomResourceDefinition" && o.metadata.name === `${type.plural}.${type.group}`
      ),
      type.plural,
    );
    const policy = objs.find((o) =>
      o.metadata.name === notServedName(c) && o.kind.endsWith("Policy")
    )!;
    const spec = policy.spec as {
      matchConstraints: { resourceRules: { resources: string[]; operations: string[] }[] };
      validations: { expression: string; message: string }[];
    };
    assert.deepEqual(spec.matchConstraints.resourceRules[0].resources, [type.plural]);
    assert.deepEqual(spec.matchConstraints.resourceRules[0].operations, ["CREATE"]);
    assert.match(
      spec.validations[0].message,
      new RegExp(`^${type.kind} is not served by this installation`),
    );
    const binding = objs.find((o) =>
      o.kind === "ValidatingAdmissionPolicyBinding" && o.metadata.name === notServedName(c)
    )!;
    assert.deepEqual(binding.spec, { policyName: notServedName(c), validationActions: ["Deny"] });
  }
  // Everything else is deploy/'s, but the Deployment's --controllers.
  const full = await kustomizeObjects<Obj>(DEPLOY);
  const same = (o: Obj) =>
    !o.kind.endsWith("Role") && !o.kind.endsWith("RoleBinding") && !o.kind.includes("Admission") &&
    o.kind !== "Deployment";
  assert.deepEqual(objs.filter(same), full.filter(same));
});

Deno.test("start-up checks: an operator running more than its roles allow is told which rule each controller misses", async () => {
  const objs = await kustomizeObjects<Obj>(join(DEPLOY, "variants", "ratelimit-only"));
  const rules = saRules(objs);
  // The RateLimit-only roles, with every controller enabled (--controllers not set).
  const access = checksOf(CONTROLLER_NAMES);
  const denied = access.filter((a) => !allows(rules, a.check));
  const parts = new Set(denied.map((a) => a.part));
  assert.deepEqual([...parts].sort(), ["scaler", "serverless"] satisfies RbacPart[]);
  const problem = forbiddenByPart(
    denied.map((a) => a.check),
    new Map(access.map((a) => [a.check, a.part])),
    new Map(),
  );
  assert.equal(problem.kind, "forbidden");
  assert.match(problem.message, /^RBAC forbids the operator to /);
  for (const c of ["scaler", "serverless"]) {
    assert.match(
      problem.message,
      new RegExp(
        `controller ${c} needs ClusterRole platform-operator-${c} \\(the deploy/${c} component[^)]*\\), or run without it \\(--controllers\\): missing [^;]*get,list,watch,patch ${
          c === "scaler" ? "scalers" : "serverlesses"
        }\\.operator\\.platform-project\\.io`,
      ),
    );
  }
  assert.doesNotMatch(problem.message, /controller ratelimit/);
  // The details list every denied verb and resource.
  assert.ok(problem.details!.some((d) => d.includes("scaledobjects.keda.sh")));
  // And a grant of the RateLimit's own taken away is named as the RateLimit controller's.
  const without = {
    ...rules,
    cluster: rules.cluster.filter((r) => !(r.resources ?? []).includes("envoyfilters")),
  };
  const rl = checksOf(["ratelimit"]);
  const missing = rl.filter((a) => !allows(without, a.check));
  const rlProblem = forbiddenByPart(
    missing.map((a) => a.check),
    new Map(rl.map((a) => [a.check, a.part])),
    new Map(),
  );
  assert.match(
    rlProblem.message,
    /^RBAC forbids the operator to get,list,watch,create,patch,delete envoyfilters\.networking\.istio\.io: controller ratelimit needs ClusterRole platform-operator-ratelimit .*: missing get,list,watch,create,patch,delete envoyfilters\.networking\.istio\.io$/,
  );
});

Deno.test("deploy/variants/ratelimit-only with deploy/global-engine: the engine's Role is the only access to Secrets, list and watch in its namespace", async () => {
  await withComponent("global-engine", async (dir) => {
    const objs = await kustomizeObjects<Obj>(dir);
    const rules = saRules(objs);
    const engine = engineControllerFor({
      secret: { namespace: GLOBAL_ENGINE_SERVICE.namespace, name: "redis" },
      image: "i",
      replicas: 2,
      resources: DEFAULT_ENGINE_RESOURCES,
    });
    // The RateLimit controller and the engine's: every start-up check granted.
    const alsoUses = [RESOURCES.Event, RESOURCES.Lease];
    const checks = enabledAccess([CONTROLLERS.ratelimit, engine], alsoUses, SA.namespace);
    assert.ok(checks.some((a) => a.part === "global-engine"));
    assert.deepEqual(checks.filter((a) => !allows(rules, a.check)), []);
    const secrets = [...rules.cluster, ...[...rules.namespaced.values()].flat()]
      .filter((r) => (r.resources ?? []).includes("secrets"));
    assert.deepEqual(secrets.map((r) => r.verbs), [["list", "watch"]]);
    assert.deepEqual([...rules.namespaced.keys()].sort(), [
      GLOBAL_ENGINE_SERVICE.namespace,
      SA.namespace,
    ]);
    assert.ok(
      !rules.namespaced.get(SA.namespace)!.some((r) => (r.resources ?? []).includes("secrets")),
    );
    assert.ok(!rules.cluster.some((r) => (r.resources ?? []).includes("secrets")));
  }, join(DEPLOY, "variants", "ratelimit-only"));
});
