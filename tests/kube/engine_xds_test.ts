/**
 * The operator's xDS server for the rate limit engines (src/kube/engine_xds.ts) and its protobuf
 * codec (src/kube/engine_proto.ts):
 *
 * - the codec: RateLimitConfig, Any, DiscoveryResponse and DiscoveryRequest round-trip, gRPC
 *   frames split and joined as they arrive, a compressed or unreadable message refused;
 * - the protocol, against a client speaking as go-control-plane's sotw client does: the first
 *   request is answered (also when it carries a previous stream's nonce), an ACK brings nothing,
 *   a NACK is recorded with its error and not answered with the refused version again, a newer
 *   snapshot is pushed at once; another method is UNIMPLEMENTED;
 * - with REAL engines (envoyproxy/ratelimit built here, in xDS mode, sharing one Redis): two
 *   engines load the snapshot made from rendered EnvoyFilters, their `/rlconfig` equals
 *   `rlconfigLines` of what was sent and they answer the rules' limits; an edit pushed on the open
 *   streams reaches both without a restart (the time from apply to both answering is printed); a
 *   domain failing `checkEngineDomain` is not sent and the rest is; a NACK provoked by bypassing
 *   the check is recorded with the engine's error, which keeps enforcing what it had; a server
 *   restart: the engines keep enforcing, and reconnect and load the new snapshot within about
 *   a second or two (XDS_CLIENT_BACKOFF_INITIAL_INTERVAL=1s); `serveEngineConfig` follows a
 *   changing list of cached filters and keeps the last snapshot while the list is not known.
 *
 * Needs the engine built (./deno task build --only=ratelimit-engine) and redis-server.
 */
import assert from "node:assert/strict";
import http2 from "node:http2";
import {
  type Engine,
  ensureRatelimitEngine,
  startEngine,
  startRedis,
  startTestClient,
  xdsSource,
} from "../../tools/ratelimit-engine/mod.ts";
import {
  decodeDiscoveryRequest,
  decodeDiscoveryResponse,
  decodeRateLimitConfig,
  encodeDiscoveryRequest,
  encodeDiscoveryResponse,
  encodeRateLimitConfig,
  engineResource,
  GrpcDeframer,
  grpcFrame,
  ProtoError,
} from "../../src/kube/engine_proto.ts";
import { ADS_PATH, EngineXdsServer, serveEngineConfig } from "../../src/kube/engine_xds.ts";
import {
  checkEngineDomain,
  type EngineDomainConfig,
  engineDomainOfFilter,
  engineDomainSources,
  rlconfigLines,
  snapshotOf,
} from "../../src/reconcile/ratelimit/engine_config.ts";
import { ENGINE_CONFIG_TYPE, ENGINE_DOMAIN_ANNOTATION } from "../../src/api/global_engine.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { Metrics, systemClock } from "../../src/runtime/mod.ts";
import {
  apiLimits,
  filterOf,
  limitOf,
  linesOfDomain,
  rateLimitOf,
  requestOf,
  sleep,
  testLog,
  until,
  untilAnswering,
} from "./engine_xds_helpers.ts";

// ---------------------------------------------------------------------------------------------
// The codec.

const SAMPLE: EngineDomainConfig = {
  domain: "demo/api",
  descriptors: [
    {
      key: "rule",
      value: "0",
      descriptors: [{
        key: "client",
        rateLimit: { unit: "MINUTE", requestsPerUnit: 4294967295 },
        shadowMode: true,
      }],
    },
    { key: "rule", value: "default", rateLimit: { unit: "DAY", requestsPerUnit: 1 } },
  ],
};

