/** `mod.ts ratelimit`: called through main() with temp files, output captured. */
import assert from "node:assert/strict";
import { main } from "../../src/cli/ratelimit/mod.ts";
import { run } from "./preview.ts";
import { parseCommandLine, parseRate, rateRequests } from "../../src/cli/ratelimit/args.ts";
import { parseRequests } from "../../src/cli/ratelimit/requests.ts";
import { COMMANDS } from "../../src/cli/main.ts";

const SAMPLES = new URL("../../samples/", import.meta.url);
const sample = (name: string) => new URL(name, SAMPLES).pathname;

async function temp(text: string, suffix: string): Promise<string> {
  const file = await Deno.makeTempFile({ suffix });
  await Deno.writeTextFile(file, text);
  return file;
}

const REQUESTS = [
  { t: "0s", path: "/headers", headers: { "X-Rate-Limited": "true" }, count: 3 },
  { t: "1.5s", path: "/headers" },
  { t: "1m", path: "/headers", headers: { "x-rate-limited": "true" } },
].map((r) => JSON.stringify(r)).join("\n") + "\n";

Deno.test("--json: one line a request in the issue's format", async () => {
  const file = await temp(REQUESTS, ".jsonl");
  const r = await run(["-f", sample("ratelimit-workload.yaml"), "--requests", file, "--json"]);
  assert.equal(r.code, 0, r.err);
  const lines = r.out.map((l) => JSON.parse(l));
  // Envoy 1.38: x-ratelimit-reset is 0 while a whole token is left, else the seconds to the next
  // one (2 a minute: 30 s).
  assert.deepEqual(lines[0], {
    t: "0s",
    path: "/headers",
    status: 200,
    bucket: 0,
    headers: { "x-ratelimit-limit": "2", "x-ratelimit-remaining": "1", "x-ratelimit-reset": "0" },
  });
  assert.deepEqual(lines[2], {
    t: "0s",
    path: "/headers",
    status: 429,
    bucket: 0,
    headers: {
      "x-ratelimit-limit": "2",
      "x-ratelimit-remaining": "0",
      "x-ratelimit-reset": "30",
      "content-type": "text/plain",
    },
    body: "local_rate_limited",
  });
  assert.deepEqual([lines[3].t, lines[3].bucket, lines[3].status], ["1.5s", "default", 200]);
  assert.deepEqual(
    [lines[4].t, lines[4].bucket, lines[4].status],
    ["60s", 0, 200],
    "refilled at 1m",
  );
  assert.equal(lines.length, 5);
});

Deno.test("table and per-bucket summary without --json", async () => {
  const file = await temp(REQUESTS, ".jsonl");
  const r = await run(["-f", sample("ratelimit-workload.yaml"), "--requests", file]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out[0], /^Envoy 1\.38 \(Istio 1\.30\): continuous refill/);
  assert.match(r.out[1], /^T\s+PATH\s+HEADERS\s+STATUS\s+BUCKET\s+LEFT$/);
  assert.match(r.out[4], /^0s\s+\/headers\s+X-Rate-Limited=true\s+429\s+0\s+0$/);
  assert.ok(r.out.includes("5 requests: 4 admitted, 1 rejected"), r.out.join("\n"));
  const row = (id: string) => r.out.find((l) => l.startsWith(`${id} `)) ?? "";
  assert.match(
    row("default"),
    /every other request\s+10 per 30s, continuous \(1 every 3s\), burst 10\s+1\s+0$/,
  );
  assert.match(
    row("0"),
    /path \/headers, X-Rate-Limited: true\s+2 per 1m, continuous \(1 every 30s\), burst 2\s+3\s+1$/,
  );
  assert.match(row("2"), /X-Client: batch\s+1 per 2m, continuous \(1 every 2m\), burst 1\s+0\s+0$/);
});

