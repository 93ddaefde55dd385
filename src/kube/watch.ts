/** Decodes a watch answer (one JSON WatchEvent a line) with an idle deadline, ending at once on abort. */
import { ApiError, type WatchEvent } from "../runtime/mod.ts";
import type { Stream } from "./transport.ts";

const EVENT_TYPES = new Set(["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]);

/** Parses one line of a watch answer; throws ApiError on anything that is not a WatchEvent. */
export function parseWatchLine(line: string): WatchEvent {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new ApiError(
      0,
      "InvalidWatchEvent",
      `watch sent a line that is not JSON: ${line.slice(0, 200)}`,
    );
  }
  const event = value as { type?: unknown; object?: unknown };
  if (
    typeof event?.type !== "string" || !EVENT_TYPES.has(event.type) ||
    typeof event.object !== "object"
  ) {
    throw new ApiError(
      0,
      "InvalidWatchEvent",
      `watch sent an unknown event: ${line.slice(0, 200)}`,
    );
  }
  return event as WatchEvent;
}

/**
 * Bytes a watch reads at once. A read in flight holds its buffer for as long as the watch is quiet;
 * Deno's fetch body would allocate 64 KiB for each, about 1 MB over an idle operator's watches.
 */
export const WATCH_READ_BYTES = 8 * 1024;

/** Reads a body as text, chunk by chunk. */
interface TextReader {
  read(): Promise<ReadableStreamReadResult<string>>;
  cancel(): Promise<void>;
}

/**
 * A text reader of `body`: a byte stream (fetch's) is read into one buffer of WATCH_READ_BYTES,
 * reused for every read; any other stream through its own reader. UTF-8 split across reads is
 * joined, and a truncated character at the end decodes to U+FFFD, as TextDecoderStream does.
 */
export function textReader(body: ReadableStream<Uint8Array>): TextReader {
  const decoder = new TextDecoder();
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    // Not a byte stream: read it as it comes.
  }
  let buffer = new ArrayBuffer(WATCH_READ_BYTES);
  const reader = byob ?? body.getReader();
  const next = async (): Promise<Uint8Array | undefined> => {
    if (!byob) {
      const r = await (reader as ReadableStreamDefaultReader<Uint8Array>).read();
      return r.done ? undefined : r.value;
    }
    const r = await byob.read(new Uint8Array(buffer));
    if (r.done || !r.value) return undefined;
    buffer = r.value.buffer as ArrayBuffer;
    return r.value;
  };
  let ended = false;
  return {
    async read() {
      if (ended) return { done: true, value: undefined };
      const bytes = await next();
      if (bytes) return { done: false, value: decoder.decode(bytes, { stream: true }) };
      ended = true;
      const tail = decoder.decode();
      return tail ? { done: false, value: tail } : { done: true, value: undefined };
    },
    cancel: () => reader.cancel(),
  };
}

type Outcome =
  | { kind: "data"; value: ReadableStreamReadResult<string> }
  | { kind: "failed"; error: unknown }
  | { kind: "idle" }
  | { kind: "aborted" };

/**
 * Yields the events of a watch stream. It ends when the server ends the stream or `signal` aborts;
 * it throws ApiError(0, "Timeout") when nothing (not even a bookmark) arrives for `idleMs`, which
 * turns a silently dropped connection into an error the watcher can act on.
 */
export async function* decodeWatch(
  stream: Stream,
  idleMs: number,
  signal: AbortSignal,
): AsyncGenerator<WatchEvent> {
  const reader = textReader(stream.body);
  const waiter = new ReadWaiter(idleMs, signal);
  let buffer = "";
  try {
    while (true) {
      const read = reader.read().then(
        (value): Outcome => ({ kind: "data", value }),
        // Never rejects: a read that loses the race may fail later, after the reader is cancelled.
        (error): Outcome => signal.aborted ? { kind: "aborted" } : { kind: "failed", error },
      );
      // An abort must end the watch even if the body read never settles.
      const outcome = await waiter.wait(read);
      if (outcome.kind === "aborted") return;
      if (outcome.kind === "failed") {
        const detail = outcome.error instanceof Error
          ? outcome.error.message
          : String(outcome.error);
        throw new ApiError(0, "NetworkError", `watch connection failed: ${detail}`);
      }
      if (outcome.kind === "idle") {
        throw new ApiError(
          0,
          "Timeout",
          `watch stalled: no data for ${Math.round(idleMs / 1000)} s`,
        );
      }
      if (outcome.value.done) break;
      buffer += outcome.value.value;
      let start = 0;
      let newline: number;
      while ((newline = buffer.indexOf("\n", start)) >= 0) {
        const line = buffer.slice(start, newline).trim();
        start = newline + 1;
        if (line) yield parseWatchLine(line);
        if (signal.aborted) return;
      }
      buffer = start === 0 ? buffer : buffer.slice(start);
    }
    const rest = buffer.trim();
    if (rest) yield parseWatchLine(rest);
  } finally {
    waiter.close();
    stream.close();
    reader.cancel().catch(() => {});
  }
}

/**
 * Waits for one read at a time: its outcome, or idle once a read has waited `idleMs`, or aborted,
 * whichever comes first. One timer and one abort listener serve the whole watch, not one each a
 * read: a busy watch reads thousands of chunks, and a timer set and cleared for each was a few
 * percent of the operator's CPU while 1,000 RateLimits converged. The timer is lazy: when it fires
 * while a read is younger than `idleMs` (or none is waiting), it is set again for the rest. Not
 * `Promise.race` with a promise of the whole watch's abort: such a promise never settles, so each
 * race would add a reaction to it that holds the race's result, and every chunk the watch ever
 * read would stay in memory until the watch ends (14 MB after 1,000 RateLimits converged).
 */
class ReadWaiter {
  readonly #idleMs: number;
  readonly #signal: AbortSignal;
  #settle: ((outcome: Outcome) => void) | undefined;
  #since = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #onAbort = () => this.#finish({ kind: "aborted" });

  constructor(idleMs: number, signal: AbortSignal) {
    this.#idleMs = idleMs;
    this.#signal = signal;
    signal.addEventListener("abort", this.#onAbort, { once: true });
  }

  /** The outcome of `read`, or idle, or aborted. */
  wait(read: Promise<Outcome>): Promise<Outcome> {
    if (this.#signal.aborted) return Promise.resolve({ kind: "aborted" });
    return new Promise<Outcome>((resolve) => {
      this.#settle = resolve;
      this.#since = performance.now();
      this.#timer ??= setTimeout(this.#check, this.#idleMs);
      read.then((outcome) => {
        // Only the read this wait is for: a settled wait has nothing left to settle.
        if (this.#settle === resolve) this.#finish(outcome);
      });
    });
  }

  /** Removes the timer and the abort listener. */
  close(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#signal.removeEventListener("abort", this.#onAbort);
  }

  readonly #check = () => {
    this.#timer = undefined;
    if (this.#settle === undefined) return;
    const waited = performance.now() - this.#since;
    if (waited >= this.#idleMs) this.#finish({ kind: "idle" });
    else this.#timer = setTimeout(this.#check, this.#idleMs - waited);
  };

  #finish(outcome: Outcome): void {
    const settle = this.#settle;
    this.#settle = undefined;
    settle?.(outcome);
  }
}