Deno.test("codec: RateLimitConfig in an Any in a DiscoveryResponse round-trips", () => {
  assert.deepEqual(decodeRateLimitConfig(encodeRateLimitConfig(SAMPLE)), {
    name: SAMPLE.domain,
    ...SAMPLE,
  });
  const res = decodeDiscoveryResponse(encodeDiscoveryResponse({
    version: "v1",
    resources: [engineResource(SAMPLE), engineResource({ domain: "x/y", descriptors: [] })],
    typeUrl: ENGINE_CONFIG_TYPE,
    nonce: "7",
  }));
  assert.equal(res.versionInfo, "v1");
  assert.equal(res.nonce, "7");
  assert.equal(res.typeUrl, ENGINE_CONFIG_TYPE);
  assert.deepEqual(res.resources.map((r) => r.typeUrl), [ENGINE_CONFIG_TYPE, ENGINE_CONFIG_TYPE]);
  assert.deepEqual(decodeRateLimitConfig(res.resources[0].value).descriptors, SAMPLE.descriptors);
  assert.deepEqual(decodeRateLimitConfig(res.resources[1].value).domain, "x/y");
  // The bytes of the probe in tests/global/deno_xds_test.ts's first version, written by hand:
  // RateLimitConfig{name "d", domain "d", descriptors [{key "client", rate_limit {SECOND, 4}}]}.
  assert.deepEqual(
    [...encodeRateLimitConfig({
      domain: "d",
      descriptors: [{ key: "client", rateLimit: { unit: "SECOND", requestsPerUnit: 4 } }],
    })],
    [10, 1, 100, 18, 1, 100, 26, 14, 10, 6, 99, 108, 105, 101, 110, 116, 26, 4, 8, 1, 16, 4],
  );
});

Deno.test("codec: DiscoveryRequest's version, node id, type, nonce and error detail are read", () => {
  const req = {
    versionInfo: "abc",
    nodeId: "engine-0",
    typeUrl: ENGINE_CONFIG_TYPE,
    responseNonce: "12",
    errorDetail: { code: 0, message: "duplicate descriptor composite key 'x'" },
  };
  assert.deepEqual(decodeDiscoveryRequest(encodeDiscoveryRequest(req)), req);
  const first = decodeDiscoveryRequest(encodeDiscoveryRequest({ nodeId: "n", typeUrl: "t" }));
  assert.deepEqual(first, { versionInfo: "", nodeId: "n", typeUrl: "t", responseNonce: "" });
  // Unknown fields (resource_names, a node's metadata, fixed64 and fixed32) are skipped.
  const extra = new Uint8Array([
    ...encodeDiscoveryRequest({ nodeId: "n" }),
    26,
    1,
    120, // resource_names "x"
    57,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    8, // field 7, fixed64
    69,
    1,
    2,
    3,
    4, // field 8, fixed32
  ]);
  assert.equal(decodeDiscoveryRequest(extra).nodeId, "n");
  for (const bad of [[10, 5, 97], [0], [11], [10, 1, 0xff], [8, 0xff]]) {
    assert.throws(() => decodeDiscoveryRequest(new Uint8Array(bad)), ProtoError, String(bad));
  }
});

Deno.test("codec: gRPC frames are split and joined across chunks; compressed or oversized ones refused", () => {
  const a = encodeDiscoveryRequest({ nodeId: "a" });
  const b = encodeDiscoveryRequest({ nodeId: "bb", responseNonce: "1" });
  const stream = new Uint8Array([...grpcFrame(a), ...grpcFrame(b), ...grpcFrame(new Uint8Array())]);
  for (let cut = 0; cut <= stream.length; cut++) {
    const d = new GrpcDeframer();
    const got = [...d.push(stream.subarray(0, cut)), ...d.push(stream.subarray(cut))];
    assert.deepEqual(got.map((m) => [...m]), [[...a], [...b], []], `cut at ${cut}`);
  }
  assert.throws(() => new GrpcDeframer().push(new Uint8Array([1, 0, 0, 0, 0])), /compressed/);
  assert.throws(() => new GrpcDeframer(10).push(new Uint8Array([0, 0, 0, 0, 11])), /11 bytes/);
});

// ---------------------------------------------------------------------------------------------
// The protocol, against a client speaking as the engine's.

