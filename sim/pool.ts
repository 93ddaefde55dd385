/**
 * The seed sweep over many seeds, in this isolate (one worker) or spread over Web Workers. Each
 * seed is a fresh Simulation from its own seed, so where it runs cannot change its trace; results
 * come back in seed order whatever order the workers finish in. A seed never stops the sweep: a
 * run that throws is reported unfinished by `reportRun`; with workers, a worker that dies or does
 * not answer within a wall-clock bound (a loop the driver cannot see) is replaced and its seed
 * reported unfinished.
 */
import { DEFAULT_ENVOY, envoyBehaviour } from "../src/dataplane/mod.ts";
import { type RunIdentity, type RunResult, unfinishedRun } from "./run_result.ts";
import { faultsFor } from "./fault_choice.ts";
import { runSeed, type SeedOptions } from "./seed_run.ts";

/** Runs one sweep seed: `runSeed` of sim/seed_run.ts, or a module exporting one like it. */
export type SeedRunner = (seed: number, opts: SeedOptions) => Promise<RunResult>;

/** The sweep's fault choice. */
export type SweepFaults = "none" | "default";

/** Wall-clock bound on one seed in a worker (the slowest seeds take about a second). */
export const SEED_TIMEOUT_MS = 120_000;

/** Options of a sweep. */
export interface SweepOptions {
  /** First seed. */
  from: number;
  /** Number of seeds. */
  count: number;
  /** 1 runs every seed in this isolate; more spreads them over that many Web Workers. */
  workers: number;
  faults: SweepFaults;
  /** The Envoy version of the mesh (`1.30`); default: DEFAULT_ENVOY. */
  envoy?: string;
  /** The command that replays a seed. */
  replay: (seed: number) => string;
  /** Keep the timeline of passing runs too (`--json`); failed runs always keep theirs. */
  timeline?: boolean;
  /** URL of a module exporting `runSeed: SeedRunner` in place of sim/seed_run.ts's (tests). */
  runner?: string;
  /** Wall-clock bound on one seed in a worker (default SEED_TIMEOUT_MS). */
  seedTimeoutMs?: number;
}

/** One seed as sent to a worker. */
export interface SeedTask {
  seed: number;
  faults: SweepFaults;
  envoy?: string;
  replay: string;
  timeline: boolean;
}

/** Messages from a worker. */
export type WorkerMessage =
  | { type: "ready" }
  | { type: "result"; result: RunResult }
  /** An uncaught exception on the worker's event loop: it stops. */
  | { type: "died"; message: string; stack?: string };

/** Loads the runner of `url` (or sim/seed_run.ts's). */
export async function loadRunner(url: string | undefined): Promise<SeedRunner> {
  if (url === undefined) return runSeed;
  const mod = await import(url) as { runSeed?: unknown };
  if (typeof mod.runSeed !== "function") throw new Error(`${url} exports no runSeed function`);
  return mod.runSeed as SeedRunner;
}

function identity(task: SeedTask): RunIdentity {
  return {
    name: `seed ${task.seed}`,
    seed: task.seed,
    envoy: task.envoy ?? DEFAULT_ENVOY,
    replay: task.replay,
  };
}

/** Runs one task; never throws (what escapes the runner is reported unfinished). */
export async function runTask(runner: SeedRunner, task: SeedTask): Promise<RunResult> {
  let r: RunResult;
  try {
    const envoy = task.envoy === undefined ? undefined : envoyBehaviour(task.envoy);
    if (envoy && !envoy.ok) throw new Error(`envoy: ${envoy.error}`);
    r = await runner(task.seed, {
      faults: faultsFor(task.faults, task.seed),
      ...(envoy ? { envoy: envoy.value } : {}),
      replay: () => task.replay,
    });
  } catch (err) {
    r = unfinishedRun(identity(task), err);
  }
  return task.timeline || !r.ok ? r : { ...r, timeline: [] };
}

function taskOf(opts: SweepOptions, seed: number): SeedTask {
  return {
    seed,
    faults: opts.faults,
    ...(opts.envoy ? { envoy: opts.envoy } : {}),
    replay: opts.replay(seed),
    timeline: !!opts.timeline,
  };
}

