/**
 * E2E install with Helm, once: the built helm (tools/helm/) installs the generated chart
 * deploy/helm/platform-operator into the local control plane, and every object `kubectl kustomize
 * deploy/` renders is then on the API server with each field it renders (the server adds defaults;
 * Helm adds its release annotations and its managed-by label). The operator's Pods are not checked:
 * this control plane's node is simulated, so it runs no container (tests/e2e/deployed_test.ts runs
 * deploy/ on a real node); the objects are what the chart is responsible for. `helm uninstall` then
 * removes every object but the CRDs, which Helm installs from the chart's crds/ and never deletes.
 * The control plane comes with the operator's namespace and roles (the other e2e tests run the
 * operator as that identity); they are removed first, so Helm installs into a cluster as a user's.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import type { KubeObject } from "../../src/api/object.ts";
import { ensureHelm } from "../../tools/helm/build.ts";
import { OPERATOR_NAMESPACE, operatorRbacYaml } from "../../tools/cluster/operator_identity.ts";
import { type E2E, e2eSuite, waitFor } from "./harness.ts";
import { DEPLOY } from "../deploy/kustomize.ts";

const CHART = join(DEPLOY, "helm", "platform-operator");
const RELEASE = "platform-operator";
/** Helm adds this label to what it installs; kustomize's value of it is replaced. */
const HELM_LABEL = "app.kubernetes.io/managed-by";

async function helm(env: E2E, args: string[]): Promise<string> {
  const home = join(env.dir, "helm");
  const out = await new Deno.Command(await ensureHelm(), {
    args: [...args, `--kubeconfig=${env.cluster.kubeconfig}`],
    env: {
      HELM_CACHE_HOME: join(home, "cache"),
      HELM_CONFIG_HOME: join(home, "config"),
      HELM_DATA_HOME: join(home, "data"),
    },
    stdin: "null",
  }).output();
  const dec = new TextDecoder();
  if (!out.success) {
    throw new Error(
      `helm ${args.join(" ")} failed:\n${dec.decode(out.stderr)}${dec.decode(out.stdout)}`,
    );
  }
  return dec.decode(out.stdout);
}

/** The paths (`a.b[0].c`) where `want` has a value that `got` lacks or differs in. */
function missing(want: unknown, got: unknown, path = ""): string[] {
  if (Array.isArray(want)) {
    if (!Array.isArray(got) || got.length !== want.length) return [path];
    return want.flatMap((w, i) => missing(w, got[i], `${path}[${i}]`));
  }
  if (want !== null && typeof want === "object") {
    if (got === null || typeof got !== "object") return [path];
    return Object.entries(want).flatMap(([k, w]) =>
      missing(w, (got as Record<string, unknown>)[k], path ? `${path}.${k}` : k)
    );
  }
  return want === got ? [] : [`${path}: ${JSON.stringify(want)} != ${JSON.stringify(got)}`];
}

const ref = (o: KubeObject) =>
  `${o.kind.toLowerCase()}.${o.apiVersion.includes("/") ? o.apiVersion.split("/")[0] : ""}`
    .replace(/\.$/, "");
const where = (o: KubeObject) => o.metadata.namespace;
const idOf = (o: KubeObject) => `${o.kind} ${where(o) ?? ""}/${o.metadata.name}`;

e2eSuite("helm", async (env, t) => {
  const rendered = parseAllDocuments(await env.kube.must(["kustomize", DEPLOY]))
    .map((d) => d.toJS() as KubeObject).filter(Boolean);
  const crds = rendered.filter((o) => o.kind === "CustomResourceDefinition");
  const others = rendered.filter((o) => o.kind !== "CustomResourceDefinition");

  await env.step(t, "the cluster is as a user's: without the operator's identity", async () => {
    // The local control plane installs deploy/'s namespace, ServiceAccount and roles for the
    // operator's own identity (tools/cluster/operator_identity.ts); Helm refuses to take over
    // objects it did not create, and a user's cluster has none of them.
    await env.kube.run(["delete", "-f", "-", "--ignore-not-found", "--wait=false"], {
      stdin: await operatorRbacYaml(),
    });
    await env.kube.delete("namespace", [OPERATOR_NAMESPACE]);
    await env.waitGone("namespace", undefined, OPERATOR_NAMESPACE, { timeoutMs: 120_000 });
  });

  const installed = await env.step(
    t,
    "helm install creates what kubectl kustomize deploy/ renders",
    async () => {
      const out = await helm(env, ["install", RELEASE, CHART, "--namespace", "default"]);
      assert.match(out, /STATUS: deployed/, out);
      assert.ok(crds.length >= 3 && others.length >= 10, `rendered ${rendered.map(idOf)}`);
      const problems: string[] = [];
      for (const o of rendered) {
        const live = await env.kube.get(ref(o), o.metadata.name, where(o));
        if (!live) {
          problems.push(`${idOf(o)}: not on the API server`);
          continue;
        }
        const want = structuredClone(o);
        delete want.metadata.labels?.[HELM_LABEL];
        if (o.kind !== "CustomResourceDefinition") {
          assert.equal(live.metadata.annotations?.["meta.helm.sh/release-name"], RELEASE, idOf(o));
        }
        problems.push(...missing(want, live).map((p) => `${idOf(o)}: ${p}`));
      }
      assert.deepEqual(problems, []);
    },
  );
  if (!installed) return;

  await env.step(t, "helm uninstall removes them all but the CRDs", async () => {
    const out = await helm(env, ["uninstall", RELEASE, "--namespace", "default", "--wait"]);
    assert.match(out, /release "platform-operator" uninstalled/, out);
    for (const o of others) {
      await waitFor(`${idOf(o)} to be gone`, async () => {
        const live = await env.kube.get(ref(o), o.metadata.name, where(o));
        return live === undefined;
      }, { timeoutMs: 120_000 });
    }
    for (const c of crds) assert.ok(await env.kube.get("crd", c.metadata.name), c.metadata.name);
    assert.equal((await helm(env, ["list", "--namespace", "default", "-q"])).trim(), "");
  });
});
