/**
 * `./deno task dev`, as README shows it: it builds (or finds) the control plane, starts it and the
 * operator, applies the samples and prints what to try. Every command it prints is run here, the
 * samples must settle, and Ctrl-C must stop everything and remove the cluster's data.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ensureBuilt } from "../../tools/cluster/mod.ts";
import { DEFAULT_CLUSTER_DIR } from "../../tools/cluster/paths.ts";
import { devTest, sh } from "./dev_process.ts";
import { waitFor } from "./harness.ts";

devTest(
  "e2e: ./deno task dev starts everything, its printed commands work, Ctrl-C stops it",
  {
    args: [],
    readyMs: 5 * 60_000,
    // Building is not what this test times: on a cold machine it takes many minutes (CI builds
    // first, as its own step, and this is then a no-op).
    before: () => ensureBuilt((m) => console.error(`[build] ${m}`)),
  },
  async (dev) => {
    const env = dev.env();
    const tried = dev.err.map((l) => l.trim()).filter((l) => l.startsWith("kubectl "));
    assert.ok(tried.length >= 5, `printed commands: ${tried.join("; ")}`);
    for (const command of tried) await sh(command.replace(/\s+#.*$/, ""), env);
    // The samples settle: the Serverless Ready, the Scaler Warning (KEDA runs on kwok, whose Pods
    // never serve, so the aggregator cannot reach its metrics API), the two valid RateLimits Ready.
    await waitFor("the samples settle", async () => {
      const modules = (await sh("kubectl get serverlesses,scalers -A --no-headers", env))
        .split("\n");
      const limits = await sh("kubectl get ratelimits -A --no-headers", env);
      return modules.filter((l) => /\sserverless\.\S+\s+Ready\s+True\s/.test(l)).length === 1 &&
        modules.filter((l) => /\sscaler\.\S+\s+Warning\s+True\s/.test(l)).length === 1 &&
        limits.split("\n").filter((l) => /\sReady\s/.test(l)).length === 2;
    }, { timeoutMs: 240_000 });
    await dev.stop();
    assert.ok(dev.err.some((l) => l.includes("stopped")), dev.err.slice(-10).join("\n"));
    for (const owned of ["state.json", "etcd-data", "kubeconfig"]) {
      const left = await Deno.stat(join(DEFAULT_CLUSTER_DIR, owned)).then(
        () => true,
        () => false,
      );
      assert.equal(left, false, `the cluster's ${owned} is removed`);
    }
  },
);
