/**
 * What `mod.ts ratelimit` reads as kubectl reads it, and the flags that once lost something
 * without a word: YAML 1.1 booleans and merge keys, `kind: List`, names the API server refuses,
 * invalid UTF-8, `-f` twice, `--svg -`, `--json --replicas`, the fillInterval and integer
 * bound messages, and values that were taken as nothing: `--svg=`, a header given twice, a rate
 * too large for a number, a request line's repeated key.
 */
import assert from "node:assert/strict";
import { runLines } from "./preview.ts";

const WORKLOAD = await Deno.readTextFile(
  new URL("../../samples/ratelimit-workload.yaml", import.meta.url),
);
const RATE = ["--rate", "1/s", "--for", "1s"];
const WORKLOAD_FILE = new URL("../../samples/ratelimit-workload.yaml", import.meta.url).pathname;

const run = runLines;

Deno.test("`enforce: yes` and `<<:` merge keys read as kubectl reads them", async () => {
  const merged = [
    "apiVersion: gateway.platform-project.io/v1alpha1",
    "kind: RateLimit",
    "metadata: {name: merged, namespace: demo}",
    "spec:",
    "  enforce: no",
    "  selectorLabels: {app: httpbin}",
    "  local:",
    "    defaultBucket: &base {maxTokens: 2, tokensPerFill: 2, fillInterval: 30s}",
    "    buckets:",
    "      - path: /ip",
    "        bucket:",
    "          <<: *base",
    "          maxTokens: 1",
  ].join("\n");
  const r = await run(["-f", "-", "--render"], merged);
  assert.equal(r.code, 0, r.err.join("\n"));
  const filter = r.out.join("\n");
  // Shadow mode (enforce: no): the filter enforces nothing, only reports.
  assert.match(filter, /filter_enforced:\n.*\n\s+default_value:\n\s+numerator: 0\n/);
  // The merged bucket: maxTokens from its own key, the rest from the default.
  assert.match(filter, /max_tokens: 1\n\s+tokens_per_fill: 2\n\s+fill_interval: 30s/);
  const yes = await run(
    ["-f", "-", ...RATE],
    WORKLOAD.replace("enableResponseHeaders: true", "enableResponseHeaders: yes"),
  );
  assert.equal(yes.code, 0, yes.err.join("\n"));
});

Deno.test("a kind: List holding one RateLimit is that RateLimit", async () => {
  const body = WORKLOAD.split("\n").filter((l) => !l.startsWith("#"))
    .map((l, i) => (i === 0 ? `- ${l}` : `  ${l}`)).join("\n");
  const list = `apiVersion: v1\nkind: List\nitems:\n${body}`;
  const direct = await run(["-f", "-", ...RATE], WORKLOAD);
  const listed = await run(["-f", "-", ...RATE], list);
  assert.equal(listed.code, 0, listed.err.join("\n"));
  assert.deepEqual(listed.out, direct.out);
});

Deno.test("a name or namespace the API server refuses is refused, naming the rule", async () => {
  const bad = await run(
    ["-f", "-", "--render"],
    WORKLOAD.replace("name: httpbin", "name: Bad_Name!").replace(
      "namespace: demo",
      "namespace: Demo",
    ),
  );
  assert.equal(bad.code, 2);
  assert.equal(bad.err.length, 2);
  assert.match(
    bad.err[0],
    /^error: stdin: metadata\.name: Invalid value: "Bad_Name!": a lowercase RFC 1123 subdomain/,
  );
  assert.match(
    bad.err[1],
    /^error: stdin: metadata\.namespace: Invalid value: "Demo": a lowercase RFC 1123 label/,
  );
});

Deno.test("invalid UTF-8 is refused with its offset, not turned into U+FFFD", async () => {
  const text = WORKLOAD.replace("path: /ip", "path: /ip\u0001");
  const bytes = new TextEncoder().encode(text);
  const at = bytes.indexOf(1);
  bytes[at] = 0xff;
  const r = await run(["-f", "-", "--render"], bytes);
  assert.deepEqual(r, {
    code: 2,
    out: [],
    err: [
      `error: stdin: not UTF-8: byte ${at} (0xff) does not start or continue a UTF-8 character`,
    ],
  });
});

