/**
 * What `deno task sim` prints: one line a run (a run that did not pass adds its failure, replay
 * command, error stack and the last entries of its trace), `--json` objects, and the summary.
 */
import type { RunResult, SeedOutcome } from "../../sim/run_result.ts";
import type { TimelineEntry } from "../../sim/trace.ts";

/** Timeline entries printed under a run that did not pass. */
export const TRACE_TAIL = 15;
/** Stack frames printed under an unfinished run (`--json` has the whole stack). */
const STACK_LINES = 8;

const LABEL: Record<SeedOutcome, string> = {
  passed: "PASS",
  failed: "FAIL",
  unfinished: "UNFINISHED",
};

/** `61.5s` or `6m32s` (never `1m60s`: whole seconds are rounded before splitting off minutes). */
export function seconds(ms: number): string {
  const s = Math.round(ms) / 1000;
  if (s < 60) return `${s}s`;
  const whole = Math.round(s); // rounded once, so 1499.9 s is 25m0s, not 24m60s
  return `${Math.floor(whole / 60)}m${whole % 60}s`;
}

/** One timeline entry on one line. */
export function entryLine(e: TimelineEntry): string {
  switch (e.event) {
    case "status": {
      const parts = [e.state ? `state=${e.state}` : "", e.served ? `served=${e.served}` : ""];
      const conds = e.conditions.length > 0 ? ` [${e.conditions.join(" ")}]` : "";
      return `${e.t} status ${e.object} ${parts.filter(Boolean).join(" ")}${conds}`.trimEnd();
    }
    case "response":
      return `${e.t} response ${e.request}: ${e.status}${
        e.bucket !== undefined ? ` bucket ${e.bucket}` : ""
      }`;
    case "step":
      return `${e.t} step ${e.step}: ${e.action}${e.outcome ? ` -> ${e.outcome}` : ""}`;
    case "violation":
      return `${e.t} violation ${e.invariant}: ${e.message}`;
    default:
      return `${e.t} ${e.event} ${e.detail}`;
  }
}

/** The lines of one run. */
export function runLines(r: RunResult): string[] {
  const what = r.file
    ? `${r.file} (seed ${r.seed}, Envoy ${r.envoy})`
    : `${r.name} (Envoy ${r.envoy})`;
  const head = `${LABEL[r.outcome]}  ${what}  virtual ${
    seconds(r.virtualMs)
  }  steps ${r.steps}  writes ${r.writes}  trace ${r.traceHash || "-"}`;
  if (r.outcome === "passed") return [head];
  const out = [
    head,
    `      at ${r.failedAt}: ${r.failure}`,
    `      seed ${r.seed}; replay: ${r.replay}`,
  ];
  if (r.error) {
    const frames = r.error.split("\n").slice(1, 1 + STACK_LINES).map((l) => l.trim());
    out.push(...frames.map((f) => `        ${f}`));
  }
  const tail = r.timeline.slice(-TRACE_TAIL);
  if (tail.length > 0) {
    out.push(`      last ${tail.length} of ${r.timeline.length} trace entries:`);
    out.push(...tail.map((e) => `        ${entryLine(e)}`));
  }
  return out;
}

/** One `--json` object. */
export function runJson(r: RunResult): string {
  const { virtualMs, ...rest } = r;
  return JSON.stringify({ ...rest, virtualSeconds: Math.round(virtualMs) / 1000 });
}

/** Counts and timing of a whole command. */
export interface Tally {
  passed: number;
  failed: number;
  unfinished: number;
  scenarios: number;
  seeds: number;
  workers: number;
  virtualMs: number;
  wallMs: number;
  /** Wall time of the sweep alone (seeds a minute). */
  sweepWallMs: number;
}

/** An empty tally. */
export function tally(scenarios: number, seeds: number, workers: number): Tally {
  return {
    passed: 0,
    failed: 0,
    unfinished: 0,
    scenarios,
    seeds,
    workers,
    virtualMs: 0,
    wallMs: 0,
    sweepWallMs: 0,
  };
}

/** Counts one run. */
export function count(t: Tally, r: RunResult): void {
  t[r.outcome]++;
  t.virtualMs += r.virtualMs;
}

/** The summary line: counts first (stable), then timing (varies from run to run). */
export function summaryLine(t: Tally): string {
  const wall = t.wallMs / 1000;
  const speed = wall > 0 ? Math.round(t.virtualMs / 1000 / wall) : 0;
  const perMin = t.seeds > 0 && t.sweepWallMs > 0
    ? `, ${Math.round((t.seeds * 60_000) / t.sweepWallMs)} seeds a minute`
    : "";
  return `${t.passed} passed, ${t.failed} failed, ${t.unfinished} unfinished ` +
    `(${t.scenarios} scenarios, ${t.seeds} sweep seeds, ${t.workers} worker${
      t.workers === 1 ? "" : "s"
    }; ${seconds(t.virtualMs)} virtual in ${
      wall.toFixed(1)
    }s: ${speed} virtual s a wall s${perMin})`;
}
