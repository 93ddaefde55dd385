/**
 * What a bench reports: figures (a value, its baseline from the same run, their ratio, a target),
 * sections that were skipped and why, and a plain-text table of them.
 */
import { fmt, fmtRate } from "./stats.ts";

/** A target a figure must meet: its value (or its ratio) at least or at most a bound. */
export interface Target {
  of: "value" | "ratio";
  op: ">=" | "<=";
  bound: number;
}

/** One measured figure. */
export interface Figure {
  /** Section, e.g. `reducer`. */
  section: string;
  /** What was measured, e.g. `RateLimit, 4 rules`. */
  name: string;
  value: number;
  /** Unit of `value` (and of the baseline's value), e.g. `objects/s`. */
  unit: string;
  /** The baseline measured in the same run, in the same unit. */
  baseline?: { name: string; value: number };
  /** Subject cost over baseline cost (time or writes), ≥ 1 when the subject does more. */
  ratio?: number;
  target?: Target;
  /** One short line: the workload, the sample count, or why a figure is what it is. */
  note?: string;
}

/** A section (or a single figure) not measured, and why. */
export interface Skipped {
  section: string;
  reason: string;
}

/** Whether a figure meets its target; undefined when it has none (or no ratio to judge). */
export function meets(f: Figure): boolean | undefined {
  if (!f.target) return undefined;
  const x = f.target.of === "value" ? f.value : f.ratio;
  if (x === undefined || Number.isNaN(x)) return undefined;
  return f.target.op === ">=" ? x >= f.target.bound : x <= f.target.bound;
}

/** Formats a value in its unit: rates compactly, durations and sizes with sensible decimals. */
export function formatValue(value: number, unit: string): string {
  if (unit.endsWith("/s") || unit.endsWith("/min")) return `${fmtRate(value)} ${unit}`;
  if (unit === "s" || unit === "MB") return `${fmt(value, value < 10 ? 2 : 1)} ${unit}`;
  return `${fmt(value, 2)} ${unit}`;
}

function formatTarget(t: Target, unit: string): string {
  const what = t.of === "ratio"
    ? `ratio ${t.op} ${fmt(t.bound, 2)}`
    : `${t.op} ${formatValue(t.bound, unit)}`;
  return what;
}

/** One figure as a line of text. */
export function formatFigure(f: Figure): string {
  const parts = [`${f.name}: ${formatValue(f.value, f.unit)}`];
  if (f.baseline) {
    parts.push(`baseline (${f.baseline.name}) ${formatValue(f.baseline.value, f.unit)}`);
  }
  if (f.ratio !== undefined) parts.push(`ratio ${fmt(f.ratio, 2)}`);
  const ok = meets(f);
  if (f.target) {
    const mark = ok === undefined ? "?" : ok ? "met" : "MISSED";
    parts.push(`target ${formatTarget(f.target, f.unit)}: ${mark}`);
  }
  return parts.join(" | ") + (f.note ? `\n      ${f.note}` : "");
}

/** Collects figures and skips as the benches run, printing each as it arrives. */
export class Report {
  readonly figures: Figure[] = [];
  readonly skipped: Skipped[] = [];
  #print: (line: string) => void;
  #section = "";

  constructor(print: (line: string) => void = (l) => console.log(l)) {
    this.#print = print;
  }

  /** Adds a figure and prints it. */
  add(f: Figure): void {
    this.figures.push(f);
    this.#header(f.section);
    this.#print(`  ${formatFigure(f)}`);
  }

  /** Records a skipped section or figure and prints why. */
  skip(section: string, reason: string): void {
    this.skipped.push({ section, reason });
    this.#print(`SKIPPED ${section}: ${reason}`);
  }

  /** Prints a progress or context line under the current section. */
  info(section: string, line: string): void {
    this.#header(section);
    this.#print(`    ${line}`);
  }

  #header(section: string): void {
    if (section === this.#section) return;
    this.#section = section;
    this.#print(`\n== ${section}`);
  }

  /** The closing summary: every figure with a target, met or missed, and every skip. */
  summary(): string[] {
    const lines = ["", "== summary"];
    for (const f of this.figures.filter((f) => f.target)) {
      const ok = meets(f);
      const mark = ok === undefined ? "?     " : ok ? "met   " : "MISSED";
      const x = f.target!.of === "ratio"
        ? `ratio ${fmt(f.ratio ?? NaN, 2)}`
        : formatValue(f.value, f.unit);
      lines.push(
        `  ${mark} ${f.section} / ${f.name}: ${x} (target ${formatTarget(f.target!, f.unit)})`,
      );
    }
    for (const s of this.skipped) lines.push(`  skipped ${s.section}: ${s.reason}`);
    return lines;
  }
}