Deno.test("-f, --requests and --svg given twice are refused, not the first silently dropped", async () => {
  for (
    const args of [
      ["-f", "a.yaml", "-f", "b.yaml", "--render"],
      ["-f", "a.yaml", "--requests", "r1", "--requests", "r2"],
      ["-f", "a.yaml", ...RATE, "--svg", "a.svg", "--svg=b.svg"],
    ]
  ) {
    const r = await run(args);
    assert.equal(r.code, 2, args.join(" "));
    assert.equal(r.err.length, 1);
    assert.match(r.err[0], /^error: (-f|--requests|--svg) given twice \(".+" and ".+"\)/);
  }
});

Deno.test("--svg - writes the SVG alone to stdout, the report to stderr", async () => {
  const r = await run(["-f", "-", ...RATE, "--svg", "-"], WORKLOAD);
  assert.equal(r.code, 0);
  assert.equal(r.out.length, 1);
  assert.match(r.out[0], /^<svg [^]*<\/svg>$/);
  assert.match(r.err.join("\n"), /1 requests: 1 admitted, 0 rejected/);
  // A file named "-" is not written.
  await assert.rejects(Deno.stat("-"), Deno.errors.NotFound);
});

Deno.test("--json --replicas carries each bucket's rate on one Pod and on the replicas", async () => {
  const r = await run(["-f", "-", ...RATE, "--json", "--replicas", "3"], WORKLOAD);
  assert.equal(r.code, 0);
  const lines = r.out.map((l) => JSON.parse(l));
  assert.ok("t" in lines[0]);
  assert.deepEqual(lines.slice(1), [
    { bucket: "default", perPod: "10/30s", replicas: 3, workload: "30/30s" },
    { bucket: "0", perPod: "2/1m", replicas: 3, workload: "6/1m" },
    { bucket: "1", perPod: "5/30s", replicas: 3, workload: "15/30s" },
    { bucket: "2", perPod: "1/2m", replicas: 3, workload: "3/2m" },
  ]);
  const without = await run(["-f", "-", ...RATE, "--json"], WORKLOAD);
  assert.equal(without.out.length, 1);
});

Deno.test("fillInterval and integer bounds: messages say what is taken", async () => {
  for (const interval of ["1h", "1m30s"]) {
    const r = await run(
      ["-f", "-", "--render"],
      WORKLOAD.replace("fillInterval: 30s", `fillInterval: ${interval}`),
    );
    assert.equal(r.code, 2);
    assert.match(
      r.err.join("\n"),
      new RegExp(
        `fillInterval: "${interval}" is not a whole number of seconds or minutes like 30s or 1m`,
      ),
    );
  }
  const huge = await run(
    ["-f", "-", "--render"],
    WORKLOAD.replace("maxTokens: 10", "maxTokens: 1e30"),
  );
  assert.equal(huge.code, 2);
  const text = huge.err.join("\n");
  assert.match(
    text,
    /spec\.local\.defaultBucket\.maxTokens: 1e\+30 is above the maximum 4294967295/,
  );
  assert.doesNotMatch(text, /9007199254740991/);
});

/** The one error line of a refused run, after checking it exited 2 and printed nothing else. */
async function refusal(args: string[], stdin = WORKLOAD): Promise<string> {
  const r = await run(args, stdin);
  assert.equal(r.code, 2, args.join(" "));
  assert.deepEqual(r.out, [], args.join(" "));
  assert.equal(r.err.length, 1, r.err.join("\n"));
  return r.err[0];
}

Deno.test("--svg= (no file name) is refused, not taken as no --svg", async () => {
  assert.match(await refusal(["-f", "-", ...RATE, "--svg="]), /^error: --svg needs a file name/);
  // With --requests, an empty --rate or --path is refused too, not taken as not given.
  for (const flag of ["--rate=", "--path="]) {
    assert.match(
      await refusal(["-f", "-", "--requests", "r.jsonl", flag]),
      /^error: --requests cannot be combined with --rate/,
    );
  }
});

Deno.test("--header given twice is refused naming it, its case aside; __proto__ is not dropped", async () => {
  assert.match(
    await refusal(["-f", "-", ...RATE, "--header", "a=1", "--header", "a=2"]),
    /^error: --header "a=2": header "a" given twice\./,
  );
  assert.match(
    await refusal(["-f", "-", ...RATE, "--header", "X-Key=1", "--header", "x-key=2"]),
    /^error: --header "x-key=2": header "x-key" given twice \(as "X-Key" too: names are compared without case\)/,
  );
  assert.match(
    await refusal(["-f", "-", ...RATE, "--header", "__proto__=x"]),
    /^error: --header "__proto__=x": header name "__proto__" is not taken here/,
  );
});

