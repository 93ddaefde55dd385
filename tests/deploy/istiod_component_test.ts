/**
 * deploy/istiod/, the kustomize Component that makes the operator find istiod's replicas
 * (--istiod-service): a Role in istiod's namespace allowing exactly list and watch of
 * endpointslices (what src/kube/istiod_endpoints.ts does, and what the startup checks ask), bound
 * to deploy/'s ServiceAccount, and the Deployment's variable naming istio-system/istiod, as the
 * control plane's kubectl renders deploy/ with the component.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { envName, parseRunFlags } from "../../src/cli/run_flags.ts";
import { discoveryChecks } from "../../src/kube/istiod_endpoints.ts";
import { ISTIOD_SERVICE_ENV } from "../../src/deploy/istiod_objects.ts";
import { ruleAllows } from "../../src/kube/self_access.ts";
import {
  DEPLOY,
  find,
  kustomizeObjects,
  loadKustomization,
  withIstiodComponent,
} from "./kustomize.ts";

type Obj = {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  subjects?: unknown[];
  roleRef?: unknown;
  spec?: {
    template: {
      spec: { containers: { name: string; env?: { name: string; value?: string }[] }[] };
    };
  };
};

const key = (o: Obj) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;

function kustomize(dir: string): Promise<Obj[]> {
  return kustomizeObjects<Obj>(dir);
}

Deno.test("deploy/istiod: a Role in istio-system with exactly list and watch of endpointslices, bound to the operator", async () => {
  const deployed = await loadKustomization(DEPLOY);
  const [sa] = find(deployed, "ServiceAccount");
  const docs = parseAllDocuments(await Deno.readTextFile(join(DEPLOY, "istiod", "rbac.yaml")))
    .map((d) => d.toJS() as Obj);
  assert.deepEqual(docs.map(key), [
    "Role/istio-system/platform-operator-istiod",
    "RoleBinding/istio-system/platform-operator-istiod",
  ]);
  const [role, binding] = docs;
  assert.deepEqual(role.rules, [{
    apiGroups: ["discovery.k8s.io"],
    resources: ["endpointslices"],
    verbs: ["list", "watch"],
  }]);
  // What the operator checks at start is exactly what the Role allows.
  const checks = discoveryChecks([{ namespace: "istio-system", name: "istiod" }]);
  for (const { check } of checks) assert.ok(role.rules!.some((r) => ruleAllows(r, check)));
  assert.equal(role.rules!.flatMap((r) => r.verbs).length, checks.length);
  assert.deepEqual(binding.roleRef, {
    apiGroup: "rbac.authorization.k8s.io",
    kind: "Role",
    name: "platform-operator-istiod",
  });
  assert.deepEqual(binding.subjects, [{
    kind: "ServiceAccount",
    name: sa.metadata.name,
    namespace: sa.metadata.namespace,
  }]);
});

Deno.test("deploy/ with components: [deploy/istiod] is deploy/ plus the Role and the variable naming istiod's Service", async () => {
  assert.equal(ISTIOD_SERVICE_ENV, envName("istiod-service"));
  await withIstiodComponent(async (dir) => {
    const plain = await kustomize(DEPLOY);
    const withIstiod = await kustomize(dir);
    assert.deepEqual(
      withIstiod.map(key).filter((k) => !plain.map(key).includes(k)).sort(),
      [
        "Role/istio-system/platform-operator-istiod",
        "RoleBinding/istio-system/platform-operator-istiod",
      ],
    );
    const container = (objs: Obj[]) =>
      objs.find((o) => o.kind === "Deployment")!.spec!.template.spec.containers.find((c) =>
        c.name === "operator"
      )!;
    const before = container(plain).env ?? [];
    const after = container(withIstiod).env ?? [];
    assert.ok(
      !before.some((e) => e.name === ISTIOD_SERVICE_ENV),
      "deploy/ alone does not ask istiod",
    );
    const added = after.filter((e) => !before.some((b) => b.name === e.name));
    assert.deepEqual(added, [{ name: ISTIOD_SERVICE_ENV, value: "istio-system/istiod" }]);
    // The operator reads it as the flag.
    const parsed = parseRunFlags([], (n) => added.find((e) => e.name === n)?.value);
    assert.deepEqual(parsed.kind === "options" && parsed.options.istiodServices, [
      { namespace: "istio-system", name: "istiod" },
    ]);
    // Everything else is deploy/'s, unchanged.
    const rest = (objs: Obj[]) =>
      objs.filter((o) => o.kind !== "Deployment" && o.metadata.name !== "platform-operator-istiod");
    assert.deepEqual(rest(withIstiod), rest(plain));
  });
});
