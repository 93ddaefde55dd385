/**
 * Can the operator, a Deno program, be the engine's xDS management server (docs/global-engine.md,
 * the configuration-delivery decision)? A probe: Deno's `node:http2` server on loopback (cleartext
 * HTTP/2, as the engine dials without TLS) serves the ADS stream
 * `envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources` to a real
 * engine (CONFIG_TYPE=GRPC_XDS_SOTW), with `DiscoveryResponse` and `RateLimitConfig` encoded by
 * the operator's codec (src/kube/engine_proto.ts, first written by hand here); the engine loads the
 * first snapshot, then an update pushed on the open stream, and ACKs each. The operator's own
 * server (src/kube/engine_xds.ts) is driven by tests/kube/engine_xds_test.ts.
 */
import assert from "node:assert/strict";
import http2 from "node:http2";
import {
  ensureRatelimitEngine,
  startEngine,
  startRedis,
  startTestClient,
} from "../../tools/ratelimit-engine/mod.ts";
import {
  decodeDiscoveryRequest,
  encodeDiscoveryResponse,
  engineResource,
  GrpcDeframer,
  grpcFrame,
} from "../../src/kube/engine_proto.ts";
import { ADS_PATH } from "../../src/kube/engine_xds.ts";
import { ENGINE_CONFIG_TYPE } from "../../src/api/global_engine.ts";
import type { EngineDomainConfig } from "../../src/reconcile/ratelimit/engine_config.ts";

const DOMAIN = "demo.api";

/** The domain's configuration: a per-second limit on `client`. */
function config(perSecond: number): EngineDomainConfig {
  return {
    domain: DOMAIN,
    descriptors: [{ key: "client", rateLimit: { unit: "SECOND", requestsPerUnit: perSecond } }],
  };
}

/** DiscoveryResponse{version_info, resources: [Any], type_url, nonce}, gRPC-framed. */
function response(version: string, nonce: string, perSecond: number): Uint8Array {
  return grpcFrame(encodeDiscoveryResponse({
    version,
    resources: [engineResource(config(perSecond))],
    typeUrl: ENGINE_CONFIG_TYPE,
    nonce,
  }));
}

/** What the server saw of one DiscoveryRequest. */
interface Seen {
  version: string;
  nonce: string;
  error: boolean;
  at: number;
}

Deno.test("a Deno node:http2 server serves the engine its RateLimitConfig over ADS; a pushed edit is loaded and ACKed", async () => {
  const bins = await ensureRatelimitEngine((m) => console.error(`[build] ${m}`));
  const dir = await Deno.makeTempDir({ prefix: "deno-xds-" });
  const redis = await startRedis(dir);
  const client = startTestClient(bins);
  let limit = 4;
  let version = 1;
  const seen: Seen[] = [];
  const pushes: ((v: number) => void)[] = [];
  const server = http2.createServer();
  server.on("stream", (s, headers) => {
    // The server's streams (typed Http2Stream by some versions of the Node types in the graph).
    const stream = s as http2.ServerHttp2Stream;
    if (headers[":path"] !== ADS_PATH) {
      stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "12" }, {
        endStream: true,
      });
      return;
    }
    stream.respond({ ":status": 200, "content-type": "application/grpc" }, {
      waitForTrailers: true,
    });
    stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
    let nonce = 0;
    const push = (v: number) => stream.write(response(String(v), String(++nonce), limit));
    pushes.push(push);
    const deframer = new GrpcDeframer();
    stream.on("data", (chunk: Uint8Array) => {
      for (const message of deframer.push(chunk)) {
        const r = decodeDiscoveryRequest(message);
        const s = {
          version: r.versionInfo,
          nonce: r.responseNonce,
          error: r.errorDetail !== undefined,
          at: Date.now(),
        };
        seen.push(s);
        if (s.nonce === "") push(version);
      }
    });
  });
  const port = await new Promise<number>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port))
  );
  const engine = await startEngine({
    name: "deno-xds",
    dir,
    redis: redis.addr,
    config: {
      env: { CONFIG_TYPE: "GRPC_XDS_SOTW", CONFIG_GRPC_XDS_SERVER_URL: `127.0.0.1:${port}` },
    },
    env: { DISABLE_STATS: "true" },
    binaries: bins,
  });
  try {
    assert.match(await engine.rlconfig(), /^demo\.api\.client: unit=SECOND requests_per_unit=4,/);
    assert.ok(seen.some((s) => s.version === "1" && s.nonce === "1" && !s.error), "ACK of 1");

    limit = 9;
    version = 2;
    const t0 = Date.now();
    for (const push of pushes) push(version);
    let answered = 0;
    for (let probe = 0; Date.now() - t0 < 10_000; probe++) {
      const a = await client.ask(engine.grpc, {
        domain: DOMAIN,
        descriptors: [{ entries: [{ key: "client", value: `p${probe}` }] }],
      });
      if (a.response?.statuses[0].currentLimit?.requestsPerUnit === 9) {
        answered = Date.now() - t0;
        break;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.ok(answered > 0, "the engine answers with the pushed limit within 10 s");
    const ack = seen.find((s) => s.version === "2" && s.nonce === "2" && !s.error);
    assert.ok(ack, `ACK of 2: ${JSON.stringify(seen)}`);
    console.log(`Deno ADS push -> ACK ${ack.at - t0} ms, -> engine answers ${answered} ms`);
  } finally {
    await engine.stop();
    await client.stop();
    await new Promise((r) => server.close(r));
    await redis.close();
    await Deno.remove(dir, { recursive: true });
  }
});
