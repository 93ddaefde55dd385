/**
 * The `--svg` chart read back: each panel's line and marks parsed out of the SVG and mapped to
 * tokens and times by the scale its `<g>` gives (`data-y-zero`, `data-y-full`, `data-x-start`,
 * `data-x-end`, `data-end-ms`). Per-client lines stay within 0 … maxTokens and start full at t = 0,
 * shadow mode marks what it would have rejected in its own colour and counts it, and no text runs
 * past the right edge however long a title is.
 */
import assert from "node:assert/strict";
import { stringify } from "yaml";
import { run } from "./preview.ts";
import { axisCount, MARK_COLOURS } from "../../src/cli/ratelimit/svg.ts";

const WIDTH = 960;
/**
 * A character's width, in em, for the estimate of how far text runs: more than most characters of
 * sans-serif text take (svg.ts itself takes wide and bold characters wider still).
 */
const CHAR_EM = 0.6;

const example = (name: string) => new URL(`../../docs/examples/${name}`, import.meta.url).pathname;

async function temp(text: string, suffix: string): Promise<string> {
  const file = await Deno.makeTempFile({ suffix });
  await Deno.writeTextFile(file, text);
  return file;
}

/** The preview run with `args` and `--svg` (it must succeed): its stdout lines and the SVG. */
async function chart(args: string[]): Promise<{ out: string[]; svg: string }> {
  const file = await Deno.makeTempFile({ suffix: ".svg" });
  const r = await run([...args, "--svg", file]);
  assert.equal(r.code, 0, r.err);
  return { out: r.out, svg: await Deno.readTextFile(file) };
}

/** The attributes of an element's start tag. */
function attrs(tag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of tag.matchAll(/([\w-]+)="([^"]*)"/g)) out[m[1]] = unescape(m[2]);
  return out;
}

/** `text` with the entities of svg.ts's esc() replaced by their characters. */
function unescape(text: string): string {
  return text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(
    /&amp;/g,
    "&",
  );
}

/** A `<text>` element: where it is and what it says. */
interface Text {
  x: number;
  y: number;
  fontSize: number;
  anchor: string;
  bold: boolean;
  text: string;
}

/** The `<text>` elements of `svg`, in order. */
function texts(svg: string): Text[] {
  return [...svg.matchAll(/<text([^>]*)>([^<]*)<\/text>/g)].map((m) => {
    const a = attrs(m[1]);
    return {
      x: Number(a.x),
      y: Number(a.y),
      fontSize: Number(a["font-size"]),
      anchor: a["text-anchor"] ?? "start",
      bold: a["font-weight"] === "bold",
      text: unescape(m[2]),
    };
  });
}

/** A mark of a request: where it is (in time and tokens) and its colour. */
interface Mark {
  t: number;
  tokens: number;
  colour: string;
}

/** A panel read back: its scale, title, line (time, tokens) and marks. */
interface Panel {
  bucket: string;
  client?: string;
  maxTokens: number;
  /** The panel's `<g>`, as text. */
  body: string;
  title: string;
  titleLines: Text[];
  line: Array<[number, number]>;
  circles: Mark[];
  crosses: number;
  yFull: number;
}

/** The absolute points of a path of M, L, H and V commands. */
function pathPoints(d: string): Array<[number, number]> {
  const points: Array<[number, number]> = [];
  let x = 0;
  let y = 0;
  for (const m of d.matchAll(/([MLHV])([-\d.]+)(?:,([-\d.]+))?/g)) {
    if (m[1] === "M" || m[1] === "L") [x, y] = [Number(m[2]), Number(m[3])];
    else if (m[1] === "H") x = Number(m[2]);
    else y = Number(m[2]);
    points.push([x, y]);
  }
  return points;
}

/** The panels of `svg`, in order, read back through their scale. */
function panels(svg: string): Panel[] {
  return [...svg.matchAll(/<g( data-bucket[^>]*)>([\s\S]*?)<\/g>/g)].map((m) => {
    const a = attrs(m[1]);
    const maxTokens = Number(a["data-max-tokens"]);
    const yZero = Number(a["data-y-zero"]);
    const yFull = Number(a["data-y-full"]);
    const xStart = Number(a["data-x-start"]);
    const xEnd = Number(a["data-x-end"]);
    const endMs = Number(a["data-end-ms"]);
    for (const n of [maxTokens, yZero, yFull, xStart, xEnd, endMs]) assert.ok(Number.isFinite(n));
    const tokens = (y: number) => ((yZero - y) / (yZero - yFull)) * maxTokens;
    const time = (x: number) => ((x - xStart) / (xEnd - xStart)) * endMs;
    const lines = [...m[2].matchAll(/<path d="([^"]*)" fill="none" stroke="#3366cc"/g)];
    assert.equal(lines.length, 1, "one line a panel");
    const titleLines = texts(m[2]).filter((t) => t.bold);
    return {
      bucket: a["data-bucket"],
      ...(a["data-client"] !== undefined ? { client: a["data-client"] } : {}),
      maxTokens,
      body: m[2],
      title: titleLines.map((t) => t.text).join(" "),
      titleLines,
      line: pathPoints(lines[0][1]).map(([x, y]): [number, number] => [time(x), tokens(y)]),
      circles: [...m[2].matchAll(/<circle([^>]*)\/>/g)].map((c) => {
        const ca = attrs(c[1]);
        return { t: time(Number(ca.cx)), tokens: tokens(Number(ca.cy)), colour: ca.fill };
      }),
      crosses: [...m[2].matchAll(new RegExp(`stroke="${MARK_COLOURS.rejected}"`, "g"))].length,
      yFull,
    };
  });
}

