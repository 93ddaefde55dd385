/**
 * Least privilege in deploy/'s roles (deploy/base/rbac.yaml and each controller's component): no
 * `escalate`, no `bind`, no wildcard of the operator's own; what a module's RBAC grants is held in
 * a role of that module's own component, rule for rule, so the API server's escalation check
 * passes without escalate; and get, patch and delete of the cluster-scoped objects a module
 * installs are limited to exactly the names its renderer gives them, in its controller's role.
 */
import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import {
  DEFAULT_RBAC_NAMES,
  grantsRoleName,
  installedNames,
  partRoleName,
} from "../../src/kube/rbac.ts";
import {
  BUILT_IN_ROLES,
  MODULE_CONTROLLERS,
  moduleRbac,
  type PolicyRule,
} from "../../src/kube/module_grants.ts";
import { CONTROLLER_NAMES } from "../../src/controllers/registry.ts";
import { renderKeda } from "../../src/reconcile/scaler/render.ts";
import { renderServerless } from "../../src/reconcile/serverless/render.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { RESOURCES } from "../../src/api/resources.ts";
import { parseScaler } from "../../src/api/scaler.ts";
import { kedaConfig } from "../../src/reconcile/scaler/config.ts";
import { IMAGES, scaler } from "../reconcile/scaler_fixtures.ts";
import { FUNCTION_CRD_LIST, KEDA_CRD_LIST, SETTINGS } from "../reconcile/serverless_fixtures.ts";

/** KEDA's components as a Scaler with an empty spec configures them. */
function defaultScalerComponents() {
  const parsed = parseScaler(scaler({}));
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const config = kedaConfig(parsed.value.spec);
  if (!config.ok) throw new Error(JSON.stringify(config.errors));
  return config.components;
}

const ROOT = new URL("../../", import.meta.url);
type Doc = KubeObject & { rules?: PolicyRule[] };
const read = async (file: string) =>
  parseAllDocuments(await Deno.readTextFile(new URL(`deploy/${file}`, ROOT)))
    .map((d) => d.toJS() as Doc);
const files = ["base/rbac.yaml", ...CONTROLLER_NAMES.map((c) => `${c}/rbac.yaml`)];
const docs = (await Promise.all(files.map(read))).flat();
const role = (kind: string, name: string) => {
  const found = docs.find((d) => d.kind === kind && d.metadata.name === name);
  assert.ok(found, `deploy/'s roles have no ${kind} ${name}`);
  return found.rules ?? [];
};
/** The operator's own rules and each controller's (not what they hold to grant modules). */
const own = ["operator" as const, ...CONTROLLER_NAMES].flatMap((p) =>
  role("ClusterRole", partRoleName(p))
);

/** True when `held` covers `rule` (same groups and resources; verbs and names included). */
function covers(held: readonly PolicyRule[], rule: PolicyRule): boolean {
  return held.some((h) =>
    rule.apiGroups.every((g) => h.apiGroups.includes(g)) &&
    rule.resources.every((r) => h.resources.includes(r)) &&
    rule.verbs.every((v) => h.verbs.includes(v)) &&
    (!h.resourceNames || (rule.resourceNames ?? []).every((n) => h.resourceNames!.includes(n)))
  );
}

Deno.test("deploy/'s roles: no escalate, no bind; the operator's own rules have no wildcard", () => {
  for (const d of docs) {
    for (const r of d.rules ?? []) {
      assert.ok(!r.verbs.some((v) => v === "escalate" || v === "bind"), JSON.stringify(r));
    }
  }
  for (const r of own) {
    assert.ok(![...r.apiGroups, ...r.resources, ...r.verbs].includes("*"), JSON.stringify(r));
    assert.ok(!r.resources.some((x) => x.includes("*")), JSON.stringify(r));
  }
});

for (const module of MODULE_CONTROLLERS) {
  Deno.test(`deploy/${module}'s grants hold every rule the ${module} module's roles grant, and nothing else there`, async () => {
    const component = await read(`${module}/rbac.yaml`);
    const inComponent = (kind: string) =>
      component.find((d) => d.kind === kind && d.metadata.name === grantsRoleName(module))
        ?.rules ?? [];
    await checkGrants(module, inComponent("ClusterRole"), inComponent("Role"));
  });
}

