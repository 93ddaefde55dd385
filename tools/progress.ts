/**
 * Progress for long steps (Go builds, image builds, a node starting): a line when a step starts,
 * a line at least every 30 s while it runs, and one with its time when it ends, so neither a
 * person nor CI watches a silent terminal for minutes.
 *
 * @module
 */

/** Where progress lines go. */
export type Log = (msg: string) => void;

/** Default interval of the "still …" lines. */
export const HEARTBEAT_MS = 30_000;

/** `95s` → `1m35s`; under a minute with one decimal. */
export function formatElapsed(ms: number): string {
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  return `${m}m${String(Math.floor(s - m * 60)).padStart(2, "0")}s`;
}

/**
 * Runs `fn`, logging `what` at the start, `still <what> (elapsed)` every `everyMs` while it runs
 * and `<done> in <elapsed>` (or `<what> failed after <elapsed>`) at the end.
 */
export async function step<T>(
  what: string,
  log: Log,
  fn: () => Promise<T>,
  opts: { done?: string; everyMs?: number } = {},
): Promise<T> {
  const started = performance.now();
  const elapsed = () => formatElapsed(performance.now() - started);
  log(what);
  const timer = setInterval(
    () => log(`still ${what} (${elapsed()})`),
    opts.everyMs ?? HEARTBEAT_MS,
  );
  try {
    const out = await fn();
    log(`${opts.done ?? `done: ${what}`} in ${elapsed()}`);
    return out;
  } catch (e) {
    log(`${what} failed after ${elapsed()}`);
    throw e;
  } finally {
    clearInterval(timer);
  }
}
