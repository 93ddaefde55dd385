/**
 * Runs Debian's `redis-server` (installed by .ci/packages) on loopback, on a free port, as the
 * global rate limit engine's counter store in tests: no persistence, no daemon, its log in the
 * given directory; optionally with a password and over TLS only (with or without client
 * certificates). It can be stopped and started again on the same port (Redis down, Redis back).
 * Also a Sentinel watching such a server (`startSentinel`) and a three-master Redis Cluster
 * (`startRedisCluster`), the other two topologies the engine supports.
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
  /** Further redis-server arguments (`--cluster-enabled yes`, ...). */
  extraArgs?: readonly string[];
  /** The port; default a free one. */
  port?: number;
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
  /** One command (after AUTH when it has a password); the raw RESP reply. */
  command(args: string[]): Promise<string>;
  /** The addresses (`ip:port`) of the clients connected now (CLIENT LIST). */
  clients(): Promise<string[]>;
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
  const port = opts.port ?? freePort();
  const log = join(dir, `redis-${port}.log`);
  const target: Target = { port, password: opts.password, tls: opts.tls };
  const tls = opts.tls;
  const args = [
    ...["--bind", ...new Set(["127.0.0.1", ...opts.alsoBind ?? []])],
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
    ...opts.extraArgs ?? [],
  ];
  return await supervise({
    port,
    log,
    target,
    args,
    what: "redis-server",
    ready: () => redisPing(target),
    keys: async (pattern = "*") => {
      // Redis's own SCAN: cursor 0, one large COUNT; the test servers hold few keys.
      const reply = await redisCommand(target, ["SCAN", "0", "MATCH", pattern, "COUNT", "100000"]);
      return bulkStrings(reply).slice(1).sort();
    },
  });
}

/** What {@link supervise} runs: a redis-server process and how to tell it is up. */
interface Supervised {
  port: number;
  log: string;
  target: Target;
  args: string[];
  /** Names it in errors. */
  what: string;
  ready: () => Promise<boolean>;
  keys: (pattern?: string) => Promise<string[]>;
}

