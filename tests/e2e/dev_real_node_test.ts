/**
 * `./deno task dev --real-node`, as docs/testing.md names it: besides what `dev` does, it starts
 * the real node and prints how to use it. The printed load-image command loads the printed test
 * image, a Pod with the printed nodeSelector and toleration runs on the node, and Ctrl-C removes
 * the node with the rest. Needs what tools/cluster/real_node_test.ts needs (root, the packages).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DEFAULT_CLUSTER_DIR } from "../../tools/cluster/paths.ts";
import { REPO_ROOT } from "../../tools/operator/process.ts";
import { collectLines, sh, untilPrinted } from "./dev_process.ts";
import { SKIP_REASON, waitFor } from "./harness.ts";
import { REAL_NODE_SKIP } from "../../tools/cluster/real_node_fixtures.ts";

// REAL_NODE_SKIP says why (root, the packages, binaries or Go) when it cannot run.
const skip = SKIP_REASON ?? (REAL_NODE_SKIP || undefined);

/** The value printed after `label` on a line of `err`. */
function printed(err: string[], label: RegExp): string {
  const line = err.find((l) => label.test(l));
  assert.ok(line, `dev printed no line matching ${label}:\n${err.slice(-30).join("\n")}`);
  return line.replace(label, "").trim();
}

Deno.test({
  name: "e2e: ./deno task dev --real-node prints how to use the node, and that works",
  ignore: skip !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const child = new Deno.Command(join(REPO_ROOT, "deno"), {
      args: ["task", "dev", "--real-node"],
      cwd: REPO_ROOT,
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const err: string[] = [];
    const reading = collectLines(child.stderr, err);
    let stopped = false;
    try {
      await untilPrinted(child, err, "Ctrl-C stops", 15 * 60_000);
      const [, kubeconfig, bin] = /^export KUBECONFIG=(\S+) PATH=(\S+):\$PATH$/.exec(
        printed(err, /^\s*(?=export KUBECONFIG=)/),
      )!;
      const env = { KUBECONFIG: kubeconfig, PATH: `${bin}:${Deno.env.get("PATH")}` };
      const [, archive, image] = /^(\S+) \((\S+)\)\.$/.exec(
        printed(err, /^A test image ready to load:/),
      )!;
      const load = printed(err, /^\s*(?=\.\/deno task cluster load-image )/);
      assert.match(await sh(load.replace("ARCHIVE", archive), env), new RegExp(image));
      const pod = {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "tried", namespace: "default" },
        spec: {
          nodeSelector: JSON.parse(printed(err, /^\s*nodeSelector:/)),
          tolerations: JSON.parse(printed(err, /^\s*tolerations:/)),
          containers: [{ name: "c", image, imagePullPolicy: "Never" }],
        },
      };
      await waitFor("the default ServiceAccount", async () => {
        await sh("kubectl get sa default -n default", env);
        return true;
      });
      await sh("kubectl apply -f -", env, JSON.stringify(pod));
      await sh("kubectl wait --for=condition=Ready pod/tried --timeout=90s", env);
      const where = await sh("kubectl get pod tried -o jsonpath={.spec.nodeName}", env);
      assert.equal(where.trim(), "real-node-0");
      const bridge = printed(err, /^Real node real-node-0: .* on bridge /).split(" ")[0];
      child.kill("SIGINT");
      stopped = true;
      assert.equal((await child.status).code, 130, err.slice(-10).join("\n"));
      await reading;
      assert.ok(!await Deno.stat(`/sys/class/net/${bridge}`).then(() => true, () => false));
      const nodeDir = join(DEFAULT_CLUSTER_DIR, "node");
      assert.ok(!await Deno.stat(nodeDir).then(() => true, () => false), `${nodeDir} removed`);
    } finally {
      if (!stopped) {
        try {
          child.kill("SIGINT");
        } catch { /* gone */ }
        await child.status;
      }
    }
  },
});