/** The grants `grants` and `grantsNs` hold every rule of `module`'s RBAC, wildcards only its. */
function checkGrants(
  module: (typeof MODULE_CONTROLLERS)[number],
  grants: PolicyRule[],
  grantsNs: PolicyRule[],
): Promise<void> {
  const objects = moduleRbac(DEFAULT_RBAC_NAMES.namespace, [module]);
  const granted = objects.filter((o) => o.kind === "ClusterRole")
    .flatMap((o) => (o as KubeObject & { rules?: PolicyRule[] }).rules ?? []);
  assert.ok(granted.length > 0, "the module grants rules");
  for (const r of granted) assert.ok(covers(grants, r), `not held: ${JSON.stringify(r)}`);
  for (const b of objects.filter((o) => o.kind === "ClusterRoleBinding")) {
    const ref = (b as KubeObject & { roleRef: { name: string } }).roleRef.name;
    for (const r of BUILT_IN_ROLES[ref] ?? []) assert.ok(covers(grants, r), `${ref}: ${r}`);
  }
  for (const o of objects.filter((o) => o.kind === "Role")) {
    for (const r of (o as KubeObject & { rules?: PolicyRule[] }).rules ?? []) {
      assert.ok(covers(grantsNs, r), `not held in the namespace: ${JSON.stringify(r)}`);
    }
  }
  // Wildcards only where a module's own role has them (KEDA's scale targets of any kind).
  for (
    const r of grants.filter((r) => [...r.apiGroups, ...r.resources].some((x) => x.includes("*")))
  ) {
    assert.ok(
      granted.some((g) => JSON.stringify(g.resources) === JSON.stringify(r.resources)),
      JSON.stringify(r),
    );
  }
  return Promise.resolve();
}

Deno.test("get, patch and delete of installed cluster-scoped objects are limited to their names", () => {
  const rendered = [
    ...renderKeda(
      { namespace: "platform-system", owner: "o" },
      defaultScalerComponents(),
      IMAGES,
      KEDA_CRD_LIST,
    ),
    ...renderServerless({
      namespace: "platform-system",
      owner: "o",
      image: "i",
      settings: SETTINGS,
      crds: FUNCTION_CRD_LIST,
    }),
  ].filter((o) => !o.metadata.namespace);
  const names = installedNames();
  // Each module's names are in its own controller's role, none in another's.
  for (const m of MODULE_CONTROLLERS) {
    const mine = role("ClusterRole", partRoleName(m)).flatMap((r) => r.resourceNames ?? []);
    assert.deepEqual(
      [...new Set(mine)].sort(),
      [...new Set(Object.values(installedNames(m)).flat())].sort(),
      m,
    );
  }
  const kinds = new Set(rendered.map((o) => o.kind));
  assert.deepEqual(
    [...kinds].sort(),
    Object.keys(names).sort(),
    "every cluster-scoped kind is named",
  );
  for (const kind of kinds) {
    const got = rendered.filter((o) => o.kind === kind).map((o) => o.metadata.name).sort();
    assert.deepEqual([...names[kind]].sort(), got, kind);
    const named = own.filter((r) => r.resourceNames);
    const plural = RESOURCES[kind as keyof typeof RESOURCES].plural;
    const rules = named.filter((r) => r.resources.includes(plural));
    assert.ok(rules.length > 0, `${kind}: no rule names ${got[0]}`);
    for (const rule of rules) assert.deepEqual(rule.verbs, ["get", "patch", "delete"]);
    assert.deepEqual(rules.flatMap((r) => r.resourceNames ?? []).sort(), [...names[kind]].sort());
    const unnamed = own.filter((r) => !r.resourceNames && r.resources.includes(plural));
    for (const r of unnamed) {
      assert.deepEqual(r.verbs.filter((v) => ["get", "patch", "delete"].includes(v)), []);
    }
  }
});

Deno.test("deploy/base/rbac.yaml: the metrics reader role grants get on /metrics and nothing else, bound to nobody", () => {
  const name = DEFAULT_RBAC_NAMES.metricsReader;
  assert.deepEqual(role("ClusterRole", name), [{ nonResourceURLs: ["/metrics"], verbs: ["get"] }]);
  const bindings = docs.filter((d) => (d as { roleRef?: { name: string } }).roleRef?.name === name);
  assert.deepEqual(bindings, [], "whoever scrapes is bound by the cluster's admin");
});
