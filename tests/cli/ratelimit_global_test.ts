/**
 * The preview of a RateLimit with spec.global: the traffic spread over `--replicas` Pods, each
 * proxy's local filter first, then one engine model counting every Pod's requests in fixed
 * windows; local (per Pod) and global (workload) admission side by side.
 */
import assert from "node:assert/strict";
import { run } from "./preview.ts";

const EXAMPLE =
  new URL("../../docs/examples/ratelimit-global-orders.yaml", import.meta.url).pathname;

async function temp(text: string): Promise<string> {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  await Deno.writeTextFile(file, text);
  return file;
}

interface Line {
  t: string;
  status: number;
  pod?: number;
  global?: { rule: string; code: string; remaining?: number };
  bucket?: string | number;
}

async function jsonRun(args: string[]): Promise<{ requests: Line[]; rates: unknown[] }> {
  const r = await run([...args, "--json"]);
  assert.equal(r.code, 0, r.err);
  const lines = r.out.map((l) => JSON.parse(l));
  return {
    requests: lines.filter((l) => "t" in l),
    rates: lines.filter((l) => !("t" in l)),
  };
}

const ORDERS = ["--path", "/orders", "--header", "X-Api-Key=alice"];

Deno.test("global: at most the limit per one-second window across 3 Pods, the rest refused by the engine", async () => {
  const { requests, rates } = await jsonRun([
    "-f",
    EXAMPLE,
    "--rate",
    "8/s",
    "--for",
    "3s",
    ...ORDERS,
    "--replicas",
    "3",
  ]);
  assert.equal(requests.length, 24);
  assert.deepEqual(new Set(requests.map((l) => l.pod)), new Set([0, 1, 2]));
  for (const second of ["0", "1", "2"]) {
    const inWindow = requests.filter((l) => String(Math.floor(parseFloat(l.t))) === second);
    const admitted = inWindow.filter((l) => l.status === 200);
    assert.ok(admitted.length <= 5, `second ${second}: ${admitted.length} admitted`);
    // Every admitted request was counted by the engine, the last one leaving what is left.
    assert.ok(admitted.every((l) => l.global?.code === "OK"));
  }
  const first = requests.slice(0, 8);
  assert.deepEqual(first.map((l) => l.status), [200, 200, 200, 200, 200, 429, 429, 429]);
  assert.deepEqual(first.map((l) => l.global?.remaining), [4, 3, 2, 1, 0, 0, 0, 0]);
  // A request the local bucket refused never reached the engine.
  const localRefusals = requests.filter((l) => l.status === 429 && l.global === undefined);
  assert.ok(localRefusals.length > 0, "some requests are refused locally");
  assert.deepEqual(rates, [
    { bucket: "default", perPod: "2/1s", replicas: 3, workload: "6/1s" },
    { bucket: "global.0", replicas: 3, workload: "5/1s" },
    { bucket: "global.default", replicas: 3, workload: "100/1m" },
  ]);
});

Deno.test("global: more replicas admit more locally, never more globally", async () => {
  const admitted = async (replicas: number) => {
    const { requests } = await jsonRun([
      "-f",
      EXAMPLE,
      "--rate",
      "20/s",
      "--for",
      "1s",
      ...ORDERS,
      "--replicas",
      String(replicas),
    ]);
    return {
      total: requests.filter((l) => l.status === 200).length,
      reachedEngine: requests.filter((l) => l.global !== undefined).length,
    };
  };
  const one = await admitted(1);
  const ten = await admitted(10);
  // One Pod: its burst of 2 and refill let 3 requests through locally, all within the limit of 5.
  assert.deepEqual(one, { total: 3, reachedEngine: 3 });
  // Ten Pods: 20 pass locally, the engine admits 5.
  assert.deepEqual(ten, { total: 5, reachedEngine: 20 });
});

Deno.test("global: the text report shows both parts side by side, and shadow mode refuses nothing", async () => {
  const r = await run([
    "-f",
    EXAMPLE,
    "--rate",
    "8/s",
    "--for",
    "1s",
    ...ORDERS,
    "--replicas",
    "3",
  ]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out[1], /^Global limits: one engine .* counts for all 3 Pods/);
  assert.match(
    r.out[2],
    /^T\s+PATH\s+HEADERS\s+POD\s+STATUS\s+BUCKET\s+LEFT\s+GLOBAL\s+GLOBAL LEFT$/,
  );
  assert.ok(r.out.includes("8 requests: 5 admitted, 3 rejected (0 by local limits, 3 by global)"));
  assert.ok(r.out.some((l) => /^0\s+path \/orders; each X-Api-Key\s+5\/Second\s+5\s+3$/.test(l)));
  assert.ok(r.out.some((l) => /^global\.0\s+-\s+5\/1s$/.test(l)));
  const shadow = await temp(
    (await Deno.readTextFile(EXAMPLE)).replace("spec:\n", "spec:\n  enforce: false\n"),
  );
  const s = await run(["-f", shadow, "--rate", "8/s", "--for", "1s", ...ORDERS, "--replicas", "3"]);
  assert.equal(s.code, 0, s.err);
  assert.ok(
    s.out.includes("8 requests: 8 admitted (3 would be rejected), 0 rejected"),
    s.out.join("\n"),
  );
});

Deno.test("global: a RateLimit with only spec.global previews, on one Pod without --replicas", async () => {
  const file = await temp(`apiVersion: gateway.platform-project.io/v1alpha1
kind: RateLimit
metadata: {name: g, namespace: demo}
spec:
  selectorLabels: {app: httpbin}
  global:
    default: {limit: {requests: 2, unit: Minute}}
`);
  const { requests } = await jsonRun(["-f", file, "--rate", "1/s", "--for", "4s"]);
  assert.deepEqual(requests.map((l) => l.status), [200, 200, 429, 429]);
  assert.ok(requests.every((l) => l.pod === undefined && l.bucket === undefined));
  assert.deepEqual(requests.map((l) => l.global?.rule), [
    "default",
    "default",
    "default",
    "default",
  ]);
  const text = await run(["-f", file, "--rate", "1/s", "--for", "4s"]);
  assert.match(text.out[2], /^T\s+PATH\s+STATUS\s+GLOBAL\s+GLOBAL LEFT$/);
});
