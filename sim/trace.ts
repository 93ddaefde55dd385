/**
 * The trace of a run: a running SHA-256 over every write the API server handled and every
 * observation the run made, so two runs of one seed can be compared by one hash, and a timeline of
 * status changes and responses for `--json`.
 */
import { createHash, type Hash } from "node:crypto";
import type { WriteRecord } from "./cluster/mod.ts";
import { SIM_EPOCH } from "./clock.ts";

/** One entry of the timeline `--json` prints. */
export type TimelineEntry =
  | {
    t: string;
    event: "status";
    object: string;
    state?: string;
    served?: string;
    conditions: string[];
  }
  | {
    t: string;
    event: "response";
    request: string;
    status: number;
    bucket?: string | number;
    route?: string;
    headers: Record<string, string>;
    body?: string;
  }
  | { t: string; event: "step"; step: number; action: string; outcome?: string }
  | { t: string; event: "crash" | "restart" | "phase"; detail: string }
  | { t: string; event: "violation"; invariant: string; message: string };

/** Virtual time as the offset from the run's epoch, Go style (`61.5s`). */
export function offset(ms: number): string {
  return `${Math.round(ms - SIM_EPOCH) / 1000}s`;
}

/** Hash and timeline of one run. */
export class Trace {
  readonly #hash: Hash = createHash("sha256");
  /**
   * Lines not hashed yet: hashing them in one piece when the digest is read gives the same hash
   * as hashing each at once, without two calls into the native hash a line.
   */
  #pending: string[] = [];
  readonly timeline: TimelineEntry[] = [];
  lines = 0;
  /**
   * When the operator was last disturbed (ms, scenario clock): a crash, a restart, or a phase that
   * `phase` was told disturbs it (a lease lost, a partition, a clock jump, a lead lost). The
   * scenario clock never goes back, so the last one answers `disturbedSince`.
   */
  #lastDisturbed: number | undefined;

  /** Adds one line to the hash. */
  line(text: string): void {
    this.#pending.push(text);
    this.lines++;
  }

  /** Adds a write record to the hash. */
  write(r: WriteRecord): void {
    this.line(
      `W ${r.at - SIM_EPOCH} ${r.actor} ${r.verb} ${r.kind} ${
        r.namespace ?? ""
      }/${r.name} ${r.outcome} ${r.rv ?? ""}`,
    );
  }

  /** Adds a timeline entry (and hashes it). */
  add(entry: TimelineEntry): void {
    this.timeline.push(entry);
    this.line(JSON.stringify(entry));
  }

  /** Adds a replica's crash or restart at `now` (scenario clock, ms): both disturb the operator. */
  lifecycle(now: number, event: "crash" | "restart", detail: string): void {
    this.add({ t: offset(now), event, detail });
    this.#lastDisturbed = now;
  }

  /**
   * Adds a `phase` entry at `now` (scenario clock, ms). A phase that `disturbs` the operator (it
   * may end a term or hold a replica's writes back) is remembered for `disturbedSince`.
   */
  phase(now: number, detail: string, disturbs = false): void {
    this.add({ t: offset(now), event: "phase", detail });
    if (disturbs) this.#lastDisturbed = now;
  }

  /** True when the operator was disturbed (see `phase`) at or after `t` (ms, scenario clock). */
  disturbedSince(t: number): boolean {
    return this.#lastDisturbed !== undefined && this.#lastDisturbed >= t;
  }

  /** The hash so far, hex (first 16 characters are plenty to compare runs). */
  digest(): string {
    if (this.#pending.length > 0) {
      this.#hash.update(this.#pending.join("\n") + "\n");
      this.#pending = [];
    }
    return this.#hash.copy().digest("hex").slice(0, 16);
  }
}
