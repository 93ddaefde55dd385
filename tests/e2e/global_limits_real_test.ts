/**
 * A global limit end to end on the real node (issue #43 point 5): the operator (a host process
 * with deploy/'s roles and deploy/global-engine's Role) deploys two engines (envoyproxy/ratelimit
 * built here, its image made here) that count in one Debian redis-server (a host process the Pods
 * reach at the node's bridge address), serves them the domain its EnvoyFilter carries over xDS
 * (`--global-engine-xds-url`: the real node has no DNS), and reads what they loaded back before it
 * says GlobalEnforced. The requests are spread over three proxies of the project's Envoy model
 * (src/dataplane), which reads the EnvoyFilter the operator wrote and derives each request's
 * descriptors; the test sends exactly those, call by call, to the real engine Pods in turn, as
 * Envoy's ratelimit filter would. Shown: exactly `requests` admitted per window across the three
 * proxies and both engines, then OVER_LIMIT; the window rolls over; per-client keys count apart;
 * an edit takes effect without an engine restart; Redis stopped -> RedisUnreachable, the failure
 * mode named; Redis back -> Enforced; an engine Pod killed -> the other serves.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type E2E, e2eSuite, waitFor } from "./harness.ts";
import { buildEngineImage } from "../../tools/ratelimit-engine/image.ts";
import {
  type RedisServer,
  startRedis,
  startRedisCluster,
  startSentinel,
} from "../../tools/ratelimit-engine/redis.ts";
import { generatePki, issueCert } from "../../tools/cluster/pki.ts";
import { ensureRatelimitEngine, startTestClient } from "../../tools/ratelimit-engine/mod.ts";
import { GLOBAL_ENGINE_SERVICE } from "../../src/api/global_engine.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { parseRlconfig } from "../../src/api/engine_status.ts";
import {
  type Condition,
  engineE2eSkip,
  engineOperatorArgs,
  type EnginePod,
  globalEnforcedOf,
  readyEnginePods,
  setUpEngine,
} from "./global_engine_env.ts";
import {
  type EngineClient,
  type EngineRequest,
  type EngineResult,
  Mesh,
} from "../../src/dataplane/mod.ts";

const NS = GLOBAL_ENGINE_SERVICE.namespace;
const APP = "demo-global";
const LABELS = { app: "checkout" };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PASSWORD = "global-e2e";

const SKIP: string = await engineE2eSkip("global limits");

/** The RateLimit: per API key `perKey` a second on /orders, and 4 a second for the rest. */
function rateLimit(perKey: number): KubeObject {
  return {
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    metadata: { name: "checkout", namespace: APP },
    spec: {
      selectorLabels: LABELS,
      local: { defaultBucket: { maxTokens: 1000, tokensPerFill: 1000, fillInterval: "1s" } },
      global: {
        rules: [{
          path: "/orders",
          perClient: { header: "X-Api-Key" },
          limit: { requests: perKey, unit: "Second" },
        }],
        default: { limit: { requests: 4, unit: "Second" } },
      },
    },
  } as unknown as KubeObject;
}

/** The RateLimit's GlobalEnforced condition. */
function globalEnforced(env: E2E): Promise<Condition | undefined> {
  return globalEnforcedOf(env, APP, "checkout");
}

/** The engine Pods once `n` run, all Ready. */
const readyEngines = readyEnginePods;
type Pod = EnginePod;

/** Edits of the point-2 measure (apply -> the engines' loaded config, read back). */
const EDITS = 50;
const DOMAIN = `${APP}/checkout`;

/** The `requests_per_unit` of the per-key rule in an engine's loaded config, if it has the domain. */
async function loadedPerKey(pod: Pod): Promise<number | undefined> {
  const res = await fetch(
    `http://${pod.status.podIP}:${GLOBAL_ENGINE_SERVICE.debugPort}/rlconfig`,
    {
      signal: AbortSignal.timeout(2_000),
    },
  );
  const read = parseRlconfig(await res.text());
  if (!read.ok) throw new Error(read.reason);
  const line = read.domains[DOMAIN]?.find((l) => l.includes(".client:"));
  const m = line && /requests_per_unit=(\d+)/.exec(line);
  return m ? Number(m[1]) : undefined;
}

/** The q-quantile (nearest rank) of `xs`. */
function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

/**
 * Applies {@link EDITS} edits one after another (the per-key limit 2, 3, ...), each waited for
 * until both engines have loaded it (their /rlconfig, asked by the test) and the RateLimit says
 * GlobalEnforced True for its generation; then the limit of 1 the later steps count with. Returns
 * the figures: apply -> loaded by both engines, and apply -> GlobalEnforced, p50, p99 and max.
 */
