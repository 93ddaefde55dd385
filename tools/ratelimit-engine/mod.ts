/**
 * Runs the global rate limit engine (envoyproxy/ratelimit, built by ./build.ts) on loopback, with
 * its configuration from a watched directory (CONFIG_TYPE=FILE) or from an xDS management server
 * (CONFIG_TYPE=GRPC_XDS_SOTW, here the `ratelimit-test-xds` harness), and asks it what Envoy's
 * rate limit filter asks through the `ratelimit-test-client` harness. docs/global-engine.md.
 *
 * @example
 * ```ts
 * const redis = await startRedis(dir);
 * const config = await FileConfig.create(dir, [domain]);
 * const engine = await startEngine({ name: "a", dir, redis: redis.addr, config: config.source() });
 * const client = startTestClient(await ensureRatelimitEngine());
 * const answer = await client.ask(engine.grpc, { domain: "d", descriptors: [...] });
 * ```
 *
 * @module
 */
import { join } from "node:path";
import { freePorts } from "../processes.ts";
import { tailFile } from "../files.ts";
import { ensureRatelimitEngine, type RatelimitEngineBinaries } from "./build.ts";
import { type Child, spawnLogged } from "./spawn.ts";
import { parseRlconfig } from "../../src/api/engine_status.ts";

export { ensureRatelimitEngine, type RatelimitEngineBinaries } from "./build.ts";
export { type RedisOptions, type RedisServer, type RedisTls, startRedis } from "./redis.ts";

/** The engine's units (ratelimit.config.ratelimit.v3.RateLimitUnit). */
export type EngineUnit = "SECOND" | "MINUTE" | "HOUR" | "DAY" | "WEEK" | "MONTH" | "YEAR";

/** One descriptor of a domain's configuration (RateLimitDescriptor, protobuf JSON names). */
export interface EngineDescriptor {
  key: string;
  /** Absent: every value of `key` has its own counter. */
  value?: string;
  rateLimit?: { unit: EngineUnit; requestsPerUnit: number; unlimited?: boolean; name?: string };
  descriptors?: EngineDescriptor[];
  shadowMode?: boolean;
}

/** One domain's configuration: the xDS resource RateLimitConfig in protobuf JSON form. */
export interface EngineDomain {
  /** The resource name (the file name in file mode); defaults to the domain. */
  name?: string;
  domain: string;
  descriptors: EngineDescriptor[];
}

/** The engine's configuration file for a domain: YAML (written as JSON, which YAML reads). */
export function domainYaml(d: EngineDomain): string {
  const desc = (x: EngineDescriptor): Record<string, unknown> => ({
    key: x.key,
    ...x.value === undefined ? {} : { value: x.value },
    ...x.rateLimit === undefined ? {} : {
      rate_limit: {
        unit: x.rateLimit.unit,
        requests_per_unit: x.rateLimit.requestsPerUnit,
        ...x.rateLimit.unlimited ? { unlimited: true } : {},
        ...x.rateLimit.name ? { name: x.rateLimit.name } : {},
      },
    },
    ...x.descriptors?.length ? { descriptors: x.descriptors.map(desc) } : {},
    ...x.shadowMode ? { shadow_mode: true } : {},
  });
  return JSON.stringify({ domain: d.domain, descriptors: d.descriptors.map(desc) }, null, 2) + "\n";
}

/** Where an engine reads its configuration: the environment that says so. */
export interface ConfigSource {
  env: Record<string, string>;
}

const RUNTIME_SUBDIRECTORY = "ratelimit";
const RUNTIME_APPDIRECTORY = "config";

/**
 * The engine's file configuration as goruntime's symlink refresher expects it (the engine's
 * defaults RUNTIME_WATCH_ROOT=true): `<dir>/current` is a symlink to a version directory holding
 * `ratelimit/config/<name>.yaml`; an edit writes a new version directory and swaps the symlink
 * atomically (rename over it), which the engine's watch of `<dir>` sees.
 */
export class FileConfig {
  #version = 0;
  private constructor(readonly dir: string) {}

