/**
 * Runs Debian's `redis-server` (installed by .ci/packages) on loopback, on a free port, as the
 * global rate limit engine's counter store in tests: no persistence, no daemon, its log in the
 * given directory; optionally with a password and over TLS only (with or without client
 * certificates). It can be stopped and started again on the same port (Redis down, Redis back).
 *
 * @example
 * ```ts
 * const redis = await startRedis(dir);
 * try {
 *   await redis.stop(); // Redis down
 *   await redis.start(); // back, empty
 * } finally {
 *   await redis.close();
 * }
 * ```
 *
 * @module
 */
import { join } from "node:path";
import { freePort } from "../processes.ts";
import { tailFile } from "../files.ts";
import { type Child, spawnLogged } from "./spawn.ts";

/** What to install when `redis-server` is missing. */
export const NEED_REDIS =
  'no "redis-server" on PATH: install Debian\'s redis-server (bash .ci/packages does)';

/** Redis over TLS: its serving certificate and key, and the CA clients check it with (PEM files). */
export interface RedisTls {
  cert: string;
  key: string;
  ca: string;
  /** A client certificate and key: Redis then requires one signed by `ca` (mutual TLS). */
  client?: { cert: string; key: string };
}

/** Options of {@link startRedis}. */
export interface RedisOptions {
  /** `requirepass`: the default user's password. */
  password?: string;
  /** Serve TLS only (no plaintext port). */
  tls?: RedisTls;
  /**
   * Addresses to listen on besides 127.0.0.1: the real node's bridge address (tools/cluster), which
   * its Pods reach.
   */
  alsoBind?: readonly string[];
}

/** A redis-server on 127.0.0.1. */
export interface RedisServer {
  /** `127.0.0.1:PORT`, the engine's REDIS_URL with REDIS_SOCKET_TYPE=tcp. */
  addr: string;
  port: number;
  log: string;
  /** True while the server process runs. */
  running(): boolean;
  /** Stops the server (SIGTERM, then SIGKILL); its counters are gone with it. */
  stop(): Promise<void>;
  /** Starts it again on the same port; resolves once it answers PING. */
  start(): Promise<void>;
  /** The keys matching `pattern` (SCAN, so safe on a live server). */
  keys(pattern?: string): Promise<string[]>;
  /** Stops it for good. */
  close(): Promise<void>;
}

/** How to reach a Redis: its port, and its password and TLS settings if any. */
interface Target {
  port: number;
  password?: string;
  tls?: RedisTls;
}

async function connect(t: Target): Promise<Deno.Conn> {
  if (!t.tls) return await Deno.connect({ hostname: "127.0.0.1", port: t.port });
  const read = (f: string) => Deno.readTextFile(f);
  return await Deno.connectTls({
    hostname: "127.0.0.1",
    port: t.port,
    caCerts: [await read(t.tls.ca)],
    ...t.tls.client
      ? { cert: await read(t.tls.client.cert), key: await read(t.tls.client.key) }
      : {},
  });
}

/** Sends one RESP command on `conn` and returns what one read gets (a small reply whole). */
async function roundTrip(conn: Deno.Conn, args: readonly string[]): Promise<string> {
  const enc = new TextEncoder();
  const body = `*${args.length}\r\n` +
    args.map((a) => `$${enc.encode(a).length}\r\n${a}\r\n`).join("");
  await conn.write(enc.encode(body));
  const buf = new Uint8Array(1 << 16);
  const n = await conn.read(buf);
  return n === null ? "" : new TextDecoder().decode(buf.subarray(0, n));
}

/**
 * One command over a fresh connection (after AUTH when the target has a password); returns the
 * raw reply. The connection is closed after `timeoutMs` at the latest.
 */
async function redisCommand(t: Target, args: string[], timeoutMs = 2000): Promise<string> {
  const conn = await connect(t);
  const timer = setTimeout(() => conn.close(), timeoutMs);
  try {
    if (t.password !== undefined) {
      const auth = await roundTrip(conn, ["AUTH", t.password]);
      if (!auth.startsWith("+OK")) return auth;
    }
    return await roundTrip(conn, args);
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch { /* closed by the timer */ }
  }
}

/** True when the Redis answers PING with PONG. */
async function redisPing(t: Target): Promise<boolean> {
  try {
    return (await redisCommand(t, ["PING"], 1000)).startsWith("+PONG");
  } catch {
    return false;
  }
}

/** Reads the bulk strings of a RESP reply (enough for SCAN's arrays). */
function bulkStrings(reply: string): string[] {
  const out: string[] = [];
  const lines = reply.split("\r\n");
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].startsWith("$") && lines[i] !== "$-1") out.push(lines[++i]);
  }
  return out;
}

/**
 * Starts a redis-server on a free loopback port with its log in `dir`; resolves once it answers
 * PING. Throws {@link NEED_REDIS} when there is no redis-server.
 */
export async function startRedis(dir: string, opts: RedisOptions = {}): Promise<RedisServer> {
  const port = freePort();
  const log = join(dir, `redis-${port}.log`);
  const target: Target = { port, password: opts.password, tls: opts.tls };
  const tls = opts.tls;
  const args = [
    ...["--bind", "127.0.0.1", ...opts.alsoBind ?? []],
    ...["--save", "", "--appendonly", "no", "--dir", dir],
    ...["--daemonize", "no"],
    ...tls
      ? [
        ...["--port", "0", "--tls-port", String(port), "--tls-cert-file", tls.cert],
        ...["--tls-key-file", tls.key, "--tls-ca-cert-file", tls.ca],
        ...["--tls-auth-clients", tls.client ? "yes" : "no"],
      ]
      : ["--port", String(port)],
    ...opts.password === undefined ? [] : ["--requirepass", opts.password],
  ];
  let child: Child | null = null;
  const start = async () => {
    try {
      child = spawnLogged("redis-server", args, log, {});
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) throw new Error(NEED_REDIS);
      throw e;
    }
    const deadline = Date.now() + 10_000;
    while (!await redisPing(target)) {
      if (child.exited() || Date.now() > deadline) {
        throw new Error(`redis-server on ${port} did not start; ${log}:\n${await tailFile(log)}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const stop = async () => {
    const c = child;
    child = null;
    if (c) await c.stop();
  };
  await start();
  return {
    addr: `127.0.0.1:${port}`,
    port,
    log,
    running: () => child !== null && !child.exited(),
    stop,
    start,
    keys: async (pattern = "*") => {
      // Redis's own SCAN: cursor 0, one large COUNT; the test servers hold few keys.
      const reply = await redisCommand(target, ["SCAN", "0", "MATCH", pattern, "COUNT", "100000"]);
      return bulkStrings(reply).slice(1).sort();
    },
    close: stop,
  };
}
