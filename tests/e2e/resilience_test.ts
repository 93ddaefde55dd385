/**
 * E2E resilience on one real control plane: SIGKILL at random points (seeded), leader failover
 * between two replicas, and a kube-apiserver restart under load.
 */
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { type E2E, e2eSuite, waitFor } from "./harness.ts";
import { namespace, rateLimit, scaler, serverless } from "./fixtures.ts";
import { ownershipProblems } from "./invariants.ts";
import { describe, SCALER_ON_KWOK, statusMatches, statusOf } from "./status.ts";

/** Seed of the kill schedule; `E2E_SEED=<n>` replays another one. */
const SEED = Number(Deno.env.get("E2E_SEED") ?? 42);
const KILLS = 20;

/** mulberry32: a tiny seeded PRNG, so a failing schedule can be replayed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

e2eSuite("resilience", async (env, t) => {
  await env.installCrds();
  await env.step(
    t,
    `SIGKILL at ${KILLS} random points (seed ${SEED}), then convergence without duplicates or orphans`,
    () => chaos(env),
  );
  await env.step(
    t,
    "two replicas: the standby takes over within 15 s of the leader's SIGKILL",
    () => failover(env),
  );
  await env.step(
    t,
    "the API server restarted under load: the operator recovers",
    () => apiserverRestart(env),
  );
});

const NS = "e2e-chaos";

/** One random change of the desired state, as a user would make it. */
function mutation(
  rand: () => number,
  i: number,
): { what: string; objs: KubeObject[]; del?: [string, string] } {
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
  const rl = `rl-${Math.floor(rand() * 4)}`;
  switch (pick(["rl", "rl", "rl-bad", "rl-delete", "serverless", "scaler"])) {
    case "rl":
      return {
        what: `apply ${rl}`,
        objs: [rateLimit(NS, rl, `app-${rl}`, pick([undefined, "20s", "1m"]))],
      };
    case "rl-bad":
      return { what: `apply invalid ${rl}`, objs: [rateLimit(NS, rl, `app-${rl}`, "15s")] };
    case "rl-delete":
      return { what: `delete ${rl}`, objs: [], del: ["ratelimit", rl] };
    case "serverless":
      return {
        what: "change Serverless",
        objs: [
          serverless(NS, "default", {
            logLevel: pick(["info", "debug"]),
            functionRequeueDuration: `${i + 1}m`,
          }),
        ],
      };
    default:
      return {
        what: "change Scaler",
        objs: [
          scaler(NS, "default", {
            logging: { operator: { level: pick(["info", "debug", "error"]) } },
          }),
        ],
      };
  }
}

async function chaos(env: E2E): Promise<void> {
  const rand = prng(SEED);
  const replay = `E2E_SEED=${SEED} ./deno test -A --frozen tests/e2e/resilience_test.ts`;
  await env.kube.apply([
    namespace(NS),
    serverless(NS, "default"),
    scaler(NS, "default"),
    rateLimit(NS, "rl-0", "app-rl-0"),
  ]);
  const log: string[] = [];
  for (let i = 0; i < KILLS; i++) {
    const m = mutation(rand, i);
    if (m.objs.length) await env.kube.apply(m.objs);
    if (m.del) await env.kube.delete(m.del[0], [m.del[1]], NS);
    const op = await env.startOperator({ identity: `chaos-${i}` });
    // From mid-startup to well into reconciling: Deno starts, lists, watches, then writes.
    const delay = 500 + Math.floor(rand() * 4500);
    await new Promise((r) => setTimeout(r, delay));
    await op.killNow();
    log.push(`#${i} ${m.what}, killed after ${delay} ms`);
  }
  console.error(`chaos schedule (seed ${SEED}):\n  ${log.join("\n  ")}`);
  await env.startServing({ identity: "chaos-final" });
  try {
    await converged(env);
    const problems = await waitFor("no duplicate or orphaned objects", async () => {
      const p = await ownershipProblems(env.kube);
      return p.length === 0 ? p : undefined;
    }, { timeoutMs: 30_000, describe: async () => (await ownershipProblems(env.kube)).join("\n") });
    assert.deepEqual(problems, []);
  } catch (e) {
    throw new Error(`${(e as Error).message}\nreplay: ${replay}`);
  } finally {
    await env.stopOperators();
  }
  // The check can fail: a planted managed object that nothing asks for is reported as an orphan.
  const labels = {
    "app.kubernetes.io/managed-by": "platform-operator",
    "operator.platform-project.io/module": "serverless",
  };
  await env.kube.apply([{
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "e2e-planted", namespace: "default", labels },
  }]);
  const found = await ownershipProblems(env.kube);
  await env.kube.delete("configmap", ["e2e-planted"], "default");
  assert.ok(
    found.some((p) => p.includes("default/e2e-planted")),
    `the ownership check missed a planted orphan: ${found.join("; ")}`,
  );
}

