/**
 * The RateLimit-only variant as a platform team deploys it (issue #48): the image built here and
 * loaded into the real node's containerd, `kubectl apply -k deploy/variants/ratelimit-only/` with
 * only the image changed, two replicas running as Pods under the variant's ServiceAccount on a
 * cluster that has none of deploy/'s other roles. Shown on the world: the RateLimit samples settle
 * (the two valid ones Ready, the invalid one Error), the ServiceAccount cannot get, list or watch
 * Secrets in any namespace (`kubectl auth can-i --as`), a Scaler and a Serverless are refused as
 * not served by this installation with nothing installed for them, and the operator's Pods never
 * restart.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { buildImage } from "../../tools/image/image.ts";
import { OPERATOR_USER } from "../../tools/cluster/mod.ts";
import { REAL_NODE_SKIP } from "../../tools/cluster/real_node_fixtures.ts";
import { operatorRbacYaml } from "../../tools/cluster/operator_identity.ts";
import { REPO_ROOT } from "../../tools/operator/process.ts";
import {
  DEPLOYED,
  imageOverlay,
  isReady,
  operatorPods,
  type PodView,
  twoReady,
} from "./deployed.ts";
import { type E2E, e2eSuite, waitFor } from "./harness.ts";

const NS = DEPLOYED.namespace;
const VARIANT = "deploy/variants/ratelimit-only";

/**
 * `kubectl auth can-i VERB RESOURCE --as=<the operator> ...` as the admin asks it, with the groups
 * the ServiceAccount's token carries (a binding to a group counts too): yes or no.
 */
async function canI(env: E2E, ...args: string[]): Promise<string> {
  const groups = ["system:serviceaccounts", `system:serviceaccounts:${NS}`, "system:authenticated"];
  const r = await env.kube.run([
    "auth",
    "can-i",
    ...args,
    `--as=${OPERATOR_USER}`,
    ...groups.map((g) => `--as-group=${g}`),
  ]);
  // can-i exits 1 for "no".
  return r.stdout.trim();
}

