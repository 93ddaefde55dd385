/**
 * `./deno task dev --real-node`, as docs/testing.md names it: besides what `dev` does, it starts
 * the real node and prints how to use it. The printed load-image command loads the printed test
 * image, a Pod with the printed nodeSelector and toleration runs on the node, and Ctrl-C removes
 * the node with the rest. Needs what tools/cluster/real_node_test.ts needs (root, the packages).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DEFAULT_CLUSTER_DIR } from "../../tools/cluster/paths.ts";
import { devTest, sh } from "./dev_process.ts";
import { SKIP_REASON, waitFor } from "./harness.ts";
import { REAL_NODE_SKIP } from "../../tools/cluster/real_node_fixtures.ts";

// REAL_NODE_SKIP says why (root, the packages, binaries or Go) when it cannot run.
const skip = SKIP_REASON ?? (REAL_NODE_SKIP || undefined);

devTest(
  "e2e: ./deno task dev --real-node prints how to use the node, and that works",
  { args: ["--real-node"], readyMs: 15 * 60_000, skip },
  async (dev) => {
    const env = dev.env();
    const [, archive, image] = dev.printed(/^A test image ready to load:\s*(\S+) \((\S+)\)\.$/);
    const [load] = dev.printed(/^\.\/deno task cluster load-image .*$/);
    assert.match(await sh(load.replace("ARCHIVE", archive), env), new RegExp(image));
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "tried", namespace: "default" },
      spec: {
        nodeSelector: JSON.parse(dev.printed(/^nodeSelector:(.*)$/)[1]),
        tolerations: JSON.parse(dev.printed(/^tolerations:(.*)$/)[1]),
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
    const [, bridge] = dev.printed(/^Real node real-node-0: .* on bridge (\S+)/);
    await dev.stop();
    assert.ok(!await Deno.stat(`/sys/class/net/${bridge}`).then(() => true, () => false));
    const nodeDir = join(DEFAULT_CLUSTER_DIR, "node");
    assert.ok(!await Deno.stat(nodeDir).then(() => true, () => false), `${nodeDir} removed`);
  },
);
