/**
 * What `mod.ts ratelimit` says about bad input, as kubectl would say it: unknown fields by path with
 * the field meant, a file of another kind in one line, a missing file plainly, one-line usage
 * errors with the way to the help; and what it reads and prints: `-f -` from stdin, `--render`.
 */
import assert from "node:assert/strict";
import { parse, parseAllDocuments } from "yaml";
import { runLines } from "./preview.ts";
import { reconcileRateLimit } from "../../src/reconcile/ratelimit/mod.ts";

const SAMPLES = new URL("../../samples/", import.meta.url);
const sample = (name: string) => new URL(name, SAMPLES).pathname;
const RATE = ["--rate", "1/s", "--for", "1s"];

const run = runLines;

async function temp(text: string): Promise<string> {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  await Deno.writeTextFile(file, text);
  return file;
}

const WORKLOAD = await Deno.readTextFile(sample("ratelimit-workload.yaml"));

Deno.test("a misspelt and an unknown field: each named by path, the typo with the field meant", async () => {
  const text = WORKLOAD.replace("      maxTokens: 10\n", "      maxToken: 10\n")
    .replace("spec:\n", "extra: 1\nspec:\n");
  const file = await temp(text);
  const r = await run(["-f", file, ...RATE]);
  assert.deepEqual(r, {
    code: 2,
    out: [],
    err: [
      `error: ${file}: extra: unknown field`,
      `error: ${file}: spec.local.defaultBucket.maxToken: unknown field; did you mean maxTokens?`,
    ],
  });
  // --render refuses it the same way: nothing is rendered from a spec kubectl would refuse.
  assert.deepEqual((await run(["-f", file, "--render"])).err, r.err);
});

Deno.test("a file of another kind: one message naming its kind", async () => {
  const r = await run(["-f", sample("serverless.yaml"), ...RATE]);
  assert.deepEqual(r.err, [
    `error: ${sample("serverless.yaml")}: this is a Serverless, not a RateLimit`,
  ]);
  assert.equal(r.code, 2);
  const two = await run(["-f", sample("demo-workload.yaml"), ...RATE]);
  assert.deepEqual(two.err, [
    `error: ${
      sample("demo-workload.yaml")
    }: no RateLimit among its 3 documents (Namespace, Deployment, Service)`,
  ]);
});

Deno.test("a missing file is named plainly, exit 1", async () => {
  const r = await run(["-f", "/nonexistent/rl.yaml", ...RATE]);
  assert.deepEqual(r, { code: 1, out: [], err: ["error: /nonexistent/rl.yaml: no such file"] });
  const req = await run(["-f", sample("ratelimit-workload.yaml"), "--requests", "/nonexistent/r"]);
  assert.deepEqual(req.err, ["error: /nonexistent/r: no such file"]);
});

Deno.test("usage errors: one line on stderr pointing at --help, exit 2", async () => {
  const cases: [string[], string][] = [
    [
      ["-f", "a.yaml", "--rate", "1/s", "--for", "-1s"],
      `--for "-1s" is not a duration like 30s or 2m`,
    ],
    [["-f", "a.yaml", "--jsno"], "unknown flag --jsno; did you mean --json?"],
    [["-f", "a.yaml", "--rate"], "--rate needs a value"],
    [["-f", "a.yaml", "stray"], `unexpected argument "stray": this command takes none`],
    [["--rate", "1/s"], "-f RATELIMIT.yaml is required"],
    [["-f", "a.yaml", "--render", "--json"], "--render prints the EnvoyFilter only: drop --json"],
    [["-f", "-", "--requests", "-"], "-f - and --requests - cannot both read stdin"],
    [
      ["-f", "a.yaml", "--rate", "1/s", "--for", "1s", "--method", "GET /"],
      `--method "GET /" is not an HTTP method like GET or POST`,
    ],
    [
      ["-f", "a.yaml", "--requests", "r.jsonl", "--method", "POST"],
      "--requests cannot be combined with --rate, --for, --method, --path, --header or --clients",
    ],
  ];
  for (const [args, message] of cases) {
    const r = await run(args);
    const end = message.endsWith("?") ? " " : ". ";
    assert.deepEqual(r, {
      code: 2,
      out: [],
      err: [`error: ${message}${end}See 'mod.ts ratelimit --help'.`],
    }, args.join(" "));
  }
});

Deno.test("-h and --help print the help on stdout, even beside a bad flag", async () => {
  for (const args of [["-h"], ["--help"], ["--bogus", "--help"]]) {
    const r = await run(args);
    assert.equal(r.code, 0);
    assert.deepEqual(r.err, []);
    assert.match(r.out[0], /^Usage: mod\.ts ratelimit -f RATELIMIT\.yaml \(--render \|/);
  }
});

Deno.test("-f - reads the RateLimit from stdin", async () => {
  const fromStdin = await run(["-f", "-", ...RATE, "--json"], WORKLOAD);
  const fromFile = await run(["-f", sample("ratelimit-workload.yaml"), ...RATE, "--json"]);
  assert.equal(fromStdin.code, 0, fromStdin.err.join("\n"));
  assert.deepEqual(fromStdin.out, fromFile.out);
  const empty = await run(["-f", "-", ...RATE], "");
  assert.deepEqual(empty.err, ["error: stdin: no YAML documents"]);
});

Deno.test("--render prints the reducer's EnvoyFilter, exactly the object the operator applies", async () => {
  for (const name of ["ratelimit-workload.yaml", "ratelimit-gateway.yaml"]) {
    const r = await run(["-f", sample(name), "--render"]);
    assert.equal(r.code, 0, r.err.join("\n"));
    const rendered = parseAllDocuments(r.out.join("\n")).map((d) => d.toJS());
    const rl = parse(await Deno.readTextFile(sample(name)));
    rl.metadata = {
      uid: "ratelimit-cli",
      generation: 1,
      creationTimestamp: "1970-01-01T00:00:00Z",
      ...rl.metadata,
    };
    const plan = reconcileRateLimit({
      rateLimit: rl,
      peers: [],
      pods: [],
      meshInstalled: true,
      now: 0,
    });
    assert.ok(plan.apply.length > 0);
    assert.deepEqual(rendered, JSON.parse(JSON.stringify(plan.apply)), name);
  }
  const invalid = await run(["-f", sample("ratelimit-invalid.yaml"), "--render"]);
  assert.equal(invalid.code, 2);
  assert.match(invalid.err[0], /Invalid spec, limit not applied: .*is not a multiple/);
});