/** An ADS stream opened as go-control-plane's sotw client opens it. */
function adsClient(port: number, path = ADS_PATH) {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  const req = session.request({
    ":method": "POST",
    ":path": path,
    "content-type": "application/grpc",
    te: "trailers",
  });
  const responses: ReturnType<typeof decodeDiscoveryResponse>[] = [];
  const trailers: Record<string, unknown>[] = [];
  const deframer = new GrpcDeframer();
  req.on("data", (chunk: Uint8Array) => {
    for (const m of deframer.push(chunk)) responses.push(decodeDiscoveryResponse(m));
  });
  req.on("trailers", (t) => trailers.push(t));
  req.on("response", (h) => {
    if (h["grpc-status"] !== undefined) trailers.push(h);
  });
  const closed = new Promise<void>((resolve) => req.on("close", () => resolve()));
  return {
    responses,
    trailers,
    send: (r: Parameters<typeof encodeDiscoveryRequest>[0]) =>
      req.write(grpcFrame(encodeDiscoveryRequest({ typeUrl: ENGINE_CONFIG_TYPE, ...r }))),
    /** Writes bytes as they are. */
    raw: (b: Uint8Array) => req.write(b),
    close: async () => {
      req.close();
      session.close();
      await closed;
    },
    closed,
  };
}

Deno.test("protocol: first request answered, ACK brings nothing, NACK recorded and not answered again, newer snapshot pushed", async () => {
  const { log, lines } = testLog();
  const metrics = new Metrics();
  // What an ACK tells whoever reads the engines back (run.ts nudges its poller).
  const loaded: string[] = [];
  const server = new EngineXdsServer({
    port: 0,
    hostname: "127.0.0.1",
    log,
    metrics,
    onLoaded: (version) => loaded.push(version),
  });
  await server.start();
  const port = server.address!.port;
  try {
    // Before any snapshot: the first request waits.
    const c = adsClient(port);
    c.send({ nodeId: "engine-a" });
    await until(
      () => server.streams().length === 1 && server.streams()[0].node === "engine-a",
      "stream",
    );
    await sleep(100);
    assert.equal(c.responses.length, 0, "nothing to send before the first snapshot");
    const v1 = server.setSnapshot([SAMPLE]);
    await until(() => c.responses.length === 1, "the first snapshot");
    assert.equal(c.responses[0].versionInfo, v1);
    assert.deepEqual(decodeRateLimitConfig(c.responses[0].resources[0].value).domain, "demo/api");
    // ACK: nothing more.
    c.send({ nodeId: "engine-a", versionInfo: v1, responseNonce: c.responses[0].nonce });
    await until(() => server.streams()[0].acked === v1, "ACK recorded");
    assert.deepEqual(loaded, [v1], "the ACK is said as it comes");
    // The same snapshot again: same version, nothing pushed.
    assert.equal(server.setSnapshot([structuredClone(SAMPLE)]), v1);
    await sleep(100);
    assert.equal(c.responses.length, 1);
    // A newer snapshot: pushed at once.
    const edited = structuredClone(SAMPLE);
    edited.descriptors[1].rateLimit!.requestsPerUnit = 2;
    const v2 = server.setSnapshot([edited]);
    assert.notEqual(v2, v1);
    await until(() => c.responses.length === 2, "the pushed snapshot");
    assert.equal(c.responses[1].versionInfo, v2);
    assert.notEqual(c.responses[1].nonce, c.responses[0].nonce);
    // NACK of v2 (version_info stays v1): recorded with the error; v2 is not sent again.
    c.send({
      nodeId: "engine-a",
      versionInfo: v1,
      responseNonce: c.responses[1].nonce,
      errorDetail: { code: 0, message: "refused for a test" },
    });
    await until(() => server.streams()[0].nacked !== undefined, "NACK recorded");
    const s = server.streams()[0];
    assert.equal(s.acked, v1);
    assert.deepEqual({ ...s.nacked, at: 0 }, { version: v2, error: "refused for a test", at: 0 });
    await sleep(100);
    assert.equal(c.responses.length, 2, "a NACKed version is not sent again");
    assert.deepEqual(loaded, [v1], "a NACK loaded nothing: not said");
    assert.ok(
      lines.some((l) =>
        l.msg === "an engine refused its configuration (NACK)" && l.error === "refused for a test"
      ),
    );
    assert.match(
      metrics.render(),
      /platform_operator_engine_config_replies_total\{result="nack"\} 1/,
    );
    assert.match(
      metrics.render(),
      /platform_operator_engine_config_replies_total\{result="ack"\} 1/,
    );
    assert.match(metrics.render(), /platform_operator_engine_config_streams 1/);

    // A second stream whose first request carries another stream's nonce and version (the
    // engine's client after a reconnect): answered with the snapshot all the same.
    const d = adsClient(port);
    d.send({ nodeId: "engine-b", versionInfo: v1, responseNonce: "99" });
    await until(() => d.responses.length === 1, "the reconnected stream's snapshot");
    assert.equal(d.responses[0].versionInfo, v2);
    assert.deepEqual(server.streams().map((x) => x.node).sort(), ["engine-a", "engine-b"]);
    await d.close();
    await until(() => server.streams().length === 1, "closed stream forgotten");

    // Another method: UNIMPLEMENTED.
    const other = adsClient(
      port,
      "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources",
    );
    await other.closed;
    assert.equal(other.trailers[0]?.["grpc-status"], "12");

    // An unreadable request ends that stream only, INVALID_ARGUMENT.
    const bad = adsClient(port);
    bad.send({ nodeId: "bad" });
    await until(() => bad.responses.length === 1, "bad client's first answer");
    bad.raw(grpcFrame(new Uint8Array([10, 5, 97])));
    await bad.closed;
    assert.equal(bad.trailers.at(-1)?.["grpc-status"], "3");
    assert.ok(lines.some((l) => l.msg === "an engine's xDS request cannot be read: stream ended"));
    assert.deepEqual(server.streams().map((x) => x.node), ["engine-a"]);
    const v3 = server.setSnapshot([SAMPLE]);
    await until(() => c.responses.at(-1)?.versionInfo === v3, "the remaining stream still served");
    await c.close();
  } finally {
    await server.close();
  }
});

