/**
 * The global rate limit engine, envoyproxy/ratelimit built here (tools/ratelimit-engine), with
 * Debian's redis-server, on loopback: two engine processes sharing one Redis, asked what Envoy's
 * `envoy.filters.http.ratelimit` asks (ShouldRateLimit, through the ratelimit-test-client harness),
 * the calls alternating between the two engines.
 *
 * - exactly `requests` admitted per window across both engines, then OVER_LIMIT; the counter's
 *   Redis key is `<domain>_<key>_<value>_<window start>`, the window start aligned to the unit;
 *   the next window admits again; two values of a per-client key count apart; a domain the
 *   engine has not loaded is answered OK with no limit;
 * - an edit of the configuration reaches both running engines without a restart, from a watched
 *   directory (symlink swap) and from an xDS management server (ratelimit-test-xds): the time
 *   from the edit to both engines answering with the new limit is measured and must be under
 *   10 s; a configuration the engine refuses leaves it with the last good one; with the xDS
 *   server stopped the engines keep enforcing, and they load its snapshot when it is back (the
 *   time to that, with the engine's default backoff and with 1 s, is measured);
 * - an engine killed: the other answers on the same counters;
 * - Redis stopped: the engines answer no call with OK (a gRPC error, then no answer within the
 *   caller's deadline), so Envoy's failure mode decides; `/healthcheck` follows Redis only with
 *   REDIS_HEALTH_CHECK_ACTIVE_CONNECTION=true; Redis back: enforcing again;
 * - the engine's Prometheus metrics per domain and key, Redis connections and config loads; a dot
 *   in a domain splits it across labels (the default mapping), a slash does not;
 * - Redis with a password (one with a colon needs `default:` before it) and TLS-only with client
 *   certificates: the settings that reach it, and a wrong one ends the engine's start.
 *
 * docs/global-engine.md records what these show. Needs Go (the engine is built once into
 * .cache/ratelimit-engine) and redis-server (.ci/packages).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  type Answer,
  type ConfigSource,
  type Engine,
  type EngineDomain,
  ensureRatelimitEngine,
  FileConfig,
  type RatelimitEngineBinaries,
  type RateLimitRequest,
  type RedisServer,
  startEngine,
  startRedis,
  startTestClient,
  startTestXds,
  type TestClient,
  xdsSource,
} from "../../tools/ratelimit-engine/mod.ts";
import { freePort } from "../../tools/processes.ts";
import { generatePki, issueCert } from "../../tools/cluster/pki.ts";

const DOMAIN = "demo.api";
/** A per-client limit per second (quick windows) and a per-tenant one per minute (alignment). */
function domain(perSecond: number, perMinute = 1000): EngineDomain {
  return {
    domain: DOMAIN,
    descriptors: [
      { key: "client", rateLimit: { unit: "SECOND", requestsPerUnit: perSecond } },
      { key: "tenant", rateLimit: { unit: "MINUTE", requestsPerUnit: perMinute } },
    ],
  };
}

