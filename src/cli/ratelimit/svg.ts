/**
 * The `--svg` chart: one panel a bucket that a request reached (the others are named in one line),
 * tokens left over time (a step line for Envoy ≤ 1.30's
 * interval refill, straight ramps for the continuous refill of later versions), admitted requests
 * as green dots on it and rejected ones as red crosses on the axis. The first line says which
 * Envoy behaviour it shows. Plain SVG 1.1, no scripts.
 */
import { describeBehaviour, type Refill } from "../../dataplane/mod.ts";
import { describeBucket, describeRule, formatT, GATEWAY_ROUTES_NOTE } from "./format.ts";
import type { BucketReport, TrafficRun } from "./run.ts";

const WIDTH = 960;
const PANEL = 170;
const LEFT = 60;
const RIGHT = 40;
const TOP = 34;
/** Height of the lines above the panels, at least. */
const HEAD = 56;
const PLOT = 110;

/** `text` safe inside SVG/XML text and attribute values. */
export function esc(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(
    /"/g,
    "&quot;",
  );
}

function num(n: number): string {
  return Number(n.toFixed(2)).toString();
}

/** Round time ticks: 1, 2 or 5 × a power of ten milliseconds, about 6 of them. */
function timeTicks(endMs: number): number[] {
  const raw = Math.max(endMs, 1) / 6;
  const pow = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= raw) ?? raw;
  const ticks: number[] = [];
  for (let t = 0; t <= endMs + 1e-9; t += step) ticks.push(t);
  return ticks;
}

/**
 * The points of a step line with at most four a pixel column (first, lowest, highest, last, in
 * time order), so a long run keeps every peak and trough without a point a request.
 */
function perPixel(
  points: Array<[number, number]>,
  x: (t: number) => number,
): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let i = 0;
  while (i < points.length) {
    const col = Math.round(x(points[i][0]));
    let j = i;
    let lo = i;
    let hi = i;
    while (j + 1 < points.length && Math.round(x(points[j + 1][0])) === col) {
      j++;
      if (points[j][1] < points[lo][1]) lo = j;
      if (points[j][1] > points[hi][1]) hi = j;
    }
    for (const k of [...new Set([i, lo, hi, j])].sort((a, b) => a - b)) out.push(points[k]);
    i = j + 1;
  }
  return out;
}

function panel(
  r: BucketReport,
  head: number,
  index: number,
  endMs: number,
  refill: Refill,
): string {
  const y0 = head + index * PANEL;
  const x = (t: number) => LEFT + (t / Math.max(endMs, 1)) * (WIDTH - LEFT - RIGHT);
  const y = (tokens: number) => y0 + TOP + PLOT - (tokens / r.bucket.maxTokens) * PLOT;
  const who = r.client === undefined ? "" : ` (client ${r.client})`;
  const title = `bucket ${r.id}${who}: ${describeRule(r.rule)}; ${describeBucket(r, refill)}; ` +
    `${r.admitted} admitted, ${r.rejected} rejected`;
  const out = [
    `<text x="${LEFT}" y="${y0 + 20}" font-size="13" font-weight="bold">${esc(title)}</text>`,
    `<line x1="${LEFT}" y1="${y(0)}" x2="${WIDTH - RIGHT}" y2="${y(0)}" stroke="#888"/>`,
    `<line x1="${LEFT}" y1="${y(0)}" x2="${LEFT}" y2="${y(r.bucket.maxTokens)}" stroke="#888"/>`,
    `<text x="${LEFT - 6}" y="${
      num(y(r.bucket.maxTokens) + 4)
    }" font-size="11" text-anchor="end">${r.bucket.maxTokens}</text>`,
    `<text x="${LEFT - 6}" y="${num(y(0) + 4)}" font-size="11" text-anchor="end">0</text>`,
  ];
  for (const t of timeTicks(endMs)) {
    out.push(
      `<text x="${num(x(t))}" y="${num(y(0) + 16)}" font-size="10" text-anchor="middle">${
        formatT(t)
      }</text>`,
    );
  }
  if (r.tokens.length > 0) {
    let d = `M${num(x(r.tokens[0][0]))},${num(y(r.tokens[0][1]))}`;
    for (const [t, tokens] of perPixel(r.tokens, x).slice(1)) {
      d += refill === "interval"
        ? `H${num(x(t))}V${num(y(tokens))}`
        : `L${num(x(t))},${num(y(tokens))}`;
    }
    d += `H${num(x(endMs))}`;
    out.push(`<path d="${d}" fill="none" stroke="#3366cc" stroke-width="1.5"/>`);
  }
  // Marks that would land on the same pixel are drawn once.
  const drawn = new Set<string>();
  for (const [t, admitted, left] of r.marks) {
    const key = `${Math.round(x(t))}|${admitted}|${Math.round(y(left))}`;
    if (drawn.has(key)) continue;
    drawn.add(key);
    if (admitted) {
      out.push(`<circle cx="${num(x(t))}" cy="${num(y(left))}" r="2.5" fill="#2a9d3a"/>`);
    } else {
      const cx = x(t);
      const cy = y(0);
      out.push(
        `<path d="M${num(cx - 3)},${num(cy - 3)}L${num(cx + 3)},${num(cy + 3)}M${num(cx - 3)},${
          num(cy + 3)
        }L${num(cx + 3)},${num(cy - 3)}" stroke="#d62828" stroke-width="1.5"/>`,
      );
    }
  }
  return out.join("\n");
}

/** The line naming the buckets no request reached, which get no panel; none when all did. */
export function unusedNote(unused: readonly BucketReport[]): string[] {
  if (unused.length === 0) return [];
  const ids = unused.map((r) => String(r.id)).join(", ");
  return [`No request reached bucket${unused.length === 1 ? "" : "s"} ${ids}: not drawn.`];
}

/** The chart of a run, as an SVG document. */
export function renderSvg(result: TrafficRun): string {
  const endMs = result.outcomes.reduce((end, o) => Math.max(end, o.t), Math.max(result.endMs, 1));
  // A bucket no request reached is a flat full line: a panel of it only pushes the others apart.
  const used = result.buckets.filter((r) => r.admitted + r.rejected > 0);
  const unused = result.buckets.filter((r) => r.admitted + r.rejected === 0);
  const notes = [
    describeBehaviour(result.envoy),
    ...(result.gateway ? GATEWAY_ROUTES_NOTE : []),
    ...unusedNote(unused),
  ];
  const head = Math.max(HEAD, 16 * notes.length + 8);
  const height = head + used.length * PANEL + 24;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif">`,
    `<title>Tokens left and admitted (green) or rejected (red) requests per bucket</title>`,
    `<rect width="100%" height="100%" fill="white"/>`,
    ...notes.map((n, i) =>
      `<text x="${LEFT}" y="${16 + i * 16}" font-size="${i === 0 ? 13 : 11}" fill="#333">${
        esc(n)
      }</text>`
    ),
    ...used.map((r, i) => panel(r, head, i, endMs, result.envoy.refill)),
    `<text x="${LEFT}" y="${
      height - 8
    }" font-size="11" fill="#555">blue: tokens left; green dot: admitted; red cross: rejected (429)</text>`,
    `</svg>`,
    "",
  ].join("\n");
}