/** Every object in NS shows the state its current spec leads to, computed from its current generation. */
async function converged(env: E2E): Promise<void> {
  let last: KubeObject[] = [];
  await waitFor("every object in e2e-chaos to converge", async () => {
    last = [
      ...await env.kube.list("serverlesses", { namespace: NS }),
      ...await env.kube.list("scalers", { namespace: NS }),
      ...await env.kube.list("ratelimits", { namespace: NS }),
    ];
    return last.every((o) => {
      const s = statusOf(o);
      const want = o.kind !== "RateLimit" || !JSON.stringify(o.spec).includes('"15s"')
        ? "Ready"
        : "Error";
      const gens = [s.observedGeneration, ...(s.conditions ?? []).map((c) => c.observedGeneration)]
        .filter((g): g is number => typeof g === "number");
      // KEDA on kwok never serves: a settled Scaler shows the aggregator's verdict.
      const settled = o.kind === "Scaler" ? statusMatches(o, SCALER_ON_KWOK) : s.state === want;
      return settled && gens.every((g) => g === o.metadata.generation);
    });
  }, {
    timeoutMs: 180_000,
    intervalMs: 500,
    describe: () => Promise.resolve(last.map(describe).join("\n")),
  });
}

async function leaseHolder(env: E2E): Promise<string | undefined> {
  const leases = await env.kube.list<KubeObject & { spec?: { holderIdentity?: string } }>(
    "leases.coordination.k8s.io",
    {
      namespace: "platform-system",
    },
  );
  return leases.map((l) => l.spec?.holderIdentity).find((h) => h?.startsWith("failover-"));
}

async function failover(env: E2E): Promise<void> {
  const opts = { leaderElect: true, leaseNamespace: "platform-system" };
  const a = await env.startServing({ identity: "failover-a", ...opts });
  const b = await env.startServing({ identity: "failover-b", ...opts });
  try {
    const leader = await waitFor("a leader to hold the Lease", () => leaseHolder(env), {
      timeoutMs: 30_000,
    });
    const [dead, standby] = leader === a.identity ? [a, b] : [b, a];
    const t0 = Date.now();
    await dead.killNow();
    await waitFor(
      `${standby.identity} to hold the Lease`,
      async () => await leaseHolder(env) === standby.identity,
      {
        timeoutMs: 30_000,
        intervalMs: 100,
      },
    );
    const took = Date.now() - t0;
    console.error(`failover took ${took} ms`);
    assert.ok(took <= 15_000, `the standby took ${took} ms to take over (bound: 15 000 ms)`);
    // The new leader reconciles: a new RateLimit becomes Ready.
    await env.kube.apply([rateLimit(NS, "after-failover", "app-failover")]);
    await env.waitStatus("ratelimit", NS, "after-failover", { state: "Ready" }, {
      timeoutMs: 30_000,
    });
  } finally {
    await env.stopOperators();
  }
}

async function apiserverRestart(env: E2E): Promise<void> {
  const ns = "e2e-load";
  const count = 100;
  const op = await env.startServing({ identity: "load-0" });
  try {
    const limits = Array.from({ length: count }, (_, i) => rateLimit(ns, `load-${i}`, `app-${i}`));
    await env.kube.apply([namespace(ns), ...limits]);
    await env.cluster.restartApiserver();
    let notReady: string[] = [];
    await waitFor(`all ${count} RateLimits to be Ready after the restart`, async () => {
      const items = await env.kube.list("ratelimits", { namespace: ns });
      notReady = items.filter((o) => statusOf(o).state !== "Ready").map((o) => o.metadata.name);
      return items.length === count && notReady.length === 0;
    }, {
      timeoutMs: 120_000,
      intervalMs: 500,
      describe: () => Promise.resolve(`not Ready: ${notReady.join(", ")}`),
    });
    assert.ok(
      op.running,
      `the operator exited after the API server restart:\n${await op.logTail()}`,
    );
    // Its watches work again: a change made now is seen and handled.
    await env.kube.apply([rateLimit(ns, "after-restart", "app-after")]);
    await env.waitStatus("ratelimit", ns, "after-restart", { state: "Ready" }, {
      timeoutMs: 30_000,
    });
  } finally {
    await env.stopOperators();
  }
}