  /** The symlink the engine's RUNTIME_ROOT names. */
  get root(): string {
    return join(this.dir, "current");
  }

  /** A configuration directory under `parent` holding `domains`. */
  static async create(parent: string, domains: readonly EngineDomain[]): Promise<FileConfig> {
    const c = new FileConfig(join(parent, "runtime"));
    await Deno.mkdir(c.dir, { recursive: true });
    await c.write(domains);
    return c;
  }

  /** Writes `domains` as a new version and swaps `current` to it; returns its directory. */
  async write(domains: readonly EngineDomain[]): Promise<string> {
    const version = join(this.dir, `v${++this.#version}`);
    const files = join(version, RUNTIME_SUBDIRECTORY, RUNTIME_APPDIRECTORY);
    await Deno.mkdir(files, { recursive: true });
    for (const d of domains) {
      const file = (d.name ?? d.domain).replaceAll("/", "_");
      await Deno.writeTextFile(join(files, `${file}.yaml`), domainYaml(d));
    }
    const tmp = join(this.dir, `.current-${this.#version}`);
    await Deno.symlink(version, tmp);
    await Deno.rename(tmp, this.root);
    return version;
  }

  /** The engine's settings for this directory. */
  source(): ConfigSource {
    return {
      env: {
        CONFIG_TYPE: "FILE",
        RUNTIME_ROOT: this.root,
        RUNTIME_SUBDIRECTORY,
        RUNTIME_APPDIRECTORY,
        RUNTIME_WATCH_ROOT: "true",
      },
    };
  }
}

/**
 * The settings of an engine that takes its configuration from the xDS server at `addr`; `backoff`
 * sets the wait before it dials again after its stream broke (the engine's defaults: 10 s, growing
 * to 60 s).
 */
export function xdsSource(
  addr: string,
  nodeId: string,
  backoff?: { initial: string; max: string },
): ConfigSource {
  return {
    env: {
      CONFIG_TYPE: "GRPC_XDS_SOTW",
      CONFIG_GRPC_XDS_SERVER_URL: addr,
      CONFIG_GRPC_XDS_NODE_ID: nodeId,
      ...backoff
        ? {
          XDS_CLIENT_BACKOFF_INITIAL_INTERVAL: backoff.initial,
          XDS_CLIENT_BACKOFF_MAX_INTERVAL: backoff.max,
        }
        : {},
    },
  };
}

/** A running engine on loopback. */
export interface Engine {
  name: string;
  /** Its gRPC address, host:port (envoy.service.ratelimit.v3.RateLimitService). */
  grpc: string;
  /** Its HTTP base URL (`/healthcheck`, `/json`). */
  http: string;
  /** Its debug base URL (`/rlconfig`, `/stats`). */
  debug: string;
  pid: number;
  log: string;
  /** The configuration it has loaded, as its debug endpoint `/rlconfig` prints it. */
  rlconfig(): Promise<string>;
  /** `/healthcheck`'s status code (0 when it does not answer). */
  health(): Promise<number>;
  /** True while the process runs. */
  running(): boolean;
  stop(): Promise<void>;
}

/** Options of {@link startEngine}. */
export interface EngineOptions {
  name: string;
  /** Directory for its log. */
  dir: string;
  /** Redis, host:port. */
  redis: string;
  config: ConfigSource;
  /** Further settings (the engine's environment variables), overriding the defaults here. */
  env?: Record<string, string>;
  /** How long to wait for `/healthcheck` (default 30 s). */
  timeoutMs?: number;
  /** Fixed HTTP (health) and debug ports, as an engine Pod has them; default free ports. */
  ports?: { http: number; debug: number };
  /** The loopback address it listens on (default 127.0.0.1), e.g. the one a kwok Pod's IP names. */
  host?: string;
  binaries?: RatelimitEngineBinaries;
}

/** `url`'s status and body, or status 0 when it does not answer. */
async function get(url: string): Promise<{ status: number; body: string }> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return { status: res.status, body: await res.text() };
  } catch {
    return { status: 0, body: "" };
  }
}

