/** A request as a proxy sees it, and the response the model gives. */
import type { HeaderLookup } from "./matchers.ts";

/** An HTTP request reaching a proxy. */
export interface Request {
  /** The request target: path and optional query string, e.g. `/headers?x=1`. */
  path: string;
  /** Request headers; names are case-insensitive. */
  headers?: Readonly<Record<string, string>>;
  /** HTTP method; GET when absent. */
  method?: string;
  /** The address of the connection's peer as the proxy sees it (an IP); none when unknown. */
  peer?: string;
}

/** What the proxy answers. */
export interface Response {
  status: number;
  /** Response headers, names in lower case. */
  headers: Record<string, string>;
  body: string;
}

/** The request's own headers by lower-case name, repeated names joined with ",". */
function namedHeaders(req: Request): Map<string, string> {
  const map = new Map<string, string>();
  const headers = req.headers ?? {};
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    const key = name.toLowerCase();
    const prev = map.get(key);
    map.set(key, prev === undefined ? value : `${prev},${value}`);
  }
  return map;
}

/**
 * The headers of a request the way Envoy's header matchers read them (names in lower case, HTTP/2
 * form), read lazily: the pseudo-headers `:path` and `:method` come straight from the request, and
 * the others are lower-cased once, on the first lookup of a named header, into a flat list that
 * lookups scan (a decision reads a handful of names from a few headers, for which a scan beats
 * building a Map). `name` must be in lower case, as matchers keep it. `get` joins a repeated
 * header's values with "," (`HeaderUtility::getAllOfHeaderAsString`), `first` gives the first of
 * them (the request's own order). HTTP/1's Host is HTTP/2's `:authority`, and Envoy's request
 * header map answers either name with it (`StaticLookupTable<RequestHeaderMap>` maps `host` to
 * `:authority`): so does this.
 */
export function requestHeaders(
  req: Request,
  remoteAddress?: string,
): HeaderLookup {
  let pairs: string[] | undefined;
  return {
    remoteAddress,
    get(name: string): string | undefined {
      if (name === ":path") return req.path;
      if (name === ":method") return req.method ?? "GET";
      if (req.headers === undefined) return undefined;
      if (name === "host") name = ":authority";
      pairs ??= lowerCasePairs(req.headers);
      let found: string | undefined;
      for (let i = 0; i < pairs.length; i += 2) {
        if (pairs[i] !== name) continue;
        found = found === undefined ? pairs[i + 1] : `${found},${pairs[i + 1]}`;
      }
      return found;
    },
    first(name: string): string | undefined {
      if (name === ":path") return req.path;
      if (name === ":method") return req.method ?? "GET";
      if (req.headers === undefined) return undefined;
      if (name === "host") name = ":authority";
      pairs ??= lowerCasePairs(req.headers);
      for (let i = 0; i < pairs.length; i += 2) if (pairs[i] === name) return pairs[i + 1];
      return undefined;
    },
  };
}

function lowerCasePairs(headers: Readonly<Record<string, string>>): string[] {
  const out: string[] = [];
  for (const name of Object.keys(headers)) {
    const lower = name.toLowerCase();
    out.push(lower === "host" ? ":authority" : lower, headers[name]);
  }
  return out;
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const IPV6 = /^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*$/;

/**
 * The client address Envoy's connection manager trusts (`ConnectionManagerUtility::
 * mutateRequestHeaders`), with `xff_num_trusted_hops` 0 as Istio sets it: with
 * `use_remote_address` (Istio's gateways) the connection's peer, whatever x-forwarded-for says;
 * without (Istio's sidecar inbound listeners) the last address of x-forwarded-for when it is an
 * IP, else the peer. So behind the gateway a sidecar sees the client the gateway saw, and a client
 * that reaches a sidecar directly can name any address it likes in x-forwarded-for.
 */
export function trustedClientAddress(req: Request, useRemoteAddress: boolean): string | undefined {
  if (!useRemoteAddress) {
    const xff = namedHeaders(req).get("x-forwarded-for");
    const last = xff?.split(",").pop()?.trim();
    if (last !== undefined && (IPV4.test(last) || IPV6.test(last))) return last;
  }
  return req.peer;
}

/**
 * The request as the gateway forwards it: Envoy with `use_remote_address` appends the peer it saw
 * to x-forwarded-for, and the next proxy's peer is the gateway (whose address the model leaves
 * out).
 */
export function forwardedByGateway<R extends Request>(req: R): R {
  if (req.peer === undefined) return req;
  const headers = { ...(req.headers ?? {}) };
  const name = Object.keys(headers).find((k) => k.toLowerCase() === "x-forwarded-for");
  if (name === undefined) headers["x-forwarded-for"] = req.peer;
  else headers[name] = `${headers[name]},${req.peer}`;
  const { peer: _, ...rest } = req;
  return { ...rest, headers } as R;
}
