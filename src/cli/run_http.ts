/** The operator's HTTP endpoints: /healthz and /readyz on the probe address, /metrics on its own. */
import type { Logger } from "../runtime/mod.ts";

/** A route's answer to a request. */
export type Route = (req: Request) => Response | Promise<Response>;

/** A running endpoint server. */
export interface Endpoint {
  /** The bound address, e.g. `0.0.0.0:8081` (the real port when 0 was asked for). */
  addr: string;
  shutdown(): Promise<void>;
}

/** Splits `[host]:port` (`:8080`, `127.0.0.1:0`, `[::1]:9090`); an empty host listens everywhere. */
export function parseListenAddr(addr: string): { hostname: string; port: number } {
  const colon = addr.lastIndexOf(":");
  const host = addr.slice(0, colon).replace(/^\[(.*)\]$/, "$1");
  const port = Number(addr.slice(colon + 1));
  if (colon < 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`invalid listen address "${addr}": use [host]:port`);
  }
  return { hostname: host || "0.0.0.0", port };
}

/** True for a loopback host: only this machine (in a Pod, its own containers) can connect. */
export function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname === "::1" || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

/**
 * Serves `routes` (path to answer) on `addr`, over HTTPS with `tls`; 404 for anything else.
 * Undefined when addr is "0". `fields` go into the "serving" log line.
 */
export function serveRoutes(
  name: string,
  addr: string,
  routes: Record<string, Route>,
  log: Logger,
  tls?: { cert: string; key: string },
  fields: Record<string, unknown> = {},
): Endpoint | undefined {
  if (addr === "0") return undefined;
  const { hostname, port } = parseListenAddr(addr);
  let bound = addr;
  const server = Deno.serve({
    hostname,
    port,
    ...tls,
    onListen: (a) => {
      bound = `${a.hostname.includes(":") ? `[${a.hostname}]` : a.hostname}:${a.port}`;
      const scheme = tls ? "https" : "http";
      log.info(`serving ${name}`, {
        addr: bound,
        scheme,
        paths: Object.keys(routes).join(","),
        ...fields,
      });
    },
  }, (req) => {
    const route = routes[new URL(req.url).pathname];
    if (!route || (req.method !== "GET" && req.method !== "HEAD")) {
      return new Response("not found\n", { status: 404 });
    }
    return route(req);
  });
  return {
    get addr() {
      return bound;
    },
    shutdown: () => server.shutdown(),
  };
}

/** A plain-text answer. */
export function text(
  status: number,
  body: string,
  contentType = "text/plain; charset=utf-8",
): Response {
  return new Response(body, { status, headers: { "content-type": contentType } });
}