function request(key: string, value: string): RateLimitRequest {
  return { domain: DOMAIN, descriptors: [{ entries: [{ key, value }] }] };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Waits until just after a second starts, so that a short burst stays in one window. */
async function startOfSecond(): Promise<void> {
  await sleep(1000 - (Date.now() % 1000) + 5);
}

function code(a: Answer): string {
  return a.response?.overallCode ?? `error ${a.error?.code}`;
}

/** `count` calls alternating between `engines`; retried when they straddle a window boundary. */
async function burst(
  client: TestClient,
  engines: readonly Engine[],
  req: () => RateLimitRequest,
  count: number,
): Promise<{ answers: Answer[]; window: number; req: RateLimitRequest }> {
  for (let attempt = 0; attempt < 3; attempt++) {
    await startOfSecond();
    const r = req();
    const before = nowSeconds();
    const answers: Answer[] = [];
    for (let i = 0; i < count; i++) {
      answers.push(await client.ask(engines[i % engines.length].grpc, r));
    }
    if (nowSeconds() === before) return { answers, window: before, req: r };
  }
  throw new Error("three bursts straddled a second boundary: the machine is too slow for them");
}

interface Fixture {
  dir: string;
  bins: RatelimitEngineBinaries;
  redis: RedisServer;
  client: TestClient;
  engines: Engine[];
}

/** Redis, a test client and a temp dir; `fn` starts the engines (stopped afterwards). */
async function withFixture(fn: (f: Fixture) => Promise<void>): Promise<void> {
  const bins = await ensureRatelimitEngine((m) => console.error(`[build] ${m}`));
  const dir = await Deno.makeTempDir({ prefix: "global-engine-" });
  const redis = await startRedis(dir);
  const client = startTestClient(bins);
  const f: Fixture = { dir, bins, redis, client, engines: [] };
  try {
    await fn(f);
  } finally {
    await client.stop();
    for (const e of f.engines) await e.stop();
    await redis.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** The engine's own settings for tests: no stats sink (it would log every call). */
const QUIET = { DISABLE_STATS: "true" };

/** Starts engines "a" and "b" on the fixture's Redis, each configured by `config(name)`. */
async function startEngines(f: Fixture, config: (name: string) => ConfigSource): Promise<void> {
  for (const name of ["a", "b"]) {
    f.engines.push(
      await startEngine({
        name,
        dir: f.dir,
        redis: f.redis.addr,
        config: config(name),
        env: QUIET,
        binaries: f.bins,
      }),
    );
  }
}

async function fileEngines(f: Fixture, perSecond: number): Promise<FileConfig> {
  const config = await FileConfig.create(f.dir, [domain(perSecond)]);
  await startEngines(f, () => config.source());
  return config;
}

/** The limit each engine answers with for a fresh client value (a count of 1, not near it). */
async function limitsAnswered(f: Fixture, probe: number): Promise<(number | null)[]> {
  const out: (number | null)[] = [];
  for (const e of f.engines) {
    const a = await f.client.ask(e.grpc, request("client", `probe-${probe}-${e.name}`));
    out.push(a.response?.statuses[0].currentLimit?.requestsPerUnit ?? null);
  }
  return out;
}

/** Milliseconds from `edit` until every engine answers with `limit`; fails after 10 s. */
async function timeToLimit(
  f: Fixture,
  edit: () => Promise<void>,
  limit: number,
  probe: { n: number },
): Promise<number> {
  const t0 = performance.now();
  await edit();
  while (performance.now() - t0 < 10_000) {
    if ((await limitsAnswered(f, probe.n++)).every((l) => l === limit)) {
      return performance.now() - t0;
    }
    await sleep(5);
  }
  throw new Error(`the engines did not answer with ${limit} within 10 s of the edit`);
}

function summary(ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)].toFixed(1);
  return `n=${s.length} p50=${q(0.5)} ms p99=${q(0.99)} ms max=${s[s.length - 1].toFixed(1)} ms`;
}

Deno.test("two engines on one Redis: exactly N per window across both, windows roll, clients count apart", async () => {
  await withFixture(async (f) => {
    const N = 5;
    await fileEngines(f, N);
    let n = 0;
    const { answers, window, req } = await burst(
      f.client,
      f.engines,
      () => request("client", `alice-${n++}`),
      2 * N + 2,
    );
    const alice = req.descriptors[0].entries[0].value;
    assert.deepEqual(
      answers.map(code),
      [...Array(N).fill("OK"), ...Array(N + 2).fill("OVER_LIMIT")],
      `calls alternating between two engines: ${JSON.stringify(answers.map(code))}`,
    );
    // Remaining counts down across the two engines: one counter.
    assert.deepEqual(
      answers.slice(0, N).map((a) => a.response?.statuses[0].limitRemaining),
      [4, 3, 2, 1, 0],
    );
    // The counter: one key per (domain, descriptor, window start aligned to the unit).
    const keys = await f.redis.keys(`${DOMAIN}_client_${alice}_*`);
    assert.deepEqual(keys, [`${DOMAIN}_client_${alice}_${window}`]);

    // Another client in the same window counts apart.
    const bob = await f.client.ask(f.engines[1].grpc, request("client", `bob-${alice}`));
    if (nowSeconds() === window) {
      assert.equal(code(bob), "OK");
      assert.equal(bob.response?.statuses[0].limitRemaining, N - 1);
      assert.equal(
        code(await f.client.ask(f.engines[0].grpc, req)),
        "OVER_LIMIT",
        "alice is still over",
      );
    }

    // The next window admits alice again, N more.
    while (nowSeconds() === window) await sleep(20);
    const next = await f.client.ask(f.engines[0].grpc, req);
    assert.equal(code(next), "OK", "a new window admits again");
    assert.equal(next.response?.statuses[0].limitRemaining, N - 1);

    // The test client's one-call form (tools/ratelimit-engine/README.md), from the command line.
    const once = await new Deno.Command(f.bins.testClient, {
      args: ["-addr", f.engines[0].grpc, "-domain", DOMAIN, "client=carol"],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(once.code, 0, new TextDecoder().decode(once.stderr));
    const carol = JSON.parse(new TextDecoder().decode(once.stdout)) as Answer;
    assert.equal(carol.response?.statuses[0].limitRemaining, N - 1);

    // A domain the engine has not loaded: OK, no limit, nothing counted (Envoy admits).
    const unknown = await f.client.ask(f.engines[0].grpc, {
      domain: "not.loaded",
      descriptors: [{ entries: [{ key: "client", value: "alice" }] }],
    });
    assert.equal(code(unknown), "OK");
    assert.equal(unknown.response?.statuses[0].currentLimit, null);
    assert.deepEqual(await f.redis.keys("not.loaded_*"), []);

    // A per-minute limit's window starts at a multiple of 60 s (Unix time).
    const t = nowSeconds();
    const tenant = await f.client.ask(f.engines[1].grpc, request("tenant", "acme"));
    assert.equal(code(tenant), "OK");
    const minuteKeys = await f.redis.keys(`${DOMAIN}_tenant_acme_*`);
    assert.equal(minuteKeys.length, 1);
    const start = Number(minuteKeys[0].split("_").at(-1));
    assert.equal(start % 60, 0);
    assert.ok(start <= t && t - start < 61, `window start ${start}, now ${t}`);
  });
});

Deno.test("an engine killed: the other serves on the same counters", async () => {
  await withFixture(async (f) => {
    // A per-minute limit of 4, away from a minute's end so that the calls share one window.
    const config = await FileConfig.create(f.dir, [domain(100, 4)]);
    await startEngines(f, () => config.source());
    const [a, b] = f.engines;
    while (Date.now() / 1000 % 60 > 55) await sleep(200);
    const req = request("tenant", "killed");
    const remaining = async (e: Engine) => {
      const answer = await f.client.ask(e.grpc, req);
      return answer.response?.overallCode === "OK"
        ? answer.response.statuses[0].limitRemaining
        : code(answer);
    };
    const seen = [await remaining(a), await remaining(b)];
    Deno.kill(a.pid, "SIGKILL");
    await a.stop();
    assert.ok(!a.running());
    seen.push(await remaining(b), await remaining(b), await remaining(b));
    assert.deepEqual(seen, [3, 2, 1, 0, "OVER_LIMIT"]);
  });
});

Deno.test("a config edit reaches both running engines without a restart: watched directory", async () => {
  await withFixture(async (f) => {
    const config = await fileEngines(f, 5);
    const pids = f.engines.map((e) => e.pid);
    const probe = { n: 0 };
    const times: number[] = [];
    for (let i = 0; i < 10; i++) {
      const limit = 6 + i;
      times.push(
        await timeToLimit(f, async () => void await config.write([domain(limit)]), limit, probe),
      );
    }
    console.log(`file (symlink swap) edit -> both engines answer: ${summary(times)}`);
    assert.deepEqual(f.engines.map((e) => e.pid), pids);
    assert.ok(f.engines.every((e) => e.running()), "no engine restarted");
    for (const e of f.engines) {
      assert.match(await e.rlconfig(), /demo\.api\.client: unit=SECOND requests_per_unit=15,/);
    }
    // The new limit is enforced: exactly 15 across both.
    const { answers } = await burst(
      f.client,
      f.engines,
      () => request("client", `c-${probe.n++}`),
      17,
    );
    assert.equal(answers.filter((a) => code(a) === "OK").length, 15);

    // A configuration the engine refuses (an unknown unit) leaves it with the last good one.
    const bad = domain(99);
    bad.descriptors[0].rateLimit = { unit: "FORTNIGHT" as "DAY", requestsPerUnit: 99 };
    await config.write([bad]);
    await sleep(500);
    for (const e of f.engines) {
      assert.match(await e.rlconfig(), /requests_per_unit=15,/);
      const log = await Deno.readTextFile(e.log);
      assert.match(log, /Error loading new configuration: .*invalid rate limit unit 'FORTNIGHT'/);
    }
    assert.deepEqual(await limitsAnswered(f, probe.n++), [15, 15]);
  });
});

Deno.test("a config edit reaches both running engines without a restart: xDS (GRPC_XDS_SOTW)", async () => {
  await withFixture(async (f) => {
    const xds = await startTestXds(f.bins);
    try {
      await xds.set("1", [domain(5)]);
      await startEngines(f, (name) => xdsSource(xds.addr, `engine-${name}`));
      const pids = f.engines.map((e) => e.pid);
      const probe = { n: 0 };
      const times: number[] = [];
      const acks: number[] = [];
      for (let i = 0; i < 10; i++) {
        const limit = 6 + i;
        const version = String(2 + i);
        let setAt = 0;
        times.push(
          await timeToLimit(
            f,
            async () => {
              setAt = Date.now();
              await xds.set(version, [domain(limit)]);
            },
            limit,
            probe,
          ),
        );
        for (const node of ["engine-a", "engine-b"]) {
          const ack = await xds.waitFor((e) =>
            e.event === "ack" && e.node === node && e.version === version
          );
          acks.push(ack.at - setAt);
        }
      }
      console.log(
        `xDS set -> both engines answer: ${summary(times)}; set -> ACK: ${summary(acks)}`,
      );
      assert.deepEqual(f.engines.map((e) => e.pid), pids);
      assert.ok(f.engines.every((e) => e.running()), "no engine restarted");

      // A configuration the engine refuses: a NACK naming the error, the last good one kept.
      const bad = domain(99);
      bad.descriptors.push({ key: "client", rateLimit: { unit: "SECOND", requestsPerUnit: 1 } });
      await xds.set("bad", [bad]);
      for (const node of ["engine-a", "engine-b"]) {
        const nack = await xds.waitFor((e) => e.event === "nack" && e.node === node);
        assert.match(nack.error ?? "", /duplicate descriptor composite key 'demo\.api\.client'/);
      }
      assert.deepEqual(await limitsAnswered(f, probe.n++), [15, 15]);
      for (const e of f.engines) assert.match(await e.rlconfig(), /requests_per_unit=15,/);
    } finally {
      await xds.stop();
    }
  });
});

Deno.test("the xDS server restarted: the engines keep enforcing, then reconnect and load its snapshot", async () => {
  await withFixture(async (f) => {
    const port = freePort();
    const first = await startTestXds(f.bins, `127.0.0.1:${port}`);
    await first.set("1", [domain(5)]);
    // Engine "a" with the engine's default backoff (10 s, growing to 60 s), "b" with 1 s to 5 s.
    await startEngines(f, (name) =>
      xdsSource(
        first.addr,
        `engine-${name}`,
        name === "b" ? { initial: "1s", max: "5s" } : undefined,
      ));
    await first.stop();
    const stoppedAt = performance.now();
    // Without its server, each engine keeps its configuration and enforces it.
    let n = 0;
    const { answers } = await burst(f.client, f.engines, () => request("client", `x-${n++}`), 7);
    assert.deepEqual(answers.map(code), [...Array(5).fill("OK"), "OVER_LIMIT", "OVER_LIMIT"]);

    while (performance.now() - stoppedAt < 3000) await sleep(100);
    const second = await startTestXds(f.bins, `127.0.0.1:${port}`);
    try {
      await second.set("2", [domain(7)]);
      const back = performance.now();
      const loaded: Record<string, number> = {};
      for (let probe = 0; performance.now() - back < 90_000 && Object.keys(loaded).length < 2;) {
        for (const e of f.engines) {
          if (loaded[e.name] !== undefined) continue;
          const a = await f.client.ask(e.grpc, request("client", `after-${probe++}`));
          if (a.response?.statuses[0].currentLimit?.requestsPerUnit === 7) {
            loaded[e.name] = performance.now() - back;
          }
        }
        await sleep(50);
      }
      console.log(
        `xDS server down 3 s, then back: engine with default backoff loaded the new snapshot in ${
          loaded.a?.toFixed(0)
        } ms, with 1 s to 5 s in ${loaded.b?.toFixed(0)} ms`,
      );
      assert.ok(
        loaded.b !== undefined && loaded.b < 10_000,
        "the 1 s backoff reconnects within 10 s",
      );
      assert.ok(loaded.a !== undefined, "the default backoff reconnects within 90 s");
    } finally {
      await second.stop();
    }
  });
});

Deno.test("Redis stopped: no call answered OK (errors, then no answer); Redis back: enforcing again", async () => {
  await withFixture(async (f) => {
    const N = 3;
    const config = await fileEngines(f, N);
    const watching = await startEngine({
      name: "health",
      dir: f.dir,
      redis: f.redis.addr,
      config: config.source(),
      env: { ...QUIET, REDIS_HEALTH_CHECK_ACTIVE_CONNECTION: "true" },
      binaries: f.bins,
    });
    f.engines.push(watching);
    await f.redis.stop();
    const down: Answer[] = [];
    // The pool holds 10 connections per engine: each fails once (an error at once), then calls
    // wait for a connection (past the caller's deadline, as Envoy's timeout would end them).
    for (let i = 0; i < 24; i++) {
      down.push(await f.client.ask(f.engines[i % 2].grpc, request("client", "down"), 300));
    }
    assert.ok(down.every((a) => a.error !== undefined), JSON.stringify(down.map(code)));
    const codes = [...new Set(down.map((a) => a.error?.code))].sort();
    console.log(
      `Redis down: ${
        codes.map((c) => `${c} x${down.filter((a) => a.error?.code === c).length}`).join(", ")
      }; first: ${JSON.stringify(down[0].error)} in ${down[0].ms} ms`,
    );
    assert.equal(down[0].error?.code, "Unknown");
    assert.ok(codes.includes("DeadlineExceeded"), "calls wait once the pool is empty");
    // The engine's health check does not follow Redis by default; it does with
    // REDIS_HEALTH_CHECK_ACTIVE_CONNECTION=true once the pool has no connection left.
    assert.equal(await f.engines[0].health(), 200);
    const downSince = Date.now();
    const deadline = downSince + 15_000;
    while (await watching.health() === 200 && Date.now() < deadline) await sleep(100);
    const unhealthy = await watching.health();
    assert.notEqual(unhealthy, 200, "REDIS_HEALTH_CHECK_ACTIVE_CONNECTION=true follows Redis");
    console.log(
      `Redis down: /healthcheck ${unhealthy} with REDIS_HEALTH_CHECK_ACTIVE_CONNECTION, ` +
        `${Date.now() - downSince} ms after the calls above`,
    );

    await f.redis.start();
    const back = performance.now();
    let recovered = false;
    while (performance.now() - back < 20_000 && !recovered) {
      const answers = await Promise.all(
        f.engines.map((e) => f.client.ask(e.grpc, request("client", "recovery"), 300)),
      );
      recovered = answers.every((a) => a.response !== undefined);
      if (!recovered) await sleep(100);
    }
    assert.ok(recovered, "the engines answer within 20 s of Redis coming back");
    assert.equal(await watching.health(), 200);
    console.log(
      `Redis back -> the three engines answer: ${(performance.now() - back).toFixed(0)} ms`,
    );
    let n = 0;
    const { answers } = await burst(
      f.client,
      f.engines,
      () => request("client", `r-${n++}`),
      N + 2,
    );
    assert.deepEqual(answers.map(code), ["OK", "OK", "OK", "OVER_LIMIT", "OVER_LIMIT"]);
  });
});

Deno.test("the engine's Prometheus metrics: per domain and key; a dot in the domain splits its label", async () => {
  await withFixture(async (f) => {
    const perMinute = (d: string): EngineDomain => ({
      domain: d,
      descriptors: [{ key: "client", rateLimit: { unit: "MINUTE", requestsPerUnit: 2 } }],
    });
    const config = await FileConfig.create(f.dir, [perMinute("demo.api"), perMinute("demo/api")]);
    const port = freePort();
    f.engines.push(
      await startEngine({
        name: "metrics",
        dir: f.dir,
        redis: f.redis.addr,
        config: config.source(),
        env: {
          USE_PROMETHEUS: "true",
          PROMETHEUS_ADDR: `127.0.0.1:${port}`,
          STATS_FLUSH_INTERVAL: "200ms",
        },
        binaries: f.bins,
      }),
    );
    while (Date.now() / 1000 % 60 > 55) await sleep(200);
    for (const d of ["demo.api", "demo/api"]) {
      for (let i = 0; i < 5; i++) {
        await f.client.ask(f.engines[0].grpc, {
          domain: d,
          descriptors: [{ entries: [{ key: "client", value: "m" }] }],
        });
      }
    }
    await config.write([perMinute("demo/api"), {
      ...perMinute("broken"),
      descriptors: [{ key: "" }],
    }]);
    // The engine flushes its counters every 200 ms, so a line may show a count still rising: read
    // until it shows `value` (a regex on the line's end), for at most 5 s; then the last line seen.
    const metricAt = async (line: RegExp, value: RegExp) => {
      let seen: string | undefined;
      for (let i = 0; i < 50; i++) {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        seen = text.split("\n").find((l) => line.test(l)) ?? seen;
        if (seen !== undefined && value.test(seen)) return seen;
        await sleep(100);
      }
      if (seen === undefined) throw new Error(`no metric ${line}`);
      return seen;
    };
    // The default statsd-to-Prometheus mapping cuts the stat name at dots: "demo.api" becomes
    // domain "demo" and key1 "api"; "demo/api" stays whole.
    assert.match(
      await metricAt(
        /^ratelimit_service_rate_limit_over_limit\{domain="demo\/api",key1="client"\}/,
        / 3$/,
      ),
      / 3$/,
    );
    assert.match(
      await metricAt(
        /^ratelimit_service_rate_limit_within_limit\{domain="demo\/api",key1="client"\}/,
        / 2$/,
      ),
      / 2$/,
    );
    assert.match(
      await metricAt(
        /^ratelimit_service_rate_limit_over_limit\{domain="demo",key1="api",key2="client"\}/,
        / 3$/,
      ),
      / 3$/,
    );
    assert.match(await metricAt(/^ratelimit_redis_pool_cx_active /, / 10$/), / 10$/);
    assert.match(await metricAt(/^ratelimit_service_config_load_success /, / 1$/), / 1$/);
    assert.match(await metricAt(/^ratelimit_service_config_load_error /, / 1$/), / 1$/);
  });
});

Deno.test("Redis with a password and over mutual TLS: the engine's settings; a wrong one stops its start", async () => {
  const bins = await ensureRatelimitEngine((m) => console.error(`[build] ${m}`));
  const dir = await Deno.makeTempDir({ prefix: "global-engine-auth-" });
  const config = await FileConfig.create(dir, [domain(3)]);
  const client = startTestClient(bins);
  const servers: RedisServer[] = [];
  const engines: Engine[] = [];
  const engineOn = async (name: string, redis: RedisServer, env: Record<string, string>) => {
    const e = await startEngine({
      name,
      dir,
      redis: redis.addr,
      config: config.source(),
      env: { ...QUIET, ...env },
      binaries: bins,
      timeoutMs: 10_000,
    });
    engines.push(e);
    return code(await client.ask(e.grpc, request("client", name)));
  };
  try {
    // REDIS_AUTH is `user:password` when it has a colon (src/redis/driver_impl.go createDialer):
    // a password with a colon must be given with the default user's name.
    const password = await startRedis(dir, { password: "pa:ss" });
    servers.push(password);
    await assert.rejects(
      engineOn("colon", password, { REDIS_AUTH: "pa:ss" }),
      /exited[\s\S]*WRONGPASS/,
    );
    assert.equal(await engineOn("user", password, { REDIS_AUTH: "default:pa:ss" }), "OK");

    // TLS only, client certificates required: the CA and the engine's certificate and key.
    const pkiDir = join(dir, "pki");
    const pki = await generatePki(pkiDir);
    const engineCert = await issueCert(pki, pkiDir, {
      name: "engine",
      subject: "/CN=ratelimit",
      usage: "clientAuth",
    });
    const tls = await startRedis(dir, {
      tls: { cert: pki.servingCert, key: pki.servingKey, ca: pki.caCert, client: engineCert },
    });
    servers.push(tls);
    const trust = { REDIS_TLS: "true", REDIS_TLS_CACERT: pki.caCert };
    await assert.rejects(engineOn("plain", tls, {}), /exited/);
    await assert.rejects(engineOn("no-cert", tls, trust), /exited/);
    assert.equal(
      await engineOn("mtls", tls, {
        ...trust,
        REDIS_TLS_CLIENT_CERT: engineCert.cert,
        REDIS_TLS_CLIENT_KEY: engineCert.key,
      }),
      "OK",
    );
  } finally {
    await client.stop();
    for (const e of engines) await e.stop();
    for (const r of servers) await r.close();
    await Deno.remove(dir, { recursive: true });
  }
});
