/**
 * Every input gets an answer: each command that reads a file or stdin (`ratelimit -f`,
 * `ratelimit --requests`, `ratelimit --render`, `sim FILE`), fed arbitrary bytes, random YAML
 * trees and mutations of the samples and scenarios, ends with exit 0 or 2 (`sim` also 1: a
 * scenario that ran and failed), never throws, prints no stack frame, says a refusal in lines that
 * each start `error: ` and name the input, and stays within a bound of time and memory. The front
 * door is fed any mix of help words and commands. Inputs that broke it once are kept as examples.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { stringify } from "yaml";
import { main as ratelimitMain } from "../../src/cli/ratelimit/mod.ts";
import { runSim } from "../../src/cli/sim.ts";
import { type Command, COMMANDS, main as frontDoor } from "../../src/cli/main.ts";
import type { Output } from "../../src/cli/usage.ts";

/** The most one input may take, wall time: a safety bound, far above what any input needs. */
const CASE_BOUND_MS = 20_000;
/** The most the test process may hold at any point. */
const RSS_BOUND = 1.5 * 1024 ** 3;

/** A line of a stack trace, as V8 prints one. */
const STACK_FRAME = /^\s+at .*(:\d+:\d+\)?|<anonymous>\)?)$/;

interface Outcome {
  code: number;
  out: string[];
  err: string[];
  ms: number;
}

function capture(): Output & { out_: string[]; err_: string[] } {
  const out_: string[] = [];
  const err_: string[] = [];
  return {
    out_,
    err_,
    out: (l) => out_.push(...l.split("\n")),
    err: (l) => err_.push(...l.split("\n")),
  };
}

/** Runs `ratelimit` in process with `stdin` as its stdin. */
async function ratelimit(args: string[], stdin: Uint8Array | string = ""): Promise<Outcome> {
  const io = capture();
  const started = performance.now();
  const code = await ratelimitMain(args, { ...io, stdin: () => Promise.resolve(stdin) });
  return { code, out: io.out_, err: io.err_, ms: performance.now() - started };
}

/** Runs `sim FILE` in process on `bytes` written to a temporary file. */
async function sim(bytes: Uint8Array | string): Promise<Outcome & { file: string }> {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  try {
    if (typeof bytes === "string") await Deno.writeTextFile(file, bytes);
    else await Deno.writeFile(file, bytes);
    const io = capture();
    const started = performance.now();
    const code = await runSim([file], io);
    return { code, out: io.out_, err: io.err_, ms: performance.now() - started, file };
  } finally {
    await Deno.remove(file);
  }
}

/** How often each exit code came, per test: a property that only ever refuses tests little. */
function tally(): { codes: Map<number, number>; add(code: number): void; assertMixed(): void } {
  const codes = new Map<number, number>();
  return {
    codes,
    add: (code) => codes.set(code, (codes.get(code) ?? 0) + 1),
    assertMixed: () => {
      const total = [...codes.values()].reduce((a, b) => a + b, 0);
      for (const code of [0, 2]) {
        assert.ok(
          (codes.get(code) ?? 0) >= total / 20,
          `exit ${code} in fewer than 1 of 20 inputs: ${JSON.stringify([...codes])}`,
        );
      }
    },
  };
}

/** What every answer must be, whatever the input: `codes` allowed, refusals said plainly. */
function assertAnswered(r: Outcome, input: string, codes: readonly number[], what: string) {
  const shown = `${what}\n--- stdout\n${r.out.join("\n")}\n--- stderr\n${r.err.join("\n")}`;
  assert.ok(codes.includes(r.code), `exit ${r.code}, not one of ${codes}: ${shown}`);
  for (const line of [...r.out, ...r.err]) {
    assert.ok(!STACK_FRAME.test(line), `a stack frame in the output: ${JSON.stringify(line)}`);
  }
  if (r.code === 2) {
    assert.ok(r.err.length > 0, `exit 2 with nothing on stderr: ${shown}`);
    for (const line of r.err) {
      assert.ok(line.startsWith("error: "), `a refusal line without "error: ": ${shown}`);
      assert.ok(
        line.includes(input) || line.includes("See 'mod.ts"),
        `a refusal line that names neither ${input} nor the help: ${shown}`,
      );
    }
  }
  assert.ok(r.ms < CASE_BOUND_MS, `${r.ms.toFixed(0)} ms for one input: ${what}`);
  assert.ok(Deno.memoryUsage().rss < RSS_BOUND, `resident memory past the bound after ${what}`);
}