/** Tokens a coordinate rounded to 0.01 px can be off by, on a 110 px high plot. */
const eps = (maxTokens: number) => (0.01 / 110) * maxTokens + 1e-9;

function assertClientLines(svg: string, clients: string[]) {
  const perClient = panels(svg).filter((p) => p.client !== undefined);
  assert.deepEqual(perClient.map((p) => p.client).sort(), [...clients].sort());
  for (const p of perClient) {
    const where = `bucket ${p.bucket} client ${p.client}`;
    assert.ok(p.line.length > 1, where);
    for (const [t, tokens] of p.line) {
      assert.ok(
        tokens >= -eps(p.maxTokens) && tokens <= p.maxTokens + eps(p.maxTokens),
        `${where}: ${tokens} tokens at ${t} ms, outside 0 … ${p.maxTokens}`,
      );
    }
    const [t0, first] = p.line[0];
    assert.ok(Math.abs(t0) < 1, `${where}: the line starts at ${t0} ms, not 0`);
    assert.ok(
      Math.abs(first - p.maxTokens) <= eps(p.maxTokens),
      `${where}: starts at ${first} tokens, not full (${p.maxTokens})`,
    );
    for (const c of p.circles) {
      assert.ok(c.tokens >= -eps(p.maxTokens) && c.tokens <= p.maxTokens + eps(p.maxTokens));
    }
  }
}

Deno.test("svg: per-client lines stay within 0 … maxTokens and start full at t = 0", async () => {
  // The report's case: a burst of 2 for each X-Api-Key, two clients taking turns.
  const rate = await chart([
    "-f",
    example("ratelimit-per-client.yaml"),
    "--rate",
    "2/s",
    "--for",
    "3s",
    "--path",
    "/anything",
    "--clients",
    "2",
  ]);
  assertClientLines(rate.svg, ["10.0.0.1", "10.0.0.2"]);
  // Each client's first request found its bucket full and left maxTokens - 1.
  for (const p of panels(rate.svg)) {
    assert.equal(p.maxTokens, 2);
    const firstMark = p.circles[0];
    assert.ok(Math.abs(firstMark.tokens - 1) <= eps(2), `${p.client}: ${firstMark.tokens}`);
  }
  // Clients arriving late (bob at 1s, 10.0.0.7 at 5s), of a header rule and of a client-IP rule.
  const file = await chart([
    "-f",
    example("ratelimit-per-client.yaml"),
    "--requests",
    example("per-client-requests.jsonl"),
  ]);
  assertClientLines(file.svg, ["alice", "bob", "10.0.0.7"]);
  const bob = panels(file.svg).find((p) => p.client === "bob")!;
  // Full until bob's request at 1 s.
  const before = bob.line.filter(([t]) => t < 1000 - 1);
  assert.ok(before.length > 0 && before.every(([, tokens]) => Math.abs(tokens - 2) <= eps(2)));
});

Deno.test("svg: shadow mode marks what it would have rejected, and counts it", async () => {
  const { out, svg } = await chart([
    "-f",
    example("ratelimit-shadow.yaml"),
    "--rate",
    "2/s",
    "--for",
    "3s",
  ]);
  // What the table says shadow mode would have rejected, independently of the chart.
  const would = out.filter((l) => /\swould reject$/.test(l)).map((l) => l.split(/\s+/)[0]);
  assert.deepEqual(would, ["1s", "1.5s", "2s", "2.5s"]);
  const [p] = panels(svg);
  assert.equal(panels(svg).length, 1);
  assert.notEqual(MARK_COLOURS.wouldReject, MARK_COLOURS.admitted);
  assert.notEqual(MARK_COLOURS.wouldReject, MARK_COLOURS.rejected);
  const orange = p.circles.filter((c) => c.colour === MARK_COLOURS.wouldReject);
  const green = p.circles.filter((c) => c.colour === MARK_COLOURS.admitted);
  assert.equal(orange.length, 4);
  assert.deepEqual(orange.map((c) => `${Number((c.t / 1000).toFixed(3))}s`), would);
  assert.equal(green.length, 2);
  assert.equal(p.crosses, 0, "shadow mode rejects nothing");
  for (const c of orange) assert.ok(Math.abs(c.tokens) <= eps(p.maxTokens), "found no token");
  const counts = /(\d+) admitted \((\d+) would be rejected\), (\d+) rejected/.exec(p.title);
  assert.ok(counts, p.title);
  assert.deepEqual(counts.slice(1).map(Number), [
    green.length + orange.length,
    orange.length,
    p.crosses,
  ]);
  assert.ok(
    texts(svg).some((t) => t.text.includes("orange dot: admitted, would be rejected")),
    "the legend names the would-reject marks",
  );
  // Enforcing, the same chart has no would-reject mark and no such count.
  const enforced = await chart([
    "-f",
    new URL("../../samples/ratelimit-workload.yaml", import.meta.url).pathname,
    "--rate",
    "2/s",
    "--for",
    "3s",
    "--path",
    "/headers",
    "--header",
    "X-Rate-Limited=true",
  ]);
  const e = panels(enforced.svg);
  assert.equal(e.length, 1);
  assert.ok(e[0].circles.every((c) => c.colour === MARK_COLOURS.admitted));
  assert.equal(e[0].circles.length, 2);
  assert.equal(e[0].crosses, 4);
  assert.doesNotMatch(enforced.svg, /would be rejected/);
  assert.match(e[0].title, /2 admitted, 4 rejected$/);
});

