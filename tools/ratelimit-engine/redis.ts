/**
 * Runs Debian's `redis-server` (installed by .ci/packages) on loopback, on a free port, as the
 * global rate limit engine's counter store in tests: no persistence, no daemon, its log in the
 * given directory. It can be stopped and started again on the same port (Redis down, Redis back).
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

/** One RESP command over a fresh connection; returns the raw reply. */
export async function redisCommand(
  port: number,
  args: string[],
  timeoutMs = 2000,
): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const enc = new TextEncoder();
    const body = `*${args.length}\r\n` +
      args.map((a) => `$${enc.encode(a).length}\r\n${a}\r\n`).join("");
    await conn.write(enc.encode(body));
    const buf = new Uint8Array(1 << 16);
    const timer = setTimeout(() => conn.close(), timeoutMs);
    try {
      const n = await conn.read(buf);
      return n === null ? "" : new TextDecoder().decode(buf.subarray(0, n));
    } finally {
      clearTimeout(timer);
    }
  } finally {
    try {
      conn.close();
    } catch { /* closed by the timer */ }
  }
}

/** True when a Redis on `port` answers PING with PONG. */
export async function redisPing(port: number): Promise<boolean> {
  try {
    return (await redisCommand(port, ["PING"], 1000)).startsWith("+PONG");
  } catch {
    return false;
  }
}

/** Reads the bulk strings of a RESP reply (enough for SCAN's and KEYS's arrays). */
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
export async function startRedis(dir: string): Promise<RedisServer> {
  const port = freePort();
  const log = join(dir, `redis-${port}.log`);
  const args = [
    "--bind",
    "127.0.0.1",
    "--port",
    String(port),
    "--save",
    "",
    "--appendonly",
    "no",
    "--dir",
    dir,
    "--daemonize",
    "no",
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
    while (!await redisPing(port)) {
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
      const reply = await redisCommand(port, ["SCAN", "0", "MATCH", pattern, "COUNT", "100000"]);
      return bulkStrings(reply).slice(1).sort();
    },
    close: stop,
  };
}