async function editsInARow(env: E2E, pods: Pod[]): Promise<string> {
  const loaded: number[] = [];
  const enforced: number[] = [];
  for (let i = 0; i <= EDITS; i++) {
    const perKey = i === EDITS ? 1 : i + 2;
    const t0 = performance.now();
    await env.kube.apply([rateLimit(perKey)]);
    const rl = await env.kube.get("ratelimits.gateway.platform-project.io", "checkout", APP);
    const generation = rl!.metadata.generation;
    let both: number | undefined;
    await waitFor(`edit ${i}: ${perKey} a second loaded and enforced`, async () => {
      if (both === undefined) {
        const seen = await Promise.all(pods.map(loadedPerKey));
        if (seen.every((n) => n === perKey)) both = performance.now() - t0;
      }
      const g = await globalEnforced(env);
      const now = await env.kube.get<KubeObject & { status?: { enforcedGeneration?: number } }>(
        "ratelimits.gateway.platform-project.io",
        "checkout",
        APP,
      );
      return both !== undefined && g?.status === "True" &&
        now?.status?.enforcedGeneration === generation;
    }, { timeoutMs: 60_000, intervalMs: 50 });
    if (i < EDITS) {
      loaded.push(both!);
      enforced.push(performance.now() - t0);
    }
  }
  const f = (xs: number[]) =>
    `p50 ${(quantile(xs, 0.5) / 1000).toFixed(2)} s, p99 ${
      (quantile(xs, 0.99) / 1000).toFixed(2)
    } s, ` +
    `max ${(Math.max(...xs) / 1000).toFixed(2)} s`;
  return `${EDITS} edits: apply -> loaded by both engines ${f(loaded)}; ` +
    `apply -> GlobalEnforced True ${f(enforced)}`;
}