Deno.test("listening: by default on every address, IPv4 and IPv6; a taken port is an error", async () => {
  const { log } = testLog();
  const server = new EngineXdsServer({ port: 0, log });
  await server.start();
  try {
    assert.equal(server.address?.hostname, "::");
    server.setSnapshot([SAMPLE]);
    for (const host of ["127.0.0.1", "[::1]"]) {
      const session = http2.connect(`http://${host}:${server.address!.port}`);
      const req = session.request({ ":method": "POST", ":path": ADS_PATH, te: "trailers" });
      const got = new Promise<Uint8Array>((resolve) => req.once("data", resolve));
      req.write(grpcFrame(encodeDiscoveryRequest({ nodeId: host, typeUrl: ENGINE_CONFIG_TYPE })));
      const frame = new GrpcDeframer().push(await got);
      assert.equal(decodeDiscoveryResponse(frame[0]).resources.length, 1, host);
      req.close();
      session.close();
    }
    const second = new EngineXdsServer({ port: server.address!.port, log });
    await assert.rejects(second.start(), /in use|EADDRINUSE/i);
    await second.close();
  } finally {
    await server.close();
  }
});

Deno.test("protocol: while a response is unanswered newer snapshots wait; the answer brings the newest only", async () => {
  const { log } = testLog();
  const server = new EngineXdsServer({ port: 0, hostname: "127.0.0.1", log });
  await server.start();
  try {
    const c = adsClient(server.address!.port);
    c.send({ nodeId: "slow" });
    const v1 = server.setSnapshot([SAMPLE]);
    await until(() => c.responses.length === 1, "v1");
    const edit = (n: number) => {
      const e = structuredClone(SAMPLE);
      e.descriptors[1].rateLimit!.requestsPerUnit = n;
      return server.setSnapshot([e]);
    };
    edit(2);
    const v3 = edit(3);
    await sleep(100);
    assert.deepEqual(c.responses.map((r) => r.versionInfo), [v1], "nothing while v1 is unanswered");
    // A stale answer (another nonce) does not release it.
    c.send({ nodeId: "slow", versionInfo: v1, responseNonce: "99" });
    await sleep(100);
    assert.equal(c.responses.length, 1);
    c.send({ nodeId: "slow", versionInfo: v1, responseNonce: c.responses[0].nonce });
    await until(() => c.responses.length === 2, "the newest after the answer");
    assert.equal(c.responses[1].versionInfo, v3, "v2 skipped");
    assert.equal(server.streams()[0].acked, v1);
    assert.equal(server.streams()[0].sent, v3);
    await c.close();
  } finally {
    await server.close();
  }
});

