/**
 * The preview of per-client rules: a client per request (`client` in the JSONL, `--clients N`),
 * one client exhausted while another is admitted, each client's bucket in the summary, and a plain
 * refusal for an Envoy without dynamic descriptors.
 */
import assert from "node:assert/strict";
import { run } from "./preview.ts";
import { clientAddress, parseCommandLine, rateRequests } from "../../src/cli/ratelimit/args.ts";
import { parseRequests } from "../../src/cli/ratelimit/requests.ts";

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