/** Starts `o.args` under redis-server and keeps it stoppable and startable; resolves once ready. */
async function supervise(o: Supervised): Promise<RedisServer> {
  let child: Child | null = null;
  const start = async () => {
    try {
      child = spawnLogged("redis-server", o.args, o.log, {});
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) throw new Error(NEED_REDIS);
      throw e;
    }
    const deadline = Date.now() + 10_000;
    while (!await o.ready()) {
      if (child.exited() || Date.now() > deadline) {
        throw new Error(
          `${o.what} on ${o.port} did not start; ${o.log}:\n${await tailFile(o.log)}`,
        );
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
    addr: `127.0.0.1:${o.port}`,
    port: o.port,
    log: o.log,
    running: () => child !== null && !child.exited(),
    stop,
    start,
    keys: o.keys,
    command: (args) => redisCommand(o.target, args),
    clients: async () => clientAddrs(await redisCommand(o.target, ["CLIENT", "LIST"])),
    close: stop,
  };
}

/** The `addr=` of each line of a CLIENT LIST reply. */
function clientAddrs(reply: string): string[] {
  return [...reply.matchAll(/\baddr=(\S+)/g)].map((m) => m[1]).sort();
}

/** Options of {@link startSentinel}. */
export interface SentinelOptions {
  /** The master the Sentinel watches, as the engine will be told of it. */
  master: { name: string; host: string; port: number; password?: string };
  /** Addresses to listen on besides 127.0.0.1. */
  alsoBind?: readonly string[];
}

/**
 * Starts a Redis Sentinel (redis-server in sentinel mode, quorum 1) watching `master`, on a free
 * port; resolves once it names the master's address. Its configuration file (which Sentinel
 * rewrites) and log are in `dir`.
 */
export async function startSentinel(dir: string, opts: SentinelOptions): Promise<RedisServer> {
  const port = freePort();
  const conf = join(dir, `sentinel-${port}.conf`);
  const m = opts.master;
  await Deno.writeTextFile(
    conf,
    [
      `port ${port}`,
      `bind 127.0.0.1 ${(opts.alsoBind ?? []).join(" ")}`,
      `dir ${dir}`,
      `sentinel monitor ${m.name} ${m.host} ${m.port} 1`,
      ...m.password === undefined ? [] : [`sentinel auth-pass ${m.name} ${m.password}`],
      `sentinel down-after-milliseconds ${m.name} 5000`,
      "",
    ].join("\n"),
  );
  const log = join(dir, `sentinel-${port}.log`);
  const target: Target = { port };
  return await supervise({
    port,
    log,
    target,
    args: [conf, "--sentinel"],
    what: "sentinel",
    ready: async () => {
      const reply = await redisCommand(target, ["SENTINEL", "get-master-addr-by-name", m.name])
        .catch(() => "");
      return bulkStrings(reply).join(":") === `${m.host}:${m.port}`;
    },
    keys: () => Promise.resolve([]),
  });
}

/** A Redis Cluster of three masters (no replicas). */
export interface RedisCluster {
  /** Its nodes, each a {@link RedisServer}. */
  nodes: RedisServer[];
  /** Stops every node. */
  close(): Promise<void>;
}

/** True when `port` can be bound on 127.0.0.1 now. */
function canBind(port: number): boolean {
  try {
    Deno.listen({ hostname: "127.0.0.1", port }).close();
    return true;
  } catch {
    return false;
  }
}

/**
 * A free port for a cluster node: Redis also listens on port + 10000 (the cluster bus), so both
 * must be free and the bus within range; drawn below the ephemeral range.
 */
function clusterPort(taken: readonly number[]): number {
  for (let i = 0; i < 200; i++) {
    const p = 20000 + Math.floor(Math.random() * 10000);
    if (!taken.includes(p) && canBind(p) && canBind(p + 10000)) return p;
  }
  throw new Error("no free port pair (p, p + 10000) for a Redis Cluster node");
}

/**
 * Starts three redis-servers in cluster mode announcing `announceIp` (where the engines reach
 * them) and joins them into one cluster with `redis-cli --cluster create` (slots split three
 * ways, no replicas); resolves once CLUSTER INFO says `cluster_state:ok`.
 */
export async function startRedisCluster(
  dir: string,
  opts: { announceIp: string; password?: string },
): Promise<RedisCluster> {
  const nodes: RedisServer[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const nodeDir = join(dir, `cluster-${i}`);
      // A cluster of its own: no node may remember one made here before (its nodes.conf).
      await Deno.remove(nodeDir, { recursive: true }).catch(() => {});
      await Deno.mkdir(nodeDir, { recursive: true });
      nodes.push(
        await startRedis(nodeDir, {
          port: clusterPort(nodes.map((n) => n.port)),
          password: opts.password,
          alsoBind: [opts.announceIp],
          extraArgs: [
            ...["--cluster-enabled", "yes", "--cluster-config-file", join(nodeDir, "nodes.conf")],
            ...["--cluster-announce-ip", opts.announceIp],
            ...opts.password === undefined ? [] : ["--masterauth", opts.password],
          ],
        }),
      );
    }
    const create = await new Deno.Command("redis-cli", {
      args: [
        ...opts.password === undefined ? [] : ["-a", opts.password, "--no-auth-warning"],
        "--cluster",
        "create",
        ...nodes.map((n) => `${opts.announceIp}:${n.port}`),
        "--cluster-replicas",
        "0",
        "--cluster-yes",
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!create.success) {
      const dec = new TextDecoder();
      throw new Error(
        `redis-cli --cluster create failed: ${dec.decode(create.stdout)}${
          dec.decode(create.stderr)
        }`,
      );
    }
    const deadline = Date.now() + 20_000;
    while (
      !(await Promise.all(nodes.map((n) => n.command(["CLUSTER", "INFO"]))))
        .every((r) => r.includes("cluster_state:ok"))
    ) {
      if (Date.now() > deadline) {
        throw new Error("the Redis Cluster never reached cluster_state:ok");
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  } catch (e) {
    for (const n of nodes) await n.close();
    throw e;
  }
  return {
    nodes,
    close: async () => {
      for (const n of nodes) await n.close();
    },
  };
}