Deno.test("protocol: a domain failing the check is not sent; one that turns bad keeps what was last sent", async () => {
  const { log, lines } = testLog();
  const server = new EngineXdsServer({ port: 0, hostname: "127.0.0.1", log });
  await server.start();
  try {
    const c = adsClient(server.address!.port);
    c.send({ nodeId: "e" });
    const other: EngineDomainConfig = {
      domain: "demo/other",
      descriptors: [{
        key: "rule",
        value: "default",
        rateLimit: { unit: "SECOND", requestsPerUnit: 3 },
      }],
    };
    const dup: EngineDomainConfig = {
      domain: "demo/dup",
      descriptors: [{ key: "rule", value: "0" }, { key: "rule", value: "0" }],
    };
    server.setSnapshot([SAMPLE, dup, other]);
    await until(() => c.responses.length === 1, "snapshot");
    // Each response answered, as the engine does, so that the next goes out.
    const ack = () =>
      c.send({
        nodeId: "e",
        versionInfo: c.responses.at(-1)!.versionInfo,
        responseNonce: c.responses.at(-1)!.nonce,
      });
    ack();
    const domains = () =>
      c.responses.at(-1)!.resources.map((r) => decodeRateLimitConfig(r.value).domain);
    assert.deepEqual(domains(), ["demo/api", "demo/other"]);
    assert.deepEqual(server.refused(), [{
      domain: "demo/dup",
      problems: ["duplicate descriptor composite key 'demo/dup.rule_0'"],
      keptLast: false,
    }]);
    assert.ok(lines.some((l) => l.level === "warn" && l.domain === "demo/dup"));
    // demo/api turns bad: what was last sent for it stays; demo/other's edit goes out.
    const badApi = structuredClone(SAMPLE);
    badApi.descriptors[0].key = "";
    const other2 = structuredClone(other);
    other2.descriptors[0].rateLimit!.requestsPerUnit = 4;
    server.setSnapshot([badApi, other2]);
    await until(() => c.responses.length === 2, "second snapshot");
    ack();
    const sent = c.responses[1].resources.map((r) => decodeRateLimitConfig(r.value));
    assert.deepEqual(sent[0], { name: "demo/api", ...SAMPLE });
    assert.equal(sent[1].descriptors[0].rateLimit?.requestsPerUnit, 4);
    assert.equal(server.refused()[0].keptLast, true);
    // Gone from the snapshot: gone, and not kept for a later bad version either.
    server.setSnapshot([other2]);
    await until(() => c.responses.length === 3, "third snapshot");
    ack();
    assert.deepEqual(domains(), ["demo/other"]);
    server.setSnapshot([badApi, other2]);
    await sleep(100);
    assert.equal(c.responses.length, 3, "a new bad domain changes nothing that is sent");
    await c.close();
  } finally {
    await server.close();
  }
});

