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
  /**
   * The connection to the proxy is TLS (a gateway's HTTPS server, mutual TLS into a sidecar): the
   * proxy's `x-forwarded-proto` is then `https`. Plain text when absent.
   */
  tls?: boolean;
}

/** What the proxy answers. */
export interface Response {
  status: number;
  /** Response headers, names in lower case. */
  headers: Record<string, string>;
  body: string;
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
