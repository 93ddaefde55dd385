/**
 * HTTP to the API server on Deno's native fetch and `Deno.createHttpClient`. client-node 2.x's own
 * transport (npm undici) is not used: under Deno an aborted undici body emits no error, so its
 * watches stall silently.
 */
import type { ApiError } from "../runtime/mod.ts";
import type { Connection } from "./config.ts";
import { apiErrorFromResponse, transportError } from "./errors.ts";

/** One answered request, for metrics. `code` is the HTTP status, 0 when no answer came. */
export interface RequestRecord {
  method: string;
  path: string;
  code: number;
  durationMs: number;
}

/** Transport settings. */
export interface TransportOptions {
  /** Deadline of a non-watch request, body included; for a watch, of its response headers. Default 30 s. */
  requestTimeoutMs?: number;
  userAgent?: string;
  /** Called after every request (metrics). */
  onRequest?: (record: RequestRecord) => void;
  /** Makes the HTTP clients (default `Deno.createHttpClient`; tests see what each is asked). */
  createHttpClient?: (options: Deno.CreateHttpClientOptions) => Deno.HttpClient;
}

/** A request to send. */
export interface RequestInit {
  body?: unknown;
  contentType?: string;
  /** The Accept header; default `application/json`. */
  accept?: string;
  /** Aborting it cancels the request (and a streamed body). */
  signal?: AbortSignal;
}

/** An open streamed answer: its body, and `close()` to end the connection. */
export interface Stream {
  body: ReadableStream<Uint8Array>;
  close(): void;
}

const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * Bodies shorter than this (in bytes) go over the shared HTTP/2 connection; longer ones over
 * HTTP/1.1. Measured on Deno 2.9 against kube-apiserver on loopback: a 1,018-byte access review
 * took 1.3 ms over HTTP/2, a 1,024-byte one 44 ms (the same over HTTP/1.1: 1.0-1.4 ms).
 */
export const SMALL_BODY_BYTES = 1024;

const encoder = new TextEncoder();

class Deadline extends Error {
  constructor(ms: number) {
    super(`timed out after ${ms} ms`);
    this.name = "TimeoutError";
  }
}

/** A request's deadline: when it passes, and what to do then. */
interface PendingDeadline {
  at: number;
  expire: () => void;
}

/**
 * The deadlines of the requests in flight, under one timer. Every request of a transport has the
 * same timeout, so deadlines come due in the order they were added: the timer waits for the
 * oldest. A timer set and cleared for each request was a few percent of the operator's CPU while
 * 1,000 RateLimits converged; this sets one when the oldest deadline changes and it fires, about
 * once a timeout under steady traffic. The timer does not keep the process alive (a request in
 * flight does), so it is left to fire when the last request ends instead of being cleared.
 */
