/**
 * `mod.ts ratelimit --envoy`: which Envoy behaviour the preview shows, and that it says so in the
 * table and the SVG; the gateway's per-route buckets in plain words.
 */
import assert from "node:assert/strict";
import { main } from "../../src/cli/ratelimit/mod.ts";
import { parseCommandLine } from "../../src/cli/ratelimit/args.ts";

async function run(args: string[]): Promise<{ code: number; out: string[]; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out, err: err.join("\n") };
}

async function temp(text: string, suffix: string): Promise<string> {
  const file = await Deno.makeTempFile({ suffix });
  await Deno.writeTextFile(file, text);
  return file;
}

/** The issue's example: 2 tokens every 10 s, requests at 0 s, 0 s and 5 s. */
const ISSUE = `apiVersion: gateway.platform-project.io/v1alpha1
kind: RateLimit
metadata: { name: example, namespace: demo }
spec:
  selectorLabels: { app: httpbin }
  enableResponseHeaders: true
  local:
    defaultBucket: { maxTokens: 2, tokensPerFill: 2, fillInterval: 10s }
`;
const ISSUE_REQUESTS = '{"t":"0s","path":"/","count":2}\n{"t":"5s","path":"/"}\n';

Deno.test("the issue's example: the third request is admitted by default, refused with --envoy 1.30", async () => {
  const rl = await temp(ISSUE, ".yaml");
  const requests = await temp(ISSUE_REQUESTS, ".jsonl");
  const json = async (extra: string[]) => {
    const r = await run(["-f", rl, "--requests", requests, "--json", ...extra]);
    assert.equal(r.code, 0, r.err);
    return r.out.map((l) => JSON.parse(l));
  };
  const now = await json([]);
  assert.deepEqual(now.map((l) => l.status), [200, 200, 200]);
  assert.deepEqual(now[2].headers, {
    "x-ratelimit-limit": "2",
    "x-ratelimit-remaining": "0",
    "x-ratelimit-reset": "5",
  });
  const old = await json(["--envoy", "1.30"]);
  assert.deepEqual(old.map((l) => l.status), [200, 200, 429]);
  assert.deepEqual(old[2].headers, {
    "x-ratelimit-limit": "2",
    "x-ratelimit-remaining": "0",
    "x-ratelimit-reset": "5",
    "content-type": "text/plain",
  });
  const between = await json(["--envoy", "1.32"]);
  assert.deepEqual(between.map((l) => l.status), [200, 200, 200]);
  assert.equal(between[2].headers["x-ratelimit-reset"], undefined, "1.31 to 1.34 send no reset");
});

Deno.test("the table and the SVG say which Envoy behaviour they show", async () => {
  const rl = await temp(ISSUE, ".yaml");
  const requests = await temp(ISSUE_REQUESTS, ".jsonl");
  const svgNow = await Deno.makeTempFile({ suffix: ".svg" });
  const svgOld = await Deno.makeTempFile({ suffix: ".svg" });
  const now = await run(["-f", rl, "--requests", requests, "--svg", svgNow]);
  const old = await run(["-f", rl, "--requests", requests, "--envoy", "v1.30.1", "--svg", svgOld]);
  assert.equal(
    now.out[0],
    "Envoy 1.38 (Istio 1.30): continuous refill, tokensPerFill / fillInterval a second, a request needs one whole token",
  );
  assert.equal(old.out[0], "Envoy 1.30: interval refill, tokensPerFill at each whole fillInterval");
  assert.ok(
    now.out.some((l) =>
      /^default\s+every other request\s+2 per 10s, continuous \(1 every 5s\), burst 2\s+3\s+0$/
        .test(l)
    ),
    now.out.join("\n"),
  );
  assert.ok(
    old.out.some((l) => /^default\s+every other request\s+2 every 10s, burst 2\s+2\s+1$/.test(l)),
    old.out.join("\n"),
  );
  const textNow = await Deno.readTextFile(svgNow);
  const textOld = await Deno.readTextFile(svgOld);
  assert.match(textNow, />Envoy 1\.38 \(Istio 1\.30\): continuous refill/);
  assert.match(textOld, />Envoy 1\.30: interval refill/);
  const curve = (svg: string) =>
    /<path d="(M[^"]*)" fill="none" stroke="#3366cc"/.exec(svg)?.[1] ?? "";
  // Continuous: straight ramps (L); interval: steps (H then V).
  assert.match(curve(textNow), /L/);
  assert.doesNotMatch(curve(textNow), /V/);
  assert.match(curve(textOld), /H[\d.]+V/);
  assert.doesNotMatch(curve(textOld), /L/);
});

Deno.test("a gateway RateLimit: the preview says each route has its own buckets", async () => {
  const sample = new URL("../../samples/ratelimit-gateway.yaml", import.meta.url).pathname;
  const r = await run(["-f", sample, "--rate", "1/s", "--for", "1s"]);
  assert.equal(r.code, 0, r.err);
  assert.equal(
    r.out[1],
    "On the ingress gateway every route (each VirtualService host and http route) has its own buckets; this shows one route.",
  );
  assert.equal(
    r.out[2],
    "A RateLimit over two routes gives two independent default buckets, so twice this traffic gets through.",
  );
  const workload = new URL("../../samples/ratelimit-workload.yaml", import.meta.url).pathname;
  const w = await run(["-f", workload, "--rate", "1/s", "--for", "1s"]);
  assert.ok(!w.out.some((l) => l.includes("VirtualService")));
});

Deno.test("--envoy: versions the model does not follow are usage errors", async () => {
  for (const bad of ["1.29", "1.39", "latest"]) {
    const parsed = parseCommandLine([
      "-f",
      "x.yaml",
      "--rate",
      "1/s",
      "--for",
      "1s",
      "--envoy",
      bad,
    ]);
    assert.ok(!parsed.ok && !parsed.help, bad);
    assert.match(parsed.error, /^--envoy: /);
  }
  const r = await run(["-f", "x.yaml", "--rate", "1/s", "--for", "1s", "--envoy", "1.22"]);
  assert.equal(r.code, 2);
  assert.match(
    r.err,
    /--envoy: the model follows Envoy 1\.30 to 1\.38, not 1\.22 \(older Envoys also refill by timer: use 1\.30\)/,
  );
  const help = await run(["--help"]);
  assert.match(help.out[0], /--envoy VERSION\s+the mesh's Envoy \(default 1\.38, Istio 1\.30's\)/);
});