e2eSuite("rl-only", async (env, t) => {
  const node = env.cluster.realNode;
  assert.ok(node, "the suite runs with the real node");
  const overlay = await imageOverlay(
    join(env.dir, "overlay"),
    "localhost/platform-operator:dev",
    VARIANT,
  );
  let pods: PodView[] = [];

  await env.step(t, "the cluster has none of deploy/'s roles, as a user's", async () => {
    // The local control plane binds deploy/'s roles (every controller's) to the operator's
    // ServiceAccount for the other tests; a RateLimit-only cluster has none of them.
    await env.kube.must(["delete", "-f", "-", "--ignore-not-found"], {
      stdin: await operatorRbacYaml(),
    });
    assert.equal(await canI(env, "get", "secrets", "-A"), "no");
  });

  await env.step(
    t,
    `the image loads and kubectl apply -k ${VARIANT} runs two replicas`,
    async () => {
      const image = await buildImage((m) => console.error(`[image] ${m}`), { reuse: true });
      assert.ok((await node.loadImage(image.archive)).includes(image.tag), image.tag);
      await node.placeNamespace(NS);
      await env.kube.must(["apply", "-k", overlay]);
      pods = await twoReady(env);
      const d = JSON.parse(
        await env.kube.must(["get", "deployment", DEPLOYED.name, "-n", NS, "-o", "json"]),
      );
      assert.ok(
        d.spec.template.spec.containers[0].args.includes("--controllers=ratelimit"),
        JSON.stringify(d.spec.template.spec.containers[0].args),
      );
      const logs = await env.kube.must(["logs", "-n", NS, pods[0].metadata.name]);
      assert.match(
        logs,
        /cluster checks passed: CRDs installed, access granted/,
        logs.slice(0, 3000),
      );
    },
  );

  await env.step(
    t,
    "the ServiceAccount cannot read Secrets in any namespace, nor use *",
    async () => {
      // A namespace of the user's, created now, and every namespace there is.
      await env.kube.must(["create", "namespace", "team-secrets"]);
      await env.kube.must([
        "create",
        "secret",
        "generic",
        "db",
        "-n",
        "team-secrets",
        "--from-literal=password=hunter2",
      ]);
      const namespaces = (await env.kube.must(["get", "namespaces", "-o", "name"])).trim().split(
        "\n",
      )
        .map((n) => n.replace(/^namespace\//, ""));
      assert.ok(namespaces.includes("kube-system") && namespaces.includes(NS), namespaces.join());
      const answers: string[] = [];
      for (const ns of namespaces) {
        for (const verb of ["get", "list", "watch"]) {
          answers.push(`${ns} ${verb} ${await canI(env, verb, "secrets", "-n", ns)}`);
        }
      }
      assert.deepEqual(answers.filter((a) => !a.endsWith(" no")), [], answers.join("\n"));
      assert.equal(await canI(env, "get", "secrets", "-A"), "no");
      assert.equal(await canI(env, "get", "secret/db", "-n", "team-secrets"), "no");
      assert.equal(await canI(env, "*", "*", "-A"), "no");
      assert.equal(await canI(env, "create", "clusterroles"), "no");
      assert.equal(await canI(env, "create", "deployments", "-n", NS), "no");
      // What it needs is there.
      assert.equal(await canI(env, "patch", "envoyfilters.networking.istio.io", "-A"), "yes");
      assert.equal(
        await canI(env, "patch", "ratelimits.gateway.platform-project.io/status", "-A"),
        "yes",
      );
      console.error(
        `[rl-only] can-i get/list/watch secrets: no in all ${namespaces.length} namespaces`,
      );
    },
  );

  await env.step(
    t,
    "every RateLimit sample settles: the valid ones Ready, the invalid one Error",
    async () => {
      const samples = [
        "demo-workload.yaml",
        "ratelimit-gateway.yaml",
        "ratelimit-workload.yaml",
        "ratelimit-invalid.yaml",
      ];
      for (const s of samples) {
        await env.kube.must(["apply", "-f", join(REPO_ROOT, "samples", s)]);
      }
      const table = await waitFor("the RateLimit samples settle", async () => {
        const table = await env.kube.must(["get", "ratelimits", "-A", "--no-headers"]);
        const rows = table.trim().split("\n");
        return rows.length === 3 && rows.filter((l) => /\sReady\s/.test(l)).length === 2 &&
            rows.filter((l) => /\sError\s/.test(l)).length === 1
          ? table
          : undefined;
      }, {
        timeoutMs: 120_000,
        describe: () => env.kube.must(["get", "ratelimits", "-A", "-o", "wide"]),
      });
      console.error(`[rl-only] ${table}`);
      const filters = await env.kube.list("envoyfilters.networking.istio.io", {
        allNamespaces: true,
      });
      assert.ok(filters.length >= 2, `${filters.length} EnvoyFilters`);
    },
  );

  await env.step(
    t,
    "a Scaler and a Serverless are refused as not served; nothing is installed",
    async () => {
      for (const [file, kind] of [["scaler.yaml", "Scaler"], ["serverless.yaml", "Serverless"]]) {
        const r = await waitFor(`${kind} refused`, async () => {
          const r = await env.kube.run(["apply", "-f", join(REPO_ROOT, "samples", file)]);
          return r.code !== 0 ? r : undefined;
        }, { timeoutMs: 30_000 });
        assert.match(
          r.stderr,
          new RegExp(
            `${kind} is not served by this installation of platform-operator: it runs without the ${kind.toLowerCase()} controller`,
          ),
          r.stderr,
        );
        assert.match(r.stderr, /ValidatingAdmissionPolicy 'platform-operator-\w+-not-served'/);
        console.error(`[rl-only] ${r.stderr.trim()}`);
      }
      assert.equal(
        (await env.kube.must(["get", "scalers,serverlesses", "-A", "-o", "name"])).trim(),
        "",
      );
      const installed = await env.kube.must([
        "get",
        "deployments,services,serviceaccounts,clusterroles,apiservices,validatingwebhookconfigurations,customresourcedefinitions",
        "-A",
        "-l",
        "app.kubernetes.io/managed-by=platform-operator",
        "-o",
        "name",
      ]);
      assert.equal(installed.trim(), "", "nothing of a module is installed");
      for (const crd of ["scaledobjects.keda.sh", "functions.serverless.platform-project.io"]) {
        assert.equal(await env.kube.get("crd", crd), undefined, crd);
      }
    },
  );

  await env.step(t, "the operator's Pods never restarted, and logged no error", async () => {
    const now = await operatorPods(env);
    assert.deepEqual(
      now.map((p) => p.metadata.name).sort(),
      pods.map((p) => p.metadata.name).sort(),
    );
    for (const p of now) {
      assert.ok(isReady(p), p.metadata.name);
      assert.equal(p.status.containerStatuses?.[0].restartCount, 0, p.metadata.name);
      const logs = await env.kube.must(["logs", "-n", NS, p.metadata.name]);
      const errors = logs.split("\n").filter((l) => l.includes('"level":"error"'));
      assert.deepEqual(errors, [], p.metadata.name);
    }
  });
}, { realNode: true, skip: REAL_NODE_SKIP });
