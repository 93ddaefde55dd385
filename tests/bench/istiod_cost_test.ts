/**
 * The istiod bench (bench/istiod_cost.ts) cannot rot: its counting proxy forwards and counts
 * without a cluster, and the whole driver runs at 5 Pods on a real control plane with istiod. No
 * duration is asserted: only that every RateLimit was timed to Accepted, that the requests were
 * counted on the wire, and that at rest the operator asks syncz and no config dump.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { countRequests, IstiodCounter, requestKind } from "../../bench/istiod_counter.ts";
import { istiodCostOptions, measureIstiodCost, reportIstiodCost } from "../../bench/istiod_cost.ts";
import { Report } from "../../bench/report.ts";
import { CACHE_DIR } from "../../tools/cluster/paths.ts";

Deno.test("the counter forwards path, query and token, answers as istiod did, and counts by kind", async () => {
  const seen: { path: string; auth: string | null }[] = [];
  const istiod = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const url = new URL(req.url);
    seen.push({ path: `${url.pathname}${url.search}`, auth: req.headers.get("authorization") });
    if (url.pathname === "/debug/syncz") return Response.json([{ proxy: "a.ns" }]);
    return new Response("not found", { status: 404 });
  });
  const counter = IstiodCounter.start(`http://127.0.0.1:${istiod.addr.port}/`);
  try {
    const get = (path: string) =>
      fetch(`${counter.url}${path}`, { headers: { authorization: "Bearer t" } });
    const a = await get("/debug/syncz");
    assert.equal(a.status, 200);
    assert.deepEqual(await a.json(), [{ proxy: "a.ns" }]);
    const b = await get("/debug/config_dump?proxyID=a.ns&types=lds,rds");
    assert.equal(b.status, 404);
    assert.equal(await b.text(), "not found");
    assert.deepEqual(seen, [
      { path: "/debug/syncz", auth: "Bearer t" },
      { path: "/debug/config_dump?proxyID=a.ns&types=lds,rds", auth: "Bearer t" },
    ]);
    const counts = countRequests(counter.requests);
    assert.equal(counts.syncz, 1);
    assert.equal(counts.configDump, 1);
    assert.equal(counts.failed, 1);
    assert.equal(counts.synczBytes, JSON.stringify([{ proxy: "a.ns" }]).length);
    assert.equal(counter.between(performance.now()).length, 0);
  } finally {
    await counter.stop();
    await istiod.shutdown();
  }
  // istiod gone: a 502, counted as failed.
  const orphan = IstiodCounter.start(`http://127.0.0.1:${istiod.addr.port}`);
  try {
    const r = await fetch(`${orphan.url}/debug/syncz`);
    await r.body?.cancel();
    assert.equal(r.status, 502);
    assert.equal(countRequests(orphan.requests).failed, 1);
  } finally {
    await orphan.stop();
  }
  assert.equal(requestKind("/debug/syncz"), "syncz");
  assert.equal(requestKind("/debug/config_dump"), "config_dump");
  assert.equal(requestKind("/metrics"), "other");
});

Deno.test({
  name:
    "the istiod bench at 5 Pods: each RateLimit timed to Accepted, requests counted on the wire",
  async fn() {
    const dir = join(CACHE_DIR, `test-istiod-bench-${Deno.pid}`);
    const o = {
      ...istiodCostOptions(true, 5),
      namespaces: 2,
      restMs: 16_000,
      quietMs: 2_000,
      quietBoundMs: 30_000,
      // A poller that never confirms fails here in a minute, not in the bench's half hour.
      acceptBoundMs: 60_000,
      edits: 1,
      dir,
      logDir: `${dir}-logs`,
    };
    const lines: string[] = [];
    try {
      const run = await measureIstiodCost(o, (l) => lines.push(l));
      assert.deepEqual(run.notAccepted, [], lines.join("\n"));
      assert.equal(run.acceptedMs.length, 5);
      assert.equal(run.readyMs.length, 5);
      // Accepted needs the proxy's config read from istiod: at least one dump a proxy.
      assert.ok(run.burst.requests.configDump >= 5, JSON.stringify(run.burst.requests));
      // At rest: one syncz a period (15 s), no config dump, no condition leaving True.
      assert.ok(run.rest.requests.syncz >= 1, JSON.stringify(run.rest.requests));
      assert.equal(run.rest.requests.configDump, 0, JSON.stringify(run.rest.requests));
      assert.equal(run.rest.requests.failed, 0);
      assert.equal(run.rest.flaps, 0);
      assert.equal(run.rest.writes.count, 0, run.rest.writes.by);
      assert.ok(run.rest.rssMaxMb > 0 && run.rest.cpu.operator >= 0);
      // The edit: Accepted at the new generation, its proxy's config read again.
      assert.equal(run.edits.ms.length, 1);
      assert.ok(run.edits.dumps[0] >= 1, JSON.stringify(run.edits));
      // Its status at the new generation at least: the audit log was read.
      assert.ok(run.edits.writes[0].count >= 1, JSON.stringify(run.edits.writes));
      assert.ok(run.timeline.length > 0);
      const report = new Report(() => {});
      reportIstiodCost(report, run);
      const names = report.figures.map((f) => f.name);
      for (
        const want of [
          "apply to Accepted, 5 created at once, p99",
          "requests to istiod a minute at rest, 5 Accepted",
          "operator CPU at rest, 5 Accepted",
          "operator resident memory at rest, 5 Accepted",
        ]
      ) assert.ok(names.includes(want), `${want} not in ${names.join("; ")}`);
      assert.ok(report.figures.every((f) => Number.isFinite(f.value)), JSON.stringify(report));
    } finally {
      await Deno.remove(`${dir}-logs`, { recursive: true }).catch(() => {});
    }
  },
});