/**
 * Starts an engine on free loopback ports (gRPC, HTTP, debug), Redis over TCP, stats to no
 * statsd; resolves once `/healthcheck` answers 200, which the engine serves only after it has
 * loaded its first configuration and reached Redis.
 */
export async function startEngine(o: EngineOptions): Promise<Engine> {
  const bins = o.binaries ?? await ensureRatelimitEngine();
  const free = freePorts(3);
  const [grpcPort] = free;
  const httpPort = o.ports?.http ?? free[1];
  const debugPort = o.ports?.debug ?? free[2];
  const log = join(o.dir, `engine-${o.name}.log`);
  const host = o.host ?? "127.0.0.1";
  const env: Record<string, string> = {
    HOST: host,
    PORT: String(httpPort),
    GRPC_HOST: host,
    GRPC_PORT: String(grpcPort),
    DEBUG_HOST: host,
    DEBUG_PORT: String(debugPort),
    USE_STATSD: "false",
    LOG_LEVEL: "info",
    REDIS_SOCKET_TYPE: "tcp",
    REDIS_URL: o.redis,
    ...o.config.env,
    ...o.env,
  };
  const child: Child = spawnLogged(bins.engine, [], log, env);
  const http = `http://${host}:${httpPort}`;
  const debug = `http://${host}:${debugPort}`;
  const deadline = Date.now() + (o.timeoutMs ?? 30_000);
  while ((await get(`${http}/healthcheck`)).status !== 200) {
    if (child.exited() || Date.now() > deadline) {
      await child.stop();
      throw new Error(
        `engine ${o.name} ${child.exited() ? "exited" : "not healthy"}; ${log}:\n` +
          await tailFile(log),
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    name: o.name,
    grpc: `${host}:${grpcPort}`,
    http,
    debug,
    pid: child.pid,
    log,
    rlconfig: async () => (await get(`${debug}/rlconfig`)).body,
    health: async () => (await get(`${http}/healthcheck`)).status,
    running: () => !child.exited(),
    stop: () => child.stop(),
  };
}

/**
 * The lines of an engine's `/rlconfig` answer that belong to `domain`, as the operator reads them
 * (none when it has not loaded it); throws when the answer cannot be read.
 */
export function linesOfDomain(dump: string, domain: string): string[] {
  const read = parseRlconfig(dump);
  if (!read.ok) throw new Error(read.reason);
  return read.domains[domain] ?? [];
}

/** A RateLimitRequest in protobuf JSON form (envoy.service.ratelimit.v3). */
export interface RateLimitRequest {
  domain: string;
  descriptors: { entries: { key: string; value: string }[] }[];
  hitsAddend?: number;
}

/** A descriptor's status in an answer (RateLimitResponse.DescriptorStatus, JSON form). */
export interface DescriptorStatus {
  code: "UNKNOWN" | "OK" | "OVER_LIMIT";
  currentLimit: { requestsPerUnit: number; unit: EngineUnit; name: string } | null;
  limitRemaining: number;
  durationUntilReset: string | null;
}

/** One answer of the test client: the engine's response, or the gRPC error. */
export interface Answer {
  response?: { overallCode: "UNKNOWN" | "OK" | "OVER_LIMIT"; statuses: DescriptorStatus[] };
  error?: { code: string; message: string };
  ms: number;
}

/** The test client harness, one process answering calls in order. */
export interface TestClient {
  /** Asks the engine at `addr` (host:port); `timeoutMs` bounds the call (default 5 s). */
  ask(addr: string, request: RateLimitRequest, timeoutMs?: number): Promise<Answer>;
  stop(): Promise<void>;
}

/** Reads `stream` line by line, calling `onLine` for each; resolves at its end. */
async function eachLine(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<void> {
  let buf = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buf += chunk;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      onLine(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  }
}

/** A harness process fed lines on stdin, each stdout line handed to `onLine`. */
function lineProcess(bin: string, args: string[], onLine: (line: string) => void) {
  const child = new Deno.Command(bin, {
    args,
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const writer = child.stdin.getWriter();
  const enc = new TextEncoder();
  return {
    child,
    /** Writes `value` as one JSON line. */
    send: (value: unknown) => writer.write(enc.encode(JSON.stringify(value) + "\n")),
    close: () => writer.close().catch(() => {}),
    done: eachLine(child.stdout, onLine),
  };
}

/** Starts `ratelimit-test-client` in its stream mode (one JSON call a line). */
export function startTestClient(bins: RatelimitEngineBinaries): TestClient {
  const waiting: ((a: Answer) => void)[] = [];
  const p = lineProcess(
    bins.testClient,
    [],
    (line) => waiting.shift()?.(JSON.parse(line) as Answer),
  );
  return {
    ask: (addr, request, timeoutMs) =>
      new Promise<Answer>((resolve, reject) => {
        waiting.push(resolve);
        p.send({ addr, request, timeoutMs }).catch(reject);
      }),
    stop: async () => {
      await p.close();
      await p.child.status;
      await p.done;
    },
  };
}

/** One event of the xDS harness (ratelimit-test-xds's stdout). */
export interface XdsEvent {
  event: "listen" | "set" | "open" | "closed" | "request" | "response" | "ack" | "nack" | "error";
  at: number;
  addr?: string;
  stream?: number;
  node?: string;
  version?: string;
  error?: string;
  message?: string;
}

/** The xDS harness: a management server serving RateLimitConfig resources to every engine. */
export interface TestXds {
  /** Its gRPC address, host:port. */
  addr: string;
  /** Every event so far. */
  events: XdsEvent[];
  /** Serves `domains` as snapshot `version` to every engine; resolves once it is taken. */
  set(version: string, domains: readonly EngineDomain[]): Promise<void>;
  /** The first event (already seen or coming) that `match` accepts. */
  waitFor(match: (e: XdsEvent) => boolean, timeoutMs?: number): Promise<XdsEvent>;
  stop(): Promise<void>;
}

/** Starts `ratelimit-test-xds` on `listen` (default: a free loopback port); resolves once it listens. */
export async function startTestXds(
  bins: RatelimitEngineBinaries,
  listen = "127.0.0.1:0",
): Promise<TestXds> {
  const events: XdsEvent[] = [];
  const watchers: { match: (e: XdsEvent) => boolean; resolve: (e: XdsEvent) => void }[] = [];
  const p = lineProcess(bins.testXds, ["-listen", listen], (line) => {
    const e = JSON.parse(line) as XdsEvent;
    events.push(e);
    for (const w of [...watchers]) {
      if (w.match(e)) {
        watchers.splice(watchers.indexOf(w), 1);
        w.resolve(e);
      }
    }
  });
  const waitFor = (match: (e: XdsEvent) => boolean, timeoutMs = 10_000) => {
    const seen = events.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise<XdsEvent>((resolve, reject) => {
      const timer = setTimeout(() => {
        watchers.splice(watchers.findIndex((w) => w.resolve === ok), 1);
        reject(
          new Error(`no xDS event matched in ${timeoutMs} ms; events: ${JSON.stringify(events)}`),
        );
      }, timeoutMs);
      const ok = (e: XdsEvent) => {
        clearTimeout(timer);
        resolve(e);
      };
      watchers.push({ match, resolve: ok });
    });
  };
  const listening = await waitFor((e) => e.event === "listen");
  return {
    addr: listening.addr ?? "",
    events,
    set: async (version, domains) => {
      const configs = domains.map((d) => ({ ...d, name: d.name ?? d.domain }));
      const from = events.length;
      await p.send({ version, configs });
      const e = await waitFor((e) =>
        events.indexOf(e) >= from &&
        ((e.event === "set" && e.version === version) || e.event === "error")
      );
      if (e.event === "error") throw new Error(`ratelimit-test-xds: ${e.message}`);
    },
    waitFor,
    stop: async () => {
      try {
        p.child.kill("SIGTERM");
      } catch { /* already gone */ }
      await p.close();
      await p.child.status;
      await p.done;
    },
  };
}
