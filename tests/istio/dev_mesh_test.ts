/**
 * `./deno task dev --mesh`: besides what `dev` does, a real istiod runs beside the control plane
 * with Istio's own CRDs. The EnvoyFilters the operator writes for the samples pass Istio's
 * EnvoyFilter schema and appear in istiod's config, asked as a Pod would ask (from a
 * non-loopback address, with a token of istiod's namespace); Ctrl-C stops istiod with the rest.
 */
import assert from "node:assert/strict";
import { DEFAULT_CLUSTER_DIR } from "../../tools/cluster/paths.ts";
import { readState } from "../../tools/cluster/state.ts";
import { isAlive } from "../../tools/processes.ts";
import { devTest, sh } from "../e2e/dev_process.ts";
import { waitFor } from "../e2e/harness.ts";

devTest(
  "e2e: ./deno task dev --mesh runs istiod, which sees the operator's EnvoyFilters",
  // Building pilot-discovery on a cold machine takes many minutes (CI builds it first).
  { args: ["--mesh"], readyMs: 20 * 60_000 },
  async (dev) => {
    assert.ok(Number(dev.printed(/^istiod ready in ([0-9.]+) s:$/)[1]) > 0);
    const [, debug, source] = dev.printed(
      /^debug endpoints\s+(http:\/\/127\.0\.0\.1:\d+)\/debug\/syncz \(from (\S+) to be/,
    );
    const env = dev.env();
    const istiodPid = (await readState(DEFAULT_CLUSTER_DIR))?.istiod?.pid;
    assert.ok(istiodPid && isAlive(istiodPid), "state.json records a running istiod");
    // The operator's filters, written through Istio's own CRD (its schema checks them).
    const filters = await waitFor(
      "the operator's EnvoyFilters for both sample RateLimits",
      async () => {
        const list = JSON.parse(await sh("kubectl get envoyfilters -A -o json", env)) as {
          items: { metadata: { namespace: string; name: string } }[];
        };
        const keys = list.items.map((f) =>
          `EnvoyFilter/${f.metadata.namespace}/${f.metadata.name}`
        );
        return keys.length >= 2 ? keys : undefined;
      },
      { timeoutMs: 180_000 },
    );
    const token = (await sh(
      "kubectl create token istiod -n mesh-system --audience istio-ca",
      env,
    )).trim();
    const client = Deno.createHttpClient({ localAddress: source });
    try {
      const ask = async (headers: Record<string, string>) => {
        const res = await fetch(`${debug}/debug/configz`, { client, headers });
        return { status: res.status, body: await res.text() };
      };
      assert.equal((await ask({})).status, 401, "no token: refused");
      await waitFor("istiod holds every filter", async () => {
        const r = await ask({ authorization: `Bearer ${token}` });
        assert.equal(r.status, 200, r.body);
        const seen = (JSON.parse(r.body) as {
          kind: string;
          metadata: { namespace: string; name: string };
        }[]).map((c) => `${c.kind}/${c.metadata.namespace}/${c.metadata.name}`);
        return filters.every((f) => seen.includes(f)) ? true : undefined;
      }, { timeoutMs: 60_000 });
    } finally {
      client.close();
    }
    await dev.stop();
    assert.ok(!isAlive(istiodPid), "Ctrl-C stops istiod");
  },
);
