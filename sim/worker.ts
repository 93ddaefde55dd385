/**
 * A sweep worker (a Web Worker started by sim/pool.ts): the first message names the runner module,
 * each later one is a seed to run; it answers `ready`, then one result a seed, one seed at a time,
 * so a run never shares the isolate's event loop with another.
 */
import { loadRunner, runTask, type SeedRunner, type SeedTask, type WorkerMessage } from "./pool.ts";

interface WorkerScope {
  onmessage: ((e: MessageEvent<SeedTask | { runner?: string }>) => void) | null;
  postMessage(m: WorkerMessage): void;
  addEventListener(type: "error", fn: (e: ErrorEvent) => void): void;
  close(): void;
}

const scope = self as unknown as WorkerScope;
let runner: SeedRunner | undefined;
let queue: Promise<void> = Promise.resolve();

// An exception on this isolate's own event loop (a real timer of the simulated program) leaves the
// seed in hand half run: say so, with the stack, and stop; the pool reports the seed unfinished
// and starts another worker.
scope.addEventListener("error", (e) => {
  e.preventDefault();
  const err = e.error instanceof Error ? e.error : undefined;
  scope.postMessage({
    type: "died",
    message: e.message,
    ...(err?.stack ? { stack: err.stack } : {}),
  });
  scope.close();
});

scope.onmessage = (e) => {
  const m = e.data;
  queue = queue.then(async () => {
    if (!("seed" in m)) {
      runner = await loadRunner(m.runner);
      return scope.postMessage({ type: "ready" });
    }
    scope.postMessage({ type: "result", result: await runTask(runner!, m) });
  });
};
