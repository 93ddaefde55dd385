/**
 * The real istiod of the local cluster (`up({ mesh: true })`): built from the pinned
 * istio.io/istio, ready (its caches, Istio's CRDs included, synced), and watching the real API
 * server: the EnvoyFilter the operator renders for samples/ratelimit-workload.yaml, accepted by
 * Istio's own CRD schema, and the Pod and Service of samples/demo-workload.yaml appear in its
 * debug endpoints. Those answer a Kubernetes token (audience `istio-ca`) by namespace as in
 * production: 401 without one or with another audience, 403 for a namespace that is neither the
 * root nor allowed, 200 for the root namespace and the operator's. istiod restarts on its ports;
 * `down` stops it. The cluster CLI's `up --mesh`, `status`, `env` and `down` run too.
 *
 * Needs Go (the control plane and pilot-discovery are built once into .cache/).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { type ClusterHandle, clusterStatus, up } from "../../tools/cluster/mod.ts";
import { CACHE_DIR, REPO_ROOT } from "../../tools/cluster/paths.ts";
import { crdNames, istioCrdsYaml } from "../../tools/cluster/istio_crds.ts";
import { readState } from "../../tools/cluster/state.ts";
import { isAlive } from "../../tools/processes.ts";
import { renderCases, repoSources } from "../../tools/istio-check/render.ts";
import { eventually, ok } from "../../tools/cluster/test_helpers.ts";
import { runDenoScript } from "../command.ts";

const log = (msg: string) => console.error(`[cluster] ${msg}`);

/** The EnvoyFilter the operator renders for samples/ratelimit-workload.yaml. */
async function sampleEnvoyFilter(): Promise<Record<string, unknown>> {
  const sources = (await repoSources()).filter((s) => s.name === "samples/ratelimit-workload.yaml");
  assert.equal(sources.length, 1);
  const { cases } = renderCases(sources);
  assert.equal(cases.length, 1);
  return cases[0].envoyFilter as unknown as Record<string, unknown>;
}

/** The configs `/debug/configz` lists, as kind/namespace/name. */
function configKeys(body: string): string[] {
  const list = JSON.parse(body) as {
    kind?: string;
    metadata?: { name?: string; namespace?: string };
  }[];
  return list.map((c) => `${c.kind}/${c.metadata?.namespace}/${c.metadata?.name}`);
}

