/**
 * The real node: Pods run in containers (runc through containerd and kubelet) under a restricted
 * security context, with the projected ServiceAccount token, logs, readiness probes and an IP on
 * the node's own bridge; faults (missing containerd, a kubelet that cannot start, an archive that
 * is no image) are clear errors; `down` leaves nothing behind. Needs root, the Debian packages
 * containerd, runc and containernetworking-plugins, and built (or buildable) binaries.
 */
import { deepStrictEqual as assertEquals, ok as assert, rejects } from "node:assert/strict";
import { join } from "node:path";
import { type ClusterHandle, REAL_NODE_NAME, up } from "./mod.ts";
import { mountsUnder } from "./node/teardown.ts";
import { NO_REGISTRY } from "./node/containerd.ts";
import { CACHE_DIR } from "./paths.ts";
import { exists } from "../files.ts";
import { isAlive } from "../processes.ts";
import { readState } from "./state.ts";
import { deployment, eventually, ok } from "./test_helpers.ts";
import { podcheckPod, processesUnder, REAL_NODE_SKIP } from "./real_node_fixtures.ts";

const ignore = REAL_NODE_SKIP !== "";

const log = (msg: string) => console.error(`[real-node] ${msg}`);

Deno.test("a missing containerd is an error naming it and the packages, before anything starts", async () => {
  const dir = join(CACHE_DIR, `test-missing-${Deno.pid}`);
  await rejects(
    up({ dir, realNode: { programs: { containerd: "/nonexistent/bin/containerd" } } }),
    (e: Error) => {
      assert(e.message.includes("containerd (/nonexistent/bin/containerd)"), e.message);
      assert(e.message.includes("apt-get install containerd runc containernetworking-plugins"));
      return true;
    },
  );
  assert(!await exists(join(dir, "state.json")), "no cluster was started");
});

Deno.test({
  name: "real node: restricted Pod with token, logs, probe and bridge IP; faults; clean down",
  ignore,
  async fn(t) {
    const dir = join(CACHE_DIR, `test-real-${Deno.pid}`);
    const c = await up({ dir, log, realNode: true });
    const node = c.realNode!;
    const bridge = node.network.bridge;
    let stopped = false;
    try {
      await t.step("the node is Ready, labelled and tainted; kwok keeps its own node", async () => {
        const n = JSON.parse(await ok(c, ["get", "node", REAL_NODE_NAME, "-o", "json"]));
        assertEquals(n.metadata.labels[node.label.key], node.label.value);
        assertEquals(n.spec.taints, [node.taint]);
        assertEquals(n.status.nodeInfo.kubeletVersion, (await readVersions(c)).server);
        const ready = await ok(c, [
          "get",
          "nodes",
          "-o",
          'jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}',
        ]);
        assertEquals(ready.trim().split(" ").sort(), [
          "kwok-node-0=True",
          `${REAL_NODE_NAME}=True`,
        ]);
      });

      await t.step("with ServiceAccount admission on, kwok Pods still become Ready", async () => {
        await ok(c, ["create", "namespace", "kwok-apps"]);
        await ok(c, ["apply", "-f", "-"], deployment("kwok-apps", "web"));
        await ok(c, ["rollout", "status", "-n", "kwok-apps", "deploy/web", "--timeout=90s"]);
        const pod = JSON.parse(await ok(c, ["get", "pods", "-n", "kwok-apps", "-o", "json"]))
          .items[0];
        assertEquals(
          pod.spec.nodeName,
          "kwok-node-0",
          "an untolerating Pod stays off the real node",
        );
        assert(
          pod.spec.volumes.some((v: { name: string }) => v.name.startsWith("kube-api-access-")),
          "the admission plugin added the token volume",
        );
      });

      await t.step(
        "loadImage: a missing file and an archive that is no image are errors",
        async () => {
          await rejects(node.loadImage(join(dir, "no-such.tar")), /does not exist/);
          const junk = await Deno.makeTempFile({ suffix: "-junk.tar" });
          await Deno.writeTextFile(junk, "not an image archive");
          await rejects(node.loadImage(junk), /ctr images import .*-junk\.tar failed/);
          await Deno.remove(junk);
          assertEquals(await node.loadImage(node.podcheckArchive), [node.podcheckImage]);
        },
      );

      const ns = "real-apps";
      await t.step(
        "a Pod as 65532, read-only root, no capabilities, runs Ready on the node",
        async () => {
          await ok(c, ["create", "namespace", ns]);
          // Admission refuses Pods until the namespace's default ServiceAccount exists.
          await eventually(
            "the default ServiceAccount",
            async () =>
              (await c.kubectl(["get", "sa", "default", "-n", ns])).code === 0 || undefined,
          );
          await ok(c, ["apply", "-f", "-"], podcheckPod(c, ns, "check"));
          await ok(c, ["wait", "-n", ns, "--for=condition=Ready", "pod/check", "--timeout=90s"]);
          const pod = JSON.parse(await ok(c, ["get", "pod", "check", "-n", ns, "-o", "json"]));
          assertEquals(pod.spec.nodeName, REAL_NODE_NAME);
          assertEquals(pod.status.containerStatuses[0].ready, true);
        },
      );

      await t.step(
        "kubectl logs shows the user, capabilities, read-only root and the token",
        async () => {
          const logs = await eventually("the readiness probe in the log", async () => {
            const out = await ok(c, ["logs", "-n", ns, "check"]);
            return out.includes("readiness probe from kube-probe/") ? out : undefined;
          });
          assert(logs.includes("uid: 65532\n"), logs);
          assert(logs.includes("capeff: 0000000000000000\n"), logs);
          assert(
            logs.includes("rootfs writable: no (open /podcheck-write-test: read-only file system)"),
            logs,
          );
          // Read from /var/run/secrets/kubernetes.io/serviceaccount/token inside the container.
          assert(logs.includes(`token subject: system:serviceaccount:${ns}:default\n`), logs);
          assert(/ca\.crt: \d+ bytes/.test(logs), logs);
          // At KUBERNETES_SERVICE_HOST (the kubernetes Service), through kube-proxy's rules.
          assert(logs.includes("api: 200 OK\n"), logs);
        },
      );

      await t.step(
        "the Pod has an IP on the node's bridge and answers the host over HTTP",
        async () => {
          const ip =
            (await ok(c, ["get", "pod", "check", "-n", ns, "-o", "jsonpath={.status.podIP}"]))
              .trim();
          const prefix = node.network.subnet.replace(/0\/24$/, "");
          assert(
            ip.startsWith(prefix) && ip !== node.network.hostIp,
            `${ip} in ${node.network.subnet}`,
          );
          const res = await fetch(`http://${ip}:8080/from-test`, {
            signal: AbortSignal.timeout(5_000),
          });
          assertEquals(await res.text(), "podcheck check\n");
          const logs = await ok(c, ["logs", "-n", ns, "check"]);
          assert(logs.includes(`request /from-test from ${node.network.hostIp}:`), logs);
        },
      );

      await t.step("an image that was not loaded is not pulled from anywhere", async () => {
        const pod = JSON.parse(podcheckPod(c, ns, "unloaded"));
        pod.spec.containers[0].image = "registry.example/never-loaded:1";
        pod.spec.containers[0].imagePullPolicy = "IfNotPresent";
        await ok(c, ["apply", "-f", "-"], JSON.stringify(pod));
        const why = await eventually("the pull to fail", async () => {
          const s = await ok(c, ["get", "pod", "unloaded", "-n", ns, "-o", "json"]);
          const waiting = JSON.parse(s).status.containerStatuses?.[0]?.state?.waiting;
          return /ErrImagePull|ImagePullBackOff/.test(waiting?.reason ?? "") ? waiting : undefined;
        });
        assert(String(why.message).includes(NO_REGISTRY.replace("http://", "")), why.message);
      });

      await t.step({
        name: "an image from `podman save` loads and runs (as the image build delivers it)",
        ignore: !podman,
        async fn() {
          const ref = "localhost/platform-project/podcheck:podman";
          const tmp = await Deno.makeTempDir({ prefix: "real-node-saved-" });
          try {
            const archive = join(tmp, "saved.tar");
            await podmanSave(node.podcheckArchive, node.podcheckImage, ref, archive);
            assertEquals(await node.loadImage(archive), [ref]);
          } finally {
            await Deno.remove(tmp, { recursive: true });
          }
          const pod = JSON.parse(podcheckPod(c, ns, "saved"));
          pod.spec.containers[0].image = ref;
          await ok(c, ["apply", "-f", "-"], JSON.stringify(pod));
          await ok(c, ["wait", "-n", ns, "--for=condition=Ready", "pod/saved", "--timeout=90s"]);
        },
      });
    } finally {
      await c.down();
      stopped = true;
    }

    await t.step(
      "down leaves no process, mount, bridge, kube-proxy chain or directory",
      async () => {
        assert(stopped);
        assertEquals(processesUnder(dir).filter(isAlive), []);
        assertEquals(await mountsUnder(dir), []);
        assert(!await exists(`/sys/class/net/${bridge}`), `${bridge} removed`);
        const nat = await new Deno.Command("iptables", { args: ["-t", "nat", "-S"] }).output();
        const rules = new TextDecoder().decode(nat.stdout);
        assert(!rules.includes("KUBE-"), `kube-proxy's chains are gone:\n${rules}`);
        assert(!await exists(dir), `${dir} removed`);
        assertEquals(await readState(dir), null);
      },
    );
  },
});

