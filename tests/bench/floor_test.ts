/** The floors under the operator's idle memory are read from real Deno processes. */
import assert from "node:assert/strict";
import {
  addFloors,
  type FloorCluster,
  floorMemory,
  floorRss,
  FLOORS,
  startupFloorMs,
  watchedPaths,
} from "../../bench/cluster/floor.ts";
import {
  cpuProfArgs,
  extraDenoArgs,
  OPERATOR_CPU_PROF_ENV,
  OPERATOR_V8_FLAGS_ENV,
} from "../../bench/cluster/operator.ts";
import { type Seen, startServer } from "../kube/fake_server.ts";
import { makePki } from "../kube/pki.ts";
import { SimApi } from "../kube/sim_api.ts";
import { ALL_CONTROLLERS } from "../../src/controllers/registry.ts";
import { collectionPath } from "../../src/kube/paths.ts";
import { RESOURCES } from "../../src/api/resources.ts";

Deno.test("each floor without a cluster is a Deno process's own VmRSS, the empty script lowest", async () => {
  const rows: { name: string; value: number }[] = [];
  const figures = await addFloors({ add: (f) => rows.push(f) }, "s");
  const local = FLOORS.filter((f) => !f.connects);
  assert.deepEqual(rows.map((r) => r.name), local.map((f) => `floor: ${f.name}`));
  assert.deepEqual(figures.map((f) => f.mb), rows.map((r) => r.value));
  const empty = rows[0].value;
  assert.ok(empty > 10 && empty < 200, `${empty} MB`);
  for (const r of rows.slice(1)) assert.ok(r.value > empty, `${r.name}: ${r.value} MB`);
  // What each is made of: its anonymous and file-backed pages make up its VmRSS.
  for (const f of figures) {
    assert.ok(f.anonMb > 1 && f.fileMb > 1, `${f.anonMb} + ${f.fileMb} MB`);
    assert.ok(Math.abs(f.anonMb + f.fileMb - f.mb) < 1, `${f.anonMb} + ${f.fileMb} != ${f.mb}`);
  }
  assert.match(String((rows[0] as { note?: string }).note), /MB anonymous .* MB file-backed/);
});

Deno.test("the connecting floor opens the watches an idle operator opens, not a module's", () => {
  const paths = watchedPaths(ALL_CONTROLLERS);
  assert.ok(paths.includes(collectionPath(RESOURCES.RateLimit)));
  assert.ok(paths.includes(collectionPath(RESOURCES.Pod)));
  // Deployments are a module's secondaries: watched only once a Serverless or Scaler exists.
  assert.ok(!paths.some((p) => p.startsWith(collectionPath(RESOURCES.Deployment))), paths.join());
  assert.equal(new Set(paths).size, paths.length);
});

/**
 * Runs `fn` with the simulator's API server behind TLS (`good`), one that answers every request
 * with 500 (`broken`), and what they were both reached with, then closes them.
 */
async function withServers(
  api: SimApi,
  fn: (good: FloorCluster, broken: FloorCluster, seen: Seen[]) => Promise<void>,
): Promise<void> {
  const pki = await makePki();
  const server = await startServer(api.handle, { cert: pki.serverCert, key: pki.serverKey });
  const failing = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    () => new Response("broken", { status: 500 }),
  );
  try {
    await fn(
      { server: server.url, caPem: pki.caCert, token: "floor" },
      { server: `http://127.0.0.1:${failing.addr.port}`, caPem: pki.caCert, token: "floor" },
      server.seen,
    );
  } finally {
    await failing.shutdown();
    api.close();
    await server.close();
  }
}

Deno.test("the connecting floor lists and watches on a TLS API server, and fails on an error it is given", async () => {
  await withServers(new SimApi(), async (good, broken) => {
    const connecting = FLOORS.findIndex((f) => f.connects);
    const mb = await floorRss(FLOORS[connecting], connecting, good);
    assert.ok(mb > 10 && mb < 200, `${mb} MB`);
    await assert.rejects(floorRss(FLOORS[connecting], connecting, broken), /500 broken/);
    await assert.rejects(floorRss(FLOORS[connecting], connecting), /needs a cluster/);
  });
});

