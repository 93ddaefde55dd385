/**
 * The global rate limit engine deployed by the operator (issue #43 point 2) for real: its image
 * made here (tools/ratelimit-engine/image.ts) runs on the cluster's real node (kubelet, containerd,
 * runc) in namespace platform-ratelimit, which enforces Pod Security's restricted profile, and
 * counts in Debian's redis-server, a host process the Pods reach at the node's bridge address. The
 * operator (a host process, as in every e2e test, with deploy/'s roles and deploy/global-engine's
 * Role) is given only `--global-redis-secret` and the image. Shown: both engines Ready, which with
 * REDIS_HEALTH_CHECK_ACTIVE_CONNECTION=true means each holds a Redis connection, authenticated as
 * `default` with a password holding a colon (REDIS_AUTH composed in the Pod); a bad Secret changes
 * nothing and says why; Redis stopped makes the engines not Ready and Redis back Ready again,
 * without restarts; a Secret edit rolls them; a deleted Secret keeps them.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type E2E, e2eSuite, waitFor } from "./harness.ts";
import { realNodeNamespaceAnnotations } from "../../tools/cluster/mod.ts";
import { REAL_NODE_SKIP } from "../../tools/cluster/real_node_fixtures.ts";
import { missingTools } from "../../tools/image/run.ts";
import { buildEngineImage } from "../../tools/ratelimit-engine/image.ts";
import { type RedisServer, startRedis } from "../../tools/ratelimit-engine/redis.ts";
import { engineNamespace } from "../../src/deploy/global_engine_objects.ts";
import { engineRbacObjects } from "../../src/kube/rbac.ts";
import {
  GLOBAL_ENGINE_SERVICE,
  REDIS_SECRET_DIGEST_ANNOTATION,
} from "../../src/api/global_engine.ts";
import type { KubeObject } from "../../src/api/object.ts";

const NS = GLOBAL_ENGINE_SERVICE.namespace;
const NAME = GLOBAL_ENGINE_SERVICE.name;
/** A password with a colon: refused by the engine unless REDIS_AUTH is user:password. */
const PASSWORD = "pa:ss-e2e";

/** Why this suite cannot run here, or "". */
const SKIP: string = await (async () => {
  const redis = await new Deno.Command("redis-server", { args: ["--version"] }).output()
    .then((o) => o.success, () => false);
  const why = [REAL_NODE_SKIP, (await missingTools()) ?? "", redis ? "" : "no redis-server"]
    .filter((w) => w !== "");
  if (why.length > 0) console.error(`\n*** global engine e2e SKIPPED: ${why.join("; ")} ***\n`);
  return why.join("; ");
})();

type Deployment = KubeObject & {
  metadata: { generation?: number };
  status?: { readyReplicas?: number; updatedReplicas?: number; replicas?: number };
  spec: { template: { metadata: { annotations: Record<string, string> } } };
};
type Pod = KubeObject & {
  spec: { nodeName?: string; securityContext?: { runAsUser?: number } };
  status: {
    containerStatuses?: { ready: boolean; restartCount: number }[];
  };
};

function secret(data: Record<string, string>): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "redis", namespace: NS },
    stringData: data,
  };
}

const deployment = (env: E2E) => env.kube.get<Deployment>("deployment", NAME, NS);
const enginePods = (env: E2E) =>
  env.kube.list<Pod>("pods", {
    namespace: NS,
    labelSelector: "app.kubernetes.io/name=ratelimit-engine",
  });

async function describeEngine(env: E2E): Promise<string> {
  return [
    await env.kube.table("pods", { namespace: NS }),
    await env.kube.run(["get", "events", "-n", NS, "--sort-by=.lastTimestamp"]).then((r) =>
      r.stdout.split("\n").slice(-15).join("\n")
    ),
  ].join("\n");
}

/** Waits until `n` engine Pods are Ready (and no more are running); returns them. */
function readyEngines(env: E2E, n: number, timeoutMs = 180_000): Promise<Pod[]> {
  return waitFor(`${n} ready engine Pods`, async () => {
    const ps = (await enginePods(env)).filter((p) => !p.metadata.deletionTimestamp);
    const ready = ps.filter((p) => p.status.containerStatuses?.every((c) => c.ready));
    return ready.length === n && ps.length === n ? ps : undefined;
  }, { timeoutMs, intervalMs: 500, describe: () => describeEngine(env) });
}

async function eventReasons(env: E2E): Promise<string[]> {
  const events = await env.kube.list<
    KubeObject & { reason: string; involvedObject: { name: string; kind: string } }
  >(
    "events",
    { namespace: NS },
  );
  return events.filter((e) =>
    e.involvedObject.kind === "Secret" && e.involvedObject.name === "redis"
  )
    .map((e) => e.reason);
}