Deno.test("a rate too large to be a number is refused, as NaN/s is", async () => {
  const nines = `${"9".repeat(400)}/s`;
  assert.match(
    await refusal(["-f", "-", "--rate", nines, "--for", "0s"]),
    /^error: --rate "9+\/s" is not a rate like 10\/s/,
  );
});

Deno.test("--requests: a key given twice in a line, or a header twice or __proto__, is refused", async () => {
  const cases: [string, string][] = [
    ['{"t":"1s","path":"/","t":"2s"}', 'stdin:1: duplicate key "t"'],
    ['{"t":"1s","path":"/","headers":{"a":"1","a":"2"}}', 'stdin:1: headers: duplicate key "a"'],
    [
      '{"t":"1s","path":"/","headers":{"a":"1","A":"2"}}',
      'stdin:1: headers: header "A" given twice (as "a" too: names are compared without case)',
    ],
    [
      '{"t":"1s","path":"/","headers":{"__proto__":"x","b":"1"}}',
      'stdin:1: headers: header name "__proto__" is not taken here',
    ],
  ];
  for (const [line, error] of cases) {
    assert.equal(
      await refusal(["-f", WORKLOAD_FILE, "--requests", "-"], `${line}\n`),
      `error: ${error}`,
    );
  }
  // Keys alike in different objects, and a colon or quote inside a value, are not repeats.
  const r = await run(
    ["-f", WORKLOAD_FILE, "--requests", "-", "--json"],
    '{"t":"0s","path":"/a:b","headers":{"t":"\\"","path":"x"}}\n',
  );
  assert.equal(r.code, 0, r.err.join("\n"));
  assert.equal(r.out.length, 1);
});

Deno.test("a duration longer than Go's maximum is refused in --requests and --for, not run as Infinity", async () => {
  const huge = `1${"0".repeat(400)}h`;
  const lines = await run(
    ["-f", WORKLOAD_FILE, "--requests", "-", "--envoy", "1.30"],
    `{"t":"0s","path":"/"}\n{"t":"${huge}","path":"/"}\n`,
  );
  assert.equal(lines.code, 2);
  assert.deepEqual(lines.err, [
    `error: stdin:2: t: "${huge}" is longer than Go's maximum duration 2562047h47m16.854775807s`,
  ]);
  const flag = await run(["-f", WORKLOAD_FILE, "--rate", "1/s", "--for", "2562048h"]);
  assert.equal(flag.code, 2);
  assert.match(flag.err[0], /--for "2562048h" is longer than Go's maximum duration/);
});

Deno.test("the largest request time Go takes runs to the end with Envoy 1.30, and draws", async () => {
  const svg = await Deno.makeTempFile({ suffix: ".svg" });
  try {
    const r = await run(
      ["-f", WORKLOAD_FILE, "--requests", "-", "--envoy", "1.30", "--svg", svg],
      `{"t":"0s","path":"/"}\n{"t":"2562047h47m16.854775807s","path":"/"}\n`,
    );
    assert.equal(r.code, 0, r.err.join("\n"));
    assert.ok(r.out.some((l) => l.startsWith("9223372036.855s ")), r.out.join("\n"));
    assert.match(await Deno.readTextFile(svg), /^<svg /);
  } finally {
    await Deno.remove(svg);
  }
});

Deno.test("YAML's .nan and .inf are named in the message, not shown as null", async () => {
  for (const [yaml, shown] of [[".nan", "NaN"], [".inf", "Infinity"], ["-.inf", "-Infinity"]]) {
    const r = await run(
      ["-f", "-", "--render"],
      WORKLOAD.replace(/maxTokens: \d+/, `maxTokens: ${yaml}`),
    );
    assert.equal(r.code, 2);
    assert.match(r.err.join("\n"), new RegExp(`maxTokens: expected integer, got ${shown}$`));
  }
});

Deno.test("--requests: a misspelt key of a line is named with a guess, as in a RateLimit", async () => {
  const r = await run(
    ["-f", WORKLOAD_FILE, "--requests", "-"],
    `{"t":"0s","path":"/"}\n{"t":"1s","path":"/","cuont":2,"headres":{}}\n`,
  );
  assert.equal(r.code, 2);
  assert.deepEqual(r.err, [
    "error: stdin:2: cuont: unknown field; did you mean count?; headres: unknown field; did you mean headers?",
  ]);
});
