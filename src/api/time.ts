/** Kubernetes time formats. */

/** Milliseconds of 10000-01-01T00:00:00Z: below it (and from the epoch), ISO years have 4 digits. */
const YEAR_10000 = 253402300800000;

function pad(n: number, width: number): string {
  return String(n).padStart(width, "0");
}

/**
 * `new Date(ms).toISOString()` (`2026-01-01T00:00:00.000Z`), computed in JavaScript from the epoch
 * to the year 9999 (a Date and its native formatting cost more than the arithmetic; the simulator
 * formats a timestamp for nearly every write), and by Date outside that range. Civil date from
 * days after Howard Hinnant's `civil_from_days`.
 */
export function isoTime(ms: number): string {
  if (!(ms >= 0 && ms < YEAR_10000)) return new Date(ms).toISOString();
  const t = Math.floor(ms); // Date truncates toward zero; the same here
  const days = Math.floor(t / 86_400_000);
  const inDay = t - days * 86_400_000;
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const h = Math.floor(inDay / 3_600_000);
  const m = Math.floor(inDay / 60_000) % 60;
  const s = Math.floor(inDay / 1000) % 60;
  return `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}T${pad(h, 2)}:${pad(m, 2)}:${pad(s, 2)}.${
    pad(inDay % 1000, 3)
  }Z`;
}

/**
 * The last second formatted and its text: callers format the same second many times in a row
 * (every write of a simulated step, every condition of a reconcile), and formatting a date is
 * costly next to a number compare.
 */
let lastSecond = Number.NaN;
let lastText = "";

/** Formats epoch milliseconds as a Kubernetes timestamp (RFC 3339, UTC, whole seconds). */
export function kubeTime(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== lastSecond) {
    lastText = isoTime(second * 1000).replace(".000Z", "Z");
    lastSecond = second;
  }
  return lastText;
}
