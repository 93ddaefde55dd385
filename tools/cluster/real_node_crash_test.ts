/**
 * A real node whose kubelet and containerd died (SIGKILL, as in a crash or an OOM kill) is still
 * removed completely by `down`: its containers and shims, kube-proxy, mounts, the Pods' network
 * namespaces, the bridge and the directory.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { up } from "./mod.ts";
import { mountsUnder } from "./node/teardown.ts";
import { CACHE_DIR } from "./paths.ts";
import { exists } from "../files.ts";
import { isAlive } from "../processes.ts";
import { podcheckPod, processesUnder, REAL_NODE_SKIP } from "./real_node_fixtures.ts";
import { readState } from "./state.ts";
import { ok } from "./test_helpers.ts";

Deno.test({
  name: "down after kubelet and containerd were killed leaves no container, mount, netns or bridge",
  ignore: REAL_NODE_SKIP !== "",
  async fn() {
    const dir = join(CACHE_DIR, `test-crash-${Deno.pid}`);
    const c = await up({ dir, realNode: true });
    const node = c.realNode!;
    try {
      await node.loadImage(node.podcheckArchive);
      await ok(c, ["apply", "-f", "-"], podcheckPod(c, "default", "orphan"));
      await ok(c, ["wait", "--for=condition=Ready", "pod/orphan", "--timeout=90s"]);
      const pids = processesUnder(dir);
      const links = new TextDecoder().decode(
        (await new Deno.Command("ip", {
          args: ["-o", "link", "show", "master", node.network.bridge],
        })
          .output()).stdout,
      );
      const netns = [...links.matchAll(/link-netns (\S+)/g)].map((m) => m[1]);
      // The orphan's and CoreDNS's two (tools/cluster/node/dns.ts).
      assertEquals(netns.length, 3, links);
      const real = (await readState(dir))!.realNode!;
      for (const p of [real.kubelet!, real.containerd!]) Deno.kill(p.pid, "SIGKILL");
      // The Pod's processes (pause, podcheck) and their shims outlive them.
      assert(pids.filter(isAlive).length >= 3, `alive: ${pids.filter(isAlive)}`);

      await c.down();

      for (let i = 0; i < 50 && pids.some(isAlive); i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
      assertEquals(pids.filter(isAlive), []);
      assertEquals(await mountsUnder(dir), []);
      for (const n of netns) assert(!await exists(`/var/run/netns/${n}`), `${n} removed`);
      assert(!await exists(`/sys/class/net/${node.network.bridge}`), "bridge removed");
      assert(!await exists(dir), `${dir} removed`);
    } finally {
      if (await exists(join(dir, "state.json"))) await c.down();
    }
  },
});
