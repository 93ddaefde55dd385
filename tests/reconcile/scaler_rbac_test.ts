/**
 * KEDA's RBAC as KEDA's release has it: the namespaced Role (without it KEDA's operator cannot
 * write its certificate Secret) and every permission of KEDA's own roles (checked against
 * config/rbac/role.yaml of KEDA's module; needs go).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { kedaRbac } from "../../src/reconcile/scaler/rbac.ts";
import { goVersion, runGo } from "../../tools/gobuild.ts";
import { KEDA_GO_DIR, KEDA_MODULE } from "../../tools/keda/build.ts";

const target = { namespace: "keda-system", owner: "keda-system.keda" };

Deno.test("KEDA's operator may write Secrets and Leases in its own namespace only", () => {
  const objs = kedaRbac(target);
  const role = objs.find((o) => o.kind === "Role");
  assert.ok(role, "no Role");
  assert.equal(role.metadata.namespace, "keda-system");
  const rules = (role as unknown as { rules: { resources: string[]; verbs: string[] }[] }).rules;
  const verbs = (r: string) => rules.find((x) => x.resources.includes(r))?.verbs ?? [];
  for (const r of ["secrets", "leases"]) {
    for (const v of ["create", "get", "update", "watch"]) {
      assert.ok(verbs(r).includes(v), `${r}: ${v}`);
    }
  }
  const binding = objs.find((o) => o.kind === "RoleBinding") as unknown as {
    metadata: { namespace: string };
    roleRef: { kind: string; name: string };
    subjects: { kind: string; name: string; namespace: string }[];
  };
  assert.equal(binding.metadata.namespace, "keda-system");
  assert.deepEqual(binding.roleRef.kind + "/" + binding.roleRef.name, `Role/${role.metadata.name}`);
  assert.deepEqual(binding.subjects, [
    { kind: "ServiceAccount", name: "keda-operator", namespace: "keda-system" },
  ]);
  // The cluster-wide role still only reads Secrets (as KEDA's release manifest).
  const cluster = objs.find((o) => o.kind === "ClusterRole" && o.metadata.name === "keda-operator");
  const clusterRules = (cluster as unknown as { rules: { resources: string[]; verbs: string[] }[] })
    .rules;
  const secrets = clusterRules.find((r) => r.resources.includes("secrets"));
  assert.deepEqual(secrets?.verbs, ["get", "list", "watch"]);
});

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
/** Each rule as group/resource:verb. */
const grants = (rules: readonly Rule[]) =>
  new Set(
    rules.flatMap((r) =>
      r.apiGroups.flatMap((g) =>
        r.resources.flatMap((res) => r.verbs.map((v) => `${g}/${res}:${v}`))
      )
    ),
  );
const noGo = await goVersion(KEDA_GO_DIR) === null;

Deno.test({
  name: "KEDA's operator gets every permission of KEDA's own ClusterRole and Role (config/rbac)",
  ignore: noGo,
  async fn() {
    const info = await runGo(["mod", "download", "-json", KEDA_MODULE], KEDA_GO_DIR);
    const dir = (JSON.parse(info) as { Dir: string }).Dir;
    const theirs = parseAllDocuments(await Deno.readTextFile(join(dir, "config/rbac/role.yaml")))
      .map((d) => d.toJSON() as { kind: string; metadata: { name: string }; rules: Rule[] });
    assert.deepEqual(theirs.map((d) => d.kind).sort(), ["ClusterRole", "Role"]);
    const ours = kedaRbac(target) as unknown as {
      kind: string;
      metadata: { name: string };
      rules?: Rule[];
    }[];
    for (const d of theirs) {
      const o = ours.find((x) => x.kind === d.kind && x.metadata.name === d.metadata.name);
      const have = grants(o?.rules ?? []);
      const missing = [...grants(d.rules)].filter((g) => !have.has(g));
      assert.deepEqual(missing, [], `${d.kind} ${d.metadata.name} lacks what KEDA's has`);
    }
  },
});
