/**
 * The `--svg` chart: one panel a bucket that a request reached (the others are named in one line),
 * tokens left over time (a step line for Envoy ≤ 1.30's
 * interval refill, straight ramps for the continuous refill of later versions), admitted requests
 * as green dots on it, those shadow mode admitted but would have rejected as orange dots, and
 * rejected ones as red crosses on the axis. The first line says which Envoy behaviour it shows.
 * Text too long for the width is wrapped onto more lines. Each panel is a `<g>` whose `data-*`
 * attributes give its scale (`data-y-zero`, `data-y-full`: the y of 0 and of maxTokens tokens).
 * Plain SVG 1.1, no scripts.
 */
import { describeBehaviour } from "../../dataplane/mod.ts";
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
/** Distance between two lines of text. */
const LINE = 16;
/** No text goes right of this. */
const TEXT_RIGHT = WIDTH - 5;
/** The least width a character is taken to have, in em, whatever it is. */
const MIN_CHAR_EM = 0.6;

/** The fill or stroke of each kind of request mark. */
export const MARK_COLOURS = {
  admitted: "#2a9d3a",
  rejected: "#d62828",
  wouldReject: "#f08c00",
} as const;

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

/**
 * The width of `text` at `fontSize` px, at least: each character as wide as the widest of its kind
 * in common sans-serif fonts (DejaVu Sans, bold or regular: the widest of them), and the whole at
 * least {@link MIN_CHAR_EM} em a character.
 */