const SAMPLES = [
  "samples/ratelimit-workload.yaml",
  "samples/ratelimit-gateway.yaml",
  "samples/ratelimit-invalid.yaml",
  "docs/examples/kyma-ratelimit.yaml",
  "docs/examples/kyma-ratelimit-uncarried.yaml",
  "docs/examples/ratelimit-per-client.yaml",
  "docs/examples/ratelimit-shadow.yaml",
];
const SCENARIOS = [
  "sim/scenarios/ratelimit-workload.yaml",
  "sim/scenarios/ratelimit-shadow.yaml",
  "sim/scenarios/serverless-install.yaml",
  "sim/scenarios/fault-stalled-watch.yaml",
];

function texts(files: string[]): Promise<string[]> {
  return Promise.all(files.map((f) => Deno.readTextFile(f)));
}

/** Pieces that YAML, Kubernetes and the scenario format treat specially. */
const TOKENS = [
  ": ",
  "- ",
  "  ",
  "\t",
  "&a ",
  "*a",
  "<<: *a",
  "!!binary ",
  "!!set ",
  "'",
  '"',
  "{",
  "}",
  "[",
  "]",
  "#",
  "---\n",
  "yes",
  "no",
  "~",
  "1e30",
  "-1",
  "0",
  "9007199254740993",
  "1000h",
  "0.5s",
  "1m30s",
  "Bad_Name!",
  "\u00ff",
  "\ud83d\ude42",
  "\u2028",
  "\\",
  "kind: List\nitems:\n",
  "expectResponse",
  "stauts",
];

/** One edit of a text: a line dropped, doubled, moved or re-indented, or a piece put in. */
const mutation = fc.oneof(
  fc.record({ op: fc.constant("drop" as const), at: fc.nat() }),
  fc.record({ op: fc.constant("double" as const), at: fc.nat() }),
  fc.record({ op: fc.constant("swap" as const), at: fc.nat(), to: fc.nat() }),
  fc.record({
    op: fc.constant("indent" as const),
    at: fc.nat(),
    by: fc.integer({ min: -4, max: 4 }),
  }),
  fc.record({
    op: fc.constant("put" as const),
    at: fc.nat(),
    cut: fc.nat({ max: 12 }),
    piece: fc.oneof(fc.constantFrom(...TOKENS), fc.string({ maxLength: 6 })),
  }),
);

/** One edit, as `mutation` draws it. */
type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never;

function mutate(text: string, edits: readonly Mutation[]): string {
  let lines = text.split("\n");
  for (const e of edits) {
    const i = e.at % lines.length;
    switch (e.op) {
      case "drop":
        lines = lines.filter((_, k) => k !== i);
        break;
      case "double":
        lines.splice(i, 0, lines[i]);
        break;
      case "swap": {
        const j = e.to % lines.length;
        [lines[i], lines[j]] = [lines[j], lines[i]];
        break;
      }
      case "indent":
        lines[i] = e.by >= 0 ? " ".repeat(e.by) + lines[i] : lines[i].slice(-e.by);
        break;
      case "put": {
        const all = lines.join("\n");
        const at = e.at % (all.length + 1);
        lines = (all.slice(0, at) + e.piece + all.slice(at + e.cut)).split("\n");
        break;
      }
    }
    if (lines.length === 0) lines = [""];
  }
  return lines.join("\n");
}