e2eSuite("global-engine-real", async (env, t) => {
  const image = await buildEngineImage((l) => console.error(`[engine image] ${l}`));
  const node = env.cluster.realNode!;
  let redis: RedisServer | undefined;
  try {
    await env.step(
      t,
      "the engine's namespace, Role and Secret; the operator with the flag",
      async () => {
        await env.installCrds();
        const ns = engineNamespace();
        ns.metadata.annotations = realNodeNamespaceAnnotations();
        await env.kube.apply([ns, ...engineRbacObjects(NS)]);
        await waitFor("the default ServiceAccount", () => env.kube.get("sa", "default", NS));
        const dir = join(env.dir, "redis");
        await Deno.mkdir(dir, { recursive: true });
        redis = await startRedis(dir, { password: PASSWORD, alsoBind: [node.network.hostIp] });
        await env.kube.apply([
          secret({ address: `${node.network.hostIp}:${redis.port}`, password: PASSWORD }),
        ]);
        const names = await node.loadImage(image.archive);
        assert.ok(names.includes(image.ref), `${image.archive} loaded as ${names.join(", ")}`);
        await env.startServing({
          identity: "engine",
          extraArgs: [
            "--controllers=ratelimit",
            `--global-redis-secret=${NS}/redis`,
            `--global-engine-image=${image.ref}`,
          ],
        });
      },
    );

    await env.step(
      t,
      "two engines Ready on the real node, each holding a Redis connection",
      async () => {
        const t0 = performance.now();
        const ps = await readyEngines(env, 2);
        console.error(
          `[global-engine-real] 2 engines Ready ${
            ((performance.now() - t0) / 1000).toFixed(1)
          } s after the operator served`,
        );
        for (const p of ps) {
          assert.equal(p.spec.nodeName, node.name);
          assert.equal(p.spec.securityContext?.runAsUser, 65532);
          assert.equal(p.status.containerStatuses?.[0].restartCount, 0, p.metadata.name);
        }
        for (const kind of ["serviceaccount", "service", "poddisruptionbudget", "networkpolicy"]) {
          assert.ok(await env.kube.get(kind, NAME, NS), kind);
        }
        assert.ok((await eventReasons(env)).includes("EngineConfigured"));
      },
    );

    await env.step(t, "a bad Secret changes nothing and says why", async () => {
      const before = await deployment(env);
      await env.kube.must(["replace", "-f", "-"], {
        stdin: JSON.stringify(secret({ password: PASSWORD, tls: "true", "tls.key": "x" })),
      });
      await waitFor(
        "the RedisSecretInvalid Event",
        async () => (await eventReasons(env)).includes("RedisSecretInvalid"),
      );
      await new Promise((r) => setTimeout(r, 3000));
      const after = await deployment(env);
      assert.equal(after?.metadata.generation, before?.metadata.generation);
      await readyEngines(env, 2, 10_000);
    });

    await env.step(
      t,
      "Redis stopped: engines not Ready; Redis back: Ready again, no restart",
      async () => {
        // The good Secret again (a new version: the engines roll to it).
        const digest = (await deployment(env))!.spec.template.metadata
          .annotations[REDIS_SECRET_DIGEST_ANNOTATION];
        await env.kube.must(["replace", "-f", "-"], {
          stdin: JSON.stringify(
            secret({ address: `${node.network.hostIp}:${redis!.port}`, password: PASSWORD }),
          ),
        });
        await waitFor("the rolled template", async () => {
          const d = await deployment(env);
          return d?.spec.template.metadata.annotations[REDIS_SECRET_DIGEST_ANNOTATION] !== digest &&
            d?.status?.updatedReplicas === 2;
        }, { timeoutMs: 180_000 });
        await readyEngines(env, 2);
        const t0 = performance.now();
        await redis!.stop();
        await waitFor("no engine Ready", async () => {
          const ps = await enginePods(env);
          return ps.length === 2 && ps.every((p) => !p.status.containerStatuses?.[0].ready);
        }, { timeoutMs: 90_000, intervalMs: 500, describe: () => describeEngine(env) });
        console.error(
          `[global-engine-real] Redis stopped -> no engine Ready in ${
            ((performance.now() - t0) / 1000).toFixed(1)
          } s`,
        );
        const t1 = performance.now();
        await redis!.start();
        const ps = await readyEngines(env, 2, 120_000);
        console.error(
          `[global-engine-real] Redis back -> 2 Ready in ${
            ((performance.now() - t1) / 1000).toFixed(1)
          } s`,
        );
        assert.ok(
          ps.every((p) => p.status.containerStatuses?.[0].restartCount === 0),
          await describeEngine(env),
        );
      },
    );

    await env.step(t, "the Secret deleted: the engine stays", async () => {
      const before = await deployment(env);
      await env.kube.must(["delete", "secret", "redis", "-n", NS]);
      await new Promise((r) => setTimeout(r, 5000));
      const after = await deployment(env);
      assert.equal(after?.metadata.generation, before?.metadata.generation);
      await readyEngines(env, 2, 10_000);
    });
  } finally {
    await redis?.close();
  }
}, { realNode: true, skip: SKIP });
