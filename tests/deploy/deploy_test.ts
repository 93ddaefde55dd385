import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "yaml";
import { readYamlFiles } from "../../src/cli/crds.ts";
import { staleDeployFiles } from "../../src/cli/deploy.ts";
import { RUN_FLAGS } from "../../src/cli/run_flags.ts";
import { DEFAULT_CONCURRENCY } from "../../src/runtime/mod.ts";
import { partRoleName, rulesFor } from "../../src/kube/rbac.ts";
import { CONTROLLER_NAMES } from "../../src/controllers/registry.ts";
import { DEPLOY, find, loadKustomization } from "./kustomize.ts";

const manifests = await loadKustomization(DEPLOY);
/** The fields of the manifests these tests read. */
interface Labels {
  [key: string]: string;
}
interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}
interface Container {
  args: string[];
  env: { name: string; value?: string; valueFrom?: { fieldRef: { fieldPath: string } } }[];
  ports: { name: string; containerPort: number }[];
  livenessProbe: { httpGet: unknown };
  readinessProbe: { httpGet: unknown };
  resources: Record<"requests" | "limits", { cpu?: string; memory?: string }>;
  securityContext: unknown;
}
interface Doc {
  metadata: { name: string; namespace?: string };
  rules: Rule[];
  subjects: unknown[];
  spec: {
    replicas: number;
    minAvailable: number;
    selector: Labels & { matchLabels: Labels };
    ports: { targetPort: string }[];
    template: {
      metadata: { labels: Labels };
      spec: {
        serviceAccountName: string;
        securityContext: { runAsNonRoot: boolean; seccompProfile: { type: string } };
        containers: Container[];
      };
    };
  };
}

Deno.test("every resource the kustomization references exists and parses", () => {
  const kinds = manifests.map((m) => m.doc.kind).sort();
  for (
    const kind of [
      "Namespace",
      "ServiceAccount",
      "ClusterRole",
      "ClusterRoleBinding",
      "Role",
      "RoleBinding",
    ]
  ) {
    assert.ok(kinds.includes(kind), kind);
  }
  assert.deepEqual(find(manifests, "Deployment").length, 1);
  assert.deepEqual(find(manifests, "PodDisruptionBudget").length, 1);
  for (const m of manifests) {
    assert.ok(m.doc.apiVersion && m.doc.metadata?.name, `${m.file}: apiVersion and metadata.name`);
  }
});

Deno.test("the generated files are current (deno task deploy); the CRDs are crds/'s, not copies", async () => {
  assert.deepEqual(await staleDeployFiles(DEPLOY), [], "run `deno task deploy`");
  const crds = await readYamlFiles(join(DEPLOY, "..", "crds"));
  const installed = manifests.filter((m) => m.doc.kind === "CustomResourceDefinition");
  assert.deepEqual(
    installed.map((m) => m.file).sort(),
    [...crds.keys()].map((n) => `../crds/${n}`).sort(),
  );
  for (const m of installed) {
    assert.equal(`${m.doc.metadata.name}.yaml`, m.file.replace("../crds/", ""));
  }
  const folders = [...Deno.readDirSync(DEPLOY)].filter((e) => e.isDirectory).map((e) => e.name);
  // The chart holds the CRDs' only copies (Helm reads nothing outside a chart), kept current by
  // staleDeployFiles above.
  assert.deepEqual(
    folders.sort(),
    [
      "base",
      "global-engine",
      "helm",
      "istiod",
      "monitoring",
      "operator",
      "ratelimit",
      "scaler",
      "serverless",
      "variants",
    ],
    "no other folder",
  );
});

Deno.test("deploy/ is deploy/base with every controller's component, and runs every controller", async () => {
  const k = parse(
    await Deno.readTextFile(join(DEPLOY, "kustomization.yaml")),
  );
  assert.deepEqual(k.resources, ["base"]);
  assert.deepEqual([...k.components].sort(), [...CONTROLLER_NAMES].sort());
  const [d] = find(manifests, "Deployment") as unknown as Doc[];
  const args = d.spec.template.spec.containers[0].args;
  assert.ok(!args.some((a) => a.startsWith("--controllers")), args.join(" "));
});

Deno.test("RBAC: no wildcard, exactly the generated rules of each part, bound to the operator's ServiceAccount", () => {
  for (const part of ["operator", ...CONTROLLER_NAMES] as const) {
    const [role] = find(manifests, "ClusterRole", partRoleName(part)) as unknown as Doc[];
    assert.ok(role, `ClusterRole ${partRoleName(part)}`);
    for (const rule of role.rules) {
      for (const field of ["apiGroups", "resources", "verbs"] as const) {
        assert.ok(!rule[field].includes("*"), `wildcard in ${field} of ${JSON.stringify(rule)}`);
      }
    }
    assert.deepEqual(role.rules, rulesFor("cluster", part), part);
  }
  const [leases] = find(manifests, "Role", "platform-operator-leader-election") as unknown as Doc[];
  assert.deepEqual(leases.rules, rulesFor("lease-namespace", "operator"));
  const [sa] = find(manifests, "ServiceAccount") as unknown as Doc[];
  for (
    const binding of [
      ...find(manifests, "ClusterRoleBinding"),
      ...find(manifests, "RoleBinding"),
    ] as unknown as Doc[]
  ) {
    assert.deepEqual(binding.subjects, [{
      kind: "ServiceAccount",
      name: sa.metadata.name,
      namespace: sa.metadata.namespace,
    }]);
  }
  assert.equal(leases.metadata.namespace, "platform-system");
});

