/** A request as a proxy sees it, and the response the model gives. */

/** An HTTP request reaching a proxy. */
export interface Request {
  /** The request target: path and optional query string, e.g. `/headers?x=1`. */
  path: string;
  /** Request headers; names are case-insensitive. */
  headers?: Readonly<Record<string, string>>;
  /** HTTP method; GET when absent. */
  method?: string;
}

/** What the proxy answers. */
export interface Response {
  status: number;
  /** Response headers, names in lower case. */
  headers: Record<string, string>;
  body: string;
}

/**
 * The headers of a request the way Envoy's header matchers read them: names in lower case (HTTP/2
 * form), the pseudo-headers `:path` and `:method` set, and repeated names (`X-A` and `x-a`) joined
 * with "," as `HeaderUtility::getAllOfHeaderAsString` does.
 */
export function requestHeaderMap(req: Request): Map<string, string> {
  const map = new Map<string, string>();
  for (const [name, value] of Object.entries(req.headers ?? {})) {
    const key = name.toLowerCase();
    const prev = map.get(key);
    map.set(key, prev === undefined ? value : `${prev},${value}`);
  }
  map.set(":path", req.path);
  map.set(":method", req.method ?? "GET");
  return map;
}
