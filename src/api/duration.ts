/** Go duration parsing (`300ms`, `5m`, `1h30m`) and the RateLimit bucket interval form (`30s`, `1m`). */

const GO_UNITS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  "µs": 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const GO_DURATION = /^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$/;
const GO_PART = /([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)/g;

/** Go's longest duration: time.Duration is int64 nanoseconds. */
export const MAX_GO_DURATION = "2562047h47m16.854775807s";

const MAX_NS = 2n ** 63n - 1n;

const UNIT_NS: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  "µs": 1_000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

/**
 * True when `text`, a Go duration by its syntax, is longer than {@link MAX_GO_DURATION}: Go's
 * time.ParseDuration counts int64 nanoseconds, each part's fraction truncated to whole ones, and
 * refuses such a text ("time: invalid duration").
 */
function beyondGo(text: string): boolean {
  let total = 0n;
  for (const [, num, unit] of text.matchAll(GO_PART)) {
    const [whole, fraction = ""] = num.split(".");
    const scale = UNIT_NS[unit];
    // As Go: the fraction's digits as a float64, times the unit over their scale, truncated.
    const part = fraction === "" ? 0n : BigInt(
      Math.trunc(
        Number(fraction.slice(0, 18)) * (Number(scale) / 10 ** Math.min(fraction.length, 18)),
      ),
    );
    total += BigInt(whole) * scale + part;
    if (total > MAX_NS) return true;
  }
  return false;
}

/**
 * Parses a Go duration string (no sign) into milliseconds; undefined when it is not one, or is
 * longer than Go takes ({@link goDurationProblem} says which).
 */
export function parseGoDuration(text: string): number | undefined {
  if (text === "0") return 0;
  if (!GO_DURATION.test(text) || beyondGo(text)) return undefined;
  let total = 0;
  for (const [, num, unit] of text.matchAll(GO_PART)) total += Number(num) * GO_UNITS[unit];
  return total;
}

/**
 * Why {@link parseGoDuration} refuses `text`: longer than Go's maximum (`shown` is how the message
 * writes it), or else `otherwise` (the caller's "not a duration like ..."). Undefined when it is a
 * duration.
 */
export function goDurationProblem(
  text: string,
  otherwise: string,
  shown: string = JSON.stringify(text),
): string | undefined {
  if (parseGoDuration(text) !== undefined) return undefined;
  return GO_DURATION.test(text)
    ? `${shown} is longer than Go's maximum duration ${MAX_GO_DURATION}`
    : otherwise;
}

/**
 * The bucket interval syntax of docs/design.md: a whole positive number with the suffix `s` or
 * `m`, at most 999999999s or 9999999m. The bound is Go's: Istio parses the filter's durations
 * with time.ParseDuration, whose int64 nanoseconds end at 9223372036s ("bad Duration: time:
 * invalid duration" beyond); Envoy's protobuf Duration goes to 315576000000s. Nine digits of
 * seconds (31 years) and seven of minutes (19 years) stay below both.
 */
export const FILL_INTERVAL_PATTERN = "^([1-9][0-9]{0,8}s|[1-9][0-9]{0,6}m)$";

/** What a fillInterval that does not match {@link FILL_INTERVAL_PATTERN} is told. */
export function notAFillInterval(text: string): string {
  return `${
    JSON.stringify(text)
  } is not a whole number of seconds or minutes like 30s or 1m (at most 999999999s or 9999999m)`;
}
const FILL_INTERVAL = new RegExp(FILL_INTERVAL_PATTERN);

/** Parses a bucket fillInterval (`30s`, `1m`) into milliseconds; undefined when it is not one. */
export function parseFillInterval(text: string): number | undefined {
  if (!FILL_INTERVAL.test(text)) return undefined;
  const n = Number(text.slice(0, -1));
  return text.endsWith("m") ? n * 60_000 : n * 1000;
}

/**
 * A valid fillInterval as a protobuf-JSON Duration, which has seconds only: `30s` stays, `2m`
 * becomes `120s`. Text to text, with no float in between.
 */
export function protoFillInterval(text: string): string {
  return text.endsWith("m") ? `${BigInt(text.slice(0, -1)) * 60n}s` : text;
}
