/**
 * A counting proxy between the operator and istiod's monitoring port: the operator is given its
 * URL as `--istiod-url`, so every request the operator makes to istiod passes through it and is
 * counted here, outside the operator (its own figures could not show a request it did not mean to
 * make). Each request is forwarded as is (path, query, Authorization and Accept) and answered with
 * istiod's status and body.
 */

/** What a request asked for: the proxies' sync state, a proxy's config, or anything else. */
export type IstiodRequestKind = "syncz" | "config_dump" | "other";

/** One request the proxy forwarded. */
export interface IstiodRequest {
  kind: IstiodRequestKind;
  /** When it arrived (performance.now()). */
  at: number;
  /** istiod's status, or 0 when istiod did not answer. */
  status: number;
  /** Bytes of istiod's answer. */
  bytes: number;
  /** Arrival to istiod's whole answer read, ms. */
  ms: number;
}

/** Counts of the requests in a span, by kind. */
export interface RequestCounts {
  syncz: number;
  configDump: number;
  other: number;
  /** Answers other than 200 (and requests istiod did not answer). */
  failed: number;
  /** Bytes istiod answered. */
  bytes: number;
  /** Median and largest answer time of each kind seen, ms (undefined when none). */
  synczMs?: { median: number; max: number };
  configDumpMs?: { median: number; max: number };
  /** Largest answer of each kind, bytes. */
  synczBytes: number;
  configDumpBytes: number;
}

/** The kind of request `path` (a URL's pathname) is. */
export function requestKind(path: string): IstiodRequestKind {
  if (path === "/debug/syncz") return "syncz";
  if (path === "/debug/config_dump") return "config_dump";
  return "other";
}

const spread = (ms: number[]) => {
  if (ms.length === 0) return undefined;
  const s = [...ms].sort((a, b) => a - b);
  return { median: s[(s.length - 1) >> 1], max: s[s.length - 1] };
};

/** Counts `requests` by kind. */
export function countRequests(requests: readonly IstiodRequest[]): RequestCounts {
  const of = (k: IstiodRequestKind) => requests.filter((r) => r.kind === k);
  const syncz = of("syncz");
  const dumps = of("config_dump");
  return {
    syncz: syncz.length,
    configDump: dumps.length,
    other: of("other").length,
    failed: requests.filter((r) => r.status !== 200).length,
    bytes: requests.reduce((n, r) => n + r.bytes, 0),
    synczMs: spread(syncz.map((r) => r.ms)),
    configDumpMs: spread(dumps.map((r) => r.ms)),
    synczBytes: Math.max(0, ...syncz.map((r) => r.bytes)),
    configDumpBytes: Math.max(0, ...dumps.map((r) => r.bytes)),
  };
}

/** A running counting proxy in front of one istiod. */
export class IstiodCounter {
  readonly #requests: IstiodRequest[];
  readonly #server: Deno.HttpServer<Deno.NetAddr>;

  private constructor(
    readonly target: string,
    server: Deno.HttpServer<Deno.NetAddr>,
    requests: IstiodRequest[],
  ) {
    this.#server = server;
    this.#requests = requests;
  }

  /** Listens on a free loopback port and forwards to `target` (istiod's base URL). */
  static start(target: string): IstiodCounter {
    const base = target.replace(/\/+$/, "");
    const requests: IstiodRequest[] = [];
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      async (req) => {
        const at = performance.now();
        const url = new URL(req.url);
        const kind = requestKind(url.pathname);
        const headers: Record<string, string> = {};
        for (const h of ["authorization", "accept"]) {
          const v = req.headers.get(h);
          if (v !== null) headers[h] = v;
        }
        let status = 0;
        let body = new Uint8Array();
        let type: string | null = null;
        try {
          const res = await fetch(`${base}${url.pathname}${url.search}`, {
            method: req.method,
            headers,
          });
          status = res.status;
          type = res.headers.get("content-type");
          body = new Uint8Array(await res.arrayBuffer());
        } catch {
          status = 0;
        }
        requests.push({ kind, at, status, bytes: body.length, ms: performance.now() - at });
        return status === 0
          ? new Response("istiod did not answer", { status: 502 })
          : new Response(body, { status, headers: type ? { "content-type": type } : {} });
      },
    );
    return new IstiodCounter(base, server, requests);
  }

  /** The URL to give the operator (`--istiod-url`). */
  get url(): string {
    return `http://127.0.0.1:${this.#server.addr.port}`;
  }

  /** Every request forwarded so far, in arrival order. */
  get requests(): readonly IstiodRequest[] {
    return this.#requests;
  }

  /** The requests that arrived in [from, to) (performance.now() times). */
  between(from: number, to = Infinity): IstiodRequest[] {
    return this.#requests.filter((r) => r.at >= from && r.at < to);
  }

  /** Stops listening. */
  async stop(): Promise<void> {
    await this.#server.shutdown();
  }
}