Deno.test({
  name:
    "istiod in the local cluster: ready, sees an EnvoyFilter, a Pod and a Service, debug auth on",
  async fn(t) {
    const dir = join(CACHE_DIR, `test-istiod-${Deno.pid}`);
    const c: ClusterHandle = await up({ dir, log, mesh: true });
    const istiod = c.istiod;
    assert.ok(istiod, "up({ mesh: true }) gives an istiod");
    const firstPid = istiod.pid;
    try {
      await t.step("istiod is ready, and status reports it healthy", async () => {
        const res = await fetch(istiod.ready);
        await res.body?.cancel();
        assert.equal(res.status, 200);
        assert.ok(istiod.readySeconds > 0 && istiod.readySeconds < 120, `${istiod.readySeconds}`);
        const st = (await clusterStatus(dir)).find((s) => s.name === "istiod");
        assert.deepEqual([st?.pid, st?.alive, st?.healthy], [istiod.pid, true, true]);
        assert.match(istiod.xds, /^127\.0\.0\.1:\d+$/);
        assert.match(istiod.debug, /^http:\/\/127\.0\.0\.1:\d+$/);
        assert.deepEqual(
          [istiod.clusterId, istiod.rootNamespace, istiod.debugAllowedNamespaces],
          ["Kubernetes", "mesh-system", ["platform-system"]],
        );
        const log = await Deno.readTextFile(istiod.log);
        assert.match(log, /All caches have been synced up in/);
        // Its identity has every permission it asks for (Istio's istiod roles).
        assert.doesNotMatch(log, /forbidden/i);
      });

      await t.step("Istio's own CRDs are installed, not the stand-in", async () => {
        const want = crdNames(await istioCrdsYaml());
        assert.equal(want.length, 15);
        const names = (await ok(c, ["get", "crd", "-o", "name"])).trim().split("\n");
        for (const n of want) {
          assert.ok(names.includes(`customresourcedefinition.apiextensions.k8s.io/${n}`), n);
        }
        const ef = JSON.parse(
          await ok(c, ["get", "crd", "envoyfilters.networking.istio.io", "-o", "json"]),
        );
        const spec = ef.spec.versions[0].schema.openAPIV3Schema.properties.spec;
        // The stand-in keeps the spec open; Istio's schema describes configPatches.
        assert.ok(spec.properties?.configPatches, "Istio's EnvoyFilter schema");
      });

      await t.step("the sample's EnvoyFilter, Pod and Service are applied", async () => {
        const demo = await Deno.readTextFile(join(REPO_ROOT, "samples", "demo-workload.yaml"));
        assert.equal(parseAllDocuments(demo).length, 3);
        await ok(c, ["apply", "-f", "-"], demo);
        await ok(c, ["apply", "-f", "-"], JSON.stringify(await sampleEnvoyFilter()));
        await ok(c, ["rollout", "status", "-n", "demo", "deploy/httpbin", "--timeout=90s"]);
      });

      const podIp = (await ok(c, [
        "get",
        "pods",
        "-n",
        "demo",
        "-l",
        "app=httpbin",
        "-o",
        "jsonpath={.items[0].status.podIP}",
      ])).trim();
      const efName = (await sampleEnvoyFilter()) as { metadata: { name: string } };
      const rootToken = await istiod.token("mesh-system", "istiod");

      await t.step("istiod sees them, asked with a root namespace token", async () => {
        await eventually("the EnvoyFilter in /debug/configz", async () => {
          const r = await istiod.get("/debug/configz", { token: rootToken });
          assert.equal(r.status, 200, r.body);
          const keys = configKeys(r.body);
          return keys.includes(`EnvoyFilter/demo/${efName.metadata.name}`) ? true : undefined;
        });
        await eventually("the Service in /debug/registryz", async () => {
          const r = await istiod.get("/debug/registryz", { token: rootToken });
          assert.equal(r.status, 200, r.body);
          const hosts = (JSON.parse(r.body) as { hostname: string }[]).map((s) => s.hostname);
          return hosts.includes("httpbin.demo.svc.cluster.local") ? true : undefined;
        });
        assert.match(podIp, /^\d+\.\d+\.\d+\.\d+$/);
        await eventually("the Pod's address in /debug/endpointShardz", async () => {
          const r = await istiod.get("/debug/endpointShardz", { token: rootToken });
          assert.equal(r.status, 200, r.body);
          const shards = JSON.parse(r.body) as Record<string, unknown>;
          const demo = JSON.stringify(shards["httpbin.demo.svc.cluster.local"] ?? {});
          return demo.includes(`"${podIp}"`) ? true : undefined;
        });
      });

      await t.step("debug endpoints authenticate and authorize as in production", async () => {
        assert.ok(istiod.authSource, "this machine has a non-loopback address to ask from");
        const noToken = await istiod.get("/debug/configz");
        assert.equal(noToken.status, 401, "no token: refused");
        const wrongAudience = (await ok(c, [
          "create",
          "token",
          "istiod",
          "-n",
          "mesh-system",
        ])).trim();
        assert.equal((await istiod.get("/debug/syncz", { token: wrongAudience })).status, 401);
        const operator = await istiod.token("platform-system", "platform-operator");
        assert.equal((await istiod.get("/debug/syncz", { token: operator })).status, 200);
        await eventually("ServiceAccount demo/default", async () => {
          const r = await c.kubectl(["get", "serviceaccount", "default", "-n", "demo"]);
          return r.code === 0 ? true : undefined;
        });
        const other = await istiod.token("demo", "default");
        assert.equal((await istiod.get("/debug/syncz", { token: other })).status, 403);
        // From loopback istiod checks nothing (it takes it for itself): why authSource exists.
        assert.equal((await istiod.get("/debug/syncz", { loopback: true })).status, 200);
      });

      await t.step("restart: same ports, a new pid, ready, the config still seen", async () => {
        const before = { xds: istiod.xds, debug: istiod.debug };
        await istiod.restart();
        assert.notEqual(istiod.pid, firstPid);
        assert.ok(isAlive(istiod.pid));
        assert.deepEqual({ xds: istiod.xds, debug: istiod.debug }, before);
        assert.equal((await readState(dir))?.istiod?.pid, istiod.pid);
        const r = await istiod.get("/debug/configz", { token: rootToken });
        assert.ok(configKeys(r.body).includes(`EnvoyFilter/demo/${efName.metadata.name}`));
      });
    } finally {
      await c.down();
    }
    assert.ok(!isAlive(istiod.pid), "down stops istiod");
    assert.ok(!isAlive(firstPid));
  },
});

/** Runs the cluster CLI; exit code and both outputs. */
const cli = (args: string[]) => runDenoScript("tools/cluster/cluster.ts", args);

Deno.test({
  name: "cluster CLI: up --mesh, status, env and down, as tools/cluster/README.md shows them",
  async fn() {
    const dir = join(CACHE_DIR, `test-istiod-cli-${Deno.pid}`);
    const started = await cli(["up", "--mesh", "--dir", dir]);
    try {
      assert.equal(started.code, 0, started.stderr);
      assert.match(
        started.stderr,
        /istiod ready \(pid \d+, [0-9.]+s; caches with Istio's CRDs synced in /,
      );
      assert.match(started.stdout, /^export ISTIOD_XDS=127\.0\.0\.1:\d+$/m);
      const status = await cli(["status", "--dir", dir]);
      assert.equal(status.code, 0, status.stdout + status.stderr);
      assert.match(status.stdout, /^istiod\s+pid \d+\s+alive\s+healthy$/m);
      const env = await cli(["env", "--dir", dir]);
      assert.match(env.stdout, /^export ISTIOD_DEBUG=http:\/\/127\.0\.0\.1:\d+$/m);
    } finally {
      const pid = (await readState(dir))?.istiod?.pid;
      const stopped = await cli(["down", "--dir", dir]);
      assert.equal(stopped.code, 0, stopped.stderr);
      assert.match(stopped.stderr, /stopped istiod, etcd, /);
      if (pid !== undefined) assert.ok(!isAlive(pid), "down stops istiod by pid");
    }
  },
});
