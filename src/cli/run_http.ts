/** The operator's HTTP endpoints: /healthz and /readyz on the probe address, /metrics on its own. */
import type { Logger } from "../runtime/log.ts";

/** A route's answer. */
export type Route = () => Response;

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

/** Serves `routes` (path to answer) on `addr`; 404 for anything else. Undefined when addr is "0". */
export function serveRoutes(
  name: string,
  addr: string,
  routes: Record<string, Route>,
  log: Logger,
): Endpoint | undefined {
  if (addr === "0") return undefined;
  const { hostname, port } = parseListenAddr(addr);
  let bound = addr;
  const server = Deno.serve({
    hostname,
    port,
    onListen: (a) => {
      bound = `${a.hostname.includes(":") ? `[${a.hostname}]` : a.hostname}:${a.port}`;
      log.info(`serving ${name}`, { addr: bound, paths: Object.keys(routes).join(",") });
    },
  }, (req) => {
    const route = routes[new URL(req.url).pathname];
    if (!route || (req.method !== "GET" && req.method !== "HEAD")) {
      return new Response("not found\n", { status: 404 });
    }
    return route();
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