function textWidth(text: string, fontSize: number, bold = false): number {
  let em = 0;
  let chars = 0;
  for (const ch of text) {
    chars++;
    const wide = /[mwMW@%]/.test(ch) || ch > "~";
    const upper = /[A-Z#&=+<>~_]/.test(ch);
    const narrow = /[ ijltfrI.,:;'!|()[\]/-]/.test(ch);
    em += bold
      ? (wide ? 1.1 : upper ? 0.86 : narrow ? 0.5 : 0.72)
      : (wide ? 1 : upper ? 0.8 : narrow ? 0.42 : 0.64);
  }
  return Math.max(em, chars * MIN_CHAR_EM) * fontSize;
}

/**
 * `text` in lines of at most `width` px at `fontSize` (by {@link textWidth}): a clause (up to a
 * `; `) that does not fit the line goes to the next, broken at spaces when longer than a line; a
 * word longer than a line is cut short with an ellipsis.
 */
function wrapText(text: string, fontSize: number, width: number, bold = false): string[] {
  const fits = (s: string) => textWidth(s, fontSize, bold) <= width;
  const shorten = (word: string) => {
    if (fits(word)) return word;
    const chars = [...word];
    let n = chars.length - 1;
    while (n > 0 && !fits(`${chars.slice(0, n).join("")}…`)) n--;
    return `${chars.slice(0, n).join("")}…`;
  };
  const lines: string[] = [];
  let line = "";
  const clauses = text.split("; ").map((c, i, all) => (i < all.length - 1 ? `${c};` : c));
  for (const clause of clauses) {
    if (line !== "" && fits(`${line} ${clause}`)) {
      line = `${line} ${clause}`;
      continue;
    }
    if (line !== "") lines.push(line);
    line = "";
    for (const word of clause.split(" ").map(shorten)) {
      if (line === "" || !fits(`${line} ${word}`)) {
        if (line !== "") lines.push(line);
        line = word;
      } else {
        line = `${line} ${word}`;
      }
    }
  }
  lines.push(line);
  return lines;
}

/** How a line of text is drawn. */
interface TextStyle {
  size: number;
  bold?: boolean;
  fill?: string;
}

/** `<text>` elements of `text` from (`x`, `y`), a line each, wrapped to end left of TEXT_RIGHT. */
function textLines(text: string, x: number, y: number, style: TextStyle): string[] {
  const attrs = `font-size="${style.size}"${style.bold ? ` font-weight="bold"` : ""}${
    style.fill ? ` fill="${style.fill}"` : ""
  }`;
  return wrapText(text, style.size, TEXT_RIGHT - x, style.bold).map((line, i) =>
    `<text x="${x}" y="${y + i * LINE}" ${attrs}>${esc(line)}</text>`
  );
}

/** What a bucket's panel says it did: admitted (would be rejected, in shadow mode) and rejected. */
function counts(r: BucketReport, shadow: boolean): string {
  return `${r.admitted} admitted${
    shadow ? ` (${r.wouldReject} would be rejected)` : ""
  }, ${r.rejected} rejected`;
}

/**
 * A token count short enough for the y axis's label (at most 7 characters, left of the plot):
 * as it is up to 99999, then to three digits with k, M or G (4294967295 is `4.29G`); the
 * panel's title and `data-max-tokens` give it whole.
 */
export function axisCount(n: number): string {
  if (n < 100_000) return String(n);
  for (const [unit, size] of [["k", 1e3], ["M", 1e6], ["G", 1e9]] as const) {
    const v = n / size;
    if (v < 1000 || unit === "G") return `${Number(v.toPrecision(3))}${unit}`;
  }
  return String(n);
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

/** A bucket's panel from `top`, and its height (more than PANEL when its title wraps). */
function panel(
  r: BucketReport,
  top: number,
  endMs: number,
  result: TrafficRun,
): { svg: string; height: number } {
  const refill = result.envoy.refill;
  const who = r.client === undefined ? "" : ` (client ${r.client})`;
  const title = `bucket ${r.id}${who}: ${describeRule(r.rule)}; ${describeBucket(r, refill)}; ` +
    counts(r, result.shadow);
  const titleLines = textLines(title, LEFT, top + 20, { size: 13, bold: true });
  const y0 = top + (titleLines.length - 1) * LINE;
  const x = (t: number) => LEFT + (t / Math.max(endMs, 1)) * (WIDTH - LEFT - RIGHT);
  const y = (tokens: number) => y0 + TOP + PLOT - (tokens / r.bucket.maxTokens) * PLOT;
  const out = [
    `<g data-bucket="${esc(String(r.id))}"${
      r.client === undefined ? "" : ` data-client="${esc(r.client)}"`
    } data-max-tokens="${r.bucket.maxTokens}" data-y-zero="${num(y(0))}" data-y-full="${
      num(y(r.bucket.maxTokens))
    }" data-x-start="${num(x(0))}" data-x-end="${num(x(endMs))}" data-end-ms="${endMs}">`,
    ...titleLines,
    `<line x1="${LEFT}" y1="${y(0)}" x2="${WIDTH - RIGHT}" y2="${y(0)}" stroke="#888"/>`,
    `<line x1="${LEFT}" y1="${y(0)}" x2="${LEFT}" y2="${y(r.bucket.maxTokens)}" stroke="#888"/>`,
    `<text x="${LEFT - 6}" y="${num(y(r.bucket.maxTokens) + 4)}" font-size="11" text-anchor="end">${
      axisCount(r.bucket.maxTokens)
    }</text>`,
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
  r.marks.forEach(([t, admitted, left, wouldReject]) => {
    const kind = !admitted ? "rejected" : wouldReject ? "would-reject" : "admitted";
    const key = `${Math.round(x(t))}|${kind}|${Math.round(y(left))}`;
    if (drawn.has(key)) return;
    drawn.add(key);
    if (kind === "admitted") {
      out.push(
        `<circle cx="${num(x(t))}" cy="${num(y(left))}" r="2.5" fill="${MARK_COLOURS.admitted}"/>`,
      );
    } else if (kind === "would-reject") {
      out.push(
        `<circle cx="${num(x(t))}" cy="${num(y(left))}" r="3" fill="${MARK_COLOURS.wouldReject}"/>`,
      );
    } else {
      const cx = x(t);
      const cy = y(0);
      out.push(
        `<path d="M${num(cx - 3)},${num(cy - 3)}L${num(cx + 3)},${num(cy + 3)}M${num(cx - 3)},${
          num(cy + 3)
        }L${num(cx + 3)},${num(cy - 3)}" stroke="${MARK_COLOURS.rejected}" stroke-width="1.5"/>`,
      );
    }
  });
  out.push(`</g>`);
  return { svg: out.join("\n"), height: PANEL + (titleLines.length - 1) * LINE };
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
    ...(result.shadow
      ? [
        "Shadow mode (spec.enforce: false): nothing is rejected; orange dots are what would be.",
      ]
      : []),
    ...(result.gateway ? GATEWAY_ROUTES_NOTE : []),
    ...unusedNote(unused),
  ];
  const noteLines: string[] = [];
  for (const [i, n] of notes.entries()) {
    noteLines.push(
      ...textLines(n, LEFT, 16 + noteLines.length * LINE, {
        size: i === 0 ? 13 : 11,
        fill: "#333",
      }),
    );
  }
  const head = Math.max(HEAD, LINE * noteLines.length + 8);
  const panels: string[] = [];
  let top = head;
  for (const r of used) {
    const p = panel(r, top, endMs, result);
    panels.push(p.svg);
    top += p.height;
  }
  const legend = `blue: tokens left; green dot: admitted; ${
    result.shadow ? "orange dot: admitted, would be rejected (shadow mode); " : ""
  }red cross: rejected (429)`;
  const legendLines = wrapText(legend, 11, TEXT_RIGHT - LEFT);
  const height = top + LINE * (legendLines.length - 1) + 24;
  const legendTop = height - 8 - LINE * (legendLines.length - 1);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif">`,
    `<title>Tokens left and admitted (green)${
      result.shadow ? ", would-be-rejected (orange)" : ""
    } or rejected (red) requests per bucket</title>`,
    `<rect width="100%" height="100%" fill="white"/>`,
    ...noteLines,
    ...panels,
    ...textLines(legend, LEFT, legendTop, { size: 11, fill: "#555" }),
    `</svg>`,
    "",
  ].join("\n");
}