Deno.test("--rate with --path and --header, and an SVG with a panel only for the bucket used", async () => {
  const svg = await Deno.makeTempFile({ suffix: ".svg" });
  const r = await run([
    "-f",
    sample("ratelimit-workload.yaml"),
    "--rate",
    "2/s",
    "--for",
    "90s",
    "--path",
    "/x",
    "--header",
    "X-Client=batch",
    "--json",
    "--svg",
    svg,
  ]);
  assert.equal(r.code, 0, r.err);
  const lines = r.out.map((l) => JSON.parse(l));
  assert.equal(lines.length, 180);
  assert.ok(lines.every((l) => l.bucket === 2));
  assert.deepEqual(
    lines.filter((l) => l.status === 200).map((l) => l.t),
    ["0s"],
    "1 token every 2m",
  );
  const text = await Deno.readTextFile(svg);
  assert.match(text, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.equal((text.match(/font-weight="bold">bucket /g) ?? []).length, 1);
  assert.match(text, />No request reached buckets default, 0, 1: not drawn\.</);
  assert.match(
    text,
    /bucket 2: X-Client: batch; 1 per 2m, continuous \(1 every 2m\), burst 1; 1 admitted, 179 rejected/,
  );
  assert.match(text, /<circle /);
  assert.match(text, /stroke="#d62828"/);
});

Deno.test("the gateway RateLimit is run on a gateway proxy", async () => {
  const r = await run([
    "-f",
    sample("ratelimit-gateway.yaml"),
    "--rate",
    "20/s",
    "--for",
    "1s",
    "--path",
    "/headers",
    "--json",
  ]);
  assert.equal(r.code, 0, r.err);
  const statuses = r.out.map((l) => JSON.parse(l).status);
  assert.deepEqual(statuses, [...Array(10).fill(200), ...Array(10).fill(429)]);
});

Deno.test("an invalid RateLimit: the operator's status message, exit 2", async () => {
  const r = await run(["-f", sample("ratelimit-invalid.yaml"), "--rate", "1/s", "--for", "1s"]);
  assert.equal(r.code, 2);
  assert.deepEqual(r.out, []);
  assert.match(
    r.err,
    /Invalid spec, limit not applied: spec\.local\.buckets\[0\]\.bucket\.fillInterval 45s is not a multiple of the default bucket's fillInterval 30s/,
  );
});

Deno.test("usage errors exit 2, unreadable files exit 1, --help exits 0", async () => {
  assert.equal((await run([])).code, 2);
  assert.equal((await run(["-f", "x.yaml"])).code, 2);
  assert.equal((await run(["-f", "x.yaml", "--rate", "fast", "--for", "1s"])).code, 2);
  assert.equal((await run(["-f", "x.yaml", "--requests", "r", "--rate", "1/s"])).code, 2);
  assert.equal((await run(["-f", "/nonexistent.yaml", "--rate", "1/s", "--for", "1s"])).code, 1);
  const help = await run(["--help"]);
  assert.equal(help.code, 0);
  assert.match(help.out[0], /^Usage: mod\.ts ratelimit -f RATELIMIT\.yaml/);
  const twoDocs = await temp("kind: RateLimit\n---\nkind: RateLimit\n", ".yaml");
  const r = await run(["-f", twoDocs, "--rate", "1/s", "--for", "1s"]);
  assert.deepEqual([r.code, /expected one RateLimit, found 2/.test(r.err)], [2, true]);
});

Deno.test("bad request lines name the file and line", async () => {
  const bad = await temp('{"t":"0s","path":"/"}\n{"t":"soon","path":"/"}\n', ".jsonl");
  const r = await run(["-f", sample("ratelimit-workload.yaml"), "--requests", bad]);
  assert.equal(r.code, 2);
  assert.match(r.err, /:2: t: "soon" is not a duration like 1\.5s/);
  const back = parseRequests('{"t":"2s","path":"/"}\n{"t":"1s","path":"/"}', "f");
  assert.deepEqual(back, { ok: false, error: "f:2: t 1s is before the previous request's time" });
  assert.ok(!parseRequests('{"t":"1s","path":"/","extra":1}', "f").ok);
  assert.ok(!parseRequests("{nope", "f").ok);
});

Deno.test("methods: --method and a request line's method reach the rules; any token is sent, a bad one is named", async () => {
  const file = "docs/examples/ratelimit-methods.yaml";
  const lines = await temp(
    [
      '{"t":"0s","method":"POST","path":"/api/a","count":3}',
      '{"t":"1s","method":"DELETE","path":"/api/a"}',
      '{"t":"1s","method":"post","path":"/api/a"}',
      '{"t":"1s","method":"PROPFIND","path":"/api/a"}',
      '{"t":"1s","path":"/api/a"}',
    ].join("\n"),
    ".jsonl",
  );
  const r = await run(["-f", file, "--requests", lines, "--json"]);
  assert.equal(r.code, 0, r.err);
  const got = r.out.map((l) => JSON.parse(l)).map((o) => [o.method, o.status, o.bucket]);
  assert.deepEqual(got, [
    ["POST", 200, 0],
    ["POST", 200, 0],
    ["POST", 429, 0],
    // The writes share one bucket: a second later it has not refilled (1 every 30s).
    ["DELETE", 429, 0],
    // Methods compare exactly, and a method no rule lists goes to the default.
    ["post", 200, "default"],
    ["PROPFIND", 200, "default"],
    [undefined, 200, "default"],
  ]);
  const rate = await run(["-f", file, "--rate", "1/s", "--for", "1s", "--method", "PATCH"]);
  assert.ok(rate.out.some((l) => /^0s\s+PATCH\s+\/\s+200\s+default/.test(l)), rate.out.join("\n"));
  const bad = await temp('{"t":"0s","method":"G T","path":"/"}\n', ".jsonl");
  const b = await run(["-f", file, "--requests", bad]);
  assert.equal(b.code, 2);
  assert.match(b.err, /:1: method: "G T" is not an HTTP method like GET or POST/);
});

Deno.test("rates and their request times", () => {
  assert.equal(parseRate("2.5/s"), 2.5);
  assert.equal(parseRate("0/s"), undefined);
  assert.equal(parseRate("5/m"), undefined);
  assert.deepEqual(rateRequests(3, 1000, "/", {}).map((r) => r.t), [0, 333, 666]);
  const parsed = parseCommandLine(["-f", "a", "--rate", "1000000/s", "--for", "2s"]);
  assert.ok(!parsed.ok && !parsed.help && /more than 1000000 requests/.test(parsed.error));
});

Deno.test("the front door lists the ratelimit command", async () => {
  const cmd = COMMANDS.find((c) => c.name === "ratelimit");
  assert.ok(cmd);
  assert.equal((await cmd.load()).main, main);
});

Deno.test("hosts: a rule's hosts take the Host in any case, with a port or a trailing dot; a Host header rule is flagged", async () => {
  const file = "docs/examples/ratelimit-hosts.yaml";
  const lines = await temp(
    [
      '{"t":"0s","path":"/","headers":{"Host":"trial.example.com"}}',
      '{"t":"0s","path":"/","headers":{"host":"ACME.Trial.Example.com:8443"}}',
      '{"t":"0s","path":"/","headers":{"Host":"trial.example.com."}}',
      '{"t":"0s","path":"/","headers":{"Host":"xtrial.example.com"}}',
      '{"t":"0s","path":"/"}',
    ].join("\n"),
    ".jsonl",
  );
  const r = await run(["-f", file, "--requests", lines, "--json"]);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(r.out.map((l) => JSON.parse(l)).map((o) => [o.status, o.bucket]), [
    [200, 0],
    [200, 0],
    [429, 0],
    [200, "default"],
    [200, "default"],
  ]);
  const text = await run(["-f", file, "--rate", "1/s", "--for", "1s"]);
  assert.ok(!text.out.some((l) => l.includes("names Host")), text.out.join("\n"));
  // A rule on the Host header compares it exactly: the preview says so.
  const rl = (await Deno.readTextFile(file)).replace(
    '- hosts: [trial.example.com, "*.trial.example.com"]',
    "- headers: { Host: trial.example.com }",
  );
  const exact = await temp(rl, ".yaml");
  const e = await run([
    "-f",
    exact,
    "--rate",
    "1/s",
    "--for",
    "1s",
    "--header",
    "Host=Trial.Example.com",
  ]);
  assert.equal(e.code, 0, e.err);
  assert.ok(
    e.out.includes(
      "spec.local.buckets[0].headers names Host, which the proxy compares exactly: in other letters or with a port (API.example.com, api.example.com:443) a request escapes it; hosts takes a name in any case, with any port.",
    ),
    e.out.join("\n"),
  );
  assert.ok(
    e.out.some((l) => /^0s\s+\/\s+Host=Trial\.Example\.com\s+200\s+default/.test(l)),
    e.out.join("\n"),
  );
  // A per-client key on Host: each spelling a client of its own.
  const perHost = await temp(
    rl.replace("- headers: { Host: trial.example.com }", "- perClient: { header: host }"),
    ".yaml",
  );
  const p = await run(["-f", perHost, "--rate", "1/s", "--for", "1s"]);
  assert.equal(p.code, 0, p.err);
  assert.ok(
    p.out.includes(
      "spec.local.buckets[0].perClient keys on Host as sent: each spelling (API.example.com, api.example.com:443) is a client of its own, with its own bucket.",
    ),
    p.out.join("\n"),
  );
});
