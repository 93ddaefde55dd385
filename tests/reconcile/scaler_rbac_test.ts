/** KEDA's namespaced Role: without it KEDA's operator cannot write its certificate Secret. */
import assert from "node:assert/strict";
import { kedaRbac } from "../../src/reconcile/keda/rbac.ts";

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