class Deadlines {
  readonly #pending = new Set<PendingDeadline>();
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** Calls `expire` once `ms` have passed, unless deleted first. */
  add(ms: number, expire: () => void): PendingDeadline {
    const d = { at: performance.now() + ms, expire };
    this.#pending.add(d);
    if (this.#timer === undefined) this.#arm(ms);
    return d;
  }

  /** Stops the timer; pending expiries will not be called. */
  close(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#pending.clear();
  }

  /** Forgets `d`; its expiry will not be called. */
  delete(d: PendingDeadline): void {
    this.#pending.delete(d);
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(this.#fire, Math.max(0, ms));
    Deno.unrefTimer(this.#timer);
  }

  readonly #fire = () => {
    this.#timer = undefined;
    const now = performance.now();
    for (const d of this.#pending) {
      if (d.at > now) return this.#arm(d.at - now);
      this.#pending.delete(d);
      d.expire();
    }
  };
}

/** Sends requests to one API server; every failure is thrown as ApiError. */
export class HttpTransport {
  readonly #conn: Connection;
  readonly #client: Deno.HttpClient;
  readonly #bodyClient: Deno.HttpClient;
  readonly #timeoutMs: number;
  readonly #userAgent: string;
  readonly #onRequest?: (record: RequestRecord) => void;
  readonly #deadlines = new Deadlines();

  /** Creates the Deno HTTP client (CAs, client certificate, proxy) of `conn`. */
  constructor(conn: Connection, opts: TransportOptions = {}) {
    this.#conn = conn;
    const tls = conn.clientCert && conn.clientKey
      ? { cert: conn.clientCert, key: conn.clientKey }
      : {};
    const options: Deno.CreateHttpClientOptions = {
      caCerts: conn.caCerts,
      ...tls,
      ...(conn.proxyUrl ? { proxy: { url: conn.proxyUrl } } : {}),
    };
    const create = opts.createHttpClient ?? Deno.createHttpClient;
    // Reads, watches and small bodies share one HTTP/2 connection. A body of 1 KiB or more goes
    // over HTTP/1.1: Deno's HTTP/2 client holds it about 44 ms before sending it (an EnvoyFilter
    // apply took 48 ms, over HTTP/1.1 4 ms, on loopback; one byte less is not held; see
    // SMALL_BODY_BYTES and bench/RESULTS.md).
    this.#client = create(options);
    this.#bodyClient = create({ ...options, http2: false });
    this.#timeoutMs = opts.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#userAgent = opts.userAgent ?? "platform-operator";
    this.#onRequest = opts.onRequest;
  }

  /** The server's base URL. */
  get server(): string {
    return this.#conn.server;
  }

  /** Sends a request and parses the JSON answer; the deadline covers the body. Throws ApiError unless 2xx. */
  async json(method: string, path: string, init: RequestInit = {}): Promise<unknown> {
    const ctl = this.#controller(init.signal);
    try {
      const res = await this.#send(method, path, init, ctl.signal);
      return await this.#read(method, path, () => res.json(), ctl.signal);
    } finally {
      ctl.done();
    }
  }

  /**
   * Sends a request whose answer is streamed (a watch). The deadline covers the response headers
   * only; the stream lasts until the server ends it, `init.signal` aborts, or `close()`.
   */
  async stream(method: string, path: string, init: RequestInit = {}): Promise<Stream> {
    const ctl = this.#controller(init.signal);
    try {
      const res = await this.#send(method, path, init, ctl.signal);
      ctl.clearDeadline();
      if (!res.body) throw transportError("empty body", `${method} ${path}`, false);
      return { body: res.body, close: () => ctl.abort() };
    } catch (err) {
      ctl.done();
      throw err;
    }
  }

  /** Closes idle connections and forgets the deadlines of requests in flight. */
  close(): void {
    this.#deadlines.close();
    this.#client.close();
    this.#bodyClient.close();
  }

  async #send(
    method: string,
    path: string,
    init: RequestInit,
    signal: AbortSignal,
  ): Promise<Response> {
    const url = `${this.#conn.server}${path}`;
    const body = init.body === undefined ? undefined : encoder.encode(JSON.stringify(init.body));
    for (let attempt = 0;; attempt++) {
      const started = performance.now();
      let res: Response;
      try {
        const headers: Record<string, string> = {
          accept: init.accept ?? "application/json",
          "user-agent": this.#userAgent,
          ...(await this.#conn.credentials.headers()),
        };
        if (body !== undefined) {
          headers["content-type"] = init.contentType ?? "application/json";
        }
        res = await fetch(url, {
          method,
          headers,
          body,
          signal,
          client: body === undefined || body.length < SMALL_BODY_BYTES
            ? this.#client
            : this.#bodyClient,
        });
      } catch (err) {
        this.#record(method, path, 0, started);
        throw this.#failure(err, `${method} ${path}`, signal);
      }
      this.#record(method, path, res.status, started);
      if (res.ok) return res;
      // A rotated token: read it again once before giving up.
      if (res.status === 401 && attempt === 0 && this.#conn.credentials.invalidate()) {
        await res.body?.cancel();
        continue;
      }
      throw await this.#read(method, path, () => apiErrorFromResponse(res), signal);
    }
  }

  async #read<T>(
    method: string,
    path: string,
    read: () => Promise<T>,
    signal: AbortSignal,
  ): Promise<T> {
    try {
      return await read();
    } catch (err) {
      throw this.#failure(err, `${method} ${path}: reading the answer`, signal);
    }
  }

  #failure(err: unknown, what: string, signal: AbortSignal): ApiError {
    const timedOut = signal.aborted && signal.reason instanceof Deadline;
    const error = transportError(err, what, timedOut);
    if (this.#conn.skipTLSVerify && /certificate|tls/i.test(error.message)) {
      error.message +=
        " (the kubeconfig sets insecure-skip-tls-verify: run with --unsafely-ignore-certificate-errors)";
    } else if (this.#conn.caCerts.length > 0 && /UnknownIssuer/.test(error.message)) {
      error.message +=
        ` (the server's certificate is not signed by the CA of ${this.#conn.source})`;
    }
    return error;
  }

  #record(method: string, path: string, code: number, started: number): void {
    this.#onRequest?.({ method, path, code, durationMs: performance.now() - started });
  }

  #controller(outer?: AbortSignal) {
    const ctl = new AbortController();
    const ms = this.#timeoutMs;
    let deadline: PendingDeadline | undefined = this.#deadlines.add(
      ms,
      () => ctl.abort(new Deadline(ms)),
    );
    const onAbort = () => ctl.abort(outer?.reason);
    if (outer?.aborted) ctl.abort(outer.reason);
    else outer?.addEventListener("abort", onAbort, { once: true });
    const clearDeadline = () => {
      if (deadline !== undefined) this.#deadlines.delete(deadline);
      deadline = undefined;
    };
    return {
      signal: ctl.signal,
      clearDeadline,
      abort: () => {
        clearDeadline();
        outer?.removeEventListener("abort", onAbort);
        ctl.abort();
      },
      done: () => {
        clearDeadline();
        outer?.removeEventListener("abort", onAbort);
      },
    };
  }
}
