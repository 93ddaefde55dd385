/**
 * The latency phase's plot (`bench/plot.ts FILE.json --latency`): for each change (create, edit,
 * delete) and what it waits for (the EnvoyFilter, the status), each subject's p50 as a dot, a bar
 * to its p99 and a thin line to its max, on a log scale of milliseconds. Plain SVG 1.1.
 */
import { esc } from "../src/cli/ratelimit/svg.ts";
import { parseSpread } from "./cluster/latency.ts";
import type { Figure } from "./report.ts";

/** p50, p99 and max (ms) of one row and subject. */
export interface LatencyPoint {
  p50: number;
  p99: number;
  max: number;
}

/** Rows ("create: EnvoyFilter changed") → subject → its spread, in the order first seen. */
export type LatencyRows = Map<string, Map<string, LatencyPoint>>;

const NAME = /^(operator|peer): (create|edit|delete) .* among ([\d,]+) Ready: write to (.+), p50$/;

/** Reads the latency figures (value p50, the rest from their note) out of a bench's figures. */
export function latencyRows(figures: readonly Figure[]): LatencyRows {
  const rows: LatencyRows = new Map();
  for (const f of figures) {
    const m = NAME.exec(f.name);
    const s = m && f.note ? parseSpread(f.note) : undefined;
    if (!m || !s) continue;
    const row = `${m[2]}: ${m[4]}`;
    if (!rows.has(row)) rows.set(row, new Map());
    rows.get(row)!.set(m[1], { ...s, p50: f.value });
  }
  return rows;
}

const COLORS: Record<string, string> = { operator: "#1f77b4", peer: "#d62728" };
const LEFT = 290;
const WIDTH = 820;
const ROW = 34;
const TOP = 40;

/** The SVG: one row a measure, one line a subject in it. */
export function renderLatencySvg(rows: LatencyRows, caption: string): string {
  const all = [...rows.values()].flatMap((r) => [...r.values()].map((p) => p.max));
  const hi = Math.ceil(Math.log10(Math.max(10, ...all)));
  const lo = 0; // 1 ms
  const px = (ms: number) =>
    LEFT + (Math.log10(Math.max(ms, 1)) - lo) / (hi - lo) * (WIDTH - LEFT - 20);
  const height = TOP + rows.size * ROW + 50;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="20" font-weight="bold">One change among many Ready: API write to what watch events show (p50 dot, bar to p99, line to max)</text>`,
  ];
  const bottom = TOP + rows.size * ROW;
  for (let d = lo; d <= hi; d++) {
    const x = px(10 ** d).toFixed(1);
    const label = 10 ** d >= 1000 ? `${10 ** (d - 3)} s` : `${10 ** d} ms`;
    out.push(
      `<line x1="${x}" x2="${x}" y1="${TOP - 6}" y2="${bottom}" stroke="#ddd"/>`,
      `<text x="${x}" y="${bottom + 14}" text-anchor="middle">${label}</text>`,
    );
  }
  [...rows].forEach(([row, subjects], i) => {
    const y0 = TOP + i * ROW;
    out.push(`<text x="${LEFT - 8}" y="${y0 + ROW / 2 + 4}" text-anchor="end">${esc(row)}</text>`);
    [...subjects].forEach(([who, p], j) => {
      const y = (y0 + 10 + j * 12).toFixed(1);
      const c = COLORS[who] ?? "#555";
      const ms = (x: number) => `${+x.toFixed(1)} ms`;
      out.push(
        `<line x1="${px(p.p50).toFixed(1)}" x2="${
          px(p.max).toFixed(1)
        }" y1="${y}" y2="${y}" stroke="${c}"/>`,
        `<line x1="${px(p.p50).toFixed(1)}" x2="${
          px(p.p99).toFixed(1)
        }" y1="${y}" y2="${y}" stroke="${c}" stroke-width="5"/>`,
        `<circle cx="${px(p.p50).toFixed(1)}" cy="${y}" r="4" fill="${c}"><title>${who}, ${
          esc(row)
        }: p50 ${ms(p.p50)}, p99 ${ms(p.p99)}, max ${ms(p.max)}</title></circle>`,
      );
    });
  });
  const who = [...new Set([...rows.values()].flatMap((r) => [...r.keys()]))];
  who.forEach((w, i) => {
    out.push(
      `<rect x="${LEFT + i * 100}" y="${bottom + 26}" width="12" height="12" fill="${
        COLORS[w] ?? "#555"
      }"/><text x="${LEFT + i * 100 + 18}" y="${bottom + 36}">${esc(w)}</text>`,
    );
  });
  out.push(`<text x="10" y="${bottom + 36}" fill="#555">${esc(caption)}</text>`, "</svg>", "");
  return out.join("\n");
}
