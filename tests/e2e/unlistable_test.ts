/**
 * One type the API server cannot list holds back only the controllers that read it, on a real API
 * server. Scalers are made unlistable the way a broken conversion webhook does it in a cluster: the
 * Scaler CRD gains a storage version whose conversion calls a webhook that does not answer, and one
 * Scaler is stored at it, so every list and watch of Scalers at the version the operator reads
 * fails with a 500. A standby that takes over then relists: its RateLimit controller begins and a
 * new RateLimit becomes Ready, while the Scaler controller waits (log line, gauge); once the Scaler
 * is gone and the CRD mended, the Scaler controller begins too.
 */
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { type E2E, e2eSuite, waitFor } from "./harness.ts";
import { namespace, rateLimit, scaler } from "./fixtures.ts";
import type { OperatorProcess } from "../../tools/operator/process.ts";

const NS = "e2e-unlistable";
const LEASE_NS = "platform-system";
const SCALER_CRD = "scalers.operator.platform-project.io";
/** A version only this test serves: stored, and converted by a webhook that refuses connections. */
const BROKEN_VERSION = "v1alpha9";

interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
  [key: string]: unknown;
}
interface Crd extends KubeObject {
  spec: { versions: CrdVersion[]; conversion?: unknown; [key: string]: unknown };
}

/** The CRD as this suite installed it, without what the API server adds. */
function asApplied(crd: Crd, versions: CrdVersion[], conversion?: unknown): Crd {
  const { conversion: _, ...spec } = crd.spec;
  return {
    apiVersion: crd.apiVersion,
    kind: crd.kind,
    metadata: { name: crd.metadata.name },
    spec: { ...spec, versions, ...(conversion ? { conversion } : {}) },
  };
}

/**
 * Makes every list of Scalers at the operator's version fail: a second stored version converted
 * by a webhook at a loopback port nothing listens on, and one Scaler stored at it. Returns the
 * mend (the Scaler deleted, the CRD back to one stored version) and the Scalers' resource at the
 * operator's version, by its full name.
 */
async function scalersUnlistable(
  env: E2E,
): Promise<{ mend: () => Promise<void>; resource: string }> {
  const crd = await env.kube.get<Crd>("crd", SCALER_CRD);
  assert.ok(crd, `${SCALER_CRD} installed`);
  const served = crd.spec.versions.find((v) => v.storage)!;
  const broken = asApplied(crd, [
    { ...served, storage: false },
    { ...served, name: BROKEN_VERSION, storage: true },
  ], {
    strategy: "Webhook",
    webhook: {
      conversionReviewVersions: ["v1"],
      clientConfig: { url: "https://127.0.0.1:1/convert" },
    },
  });
  await env.kube.apply([broken], ["--server-side", "--force-conflicts"]);
  const stored = scaler(NS, "stored-elsewhere");
  const [group] = String(stored.apiVersion).split("/");
  await waitFor("a Scaler stored at the unconvertible version", async () => {
    const r = await env.kube.tryApply([{ ...stored, apiVersion: `${group}/${BROKEN_VERSION}` }]);
    return r.code === 0;
  }, { timeoutMs: 30_000, intervalMs: 500 });
  // The operator's own version cannot be listed now.
  const resource = `scalers.${served.name}.${group}`;
  const list = await env.kube.run(["get", resource, "-A"]);
  assert.notEqual(list.code, 0, `Scalers at ${served.name} still list:\n${list.stdout}`);
  assert.match(list.stderr, /conversion webhook/);
  const mend = async () => {
    await env.kube.must([
      "delete",
      `scalers.${BROKEN_VERSION}.${group}`,
      stored.metadata.name,
      "-n",
      NS,
      "--wait=true",
    ]);
    await env.kube.apply([asApplied(crd, [{ ...served, storage: true }, {
      ...served,
      name: BROKEN_VERSION,
      storage: false,
    }])], ["--server-side", "--force-conflicts"]);
    await env.kube.must([
      "patch",
      "crd",
      SCALER_CRD,
      "--subresource=status",
      "--type=merge",
      "-p",
      JSON.stringify({ status: { storedVersions: [served.name] } }),
    ]);
    await env.kube.apply([asApplied(crd, crd.spec.versions)], [
      "--server-side",
      "--force-conflicts",
    ]);
  };
  return { mend, resource };
}

