/**
 * The Prometheus that the monitoring e2e test runs (tools/prometheus/server.ts) either starts or
 * fails with what to fix, quoting its own log: a missing binary names the build command, a bad
 * flag is named, a taken port is named; and one that starts answers queries and lists alerts.
 */
import assert from "node:assert/strict";
import { ensurePrometheus } from "../../tools/prometheus/build.ts";
import { Prometheus, type PrometheusOptions } from "../../tools/prometheus/server.ts";

async function options(o: Partial<PrometheusOptions> = {}): Promise<PrometheusOptions> {
  return {
    binary: await ensurePrometheus(),
    dir: await Deno.makeTempDir({ prefix: "prometheus-test-" }),
    job: "j",
    targets: ["127.0.0.1:9"],
    rules: { groups: [{ name: "g", rules: [{ alert: "Always", expr: "vector(1)", for: "0s" }] }] },
    ...o,
  };
}

Deno.test("a missing prometheus binary is named with the command that builds it", async () => {
  const o = await options({ binary: "/nonexistent/prometheus" });
  await assert.rejects(
    Prometheus.start(o),
    /no binary at \/nonexistent\/prometheus: build it with \.\/deno task build --only=prometheus/,
  );
});

Deno.test("a bad flag fails the start, naming the flag from Prometheus's log", async () => {
  await assert.rejects(
    Prometheus.start(await options({ extraArgs: ["--no-such-flag"] })),
    /prometheus exited with code \d+ before it was ready[\s\S]*no-such-flag/,
  );
});

Deno.test("a taken port fails the start, naming the address", async () => {
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const addr = `127.0.0.1:${(taken.addr as Deno.NetAddr).port}`;
  try {
    await assert.rejects(
      Prometheus.start(await options({ listen: addr })),
      new RegExp(`${addr} is taken[\\s\\S]*address already in use`),
    );
  } finally {
    taken.close();
  }
});

Deno.test("a started Prometheus evaluates its rules: queries and alerts answer", async () => {
  const o = await options();
  const p = await Prometheus.start(o);
  try {
    assert.deepEqual((await p.query("vector(2)")).map((s) => s.value[1]), ["2"]);
    await assert.rejects(p.query("sum("), /: 400 invalid parameter "query".*parse error/);
    let alerts: string[] = [];
    for (let i = 0; i < 50 && alerts.length === 0; i++) {
      alerts = (await p.alerts()).filter((a) => a.state === "firing").map((a) =>
        a.labels.alertname
      );
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.deepEqual(alerts, ["Always"]);
  } finally {
    await p.stop();
    await Deno.remove(o.dir, { recursive: true });
  }
});