/** Runs seeds `from`..`from+count-1`; `onResult` gets each result in seed order. */
export async function sweep(
  opts: SweepOptions,
  onResult: (r: RunResult) => void,
): Promise<void> {
  if (opts.count <= 0) return;
  const workers = Math.min(Math.max(1, Math.floor(opts.workers)), opts.count);
  if (workers === 1) {
    const runner = await loadRunner(opts.runner);
    for (let seed = opts.from; seed < opts.from + opts.count; seed++) {
      onResult(await runTask(runner, taskOf(opts, seed)));
    }
    return;
  }
  await inWorkers(opts, workers, onResult);
}

/** A worker died or went silent with a seed in hand. */
class WorkerLost extends Error {
  override name = "WorkerLost";
}

interface Slot {
  worker: Worker;
  ready: boolean;
  seed?: number;
  timer?: ReturnType<typeof setTimeout>;
}

const WORKER_URL = new URL("./worker.ts", import.meta.url).href;

function inWorkers(
  opts: SweepOptions,
  workers: number,
  onResult: (r: RunResult) => void,
): Promise<void> {
  const end = opts.from + opts.count;
  const timeoutMs = opts.seedTimeoutMs ?? SEED_TIMEOUT_MS;
  const done = new Map<number, RunResult>();
  const slots = new Set<Slot>();
  let toSend = opts.from;
  let toEmit = opts.from;
  return new Promise<void>((resolve, reject) => {
    let over = false;
    const finish = (err?: Error) => {
      if (over) return;
      over = true;
      for (const s of slots) stop(s);
      if (err) reject(err);
      else resolve();
    };
    const stop = (s: Slot) => {
      clearTimeout(s.timer);
      s.worker.terminate();
      slots.delete(s);
    };
    const emit = (r: RunResult) => {
      done.set(r.seed, r);
      for (let next = done.get(toEmit); next; next = done.get(toEmit)) {
        done.delete(toEmit++);
        try {
          onResult(next);
        } catch (err) {
          return finish(err as Error);
        }
      }
      if (toEmit === end) finish();
    };
    const feed = (s: Slot) => {
      if (over) return;
      if (toSend >= end) return stop(s);
      const seed = toSend++;
      s.seed = seed;
      s.timer = setTimeout(
        () =>
          lose(
            s,
            `no result within ${timeoutMs / 1000} s of wall time (a loop that never yields?)`,
          ),
        timeoutMs,
      );
      s.worker.postMessage(taskOf(opts, seed));
    };
    const lose = (s: Slot, why: string, stack?: string) => {
      stop(s);
      if (over) return;
      if (!s.ready) return finish(new Error(`a sweep worker could not start: ${why}`));
      const seed = s.seed;
      s.seed = undefined;
      if (toSend < end) spawn();
      if (seed !== undefined) {
        const err = new WorkerLost(why);
        if (stack) err.stack = `${err.name}: ${why}\n${stack.split("\n").slice(1).join("\n")}`;
        emit(unfinishedRun(identity(taskOf(opts, seed)), err));
      } else if (slots.size === 0 && toEmit < end) {
        finish(new Error(`sweep workers gone with seeds ${toEmit}.. unreported`));
      }
    };
    const spawn = () => {
      const s: Slot = { worker: new Worker(WORKER_URL, { type: "module" }), ready: false };
      slots.add(s);
      s.worker.onmessage = (e: MessageEvent<WorkerMessage>) => {
        if (e.data.type === "ready") {
          s.ready = true;
          return feed(s);
        }
        if (e.data.type === "died") return lose(s, `worker died: ${e.data.message}`, e.data.stack);
        clearTimeout(s.timer);
        s.seed = undefined;
        emit(e.data.result);
        feed(s);
      };
      s.worker.onerror = (e: ErrorEvent) => {
        e.preventDefault(); // the worker's uncaught error must not end this process
        const where = e.filename ? ` (${e.filename}:${e.lineno})` : "";
        lose(s, `worker died: ${e.message}${where}`);
      };
      s.worker.onmessageerror = () => lose(s, "worker sent a message that could not be read");
      s.worker.postMessage({ runner: opts.runner });
    };
    for (let i = 0; i < workers; i++) spawn();
  });
}
