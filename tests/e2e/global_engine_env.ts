/**
 * What the global rate limit engine's real-node e2e tests share: why they cannot run here, the
 * engine's namespace, Role and Redis (Debian's redis-server, a host process the Pods reach at the
 * node's bridge address) with its Secret and the image loaded, the engine Pods once Ready, and a
 * RateLimit's GlobalEnforced condition. Used by global_engine_tls_real_test.ts and
 * global_limits_real_test.ts; the older global_engine_real_test.ts sets up the same by hand.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type E2E, waitFor } from "./harness.ts";
import { realNodeNamespaceAnnotations } from "../../tools/cluster/mod.ts";
import { REAL_NODE_SKIP } from "../../tools/cluster/real_node_fixtures.ts";
import { missingTools } from "../../tools/image/run.ts";
import type { BinaryImage } from "../../tools/image/binary_image.ts";
import { type RedisServer, startRedis } from "../../tools/ratelimit-engine/redis.ts";
import { engineNamespace } from "../../src/deploy/global_engine_objects.ts";
import { engineRbacObjects } from "../../src/kube/rbac.ts";
import { GLOBAL_ENGINE_SERVICE } from "../../src/api/global_engine.ts";
import { envoyFilterCrd } from "../../src/crd/istio.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { freePorts } from "../../tools/processes.ts";

const NS = GLOBAL_ENGINE_SERVICE.namespace;

/** Why an engine e2e suite cannot run here (said loudly), or "". */
export async function engineE2eSkip(suite: string): Promise<string> {
  const redis = await new Deno.Command("redis-server", { args: ["--version"] }).output()
    .then((o) => o.success, () => false);
  const why = [REAL_NODE_SKIP, (await missingTools()) ?? "", redis ? "" : "no redis-server"]
    .filter((w) => w !== "");
  if (why.length > 0) console.error(`\n*** ${suite} e2e SKIPPED: ${why.join("; ")} ***\n`);
  return why.join("; ");
}

/** An engine Pod as the tests read it. */
export type EnginePod = KubeObject & {
  spec: { nodeName?: string; securityContext?: { runAsUser?: number } };
  status: {
    podIP?: string;
    containerStatuses?: { ready: boolean; restartCount: number }[];
  };
};

/** A status condition. */
export type Condition = { type: string; status: string; reason: string; message: string };

/** The RateLimit `namespace/name`'s GlobalEnforced condition, if any. */
export async function globalEnforcedOf(
  env: E2E,
  namespace: string,
  name: string,
): Promise<Condition | undefined> {
  const rl = await env.kube.get<KubeObject & { status?: { conditions?: Condition[] } }>(
    "ratelimits.gateway.platform-project.io",
    name,
    namespace,
  );
  return rl?.status?.conditions?.find((c) => c.type === "GlobalEnforced");
}

/** The engine's Pods, its namespace's last Events and its containers' last log lines. */
export async function describeEngines(env: E2E): Promise<string> {
  return [
    await env.kube.table("pods", { namespace: NS }),
    (await env.kube.run(["get", "events", "-n", NS, "--sort-by=.lastTimestamp"])).stdout
      .split("\n").slice(-10).join("\n"),
    (await env.kube.run([
      "logs",
      "-n",
      NS,
      "-l",
      "app.kubernetes.io/name=ratelimit-engine",
      "--tail=10",
      "--prefix",
    ])).stdout,
  ].join("\n");
}

/** Waits until exactly `n` engine Pods run, all Ready; returns them. */
export function readyEnginePods(env: E2E, n: number, timeoutMs = 180_000): Promise<EnginePod[]> {
  return waitFor(`${n} ready engine Pods`, async () => {
    const ps = (await env.kube.list<EnginePod>("pods", {
      namespace: NS,
      labelSelector: "app.kubernetes.io/name=ratelimit-engine",
    })).filter((p) => !p.metadata.deletionTimestamp);
    const ready = ps.filter((p) => p.status.containerStatuses?.every((c) => c.ready));
    return ready.length === n && ps.length === n ? ps : undefined;
  }, { timeoutMs, intervalMs: 500, describe: () => describeEngines(env) });
}

/**
 * The CRDs (with Istio's EnvoyFilter), the engine's namespace (the real node's placement) with
 * deploy/global-engine's Role, `appNamespace`, Redis with `password` on the node's bridge address,
 * the Redis Secret `platform-ratelimit/redis` naming it and `secrets` beside it, and the engine's
 * image loaded into the node. Returns Redis (the caller closes it).
 */
export async function setUpEngine(
  env: E2E,
  o: { image: BinaryImage; password: string; appNamespace: string; secrets?: KubeObject[] },
): Promise<RedisServer> {
  const node = env.cluster.realNode!;
  await env.installCrds();
  if (!await env.kube.get("crd", "envoyfilters.networking.istio.io")) {
    await env.kube.apply([envoyFilterCrd()]);
  }
  const ns = engineNamespace();
  ns.metadata.annotations = realNodeNamespaceAnnotations();
  await env.kube.apply([
    ns,
    ...engineRbacObjects(NS),
    { apiVersion: "v1", kind: "Namespace", metadata: { name: o.appNamespace } } as KubeObject,
  ]);
  await waitFor("the default ServiceAccount", () => env.kube.get("sa", "default", NS));
  const dir = join(env.dir, "redis");
  await Deno.mkdir(dir, { recursive: true });
  // A password: without one, Redis's protected mode refuses every address but loopback.
  const redis = await startRedis(dir, { password: o.password, alsoBind: [node.network.hostIp] });
  await env.kube.apply([
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "redis", namespace: NS },
      stringData: { address: `${node.network.hostIp}:${redis.port}`, password: o.password },
    } as unknown as KubeObject,
    ...(o.secrets ?? []),
  ]);
  const names = await node.loadImage(o.image.archive);
  assert.ok(names.includes(o.image.ref), `${o.image.archive} loaded as ${names.join(", ")}`);
  return redis;
}

/**
 * The operator's flags that deploy the engine with `image` and serve it over xDS on a free port
 * at the node's bridge address (the real node has no DNS): the engine e2e suites' common part.
 */
export function engineOperatorArgs(env: E2E, image: BinaryImage): string[] {
  const [xdsPort] = freePorts(1);
  return [
    "--controllers=ratelimit",
    `--global-redis-secret=${NS}/redis`,
    `--global-engine-image=${image.ref}`,
    `--global-engine-xds-port=${xdsPort}`,
    `--global-engine-xds-url=${env.cluster.realNode!.network.hostIp}:${xdsPort}`,
  ];
}
