/**
 * Timing one change a user makes to a single RateLimit (create, edit, delete) from the API write
 * to what watch events show of it: the EnvoyFilter of that name changing, and the RateLimit's
 * status saying so (or, for a delete, the RateLimit gone). Watches feed a `Changes` log from
 * before the write, so an event that arrives before the write's response is still counted. No
 * cluster here: latency_phase.ts wires it to one, tests/bench/latency_test.ts to a fake.
 */
import type { KubeObject } from "../../src/api/object.ts";
import { fmt, percentile } from "../stats.ts";
import type { Seen } from "./follow.ts";

/** The changes timed, in the order each round makes them. */
export const CHANGES = ["create", "edit", "delete"] as const;
/** One kind of change. */
export type Change = typeof CHANGES[number];

/** What a watch saw: a RateLimit or an EnvoyFilter, how, and when (performance.now()). */
export interface Event {
  kind: "RateLimit" | "EnvoyFilter";
  how: Seen;
  obj: KubeObject;
  at: number;
}

/** Every watch event of one namespace since the last `mark`, with waiters on what comes next. */
export class Changes {
  #events: Event[] = [];
  #latest = new Map<string, KubeObject>();
  #wake: (() => void)[] = [];

  /** Records an event (a watch's callback). */
  see(kind: Event["kind"], obj: KubeObject, how: Seen, at = performance.now()): void {
    this.#events.push({ kind, how, obj, at });
    this.#latest.set(`${kind}/${obj.metadata.name}`, obj);
    const wake = this.#wake;
    this.#wake = [];
    wake.forEach((w) => w());
  }

  /** The last seen state of an object, if any. */
  latest(kind: Event["kind"], name: string): KubeObject | undefined {
    return this.#latest.get(`${kind}/${name}`);
  }

  /** Forgets the events so far: `first` then looks only at later ones. */
  mark(): void {
    this.#events = [];
  }

  /**
   * When the first event since the mark that satisfies `match` was seen; undefined when none came
   * by `deadline` (performance.now() time).
   */
  async first(match: (e: Event) => boolean, deadline: number): Promise<number | undefined> {
    for (let from = 0;;) {
      for (; from < this.#events.length; from++) {
        if (match(this.#events[from])) return this.#events[from].at;
      }
      const left = deadline - performance.now();
      if (left <= 0) return undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        this.#wake.push(resolve);
        timer = setTimeout(resolve, left);
      });
      clearTimeout(timer);
    }
  }
}

/** One change's times from its write, in ms; undefined when not seen within the bound. */
export interface Sample {
  change: Change;
  name: string;
  envoyFilterMs?: number;
  /** To the status saying so (delete: to the RateLimit gone). */
  statusMs?: number;
  /** False when the subject's status cannot show an edit (no observedGeneration): not waited. */
  statusObservable: boolean;
}

const state = (o: KubeObject) => (o.status as { state?: unknown } | undefined)?.state;
const observed = (o: KubeObject) =>
  (o.status as { observedGeneration?: unknown } | undefined)?.observedGeneration;

/**
 * Makes one change with `write` (resolving with what the API returned; nothing for a delete) and
 * times it from just before the request to the events that show it, each waited for at most
 * `boundMs`. An edit's status counts only when it names the new generation; a subject whose
 * status has no observedGeneration cannot show an edit there, so that is not waited for.
 */
export async function timeChange(
  changes: Changes,
  change: Change,
  name: string,
  write: () => Promise<KubeObject | undefined>,
  boundMs: number,
): Promise<Sample> {
  const efBefore = JSON.stringify(changes.latest("EnvoyFilter", name)?.spec);
  const rlBefore = changes.latest("RateLimit", name);
  const statusObservable = change !== "edit" ||
    (rlBefore !== undefined && observed(rlBefore) !== undefined);
  changes.mark();
  const t0 = performance.now();
  const written = await write();
  const deadline = t0 + boundMs;
  const generation = written?.metadata.generation ?? 0;
  const ef = (e: Event) =>
    e.kind === "EnvoyFilter" && e.obj.metadata.name === name &&
    (change === "delete"
      ? e.how === "DELETED"
      : e.how !== "DELETED" && (change === "create" || JSON.stringify(e.obj.spec) !== efBefore));
  const status = (e: Event) =>
    e.kind === "RateLimit" && e.obj.metadata.name === name &&
    (change === "delete" ? e.how === "DELETED" : e.how !== "DELETED" && state(e.obj) === "Ready" &&
      (change === "create" || Number(observed(e.obj)) >= generation));
  const [efAt, statusAt] = await Promise.all([
    changes.first(ef, deadline),
    statusObservable ? changes.first(status, deadline) : undefined,
  ]);
  return {
    change,
    name,
    ...(efAt !== undefined ? { envoyFilterMs: Math.max(0, efAt - t0) } : {}),
    ...(statusAt !== undefined ? { statusMs: Math.max(0, statusAt - t0) } : {}),
    statusObservable,
  };
}

/** p50, p99 and max of what was seen, with how many were not. */
export interface Spread {
  p50: number;
  p99: number;
  max: number;
  seen: number;
  missed: number;
}

/** The spread of one measure (EnvoyFilter or status) over the samples of one change. */
export function spread(
  samples: readonly Sample[],
  change: Change,
  of: "envoyFilterMs" | "statusMs",
): Spread | undefined {
  const mine = samples.filter((x) =>
    x.change === change && (of === "envoyFilterMs" ||
      x.statusObservable)
  );
  if (mine.length === 0) return undefined;
  const ms = mine.flatMap((x) => x[of] !== undefined ? [x[of]] : []);
  return {
    p50: percentile(ms, 50),
    p99: percentile(ms, 99),
    max: ms.length ? Math.max(...ms) : NaN,
    seen: ms.length,
    missed: mine.length - ms.length,
  };
}

/** "p50 12 ms, p99 40 ms, max 41 ms (50 changes)", and how many were not seen in time. */
export function describe(s: Spread, boundMs: number): string {
  const ms = (x: number) => `${fmt(x, x < 10 ? 1 : 0)} ms`;
  return `p50 ${ms(s.p50)}, p99 ${ms(s.p99)}, max ${ms(s.max)} (${s.seen} changes)` +
    (s.missed ? `; ${s.missed} NOT SEEN within ${fmt(boundMs / 1000, 1)} s` : "");
}

/** The spread `describe` wrote into a note, read back (for the plot); undefined when none. */
export function parseSpread(note: string): { p50: number; p99: number; max: number } | undefined {
  const m = /p50 ([\d.,]+) ms, p99 ([\d.,]+) ms, max ([\d.,]+) ms/.exec(note);
  const n = (x: string) => Number(x.replaceAll(",", ""));
  return m ? { p50: n(m[1]), p99: n(m[2]), max: n(m[3]) } : undefined;
}