Deno.test("svg: a very long title wraps onto more lines within the width", async () => {
  const longKey = "k".repeat(120);
  const path = `/${"very-long-path-segment/".repeat(20)}end`;
  const value = `a value with words ${"w ".repeat(40)}`;
  const headers = Object.fromEntries([1, 2, 3].map((i) => [`X-Long-Header-Name-${i}`, value]));
  const rl = {
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    metadata: { name: "long", namespace: "demo" },
    spec: {
      selectorLabels: { app: "httpbin" },
      local: {
        defaultBucket: { maxTokens: 10, tokensPerFill: 10, fillInterval: "10s" },
        buckets: [{
          path,
          headers,
          perClient: { header: "X-Api-Key" },
          bucket: { maxTokens: 3, tokensPerFill: 1, fillInterval: "10s" },
        }],
      },
    },
  };
  const file = await temp(stringify(rl), ".yaml");
  // Two clients, the second with a key longer than a line, each 4 requests at once (burst 3).
  const requests =
    ["alice", longKey].map((client, i) =>
      JSON.stringify({ t: `${i}s`, path, headers, client, count: 4 })
    ).join("\n") + "\n";
  const { svg } = await chart(["-f", file, "--requests", await temp(requests, ".jsonl")]);
  const height = Number(/<svg[^>]* height="(\d+)"/.exec(svg)?.[1]);
  for (const t of texts(svg)) {
    const width = [...t.text].length * t.fontSize * CHAR_EM;
    const left = t.anchor === "end" ? t.x - width : t.anchor === "middle" ? t.x - width / 2 : t.x;
    assert.ok(left + width <= WIDTH, `runs to ${left + width} px: ${t.text}`);
    assert.ok(left >= 0, `starts at ${left} px: ${t.text}`);
    assert.ok(t.y <= height, `below the picture: ${t.text}`);
  }
  const ps = panels(svg);
  assert.deepEqual(ps.map((p) => p.client), ["alice", longKey]);
  let below = 0;
  for (const p of ps) {
    assert.ok(p.titleLines.length > 2, `${p.titleLines.length} title lines`);
    // The counts are kept whole, at the end.
    assert.match(p.title, /; 3 admitted, 1 rejected$/);
    // The plot is below its title, and the title below the panel above.
    assert.ok(p.titleLines[0].y - 13 >= below, `title at ${p.titleLines[0].y}, above ${below}`);
    assert.ok(p.yFull > p.titleLines.at(-1)!.y, "plot below its title");
    below = Math.max(...texts(p.body).map((t) => t.y));
  }
});

Deno.test("svg: the largest maxTokens fits left of the plot, shortened (4.29G)", async () => {
  const rl = {
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    metadata: { name: "big", namespace: "demo" },
    spec: {
      selectorLabels: { app: "httpbin" },
      local: { defaultBucket: { maxTokens: 4294967295, tokensPerFill: 1, fillInterval: "1s" } },
    },
  };
  const { svg } = await chart(["-f", await temp(stringify(rl), ".yaml"), ...[
    "--rate",
    "1/s",
    "--for",
    "2s",
  ]]);
  const labels = texts(svg).filter((t) => t.anchor === "end");
  assert.deepEqual(labels.map((t) => t.text), ["4.29G", "0"]);
  for (const t of labels) {
    const left = t.x - [...t.text].length * t.fontSize * CHAR_EM;
    assert.ok(left >= 0, `starts at ${left} px: ${t.text}`);
  }
  assert.deepEqual(panels(svg).map((p) => p.maxTokens), [4294967295]);
  assert.deepEqual([99999, 100000, 1234567, 4294967295].map(axisCount), [
    "99999",
    "100k",
    "1.23M",
    "4.29G",
  ]);
});