/** A YAML tree: any JSON value, or one dressed as a RateLimit. */
const yamlTree = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  fc.record({
    apiVersion: fc.constantFrom("gateway.platform-project.io/v1alpha1", "v1", "x"),
    kind: fc.constantFrom("RateLimit", "List", "Pod"),
    metadata: fc.record({ name: fc.string({ maxLength: 12 }), namespace: fc.string() }, {
      requiredKeys: [],
    }),
    spec: fc.jsonValue({ maxDepth: 4 }),
  }, { requiredKeys: [] }),
).map((v) => stringify(v, { aliasDuplicateObjects: false }));

/** The ways `ratelimit` reads a RateLimit, the input being stdin. */
const RATELIMIT_FORMS: string[][] = [
  ["-f", "-", "--rate", "2/s", "--for", "2s"],
  ["-f", "-", "--render"],
  ["-f", "-", "--rate", "1/s", "--for", "1s", "--json", "--replicas", "2"],
];

Deno.test("ratelimit: any bytes, YAML tree or mutated sample on stdin gets exit 0 or 2", async () => {
  const samples = await texts(SAMPLES);
  const input = fc.oneof(
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 600 }) },
    { weight: 1, arbitrary: yamlTree },
    {
      weight: 4,
      arbitrary: fc.tuple(fc.constantFrom(...samples), fc.array(mutation, { maxLength: 3 }))
        .map(([t, m]) => mutate(t, m)),
    },
  );
  const seen = tally();
  await fc.assert(
    fc.asyncProperty(input, fc.constantFrom(...RATELIMIT_FORMS), async (stdin, args) => {
      const r = await ratelimit(args, stdin);
      seen.add(r.code);
      assertAnswered(r, "stdin", [0, 2], `ratelimit ${args.join(" ")} on ${show(stdin)}`);
    }),
    { numRuns: 400 },
  );
  seen.assertMixed();
});

Deno.test("ratelimit --requests: any bytes or mutated request lines get exit 0 or 2", async () => {
  const lines = [
    '{"t":"0s","path":"/headers","headers":{"X-Rate-Limited":"true"},"count":3}',
    '{"t":"1.5s","path":"/ip","client":"10.0.0.2"}',
    '{"t":"2s","path":"/","count":2}',
  ].join("\n");
  const input = fc.oneof(
    fc.uint8Array({ maxLength: 400 }),
    fc.array(mutation, { minLength: 1, maxLength: 3 }).map((m) => mutate(lines, m)),
    fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }).map((vs) =>
      vs.map((v) => JSON.stringify(v)).join("\n")
    ),
  );
  const seen = tally();
  await fc.assert(
    fc.asyncProperty(input, async (stdin) => {
      const r = await ratelimit(
        ["-f", "samples/ratelimit-workload.yaml", "--requests", "-"],
        stdin,
      );
      seen.add(r.code);
      assertAnswered(r, "stdin", [0, 2], `--requests on ${show(stdin)}`);
    }),
    { numRuns: 200 },
  );
  seen.assertMixed();
});

Deno.test("sim: any bytes, YAML tree or mutated scenario gets exit 0, 1 or 2", async () => {
  const scenarios = await texts(SCENARIOS);
  const input = fc.oneof(
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 400 }) },
    { weight: 1, arbitrary: yamlTree },
    {
      weight: 3,
      arbitrary: fc.tuple(
        fc.constantFrom(...scenarios),
        fc.array(mutation, { maxLength: 2 }),
      ).map(([t, m]) => mutate(t, m)),
    },
  );
  const seen = tally();
  await fc.assert(
    fc.asyncProperty(input, async (bytes) => {
      const r = await sim(bytes);
      seen.add(r.code);
      assertAnswered(r, r.file, [0, 1, 2], `sim on ${show(bytes)}`);
    }),
    { numRuns: 60 },
  );
  seen.assertMixed();
});

