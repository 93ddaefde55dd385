/**
 * What /metrics serves against the table of docs/operations.md ("### Metrics"), both ways: every
 * family served is listed with its type and labels, and every row listed is served with them. The
 * operator runs for real (runOperator against the simulator's API server) with a Serverless, a
 * Scaler, a good RateLimit and a refused one, so that every family has series to read labels from.
 */
import assert from "node:assert/strict";
import { runOperator } from "../../src/cli/run.ts";
import { parseRunFlags } from "../../src/cli/run_flags.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { RESOURCES } from "../../src/api/resources.ts";
import { startServer } from "../kube/fake_server.ts";
import { kubeconfigFor } from "../kube/helpers.ts";
import { SimApi } from "../kube/sim_api.ts";

/** A metric family: its type and the label names of its series (histograms: without `le`). */
export interface FamilyShape {
  type: string;
  labels: string[];
}

/** The families of a Prometheus text exposition, by name. */
export function servedFamilies(text: string): Map<string, FamilyShape> {
  const out = new Map<string, FamilyShape>();
  for (const line of text.split("\n")) {
    const t = line.match(/^# TYPE (\S+) (\S+)$/);
    if (t) out.set(t[1], { type: t[2], labels: [] });
  }
  for (const line of text.split("\n")) {
    const s = line.match(/^([a-z_]+)(?:\{(.*)\})? \S+$/);
    if (!s) continue;
    const name = out.has(s[1]) ? s[1] : s[1].replace(/_(bucket|sum|count)$/, "");
    const family = out.get(name);
    if (!family) throw new Error(`series ${s[1]} has no # TYPE`);
    const labels = [...(s[2] ?? "").matchAll(/([a-z_]+)="/g)].map((m) => m[1])
      .filter((l) => l !== "le");
    for (const l of labels) if (!family.labels.includes(l)) family.labels.push(l);
  }
  for (const f of out.values()) f.labels.sort();
  return out;
}

/** The rows of the table under `### <heading>` in a Markdown text, by metric name. */
export function documentedFamilies(
  markdown: string,
  heading = "Metrics",
): Map<string, FamilyShape> {
  const section = markdown.split(new RegExp(`^### ${heading}$`, "m"))[1]?.split(/^#{2,3} /m)[0];
  if (section === undefined) throw new Error(`no ### ${heading} section`);
  const out = new Map<string, FamilyShape>();
  for (const line of section.split("\n")) {
    const cells = line.split("|").map((c) => c.trim());
    const name = cells[1]?.match(/^`([a-z_]+)`$/)?.[1];
    if (!name) continue;
    const labels = [...cells[3].matchAll(/`([a-z_]+)`/g)].map((m) => m[1]).sort();
    out.set(name, { type: cells[2], labels });
  }
  return out;
}

/** Every disagreement between what is served and what is documented, in words. */
export function differences(
  served: Map<string, FamilyShape>,
  documented: Map<string, FamilyShape>,
  /** Families served without series in this run: their labels cannot be read. */
  unlabelled: ReadonlySet<string> = new Set(),
): string[] {
  const out: string[] = [];
  for (const [name, s] of served) {
    const d = documented.get(name);
    if (!d) out.push(`${name} is served but not documented`);
    else if (d.type !== s.type) out.push(`${name}: served as ${s.type}, documented ${d.type}`);
    else if (!unlabelled.has(name) && d.labels.join(",") !== s.labels.join(",")) {
      out.push(`${name}: served labels [${s.labels}], documented [${d.labels}]`);
    }
  }
  for (const name of documented.keys()) {
    if (!served.has(name)) out.push(`${name} is documented but not served`);
  }
  return out;
}

const USER = { name: "user", manager: "kubectl" };

function object(type: keyof typeof RESOURCES, name: string, spec: unknown): KubeObject {
  const t = RESOURCES[type];
  return {
    apiVersion: t.group ? `${t.group}/${t.version}` : t.version,
    kind: t.kind,
    metadata: { name, namespace: "default", labels: { app: name } },
    spec,
  };
}

const bucket = (fillInterval: string) => ({ maxTokens: 5, tokensPerFill: 5, fillInterval });

/**
 * `/metrics` of an operator run with `flags` once it reports every kind, the refusal, the
 * GlobalEnforced gauge and whatever else `ready` asks of the text.
 */
async function scrapeRunningOperator(
  flags: readonly string[] = [],
  ready: (body: string) => boolean = () => true,
): Promise<string> {
  const api = new SimApi();
  const server = await startServer(api.handle);
  const stop = new AbortController();
  let addr: string | undefined;
  const parsed = parseRunFlags([
    `--kubeconfig=${await kubeconfigFor(server.url)}`,
    "--allow-insecure-http",
    "--probe-addr=0",
    "--metrics-addr=127.0.0.1:0",
    "--log-level=error",
    ...flags,
  ], () => undefined);
  if (parsed.kind !== "options") throw new Error(JSON.stringify(parsed));
  const exit = runOperator(parsed.options, {
    shutdown: stop.signal,
    sink: () => {},
    onListening: (a) => (addr = a.metrics),
  });
  try {
    const store = api.sim.store;
    store.create(RESOURCES.Serverless, object("Serverless", "default", {}), USER);
    store.create(RESOURCES.Scaler, object("Scaler", "default", {}), USER);
    store.create(
      RESOURCES.RateLimit,
      object("RateLimit", "good", {
        selectorLabels: { app: "good" },
        local: { defaultBucket: bucket("30s") },
      }),
      USER,
    );
    store.create(
      RESOURCES.RateLimit,
      object("RateLimit", "refused", {
        selectorLabels: { app: "refused" },
        local: { defaultBucket: bucket("30s"), buckets: [{ path: "/a", bucket: bucket("45s") }] },
      }),
      USER,
    );
    // A global part: GlobalEnforced False EngineNotInstalled (no --global-redis-secret).
    store.create(
      RESOURCES.RateLimit,
      object("RateLimit", "global", {
        selectorLabels: { app: "global" },
        local: { defaultBucket: bucket("30s") },
        global: { default: { limit: { requests: 10, unit: "Minute" } } },
      }),
      USER,
    );
    for (let i = 0; i < 1000; i++) {
      const body = addr ? await (await fetch(`http://${addr}/metrics`)).text() : "";
      const done = ["RateLimit", "Serverless", "Scaler"].every((k) =>
        body.includes(`platform_operator_objects{kind="${k}"`)
      ) && // Wait for the refusal itself, not the Unknown row before the first reconcile.
        /platform_operator_ratelimit_unmet\{condition="Ready",name="refused",[^}]*reason="InvalidSpec"/
          .test(body) &&
        body.includes('platform_operator_objects{kind="RateLimit",state="Error"} 1') &&
        /platform_operator_module\{kind="Serverless",[^}]*served="True"/.test(body) &&
        body.includes("platform_operator_reconcile_duration_seconds_count") &&
        body.includes("platform_operator_ratelimits_global_enforced{") && ready(body);
      if (done) {
        return body;
      }
      await new Promise((r) =>
        setTimeout(r, 20)
      );
    }
    throw new Error("the operator never reported every kind");
  } finally {
    stop.abort();
    await exit;
    api.close();
    await server.close();
  }
}

Deno.test("/metrics serves exactly the metrics docs/operations.md lists, with their types and labels", async () => {
  const body = await scrapeRunningOperator();
  const served = servedFamilies(body);
  const documented = documentedFamilies(await Deno.readTextFile("docs/operations.md"));
  // Counted only when something goes wrong: no series in a healthy run. Writes skipped are counted
  // when an object is reconciled again with nothing to write, which a run this short may not do
  // (one reconcile per change, no resync yet).
  const unlabelled = new Set(
    [...served].filter(([name]) => !new RegExp(`^${name}[{ _]`, "m").test(body)).map(([n]) => n),
  );
  const skipped = "platform_operator_writes_skipped_total";
  assert.deepEqual(
    [...unlabelled].filter((n) => n !== skipped).sort(),
    [
      "platform_operator_events_dropped_total",
      // Set only in a Pod (read from its status on start): a process here has none.
      "platform_operator_last_oom_kill_timestamp_seconds",
      "platform_operator_reconcile_errors_total",
      "platform_operator_watch_restarts_total",
    ],
  );
  assert.deepEqual(differences(served, documented, unlabelled), []);
  assert.ok(documented.size >= 14, `the table was read: ${documented.size} rows`);
  // The object gauges count what the cache holds.
  assert.match(body, /platform_operator_objects\{kind="RateLimit",state="Error"\} 1/);
  assert.match(
    body,
    /platform_operator_ratelimit_unmet\{condition="Ready",name="refused",namespace="default",reason="InvalidSpec",status="False"\} 1/,
  );
  assert.match(body, /platform_operator_module\{kind="Serverless",[^}]*served="True"[^}]*\} 1/);
});

Deno.test("the comparison fails on a family left out of the docs, a wrong type, a missing label and a row not served", () => {
  const served = servedFamilies(
    '# TYPE a counter\na{x="1"} 1\n# TYPE b gauge\nb 1\n# TYPE h histogram\nh_bucket{le="1",c="r"} 1\nh_sum{c="r"} 1\nh_count{c="r"} 1\n',
  );
  assert.deepEqual(served.get("h"), { type: "histogram", labels: ["c"] });
  const documented = documentedFamilies(
    "### Metrics\n\n| M | T | L | W |\n| - | - | - | - |\n| `a` | counter | | x |\n| `b` | counter | | y |\n| `h` | histogram | `c` | z |\n| `gone` | gauge | | w |\n\n## Next\n",
  );
  assert.deepEqual(differences(served, documented), [
    "a: served labels [x], documented []",
    "b: served as gauge, documented counter",
    "gone is documented but not served",
  ]);
  documented.delete("h");
  assert.ok(differences(served, documented).includes("h is served but not documented"));
});

Deno.test("with the global engine, /metrics serves exactly what docs/operations.md adds for it", async () => {
  const without = servedFamilies(await scrapeRunningOperator());
  const body = await scrapeRunningOperator([
    "--global-redis-secret=platform-ratelimit/redis",
    "--global-engine-xds-port=0",
  ], (b) => b.includes("platform_operator_engine_pods{"));
  const added = new Map([...servedFamilies(body)].filter(([name]) => !without.has(name)));
  const documented = documentedFamilies(
    await Deno.readTextFile("docs/operations.md"),
    "Metrics with the global engine",
  );
  // No engine runs here: no Pod to count domains of, no stream, no reply, no push.
  const unlabelled = new Set(
    [...added.keys()].filter((name) => !new RegExp(`^${name}[{ _]`, "m").test(body)),
  );
  assert.deepEqual([...unlabelled].sort(), [
    "platform_operator_engine_config_pushes_total",
    "platform_operator_engine_config_replies_total",
    "platform_operator_engine_config_streams",
    "platform_operator_engine_domains_loaded",
  ]);
  assert.deepEqual(differences(added, documented, unlabelled), []);
  assert.ok(documented.size >= 6, `the table was read: ${documented.size} rows`);
});