Deno.test("setSnapshotOf reads a domain only when its text changed; one that cannot be read keeps its last good configuration", async () => {
  const { log } = testLog();
  const server = new EngineXdsServer({ port: 0, hostname: "127.0.0.1", log });
  await server.start();
  try {
    const reads: string[] = [];
    const source = (domain: string, text: string, config?: EngineDomainConfig) => ({
      domain,
      text,
      read: () => {
        reads.push(`${domain} ${text}`);
        return config ?? { problem: `${domain} cannot be read` };
      },
    });
    const other = { ...SAMPLE, domain: "demo/other" };
    const v1 = server.setSnapshotOf([
      source("demo/api", "a1", SAMPLE),
      source("demo/other", "o1", other),
    ]);
    assert.deepEqual(reads, ["demo/api a1", "demo/other o1"]);
    // The same texts: nothing read, same version.
    assert.equal(server.setSnapshotOf([source("demo/api", "a1"), source("demo/other", "o1")]), v1);
    assert.equal(reads.length, 2);
    // demo/api's text changes to one that cannot be read: its last good one is still served.
    assert.equal(server.setSnapshotOf([source("demo/api", "a2"), source("demo/other", "o1")]), v1);
    assert.deepEqual(reads.slice(2), ["demo/api a2"]);
    assert.deepEqual(server.refused(), [{
      domain: "demo/api",
      problems: ["demo/api cannot be read"],
      keptLast: true,
    }]);
    // Read once, not at every snapshot.
    server.setSnapshotOf([source("demo/api", "a2"), source("demo/other", "o1")]);
    assert.equal(reads.length, 3);
    // The filters' annotations as sources: a malformed one of a known domain keeps its last good.
    const api = rateLimitOf("api", apiLimits(10));
    const good = filterOf(api);
    const vGood = server.setSnapshotOf(engineDomainSources([good]));
    const broken = structuredClone(good);
    broken.metadata.annotations![ENGINE_DOMAIN_ANNOTATION] = "{";
    assert.equal(server.setSnapshotOf(engineDomainSources([broken])), vGood);
    assert.match(server.refused()[0].problems[0], /annotation .*: not JSON/);
  } finally {
    await server.close();
  }
});

// ---------------------------------------------------------------------------------------------
// Real engines.

