/**
 * Structured logs: one JSON object a line (`{"ts","level","msg",...fields}`) or a readable text
 * line. Time comes from the Clock so a simulated run logs the same bytes every time; the sink is
 * injectable so tests and the simulator can capture lines.
 */

/** Log levels, least severe first. */
export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
/** A log level. */
export type LogLevel = typeof LOG_LEVELS[number];
/** Output formats. */
export const LOG_FORMATS = ["json", "text"] as const;
/** A log format. */
export type LogFormat = typeof LOG_FORMATS[number];
/** Extra fields of a log line. Errors are written as their message. */
export type LogFields = Record<string, unknown>;

/** A structured logger. */
export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line. */
  child(fields: LogFields): Logger;
  /** True when lines of `level` are written (skip building expensive fields otherwise). */
  enabled(level: LogLevel): boolean;
}

/** Options of `createLogger`. */
export interface LoggerOptions {
  /** Source of the `ts` field: a `Clock` (clock.ts), named by shape so logging needs no import. */
  clock: { now(): number };
  /** Lines below this level are dropped; default `info`. */
  level?: LogLevel;
  /** Default `json`. */
  format?: LogFormat;
  /** Receives each line without its newline; default writes to stderr in batches (`LineBatcher`). */
  sink?: (line: string) => void;
  /** Fields on every line. */
  fields?: LogFields;
}

/** Parses a log level flag; throws a message listing the allowed values. */
export function parseLogLevel(value: string): LogLevel {
  const v = value.toLowerCase();
  if ((LOG_LEVELS as readonly string[]).includes(v)) return v as LogLevel;
  throw new Error(`invalid log level "${value}": use one of ${LOG_LEVELS.join(", ")}`);
}

/** Parses a log format flag; throws a message listing the allowed values. */
export function parseLogFormat(value: string): LogFormat {
  const v = value.toLowerCase();
  if ((LOG_FORMATS as readonly string[]).includes(v)) return v as LogFormat;
  throw new Error(`invalid log format "${value}": use one of ${LOG_FORMATS.join(", ")}`);
}

const encoder = new TextEncoder();

/** Options of a `LineBatcher`. */
export interface LineBatcherOptions {
  /** Writes bytes wholly (default: stderr, synchronously). */
  write?: (bytes: Uint8Array) => void;
  /** Longest a line waits; default 200 ms. */
  delayMs?: number;
  /** Pending characters (newlines included) that are written at once; default 32 Ki. */
  maxChars?: number;
}

/**
 * Log lines written in batches. Each write to stderr is a system call that, on a pipe (a
 * container runtime's, or a parent process's), wakes the reader: one a line was 3 to 4% of the
 * operator's CPU while 1,000 RateLimits converged (1,000 "reconciled" lines). Lines wait at most
 * `delayMs` (klog, the Kubernetes components' logger, flushes every 5 s), and not at all when
 * `flush` is asked: for a warning or an error (with the lines before it, in order), when
 * `maxChars` are pending, and when the process exits (`unload`) or dies of an uncaught error.
 */
export class LineBatcher {
  readonly #write: (bytes: Uint8Array) => void;
  readonly #delayMs: number;
  readonly #maxChars: number;
  #pending: string[] = [];
  #chars = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(opts: LineBatcherOptions = {}) {
    this.#write = opts.write ?? writeStderr;
    this.#delayMs = opts.delayMs ?? 200;
    this.#maxChars = opts.maxChars ?? 32 * 1024;
  }

  /** Queues `line` (without its newline); writes what is pending now when `urgent`. */
  line(line: string, urgent = false): void {
    this.#pending.push(line);
    this.#chars += line.length + 1;
    if (urgent || this.#chars >= this.#maxChars) this.flush();
    else if (this.#timer === undefined) {
      this.#timer = setTimeout(this.flush, this.#delayMs);
      // A line waiting keeps no process alive: an exit flushes it (`unload`).
      Deno.unrefTimer(this.#timer);
    }
  }

  /** Writes every pending line now. */
  readonly flush = (): void => {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#pending.length === 0) return;
    const text = this.#pending.join("\n") + "\n";
    this.#pending = [];
    this.#chars = 0;
    this.#write(encoder.encode(text));
  };
}

/** Writes all of `bytes` to stderr, however many calls that takes. */
function writeStderr(bytes: Uint8Array): void {
  let off = 0;
  while (off < bytes.length) off += Deno.stderr.writeSync(bytes.subarray(off));
}

let stderrBatcher: LineBatcher | undefined;

/** The process's one batcher of stderr lines, flushed on exit and on an uncaught error. */
function stderrLines(): LineBatcher {
  if (stderrBatcher) return stderrBatcher;
  const batcher = stderrBatcher = new LineBatcher();
  globalThis.addEventListener("unload", batcher.flush);
  globalThis.addEventListener("error", batcher.flush);
  globalThis.addEventListener("unhandledrejection", batcher.flush);
  return batcher;
}

/** Creates a logger. */
export function createLogger(opts: LoggerOptions): Logger {
  const min = LOG_LEVELS.indexOf(opts.level ?? "info");
  const format = opts.format ?? "json";
  const sink = opts.sink;
  const warn = LOG_LEVELS.indexOf("warn");
  const make = (base: LogFields): Logger => {
    const write = (level: LogLevel, msg: string, fields?: LogFields) => {
      const rank = LOG_LEVELS.indexOf(level);
      if (rank < min) return;
      const ts = new Date(opts.clock.now()).toISOString();
      const all = { ...base, ...fields };
      const line = format === "json"
        ? jsonLine(ts, level, msg, all)
        : textLine(ts, level, msg, all);
      if (sink) sink(line);
      else stderrLines().line(line, rank >= warn);
    };
    return {
      debug: (m, f) => write("debug", m, f),
      info: (m, f) => write("info", m, f),
      warn: (m, f) => write("warn", m, f),
      error: (m, f) => write("error", m, f),
      child: (fields) => make({ ...base, ...fields }),
      enabled: (level) => LOG_LEVELS.indexOf(level) >= min,
    };
  };
  return make(opts.fields ?? {});
}

/** A logger that drops everything. */
export const nullLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => nullLogger,
  enabled: () => false,
};

function plain(value: unknown): unknown {
  if (value instanceof Error) return value.message;
  return value;
}

function jsonLine(ts: string, level: LogLevel, msg: string, fields: LogFields): string {
  const out: Record<string, unknown> = { ts, level, msg };
  for (const [k, v] of Object.entries(fields)) {
    if (v !== undefined && !(k in out)) out[k] = plain(v);
  }
  return JSON.stringify(out);
}

function textLine(ts: string, level: LogLevel, msg: string, fields: LogFields): string {
  const parts = [ts, level.toUpperCase().padEnd(5), msg];
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue;
    const p = plain(v);
    const s = typeof p === "string" ? p : JSON.stringify(p);
    parts.push(`${k}=${/[\s"=]/.test(s) ? JSON.stringify(s) : s}`);
  }
  return parts.join(" ");
}
