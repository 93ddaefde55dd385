/**
 * Run with `--v8-flags=--expose-gc`: feeds `decodeWatch` N events of about 8 KB each through an
 * open stream, consuming each, then prints the live heap's growth in MB while the watch is still
 * open (a watch lasts minutes; what it holds meanwhile is what the operator holds).
 */
import { decodeWatch } from "../../../src/kube/watch.ts";

const gc = (globalThis as unknown as { gc: () => void }).gc;
const n = Number(Deno.args[0] ?? 4000);
const filler = "x".repeat(8000);
const encoder = new TextEncoder();
let sent = 0;
const body = new ReadableStream<Uint8Array>({
  pull(controller) {
    // One event a chunk, as an API server flushes them; then the stream stays open.
    if (sent >= n) return new Promise(() => {});
    const line = JSON.stringify({
      type: "MODIFIED",
      object: {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: `c${sent}` },
        data: { filler },
      },
    });
    controller.enqueue(encoder.encode(`${line}\n`));
    sent++;
  },
});
const abort = new AbortController();
const events = decodeWatch({ body, close: () => {} }, 60_000, abort.signal);
gc();
const before = Deno.memoryUsage().heapUsed;
for (let i = 0; i < n; i++) await events.next();
gc();
gc();
const grown = (Deno.memoryUsage().heapUsed - before) / 1048576;
console.log(grown.toFixed(1));
abort.abort();
await events.return(undefined);
Deno.exit(0);