async function leaseHolder(env: E2E): Promise<string | undefined> {
  const leases = await env.kube.list<KubeObject & { spec?: { holderIdentity?: string } }>(
    "leases.coordination.k8s.io",
    { namespace: LEASE_NS },
  );
  return leases.map((l) => l.spec?.holderIdentity).find((h) => h?.startsWith("unlistable-"));
}

/** The replica's `platform_operator_controller_waiting` gauge, by controller. */
async function waiting(op: OperatorProcess): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const line of (await op.metrics() ?? "").split("\n")) {
    const m = /^platform_operator_controller_waiting\{controller="([^"]+)"\} (\d+)/.exec(line);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

e2eSuite("unlistable", async (env, t) => {
  await env.installCrds();
  await env.kube.apply([namespace(NS)]);
  const opts = { leaderElect: true, leaseNamespace: LEASE_NS };
  const a = await env.startServing({ identity: "unlistable-a", ...opts });
  const b = await env.startServing({ identity: "unlistable-b", ...opts });
  let standby: OperatorProcess | undefined;
  let mend: (() => Promise<void>) | undefined;
  let resource = "";
  try {
    await env.step(
      t,
      "a standby takes over while Scalers cannot be listed: its RateLimits are reconciled, the Scaler controller waits",
      async () => {
        await env.kube.apply([rateLimit(NS, "before", "app-before")]);
        await env.waitStatus("ratelimit", NS, "before", { state: "Ready" }, { timeoutMs: 60_000 });
        ({ mend, resource } = await scalersUnlistable(env));
        const leader = await waitFor("a leader", () => leaseHolder(env), { timeoutMs: 30_000 });
        const [dead, next] = leader === a.identity ? [a, b] : [b, a];
        standby = next;
        const since = Date.now();
        await dead.killNow();
        await waitFor(
          `${next.identity} to hold the Lease`,
          async () => await leaseHolder(env) === next.identity,
          { timeoutMs: 30_000, intervalMs: 200 },
        );
        await env.kube.apply([rateLimit(NS, "during", "app-during")]);
        await env.waitStatus("ratelimit", NS, "during", { state: "Ready" }, { timeoutMs: 60_000 });
        const gauge = await waiting(next);
        assert.equal(gauge.ratelimit, 0, JSON.stringify(gauge));
        assert.equal(gauge.scaler, 1, JSON.stringify(gauge));
        // Log lines are written in batches: the term's line may follow the status.
        let begun: Record<string, unknown>[] = [];
        await waitFor("the new term's log line naming the Scaler controller waiting", async () => {
          begun = (await next.logLines()).filter((l) =>
            l.msg === "caches synced and leading: reconciling" &&
            Date.parse(String(l.ts)) >= since
          );
          return begun.some((l) =>
            (l.controllers as string[]).includes("ratelimit") &&
            (l.waiting as string[] | undefined)?.includes("scaler")
          );
        }, {
          timeoutMs: 15_000,
          intervalMs: 500,
          describe: () => Promise.resolve(JSON.stringify(begun)),
        });
      },
    );
    await env.step(t, "once Scalers list again, the Scaler controller begins", async () => {
      assert.ok(standby && mend, "the step before ran");
      await mend();
      mend = undefined;
      const leader = standby;
      await waitFor("the Scaler controller begun", async () => {
        const gauge = await waiting(leader);
        return gauge.scaler === 0 && gauge.ratelimit === 0;
      }, {
        timeoutMs: 90_000,
        intervalMs: 500,
        describe: async () => JSON.stringify(await waiting(leader)),
      });
      // It reconciles: a Scaler made now is read and judged (any state but none).
      await env.kube.apply([scaler(NS, "after")]);
      // By its full name: kubectl's cached discovery may still know the version this test added.
      let last: KubeObject | undefined;
      await waitFor("the new Scaler given a state", async () => {
        last = await env.kube.get(resource, "after", NS);
        return Boolean((last?.status as { state?: string } | undefined)?.state);
      }, { timeoutMs: 60_000, describe: () => Promise.resolve(JSON.stringify(last)) });
    });
  } finally {
    if (mend) await mend().catch(() => {});
    await env.stopOperators();
  }
});
