/** The floors under the operator's idle memory are read from real Deno processes. */
import assert from "node:assert/strict";
import { addFloors, floorRss, FLOORS, watchedPaths } from "../../bench/cluster/floor.ts";
import { startServer } from "../kube/fake_server.ts";
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
});

Deno.test("the connecting floor opens the watches an idle operator opens, not a module's", () => {
  const paths = watchedPaths(ALL_CONTROLLERS);
  assert.ok(paths.includes(collectionPath(RESOURCES.RateLimit)));
  assert.ok(paths.includes(collectionPath(RESOURCES.Pod)));
  // Deployments are a module's secondaries: watched only once a Serverless or Scaler exists.
  assert.ok(!paths.some((p) => p.startsWith(collectionPath(RESOURCES.Deployment))), paths.join());
  assert.equal(new Set(paths).size, paths.length);
});

Deno.test("the connecting floor lists and watches on a TLS API server, and fails on an error it is given", async () => {
  const api = new SimApi();
  const pki = await makePki();
  const server = await startServer(api.handle, { cert: pki.serverCert, key: pki.serverKey });
  const failing = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    () => new Response("broken", { status: 500 }),
  );
  try {
    const connecting = FLOORS.findIndex((f) => f.connects);
    const mb = await floorRss(FLOORS[connecting], connecting, {
      server: server.url,
      caPem: pki.caCert,
      token: "floor",
    });
    assert.ok(mb > 10 && mb < 200, `${mb} MB`);
    await assert.rejects(
      floorRss(FLOORS[connecting], connecting, {
        server: `http://127.0.0.1:${failing.addr.port}`,
        caPem: pki.caCert,
        token: "floor",
      }),
      /500 broken/,
    );
    await assert.rejects(floorRss(FLOORS[connecting], connecting), /needs a cluster/);
  } finally {
    await failing.shutdown();
    api.close();
    await server.close();
  }
});
