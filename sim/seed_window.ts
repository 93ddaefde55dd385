/**
 * The rotating window: each UTC day has its own block of sweep seeds, so CI explores new seeds
 * every day while any one day's run stays replayable (`deno task sim --window DAY`, or one seed with
 * `deno task sim --seed N`). Day d since 1970-01-01 starts at d × WINDOW_SEEDS: consecutive days
 * tile the seed line without overlap, and none overlaps the fixed sweep's seeds 1..200.
 */

/** Seeds in one day's window. */
export const WINDOW_SEEDS = 200;

const DAY_MS = 86_400_000;

/** A day's window of seeds. */
export interface SeedWindow {
  /** `YYYY-MM-DD` (UTC). */
  day: string;
  from: number;
  count: number;
}

/** The UTC day of `date`, `YYYY-MM-DD`. */
export function utcDay(date: Date): string {
  return date.toISOString().slice(0, 10);
}

/** The window of `day` (`YYYY-MM-DD`, or `today` for the current UTC day). */
export function seedWindow(day: string, now: Date = new Date()): SeedWindow {
  const d = day === "today" ? utcDay(now) : day;
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(d);
  const ms = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : NaN;
  if (!m || Number.isNaN(ms) || utcDay(new Date(ms)) !== d || ms < DAY_MS) {
    throw new Error(`a window is a UTC day after 1970-01-01 as YYYY-MM-DD or today, got ${day}`);
  }
  return { day: d, from: (ms / DAY_MS) * WINDOW_SEEDS, count: WINDOW_SEEDS };
}
