/** How the control-plane benches write their rows: one per subject and figure, memory in pairs. */
import type { Report } from "../report.ts";
import { fmt } from "../stats.ts";
import type { Settled } from "./idle.ts";
import type { Subject } from "./subject.ts";

/** Milliseconds as seconds. */
export const s = (ms: number): number => ms / 1000;

/** A time figure whose subject was still busy when creation began says so. */
export const startMark = (x: Settled): string =>
  x.idle ? "" : `NOT AT REST at the start (still reconciling after ${fmt(s(x.boundMs))} s); `;

/** Figures for a note: `1.2, 3.4`. */
export const list = (xs: number[], digits = 2): string => xs.map((x) => fmt(x, digits)).join(", ");

/** A row's fields but its section and name. */
export type RowFields = Omit<Parameters<Report["add"]>[0], "section" | "name">;

/** The row writers of one section. */
export interface Rows {
  /** One figure of `subject`, named after it. */
  add(subject: Subject, name: string, f: RowFields): void;
  /** Resident memory once settled, and beside it the peak (VmHWM) the process reached before. */
  memory(
    subject: Subject,
    what: string,
    m: { mb: number; peakMb: number },
    f: Omit<RowFields, "value" | "unit">,
  ): void;
}

/** Row writers adding to `report` under `section`. */
export function rowsOf(report: Pick<Report, "add">, section: string): Rows {
  const add: Rows["add"] = (subject, name, f) =>
    report.add({ section, name: `${subject.label}: ${name}`, ...f });
  return {
    add,
    memory(subject, what, m, f) {
      add(subject, `resident memory, ${what}`, { value: m.mb, unit: "MB", ...f });
      add(subject, `peak resident memory (VmHWM), ${what}`, {
        value: m.peakMb,
        unit: "MB",
        note: `the most it held from its start to that reading: ${
          fmt(m.peakMb - m.mb, 1)
        } MB over it`,
      });
    },
  };
}