Deno.test("Deployment: two replicas, probes, resources, locked-down security, POD_NAME from the downward API", () => {
  const [d] = find(manifests, "Deployment") as unknown as Doc[];
  const [sa] = find(manifests, "ServiceAccount") as unknown as Doc[];
  const pod = d.spec.template.spec;
  const [c] = pod.containers;
  assert.equal(d.spec.replicas, 2);
  assert.equal(d.metadata.namespace, "platform-system");
  assert.equal(pod.serviceAccountName, sa.metadata.name);
  assert.equal(pod.securityContext.runAsNonRoot, true);
  assert.equal(pod.securityContext.seccompProfile.type, "RuntimeDefault");
  assert.deepEqual(c.securityContext, {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    runAsNonRoot: true,
    capabilities: { drop: ["ALL"] },
    seccompProfile: { type: "RuntimeDefault" },
  });
  for (const kind of ["requests", "limits"] as const) {
    assert.ok(c.resources[kind].cpu && c.resources[kind].memory, `resources.${kind}`);
  }
  const port = (name: string) => c.ports.find((p) => p.name === name)?.containerPort;
  const flagDefault = (name: string) =>
    Number(RUN_FLAGS.find((f) => f.name === name)!.default!.split(":").pop());
  assert.equal(port("probes"), flagDefault("probe-addr"));
  assert.equal(port("metrics"), flagDefault("metrics-addr"));
  assert.deepEqual(c.livenessProbe.httpGet, { path: "/healthz", port: "probes" });
  assert.deepEqual(c.readinessProbe.httpGet, { path: "/readyz", port: "probes" });
  const env = Object.fromEntries(c.env.map((e) => [e.name, e]));
  assert.equal(env.POD_NAME.valueFrom?.fieldRef.fieldPath, "metadata.name");
  assert.equal(
    env.PLATFORM_OPERATOR_LEASE_NAMESPACE.valueFrom?.fieldRef.fieldPath,
    "metadata.namespace",
  );
  assert.ok(c.args.includes("--leader-elect=true"));
  // The reconciles at once it sets are the operator's default, written out where users tune it.
  assert.equal(env.PLATFORM_OPERATOR_CONCURRENCY.value, String(DEFAULT_CONCURRENCY));
  // Every variable the Deployment sets is one the operator reads.
  const known = new Set(RUN_FLAGS.flatMap((f) => f.env));
  for (const name of Object.keys(env)) assert.ok(known.has(name), `${name} is read by run`);
});

Deno.test("PodDisruptionBudget keeps one replica and selects the Deployment's pods; the Service too", () => {
  const [d] = find(manifests, "Deployment") as unknown as Doc[];
  const [pdb] = find(manifests, "PodDisruptionBudget") as unknown as Doc[];
  const [svc] = find(manifests, "Service") as unknown as Doc[];
  const labels = d.spec.template.metadata.labels;
  assert.equal(pdb.spec.minAvailable, 1);
  for (const [k, v] of Object.entries(pdb.spec.selector.matchLabels)) assert.equal(labels[k], v);
  for (const [k, v] of Object.entries(d.spec.selector.matchLabels)) assert.equal(labels[k], v);
  for (const [k, v] of Object.entries(svc.spec.selector)) assert.equal(labels[k], v);
  assert.equal(svc.spec.ports[0].targetPort, "metrics");
});

Deno.test("the namespace enforces Pod Security's restricted profile", () => {
  const [ns] = find(manifests, "Namespace", "platform-system") as unknown as {
    metadata: { labels: Record<string, string> };
  }[];
  assert.equal(ns.metadata.labels["pod-security.kubernetes.io/enforce"], "restricted");
});

Deno.test("NetworkPolicy: in only to metrics and probes, out only to the API server's, istiod's and DNS's ports", () => {
  const [d] = find(manifests, "Deployment") as unknown as Doc[];
  const [np] = find(manifests, "NetworkPolicy") as unknown as {
    spec: {
      podSelector: { matchLabels: Record<string, string> };
      policyTypes: string[];
      ingress: { from?: unknown; ports: { port: string | number }[] }[];
      egress: { to?: unknown; ports: { port: string | number }[] }[];
    };
  }[];
  const labels = d.spec.template.metadata.labels;
  for (const [k, v] of Object.entries(np.spec.podSelector.matchLabels)) assert.equal(labels[k], v);
  assert.deepEqual(np.spec.policyTypes, ["Ingress", "Egress"]);
  assert.deepEqual(np.spec.ingress.flatMap((r) => r.ports.map((p) => p.port)), [
    "metrics",
    "probes",
  ]);
  const named = d.spec.template.spec.containers[0].ports.map((p) => p.name);
  for (const p of ["metrics", "probes"]) assert.ok(named.includes(p), `the container names ${p}`);
  assert.deepEqual(np.spec.egress.flatMap((r) => r.ports.map((p) => p.port)), [
    443,
    6443,
    15014,
    53,
    53,
  ]);
});