Deno.test("inputs that broke the CLI once get a one-line refusal", async () => {
  const bomb = [
    "apiVersion: gateway.platform-project.io/v1alpha1",
    "kind: RateLimit",
    "metadata:",
    "  name: lol",
    "  namespace: demo",
    "  annotations:",
    '    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
    ...["b", "c", "d", "e", "f", "g", "h"].map((k, i) => {
      const prev = "abcdefgh"[i];
      return `    ${k}: &${k} [${Array(9).fill(`*${prev}`).join(",")}]`;
    }),
    "spec: {}",
  ].join("\n");
  for (const args of RATELIMIT_FORMS) {
    const r = await ratelimit(args, bomb);
    assertAnswered(r, "stdin", [2], "the alias bomb");
    assert.equal(r.err.length, 1);
    assert.match(r.err[0], /^error: stdin:\d+: its aliases expand too far/);
  }
  const scenario = await sim(
    `name: bomb\nx: &x [1,1,1,1,1,1,1,1,1,1]\n` +
      ["y", "z", "w", "v", "u", "t"].map((k, i) =>
        `${k}: &${k} [${Array(10).fill(`*${"xyzwvu"[i]}`).join(",")}]`
      ).join("\n"),
  );
  assertAnswered(scenario, scenario.file, [2], "the alias bomb as a scenario");
  assert.equal(scenario.err.length, 1);
  assert.match(scenario.err[0], /aliases expand too far/);

  const huge = new Uint8Array(3 * 1024 * 1024 + 1).fill(0x61);
  const big = await ratelimit(["-f", "-", "--render"], huge);
  assertAnswered(big, "stdin", [2], "a 3 MiB + 1 byte stdin");
  assert.deepEqual(big.err, [
    "error: stdin: 3145729 bytes is larger than 3145728 (3 MiB, the most the API server takes in one request)",
  ]);

  const keys = ["apiVersion: v1", "kind: RateLimit", "metadata:", "  annotations:"];
  for (let i = 0; i < 40_000; i++) keys.push(`    k${i}: v`);
  const many = await ratelimit(["-f", "-", "--render"], keys.join("\n"));
  assertAnswered(many, "stdin", [2], "40,000 annotation keys");
});

Deno.test("front door: any mix of help words and commands answers 0 or 2 and never recurses", async () => {
  const io = capture();
  // Commands whose help is captured instead of printed.
  const commands: Command[] = COMMANDS.map((c) => ({
    ...c,
    load: () =>
      Promise.resolve({
        main: (args: string[]) => {
          io.out(`${c.name} ${args.join(" ")}`);
          return Promise.resolve(0);
        },
      }),
  }));
  const word = fc.constantFrom(
    "help",
    "--help",
    "-h",
    "sim",
    "ratelimit",
    "--version",
    "nope",
    "-x",
  );
  await fc.assert(
    fc.asyncProperty(fc.array(word, { maxLength: 6 }), async (args) => {
      io.out_.length = 0;
      io.err_.length = 0;
      const code = await frontDoor(args, commands, io);
      assert.ok(code === 0 || code === 2, `exit ${code} for ${args.join(" ")}`);
      if (code === 2) assert.equal(io.err_.length, 1, `${args.join(" ")}: ${io.err_.join("\n")}`);
    }),
    { numRuns: 500 },
  );
  for (
    const args of [["help", "--help"], ["help", "help"], ["-h", "-h"], ["--help", "help", "-h"]]
  ) {
    io.out_.length = 0;
    assert.equal(await frontDoor(args, commands, io), 0);
    assert.match(io.out_[0], /^Platform operator/, args.join(" "));
  }
  io.out_.length = 0;
  assert.equal(await frontDoor(["help", "sim"], commands, io), 0);
  assert.deepEqual(io.out_, ["sim --help"]);
});

function show(input: Uint8Array | string): string {
  const text = typeof input === "string" ? input : `bytes ${JSON.stringify([...input])}`;
  return text.length > 400 ? `${text.slice(0, 400)}…` : JSON.stringify(text);
}