Deno.test({
  name: "a kubelet that cannot start is an error with its log, and nothing is left running",
  ignore,
  async fn() {
    const dir = join(CACHE_DIR, `test-badkubelet-${Deno.pid}`);
    await rejects(
      up({ dir, log, realNode: { kubeletFlags: ["--no-such-flag"] } }),
      (e: Error) => {
        assert(/kubelet \(pid \d+\) exited/.test(e.message), e.message);
        assert(e.message.includes("unknown flag: --no-such-flag"), e.message);
        return true;
      },
    );
    assertEquals(processesUnder(dir).filter(isAlive), []);
    assertEquals(await mountsUnder(dir), []);
    assertEquals(await readState(dir), null);
    await Deno.remove(dir, { recursive: true }); // the logs a failed start keeps
  },
});

const podman = await new Deno.Command("podman", { args: ["--version"] }).output()
  .then((o) => o.success, () => false);

/**
 * Loads an OCI archive into a podman store of its own (the machine's is other people's), tags
 * image `from` as `ref` and writes `podman save` of it (docker-archive, podman's default) to `out`.
 */
async function podmanSave(oci: string, from: string, ref: string, out: string): Promise<void> {
  const store = await Deno.makeTempDir({ prefix: "real-node-podman-" });
  const own = ["--root", `${store}/root`, "--runroot", `${store}/run`, "--storage-driver", "vfs"];
  try {
    for (const args of [["load", "-i", oci], ["tag", from, ref], ["save", "-o", out, ref]]) {
      const o = await new Deno.Command("podman", { args: [...own, ...args] }).output();
      assert(o.success, `podman ${args.join(" ")}: ${new TextDecoder().decode(o.stderr)}`);
    }
  } finally {
    await Deno.remove(store, { recursive: true });
  }
}

async function readVersions(c: ClusterHandle): Promise<{ server: string }> {
  const v = JSON.parse(await ok(c, ["version", "-o", "json"]));
  return { server: v.serverVersion.gitVersion };
}