Deno.test("the start-up floor reads every page of what the operator lists, and fails on an error it is given", async () => {
  const api = new SimApi();
  for (let i = 0; i < 501; i++) {
    api.sim.store.create(RESOURCES.Pod, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: `p${i}`, namespace: "default" },
      spec: { containers: [{ name: "c", image: "i" }] },
    }, { name: "test", manager: "test" });
  }
  await withServers(api, async (good, broken, seen) => {
    const started = Date.now();
    const ms = await startupFloorMs(good);
    assert.ok(ms > 0 && ms <= Date.now() - started, `${ms} ms`);
    const pods = seen.filter((r) => r.path === collectionPath(RESOURCES.Pod));
    assert.equal(pods.length, 2, "two pages of 500");
    assert.ok(pods[1].query.get("continue"));
    for (const path of watchedPaths()) {
      assert.ok(seen.some((r) => r.url.startsWith(path)), `${path} listed`);
    }
    await assert.rejects(startupFloorMs(broken), /500 broken/);
    // With the operator's module graph loaded first: the same lists, every page.
    const before = seen.length;
    assert.ok(await startupFloorMs(good, "code") > 0);
    const again = seen.slice(before).filter((r) => r.path === collectionPath(RESOURCES.Pod));
    assert.equal(again.length, 2, "two pages of 500 again");
    await assert.rejects(startupFloorMs(broken, "code"), /500 broken/);
  });
});

Deno.test("BENCH_OPERATOR_V8_FLAGS adds its V8 flags to the operator's and the floors' Deno flags", async () => {
  const saved = Deno.env.get(OPERATOR_V8_FLAGS_ENV);
  try {
    Deno.env.delete(OPERATOR_V8_FLAGS_ENV);
    assert.deepEqual(extraDenoArgs(), []);
    Deno.env.set(OPERATOR_V8_FLAGS_ENV, " ");
    assert.deepEqual(extraDenoArgs(), []);
    Deno.env.set(OPERATOR_V8_FLAGS_ENV, "--max-opt=2");
    assert.deepEqual(extraDenoArgs(), ["--v8-flags=--max-opt=2"]);
    // A floor runs with it: Deno refuses a flag V8 does not know, and so the floor fails.
    const m = await floorMemory(FLOORS[0], 0);
    assert.ok(m.rssMb > 10, `${m.rssMb} MB`);
    Deno.env.set(OPERATOR_V8_FLAGS_ENV, "--no-such-v8-flag");
    await assert.rejects(floorMemory(FLOORS[0], 0), /did not recognize flag '--no-such-v8-flag'/);
  } finally {
    if (saved === undefined) Deno.env.delete(OPERATOR_V8_FLAGS_ENV);
    else Deno.env.set(OPERATOR_V8_FLAGS_ENV, saved);
  }
});

Deno.test("BENCH_OPERATOR_CPU_PROF adds a CPU profile to the operator's Deno flags, not the floors'", () => {
  const saved = Deno.env.get(OPERATOR_CPU_PROF_ENV);
  const savedV8 = Deno.env.get(OPERATOR_V8_FLAGS_ENV);
  try {
    Deno.env.delete(OPERATOR_V8_FLAGS_ENV);
    Deno.env.delete(OPERATOR_CPU_PROF_ENV);
    assert.deepEqual(cpuProfArgs(), []);
    Deno.env.set(OPERATOR_CPU_PROF_ENV, "/tmp/prof");
    assert.deepEqual(cpuProfArgs(), ["--cpu-prof", "--cpu-prof-dir=/tmp/prof"]);
    assert.deepEqual(extraDenoArgs(), [], "the floors run without it");
  } finally {
    if (saved === undefined) Deno.env.delete(OPERATOR_CPU_PROF_ENV);
    else Deno.env.set(OPERATOR_CPU_PROF_ENV, saved);
    if (savedV8 !== undefined) Deno.env.set(OPERATOR_V8_FLAGS_ENV, savedV8);
  }
});