Deno.test("real engines: load the snapshot, take edits without restart, skip a bad domain, NACK when the check is bypassed, survive a server restart", async (t) => {
  const bins = await ensureRatelimitEngine((m) => console.error(`[build] ${m}`));
  const dir = await Deno.makeTempDir({ prefix: "engine-xds-" });
  const redis = await startRedis(dir);
  const client = startTestClient(bins);
  const { log, lines } = testLog();
  let bypass = false;
  const check = (c: EngineDomainConfig) => bypass ? [] : checkEngineDomain(c);
  let server = new EngineXdsServer({ port: 0, hostname: "127.0.0.1", log, check });
  await server.start();
  const port = server.address!.port;
  const engines: Engine[] = [];
  try {
    let api = rateLimitOf("api", apiLimits(1000));
    const web = rateLimitOf("web", { default: { limit: { requests: 50, unit: "Minute" } } }, false);
    let filters = [filterOf(api), filterOf(web)];
    let snapshot = snapshotOf(filters);
    const v1 = server.setSnapshot(snapshot);
    for (const name of ["engine-a", "engine-b"]) {
      engines.push(
        await startEngine({
          name,
          dir,
          redis: redis.addr,
          config: xdsSource(`127.0.0.1:${port}`, name, { initial: "1s", max: "2s" }),
          env: { DISABLE_STATS: "true", FORCE_START_WITHOUT_INITIAL_CONFIG: "true" },
          binaries: bins,
        }),
      );
    }
    const pids = engines.map((e) => e.pid);
    const rlconfigOf = async (e: Engine) =>
      (await e.rlconfig()).split("\n").filter((l) => l !== "").sort();
    const expectLines = (s: readonly EngineDomainConfig[]) => s.flatMap(rlconfigLines).sort();

    await t.step(
      "both engines load the snapshot: /rlconfig equals rlconfigLines of what was sent",
      async () => {
        await until(
          () => server.streams().filter((s) => s.acked === v1).length === 2,
          "both ACK v1",
        );
        assert.deepEqual(server.streams().map((s) => s.node).sort(), ["engine-a", "engine-b"]);
        for (const e of engines) {
          const dump = await e.rlconfig();
          assert.deepEqual(await rlconfigOf(e), expectLines(snapshot), e.name);
          for (const c of snapshot) {
            assert.deepEqual(
              linesOfDomain(dump, c.domain),
              rlconfigLines(c),
              `${e.name} ${c.domain}`,
            );
          }
          // Each rule's request descriptor, as the route actions send it, gets the rule's limit.
          assert.equal(await limitOf(client, e, requestOf(api, 0)), 1000);
          assert.equal(await limitOf(client, e, requestOf(api, 1, "bob")), 100);
          assert.equal(await limitOf(client, e, requestOf(api, 2)), 5000);
          assert.equal(await limitOf(client, e, requestOf(web, 0)), 50);
        }
        console.log(
          `loaded: ${JSON.stringify(engines.map((e) => e.name))}, ${
            expectLines(snapshot).length
          } rlconfig lines each`,
        );
      },
    );

    await t.step(
      "edits pushed on the open streams reach both engines without restart",
      async () => {
        const times: number[] = [];
        for (let i = 1; i <= 10; i++) {
          api = rateLimitOf("api", apiLimits(1000 + i));
          filters = [filterOf(api), filterOf(web)];
          snapshot = snapshotOf(filters);
          const t0 = Date.now();
          const v = server.setSnapshot(snapshot);
          times.push(await untilAnswering(client, engines, requestOf(api, 0), 1000 + i, t0));
          await until(() => server.streams().every((s) => s.acked === v), `both ACK edit ${i}`);
        }
        assert.deepEqual(engines.map((e) => e.pid), pids, "no engine restarted");
        assert.ok(engines.every((e) => e.running()));
        for (const e of engines) assert.deepEqual(await rlconfigOf(e), expectLines(snapshot));
        const sorted = [...times].sort((a, b) => a - b);
        console.log(
          `apply -> both engines answering the new limit, 10 edits: p50 ${sorted[4]} ms, max ${
            sorted[9]
          } ms (${times.join(", ")})`,
        );
        assert.ok(sorted[9] < 10_000);
      },
    );

    await t.step("a domain failing checkEngineDomain is not sent; the rest is", async () => {
      // An annotation edited by hand: two descriptors with the same composite key.
      const bad = filterOf(
        rateLimitOf("bad", { default: { limit: { requests: 7, unit: "Second" } } }),
      );
      const badConfig = engineDomainOfFilter(bad)!;
      badConfig.descriptors.push(structuredClone(badConfig.descriptors[0]));
      bad.metadata.annotations![ENGINE_DOMAIN_ANNOTATION] = JSON.stringify(badConfig);
      api = rateLimitOf("api", apiLimits(2000));
      filters = [filterOf(api), filterOf(web), bad];
      snapshot = snapshotOf(filters);
      assert.equal(snapshot.length, 3);
      const t0 = Date.now();
      const v = server.setSnapshot(snapshot);
      await untilAnswering(client, engines, requestOf(api, 0), 2000, t0);
      await until(() => server.streams().every((s) => s.acked === v), "both ACK");
      assert.deepEqual(server.refused().map((r) => r.domain), ["demo/bad"]);
      for (const e of engines) {
        assert.deepEqual(linesOfDomain(await e.rlconfig(), "demo/bad"), []);
        assert.deepEqual(
          await rlconfigOf(e),
          expectLines(snapshot.filter((c) => c.domain !== "demo/bad")),
        );
        assert.equal(server.streams().find((s) => s.node === e.name)?.nacked, undefined);
      }
    });

    await t.step(
      "with the check bypassed the engines NACK with their error and keep what they had",
      async () => {
        bypass = true;
        const before = server.streams().map((s) => s.acked);
        // The server checks a domain when its text is new: the bad domain edited again.
        const bad = snapshot.find((c) => c.domain === "demo/bad")!;
        bad.descriptors[1].rateLimit!.requestsPerUnit = 8;
        const v = server.setSnapshot(snapshot);
        await until(() => server.streams().every((s) => s.nacked?.version === v), "both NACK");
        for (const s of server.streams()) {
          assert.match(
            s.nacked!.error,
            /duplicate descriptor composite key 'demo\/bad\.rule_default'/,
          );
          assert.equal(s.acked, before[0]);
        }
        assert.ok(lines.some((l) => l.msg === "an engine refused its configuration (NACK)"));
        for (const e of engines) assert.equal(await limitOf(client, e, requestOf(api, 0)), 2000);
        bypass = false;
        // The bad annotation fixed (here: its filter gone): the engines load the rest again.
        snapshot = snapshot.filter((c) => c.domain !== "demo/bad");
        const good = server.setSnapshot(snapshot);
        assert.deepEqual(server.refused(), []);
        await until(() => server.streams().every((s) => s.acked === good), "both ACK the good one");
      },
    );

    await t.step(
      "server restart: engines keep enforcing, reconnect and load the new snapshot",
      async () => {
        await server.close();
        const down = Date.now();
        await sleep(2500);
        for (const e of engines) {
          assert.equal(await limitOf(client, e, requestOf(api, 0)), 2000, "still enforcing");
        }
        api = rateLimitOf("api", apiLimits(3000));
        snapshot = snapshotOf([filterOf(api), filterOf(web)]);
        server = new EngineXdsServer({ port, hostname: "127.0.0.1", log, check });
        await server.start();
        const t0 = Date.now();
        const v = server.setSnapshot(snapshot);
        const answering = await untilAnswering(client, engines, requestOf(api, 0), 3000, t0);
        await until(
          () => server.streams().filter((s) => s.acked === v).length === 2,
          "both ACK after restart",
        );
        console.log(
          `server down ${
            t0 - down
          } ms; back -> both engines answering the new snapshot: ${answering} ms`,
        );
        assert.ok(answering < 5_000, `${answering} ms`);
        assert.deepEqual(
          engines.map((e) => e.pid),
          pids,
        );
        for (const e of engines) assert.deepEqual(await rlconfigOf(e), expectLines(snapshot));
      },
    );

    await t.step(
      "serveEngineConfig follows the cached filters, and keeps the last snapshot while they are not known",
      async () => {
        await server.close();
        const ac = new AbortController();
        let list: readonly KubeObject[] | undefined = undefined;
        const served = await serveEngineConfig({
          filters: () => list,
          port,
          hostname: "127.0.0.1",
          log,
          clock: systemClock,
          pollMs: 50,
          signal: ac.signal,
        });
        try {
          await sleep(1500);
          assert.equal(
            served.server.version,
            undefined,
            "no snapshot before the filters are known",
          );
          for (const e of engines) assert.equal(await limitOf(client, e, requestOf(api, 0)), 3000);
          api = rateLimitOf("api", apiLimits(4000));
          const t0 = Date.now();
          list = [filterOf(api), filterOf(web)];
          const ms = await untilAnswering(client, engines, requestOf(api, 0), 4000, t0);
          console.log(
            `serveEngineConfig: cached filters changed -> both engines answering: ${ms} ms`,
          );
          list = undefined;
          await sleep(200);
          for (const e of engines) assert.equal(await limitOf(client, e, requestOf(api, 0)), 4000);
          assert.equal(served.server.streams().length, 2);
        } finally {
          ac.abort();
          await served.done;
        }
      },
    );
  } finally {
    await server.close();
    for (const e of engines) await e.stop();
    await client.stop();
    await redis.close();
    await Deno.remove(dir, { recursive: true });
  }
});
