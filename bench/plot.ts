/**
 * `deno run -A bench/plot.ts FILE.json [LATER.json ...] [--out=FILE.svg]`: from the JSON of a
 * control-plane bench (`deno task bench --only=cluster --json=FILE.json`), an SVG of resident
 * memory and of time to all Ready against the number of RateLimits, for the operator and the peer
 * (log scale of RateLimits; one line a subject; each point a measured figure). A later file's
 * figures replace the earlier ones of the same name. Plain SVG 1.1, no scripts. `--latency`: the
 * latency phase's figures instead (plot_latency.ts).
 */
import { esc } from "../src/cli/ratelimit/svg.ts";
import { latencyRows, renderLatencySvg } from "./plot_latency.ts";
import type { Figure } from "./report.ts";

/** One subject's measured points: RateLimits → value. */
export type Series = Map<number, number>;

/** The points of the plot, by subject ("operator", "peer"). */
export interface ScalePoints {
  memoryMb: Map<string, Series>;
  readySeconds: Map<string, Series>;
}

const count = (text: string) => Number(text.replaceAll(",", ""));

/** Reads the memory and time-to-Ready figures of each subject out of a bench's figures. */
export function scalePoints(figures: readonly Figure[]): ScalePoints {
  const memoryMb = new Map<string, Series>();
  const readySeconds = new Map<string, Series>();
  const put = (m: Map<string, Series>, who: string, n: number, v: number) => {
    if (!m.has(who)) m.set(who, new Map());
    m.get(who)!.set(n, v);
  };
  for (const f of figures) {
    const mem = /^(operator|peer): resident memory, ([\d,]+) RateLimits/.exec(f.name);
    if (mem) put(memoryMb, mem[1], count(mem[2]), f.value);
    const ready = /^(operator|peer): ([\d,]+) RateLimits .*until all Ready$/.exec(f.name);
    if (ready && !f.name.includes("one namespace")) {
      put(readySeconds, ready[1], count(ready[2]), f.value);
    }
  }
  return { memoryMb, readySeconds };
}

const COLORS: Record<string, string> = { operator: "#1f77b4", peer: "#d62728" };
const W = 420;
const H = 260;
const L = 56;
const R = 16;
const T = 40;
const B = 44;

function niceMax(v: number): number {
  const pow = 10 ** Math.floor(Math.log10(Math.max(v, 1e-9)));
  return [1, 2, 2.5, 5, 10].map((m) => m * pow).find((x) => x >= v) ?? v;
}

/** One panel at x offset `x0`: a line a subject over RateLimits 0/100/1,000/10,000. */
function panel(x0: number, title: string, unit: string, data: Map<string, Series>): string {
  const xs = [...new Set([...data.values()].flatMap((s) => [...s.keys()]))].sort((a, b) => a - b);
  const ymax = niceMax(Math.max(1, ...[...data.values()].flatMap((s) => [...s.values()])));
  // Log scale of RateLimits; 0 RateLimits (idle) sits one decade left of the smallest.
  const positive = xs.filter((x) => x > 0);
  const lo = Math.log10(positive[0] ?? 100) - (xs.includes(0) ? 1 : 0);
  const hi = Math.log10(positive.at(-1) ?? 10_000);
  const px = (n: number) =>
    x0 + L + ((n > 0 ? Math.log10(n) : lo) - lo) / Math.max(hi - lo, 1) * (W - L - R);
  const py = (v: number) => T + (1 - v / ymax) * (H - T - B);
  const out: string[] = [`<text x="${x0 + L}" y="20" font-weight="bold">${esc(title)}</text>`];
  for (let k = 0; k <= 4; k++) {
    const v = ymax * k / 4;
    out.push(
      `<line x1="${x0 + L}" x2="${x0 + W - R}" y1="${py(v)}" y2="${py(v)}" stroke="#ddd"/>`,
      `<text x="${x0 + L - 6}" y="${py(v) + 4}" text-anchor="end">${+v.toFixed(1)}</text>`,
    );
  }
  for (const n of xs) {
    out.push(
      `<text x="${px(n)}" y="${H - B + 16}" text-anchor="middle">${n.toLocaleString("en")}</text>`,
    );
  }
  out.push(
    `<text x="${x0 + (W + L) / 2}" y="${
      H - 8
    }" text-anchor="middle">RateLimits (with their Pods), log scale</text>`,
    `<text x="${x0 + 14}" y="${(T + H - B) / 2}" transform="rotate(-90 ${x0 + 14} ${
      (T + H - B) / 2
    })" text-anchor="middle">${esc(unit)}</text>`,
  );
  for (const [who, series] of data) {
    const pts = [...series].sort(([a], [b]) => a - b);
    const color = COLORS[who] ?? "#555";
    out.push(
      `<polyline fill="none" stroke="${color}" stroke-width="2" points="${
        pts.map(([n, v]) => `${px(n).toFixed(1)},${py(v).toFixed(1)}`).join(" ")
      }"/>`,
      ...pts.map(([n, v]) =>
        `<circle cx="${px(n).toFixed(1)}" cy="${
          py(v).toFixed(1)
        }" r="3.5" fill="${color}"><title>${who}, ${n.toLocaleString("en")} RateLimits: ${+v
          .toFixed(1)} ${esc(unit)}</title></circle>`
      ),
    );
  }
  return out.join("\n");
}

/** The SVG of both panels, with a legend naming the subjects. */
export function renderScaleSvg(p: ScalePoints, caption: string): string {
  const who = [...new Set([...p.memoryMb.keys(), ...p.readySeconds.keys()])];
  const legend = who.map((w, i) =>
    `<rect x="${L + i * 120}" y="${H + 6}" width="12" height="12" fill="${
      COLORS[w] ?? "#555"
    }"/><text x="${L + i * 120 + 18}" y="${H + 16}">${esc(w)}</text>`
  ).join("\n");
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * W}" height="${
      H + 44
    }" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    panel(0, "Resident memory, all Ready and idle", "MB", p.memoryMb),
    panel(W, "Created at once to all Ready", "seconds", p.readySeconds),
    legend,
    `<text x="${L + who.length * 120 + 20}" y="${H + 16}" fill="#555">${esc(caption)}</text>`,
    "</svg>",
    "",
  ].join("\n");
}

/**
 * The figures of several bench runs, a later run's figure replacing an earlier one of the same name
 * (a phase re-run at a later commit), in the order first seen.
 */
export function mergeFigures(runs: readonly (readonly Figure[])[]): Figure[] {
  const byName = new Map<string, Figure>();
  for (const figures of runs) for (const f of figures) byName.set(f.name, f);
  return [...byName.values()];
}

if (import.meta.main) {
  const files = Deno.args.filter((a) => !a.startsWith("--"));
  const out = Deno.args.find((a) => a.startsWith("--out="))?.slice("--out=".length);
  if (files.length === 0) {
    console.error(
      "usage: deno run -A bench/plot.ts FILE.json [LATER.json ...] [--latency] [--out=FILE.svg]",
    );
    Deno.exit(2);
  }
  const runs = await Promise.all(
    files.map(async (file) =>
      (JSON.parse(await Deno.readTextFile(file)) as { figures: Figure[] }).figures
    ),
  );
  const names = files.map((f) => f.split("/").at(-1)).join(", ");
  const figures = mergeFigures(runs);
  const svg = Deno.args.includes("--latency")
    ? renderLatencySvg(latencyRows(figures), `from ${names}`)
    : renderScaleSvg(scalePoints(figures), `from ${names}`);
  if (out) await Deno.writeTextFile(out, svg);
  else console.log(svg);
}
