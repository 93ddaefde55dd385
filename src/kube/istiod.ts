/**
 * Asking istiod what its proxies hold: `/debug/syncz` on its monitoring port (15014 in a cluster)
 * over HTTP, with a Kubernetes bearer token that istiod checks by TokenReview (audience
 * `istio-ca`). Every answer is one of: the proxies, or why istiod could not be asked — never an
 * exception, so that a caller reports `Unknown` with that reason and retries later.
 *
 * Access, as istiod decides it (istio.io/istio pilot/pkg/xds/debug.go): with debug endpoint auth
 * on (the default), a caller whose token's namespace is neither istiod's root namespace nor listed
 * in `DEBUG_ENDPOINT_AUTH_ALLOWED_NAMESPACES` gets 403 on `/debug/syncz`. A request from loopback
 * is never checked.
 */
import { parseSyncz, type Syncz } from "../api/istiod.ts";
import type { Credentials } from "./credentials.ts";
import { describe } from "./errors.ts";
import { readBounded } from "./bounded_read.ts";

/** Why istiod could not be asked. */
export type IstiodFailure =
  | "Unreachable" // no answer: refused, reset, timed out, name not resolved
  | "Unauthenticated" // 401: istiod did not accept the token
  | "Forbidden" // 403: the token's namespace may not read this endpoint
  | "NotFound" // 404: the proxy is not connected to this istiod, or not visible to this token
  | "BadAnswer"; // any other status, a body too large, or not JSON

/** One answer of istiod. */
export type IstiodAnswer<T> =
  | { ok: true; value: T }
  | { ok: false; reason: IstiodFailure; message: string };

/** Settings of the client. */
export interface IstiodOptions {
  /** Base URL of istiod's monitoring port, e.g. `http://istiod.istio-system.svc:15014`. */
  url: string;
  credentials: Credentials;
  /** Deadline of one request, body included. Default 10 s. */
  timeoutMs?: number;
  /** Largest body read (bytes). Default 64 MiB: about 38,000 proxies of syncz (1.7 KiB each). */
  maxBytes?: number;
  /** The fetch to use (tests). */
  fetch?: typeof fetch;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;

/** What the operator asks istiod. */
export interface IstiodClient {
  /** Every proxy connected to this istiod and how it stands (`/debug/syncz`). */
  syncz(): Promise<IstiodAnswer<Syncz>>;
  /**
   * The listeners and routes istiod generated for a proxy from the push it last sent it
   * (`/debug/config_dump?proxyID=&types=lds,rds`: from the proxy's last push context), as JSON.
   * istiod answers 404 for a proxy not connected to it, and also for a proxy of another namespace
   * than the caller's unless the caller's token is of istiod's root namespace.
   */
  listenersAndRoutes(proxyId: string): Promise<IstiodAnswer<unknown>>;
}

/** A client of one istiod. */
export function istiodClient(opts: IstiodOptions): IstiodClient {
  const doFetch = opts.fetch ?? fetch;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  const base = opts.url.replace(/\/+$/, "");

  async function getJson(path: string): Promise<IstiodAnswer<unknown>> {
    const url = `${base}${path}`;
    const signal = AbortSignal.timeout(timeoutMs);
    let headers: Record<string, string>;
    try {
      headers = await opts.credentials.headers();
    } catch (e) {
      return {
        ok: false,
        reason: "Unauthenticated",
        message: `no token to show istiod: ${describe(e)}`,
      };
    }
    let res: Response;
    try {
      res = await doFetch(url, { headers: { ...headers, accept: "application/json" }, signal });
    } catch (e) {
      const what = signal.aborted ? `no answer in ${timeoutMs} ms` : describe(e);
      return { ok: false, reason: "Unreachable", message: `GET ${url}: ${what}` };
    }
    if (res.status === 401 || res.status === 403) {
      await res.body?.cancel();
      if (res.status === 401) opts.credentials.invalidate();
      return res.status === 401
        ? {
          ok: false,
          reason: "Unauthenticated",
          message: `GET ${url}: 401, istiod did not accept the token (audience istio-ca)`,
        }
        : {
          ok: false,
          reason: "Forbidden",
          message:
            `GET ${url}: 403, istiod does not let this namespace read it (list it in istiod's DEBUG_ENDPOINT_AUTH_ALLOWED_NAMESPACES)`,
        };
    }
    let body: Uint8Array | undefined;
    try {
      body = await readBounded(res, maxBytes);
    } catch (e) {
      const what = signal.aborted ? `no answer in ${timeoutMs} ms` : describe(e);
      return { ok: false, reason: "Unreachable", message: `GET ${url}: ${what}` };
    }
    if (res.status === 404) {
      return {
        ok: false,
        reason: "NotFound",
        message: `GET ${url}: 404, ${new TextDecoder().decode(body ?? new Uint8Array()).trim()}`
          .slice(0, 512),
      };
    }
    if (res.status !== 200) {
      return { ok: false, reason: "BadAnswer", message: `GET ${url}: HTTP ${res.status}` };
    }
    if (body === undefined) {
      return {
        ok: false,
        reason: "BadAnswer",
        message: `GET ${url}: the answer is larger than ${maxBytes} bytes`,
      };
    }
    try {
      return { ok: true, value: JSON.parse(new TextDecoder().decode(body)) };
    } catch (e) {
      return { ok: false, reason: "BadAnswer", message: `GET ${url}: not JSON (${describe(e)})` };
    }
  }

  return {
    async syncz() {
      const answer = await getJson("/debug/syncz");
      return answer.ok ? { ok: true, value: parseSyncz(answer.value) } : answer;
    },
    listenersAndRoutes(proxyId: string) {
      return getJson(`/debug/config_dump?proxyID=${encodeURIComponent(proxyId)}&types=lds,rds`);
    },
  };
}
