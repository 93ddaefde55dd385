/**
 * The preview of per-client rules: a client per request (`client` in the JSONL, `--clients N`),
 * one client exhausted while another is admitted, each client's bucket in the summary, and a plain
 * refusal for an Envoy without dynamic descriptors.
 */
import assert from "node:assert/strict";
import { run } from "./preview.ts";
import { clientAddress, parseCommandLine, rateRequests } from "../../src/cli/ratelimit/args.ts";
import { parseRequests } from "../../src/cli/ratelimit/requests.ts";
import { runTraffic } from "../../src/cli/ratelimit/run.ts";
import { parseYamlDocument } from "../../src/api/yaml.ts";
import { DEFAULT_ENVOY, envoyBehaviour } from "../../src/dataplane/mod.ts";

const example = (name: string) => new URL(`../../docs/examples/${name}`, import.meta.url).pathname;
const file = example("ratelimit-per-client.yaml");

Deno.test("one client exhausted while another is admitted, each with its bucket", async () => {
  const r = await run(["-f", file, "--requests", example("per-client-requests.jsonl"), "--json"]);
  assert.equal(r.code, 0, r.err);
  const lines = r.out.map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => [l.client, l.status, l.bucket]), [
    ["alice", 200, 0],
    ["alice", 200, 0],
    ["alice", 429, 0],
    ["bob", 200, 0],
    ["alice", 429, 0],
    ["10.0.0.7", 200, 1],
    ["alice", 200, 0],
  ]);
  const text = await run(["-f", file, "--requests", example("per-client-requests.jsonl")]);
  assert.ok(text.out.some((l) => /^0 +alice +path \/anything; each X-Api-Key .* 3 +2$/.test(l)));
  assert.ok(text.out.some((l) => /^0 +bob +path \/anything; each X-Api-Key .* 1 +0$/.test(l)));
});

Deno.test("--clients spreads --rate traffic over N clients in turn", async () => {
  assert.deepEqual(
    rateRequests(3, 2000, "/a", {}, 2).map((r) => r.client),
    ["10.0.0.1", "10.0.0.2", "10.0.0.1", "10.0.0.2", "10.0.0.1", "10.0.0.2"],
  );
  assert.equal(clientAddress(256), "10.0.1.0");
  const r = await run([
    "-f",
    file,
    "--rate",
    "2/s",
    "--for",
    "3s",
    "--path",
    "/anything",
    "--clients",
    "2",
    "--json",
  ]);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(r.out.map((l) => JSON.parse(l).status), [200, 200, 200, 200, 429, 429]);
  for (const bad of ["0", "1001", "x"]) {
    const p = parseCommandLine(["-f", file, "--rate", "1/s", "--for", "1s", "--clients", bad]);
    assert.ok(!p.ok && !p.help && /--clients/.test(p.error), bad);
  }
  const both = parseCommandLine(["-f", file, "--requests", "x.jsonl", "--clients", "2"]);
  assert.ok(!both.ok && !both.help && /--clients/.test(both.error));
});

Deno.test("a request line's client is checked", () => {
  const ok = parseRequests('{"t":"0s","path":"/","client":"a","count":2}', "r");
  assert.ok(ok.ok);
  assert.deepEqual(ok.value.map((r) => r.client), ["a", "a"]);
  const bad = parseRequests('{"t":"0s","path":"/","client":""}', "r");
  assert.ok(!bad.ok && /r:1: client/.test(bad.error), bad.ok ? "" : bad.error);
});

Deno.test("Envoy before 1.34: refused plainly, naming the rule", async () => {
  const r = await run(["-f", file, "--rate", "1/s", "--for", "1s", "--envoy", "1.33"]);
  assert.equal(r.code, 2);
  assert.match(r.err, /spec\.local\.buckets\[0\]\.perClient: per-client buckets need Envoy 1\.34/);
  assert.deepEqual(r.out, []);
});

Deno.test("20000 clients: one report each, in the order they came, each with its own points", () => {
  // Each request used to scan every report and redraw every client's points: quadratic, minutes
  // for a few thousand clients. Now a client's report is looked up and drawn when it comes.
  const text = Deno.readTextFileSync(file).replace("maxClients: 1000", "maxClients: 100000");
  const rl = parseYamlDocument(text, "rl.yaml");
  assert.ok(rl.ok);
  const n = 20_000;
  const requests = Array.from({ length: n }, (_, i) => ({
    t: i,
    path: "/x",
    headers: {},
    client: `c${i}`,
  }));
  const envoy = envoyBehaviour(DEFAULT_ENVOY);
  assert.ok(envoy.ok);
  const r = runTraffic(rl.value, requests, n, envoy.value);
  assert.ok(r.ok);
  const clients = r.value.buckets.filter((b) => b.id === 1);
  assert.deepEqual(clients.map((b) => b.client), requests.map((q) => q.client));
  for (const b of clients) {
    assert.deepEqual([b.admitted, b.rejected, b.marks.length], [1, 0, 1]);
    // Full at 0, the level its request found and left, full again 3 s later if the run lasts.
    assert.ok(b.tokens.length <= 4, `${b.client}: ${b.tokens.length} points`);
  }
  assert.deepEqual(clients[0].tokens, [[0, 20], [0, 20], [0, 19], [3000, 20]]);
  assert.deepEqual(clients[n - 1].tokens, [[0, 20], [n - 1, 20], [n - 1, 19]]);
});