e2eSuite("global-limits-real", async (env, t) => {
  const image = await buildEngineImage((l) => console.error(`[engine image] ${l}`));
  const bins = await ensureRatelimitEngine();
  const node = env.cluster.realNode!;
  const client = startTestClient(bins);
  let redis: RedisServer | undefined;
  /** Redis servers of the topology steps, stopped at the end. */
  const extra: RedisServer[] = [];
  let engines: Pod[] = [];
  // What the model's proxies asked the engine, to be asked of the real engines in turn.
  const asked: EngineRequest[] = [];
  const recording: EngineClient = {
    ask(request: EngineRequest): EngineResult {
      asked.push(request);
      // The model's own engine is not consulted: the real engines answer (below).
      return { ok: false, error: "asked of the real engine" } as unknown as EngineResult;
    },
  };
  /**
   * Sends `requests` through the model's three proxies (in turn) with the operator's EnvoyFilter,
   * and each descriptor set they derive to the real engine Pods (in turn); the overall codes.
   */
  const send = async (requests: { path: string; headers: Record<string, string> }[]) => {
    const filter = await env.kube.get<KubeObject>(
      "envoyfilters.networking.istio.io",
      "checkout",
      APP,
    );
    assert.ok(filter, "the operator's EnvoyFilter");
    const mesh = new Mesh({ engine: recording });
    const pods = [0, 1, 2].map((i) => ({
      namespace: APP,
      name: `p${i}`,
      labels: LABELS,
      ready: true,
    }));
    mesh.sync([filter], pods, Date.now());
    assert.deepEqual(mesh.rejections(), []);
    // All in one second: start just after one begins (calls take a few ms on the bridge).
    await sleep(1010 - (Date.now() % 1000));
    const second = Math.floor(Date.now() / 1000);
    const codes: string[] = [];
    for (const [i, req] of requests.entries()) {
      asked.length = 0;
      mesh.send({ to: { namespace: APP, labels: LABELS }, ...req }, Date.now());
      assert.equal(asked.length, 1, `request ${i} asked the engine once`);
      const { domain, descriptors } = asked[0];
      const pod = engines[i % engines.length];
      const a = await client.ask(`${pod.status.podIP}:${GLOBAL_ENGINE_SERVICE.grpcPort}`, {
        domain,
        descriptors: descriptors.map((entries) => ({ entries: [...entries] })),
      });
      codes.push(a.response?.overallCode ?? `error: ${a.error?.message}`);
    }
    assert.equal(Math.floor(Date.now() / 1000), second, "the burst stayed in one second");
    return codes;
  };
  const alice = { path: "/orders", headers: { "X-Api-Key": "alice" } };
  const bob = { path: "/orders", headers: { "X-Api-Key": "bob" } };
  const other = { path: "/status", headers: {} };
  try {
    await env.step(t, "the engine deployed by the operator, serving it over xDS", async () => {
      // A password: without one, Redis's protected mode refuses every address but loopback.
      redis = await setUpEngine(env, { image, password: PASSWORD, appNamespace: APP });
      await env.startServing({ identity: "global", extraArgs: engineOperatorArgs(env, image) });
      engines = await readyEngines(env, 2);
    });

    await env.step(t, "GlobalEnforced only once both engines loaded the domain", async () => {
      const t0 = performance.now();
      await env.kube.apply([rateLimit(3)]);
      const c = await waitFor("GlobalEnforced True", async () => {
        const g = await globalEnforced(env);
        return g?.status === "True" ? g : undefined;
      }, { timeoutMs: 120_000, describe: async () => JSON.stringify(await globalEnforced(env)) });
      console.error(
        `[global-limits-real] apply -> GlobalEnforced True in ${
          ((performance.now() - t0) / 1000).toFixed(1)
        } s`,
      );
      assert.equal(c.reason, "Enforced");
    });

    await env.step(t, "exactly the limit per window across 3 proxies and 2 engines", async () => {
      const codes = await send([alice, alice, alice, alice, alice, bob, other, other]);
      // alice: 3 then OVER_LIMIT twice; bob counts apart; the default counts the rest.
      assert.deepEqual(codes, ["OK", "OK", "OK", "OVER_LIMIT", "OVER_LIMIT", "OK", "OK", "OK"]);
      // The next second is a new window.
      assert.deepEqual(await send([alice, alice, alice, alice]), [
        "OK",
        "OK",
        "OK",
        "OVER_LIMIT",
      ]);
      // The default: 4 a second, the fifth refused.
      assert.deepEqual(await send([other, other, other, other, other]), [
        "OK",
        "OK",
        "OK",
        "OK",
        "OVER_LIMIT",
      ]);
    });

    await env.step(t, "an edit takes effect without an engine restart", async () => {
      const before = await readyEngines(env, 2);
      const t0 = performance.now();
      await env.kube.apply([rateLimit(1)]);
      await waitFor("the edit enforced", async () => {
        const g = await globalEnforced(env);
        const rl = await env.kube.get<KubeObject & { status?: { enforcedGeneration?: number } }>(
          "ratelimits.gateway.platform-project.io",
          "checkout",
          APP,
        );
        return g?.status === "True" && rl?.status?.enforcedGeneration === 2 ? g : undefined;
      }, { timeoutMs: 60_000 });
      console.error(
        `[global-limits-real] edit -> Enforced with the new domain in ${
          ((performance.now() - t0) / 1000).toFixed(1)
        } s`,
      );
      assert.deepEqual(await send([alice, alice]), ["OK", "OVER_LIMIT"]);
      const after = await readyEngines(env, 2);
      assert.deepEqual(
        after.map((p) => [p.metadata.name, p.status.containerStatuses?.[0].restartCount]),
        before.map((p) => [p.metadata.name, 0]),
      );
    });

    await env.step(
      t,
      `${EDITS} edits in a row: each loaded by both engines (read back) and GlobalEnforced`,
      async () => {
        const figures = await editsInARow(env, await readyEngines(env, 2));
        console.error(`[global-limits-real] ${figures}`);
        engines = await readyEngines(env, 2);
        assert.deepEqual(await send([alice, alice]), ["OK", "OVER_LIMIT"]);
      },
    );

    await env.step(
      t,
      "Redis stopped: RedisUnreachable, failure mode named; back: Enforced",
      async () => {
        await redis!.stop();
        const down = await waitFor("RedisUnreachable", async () => {
          const g = await globalEnforced(env);
          return g?.reason === "RedisUnreachable" ? g : undefined;
        }, { timeoutMs: 90_000 });
        assert.equal(down.status, "False");
        assert.match(down.message, /Allow/);
        await redis!.start();
        await waitFor("Enforced again", async () => {
          const g = await globalEnforced(env);
          return g?.status === "True" ? g : undefined;
        }, { timeoutMs: 120_000 });
        engines = await readyEngines(env, 2);
        assert.deepEqual(await send([alice, alice]), ["OK", "OVER_LIMIT"]);
      },
    );

    await env.step(t, "an engine Pod killed: the other serves", async () => {
      const [gone, kept] = engines;
      await env.kube.must([
        "delete",
        "pod",
        gone.metadata.name,
        "-n",
        NS,
        "--grace-period=0",
        "--force",
        "--wait=false",
      ]);
      engines = [kept];
      assert.deepEqual(await send([alice, alice, other]), ["OK", "OVER_LIMIT", "OK"]);
    });

    // The Secret's other Redis topologies, each run through the operator: the engines roll to the
    // new Secret, load the domain again, count in the new Redis, and GlobalEnforced says so.
    const dir = join(env.dir, "topologies");
    await Deno.mkdir(dir, { recursive: true });
    const hostIp = node.network.hostIp;
    /** Replaces the Secret, waits for the engines' roll and GlobalEnforced, counts; the Redis. */
    const through = async (data: Record<string, string>, counters: RedisServer[]) => {
      const before = new Set((await readyEngines(env, 2)).map((p) => p.metadata.name));
      await env.kube.must(["replace", "-f", "-"], {
        stdin: JSON.stringify({
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: "redis", namespace: NS },
          stringData: data,
        }),
      });
      engines = await waitFor("two new engines Ready", async () => {
        const ps = await readyEngines(env, 2, 5_000).catch(() => undefined);
        return ps?.every((p) => !before.has(p.metadata.name)) ? ps : undefined;
      }, { timeoutMs: 240_000, intervalMs: 1000 });
      await waitFor("GlobalEnforced True on the new engines", async () => {
        const g = await globalEnforced(env);
        return g?.status === "True" ? g : undefined;
      }, { timeoutMs: 120_000, describe: async () => JSON.stringify(await globalEnforced(env)) });
      assert.deepEqual(await send([alice, alice, bob]), ["OK", "OVER_LIMIT", "OK"]);
      // The engines are the Redis's clients, from their Pods' addresses, and counted there.
      const podIps = engines.map((p) => p.status.podIP!);
      const clients = (await Promise.all(counters.map((c) => c.clients()))).flat();
      for (const ip of podIps) {
        assert.ok(clients.some((a) => a.startsWith(`${ip}:`)), `${ip} among ${clients.join(", ")}`);
      }
      const keys = (await Promise.all(counters.map((c) => c.keys()))).flat();
      assert.ok(keys.some((k) => k.includes("demo-global/checkout")), keys.join(", "));
    };

    await env.step(t, "Redis over mutual TLS, from the Secret", async () => {
      const pkiDir = join(dir, "pki");
      const pki = await generatePki(pkiDir);
      const server = await issueCert(pki, pkiDir, {
        name: "redis",
        subject: "/CN=redis",
        usage: "serverAuth",
        sans: [`IP:${hostIp}`, "IP:127.0.0.1"],
      });
      const engineCert = await issueCert(pki, pkiDir, {
        name: "engine",
        subject: "/CN=ratelimit",
        usage: "clientAuth",
      });
      const tls = await startRedis(dir, {
        password: PASSWORD,
        alsoBind: [hostIp],
        tls: { cert: server.cert, key: server.key, ca: pki.caCert, client: engineCert },
      });
      extra.push(tls);
      const read = (f: string) => Deno.readTextFile(f);
      await through({
        address: `${hostIp}:${tls.port}`,
        password: PASSWORD,
        tls: "true",
        "ca.crt": await read(pki.caCert),
        "tls.crt": await read(engineCert.cert),
        "tls.key": await read(engineCert.key),
      }, [tls]);
    });

    await env.step(t, "Redis Sentinel, from the Secret", async () => {
      const master = await startRedis(dir, { password: PASSWORD, alsoBind: [hostIp] });
      extra.push(master);
      const sentinel = await startSentinel(dir, {
        master: { name: "counters", host: hostIp, port: master.port, password: PASSWORD },
        alsoBind: [hostIp],
      });
      extra.push(sentinel);
      await through({
        type: "sentinel",
        address: `counters,${hostIp}:${sentinel.port}`,
        password: PASSWORD,
      }, [master]);
      const asked = await sentinel.clients();
      for (const p of engines) {
        assert.ok(asked.some((a) => a.startsWith(`${p.status.podIP}:`)), asked.join(", "));
      }
    });

    await env.step(t, "Redis Cluster of three masters, from the Secret", async () => {
      const cluster = await startRedisCluster(join(dir, "cluster"), {
        announceIp: hostIp,
        password: PASSWORD,
      });
      extra.push(...cluster.nodes);
      await through({
        type: "cluster",
        address: cluster.nodes.map((n) => `${hostIp}:${n.port}`).join(","),
        password: PASSWORD,
      }, cluster.nodes);
    });
  } finally {
    await client.stop();
    await redis?.close();
    for (const r of extra) await r.close();
  }
}, { realNode: true, skip: SKIP });
