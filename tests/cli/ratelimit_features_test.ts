/**
 * The preview of shadow mode (would reject beside admitted), of gRPC calls (HTTP 200 with a
 * grpc-status beside HTTP's 429) and of the workload's rate (`--replicas N`).
 */
import assert from "node:assert/strict";
import { run } from "./preview.ts";
import { parseCommandLine } from "../../src/cli/ratelimit/args.ts";

const example = (name: string) => new URL(`../../docs/examples/${name}`, import.meta.url).pathname;

Deno.test("shadow mode: everything admitted, what enforcing would reject marked", async () => {
  const r = await run(["-f", example("ratelimit-shadow.yaml"), "--rate", "2/s", "--for", "2s"]);
  assert.equal(r.code, 0, r.err);
  assert.ok(r.out.some((l) => l.startsWith("Shadow mode (spec.enforce: false)")), r.out.join("\n"));
  assert.equal(r.out.filter((l) => l.endsWith("would reject")).length, 2);
  assert.ok(r.out.includes("4 requests: 4 admitted (2 would be rejected), 0 rejected"));
  const json = await run([
    "-f",
    example("ratelimit-shadow.yaml"),
    "--rate",
    "2/s",
    "--for",
    "2s",
    "--json",
  ]);
  const lines = json.out.map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => [l.status, l.wouldReject ?? false]), [
    [200, false],
    [200, false],
    [200, true],
    [200, true],
  ]);
});

Deno.test("gRPC calls: HTTP 200 with grpc-status 8, counted as rejected; HTTP keeps 429", async () => {
  const grpc = await run([
    "-f",
    example("ratelimit-grpc.yaml"),
    "--rate",
    "1/s",
    "--for",
    "2s",
    "--header",
    "content-type=application/grpc",
  ]);
  assert.equal(grpc.code, 0, grpc.err);
  assert.ok(
    grpc.out.some((l) => /^1s +\/ +content-type=application\/grpc +200 grpc-status 8 /.test(l)),
  );
  assert.ok(grpc.out.includes("2 requests: 1 admitted, 1 rejected"), grpc.out.join("\n"));
  const http = await run(["-f", example("ratelimit-grpc.yaml"), "--rate", "1/s", "--for", "2s"]);
  assert.ok(http.out.some((l) => /^1s +\/ +429 /.test(l)), http.out.join("\n"));
});

const workload = ["-f", new URL("../../samples/ratelimit-workload.yaml", import.meta.url).pathname];
const oneSecond = ["--rate", "1/s", "--for", "1s"];

Deno.test("--replicas N: each bucket's rate on one Pod and on N", async () => {
  const r = await run([...workload, ...oneSecond, "--replicas", "4"]);
  assert.equal(r.code, 0, r.err);
  const at = r.out.findIndex((l) => l.startsWith("BUCKET   PER POD"));
  assert.ok(at > 0, r.out.join("\n"));
  assert.deepEqual(r.out.slice(at).map((l) => l.trim().split(/\s+/)), [
    ["BUCKET", "PER", "POD", "4", "REPLICAS"],
    ["default", "10/30s", "40/30s"],
    ["0", "2/1m", "8/1m"],
    ["1", "5/30s", "20/30s"],
    ["2", "1/2m", "4/2m"],
  ]);
  // Without --replicas, no rate table: the preview's usual output is unchanged.
  const plain = await run([...workload, ...oneSecond]);
  assert.ok(!plain.out.some((l) => l.includes("PER POD")));
});

Deno.test("--replicas must be a whole number from 1", () => {
  for (const bad of ["0", "1.5", "many", "1000000", "007"]) {
    const p = parseCommandLine(["-f", "x.yaml", "--rate", "1/s", "--for", "1s", "--replicas", bad]);
    assert.ok(!p.ok && !p.help, bad);
    assert.match(p.error, /^--replicas /);
  }
  const ok = parseCommandLine(["-f", "x.yaml", "--rate", "1/s", "--for", "1s", "--replicas", "3"]);
  assert.ok(ok.ok && "options" in ok && ok.options.replicas === 3);
});
