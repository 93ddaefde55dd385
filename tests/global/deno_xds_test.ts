/**
 * Can the operator, a Deno program, be the engine's xDS management server (docs/global-engine.md,
 * the configuration-delivery decision)? A probe: Deno's `node:http2` server on loopback (cleartext
 * HTTP/2, as the engine dials without TLS) serves the ADS stream
 * `envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources` to a real
 * engine (CONFIG_TYPE=GRPC_XDS_SOTW), with `DiscoveryResponse` and `RateLimitConfig` written as
 * protobuf by hand below; the engine loads the first snapshot, then an update pushed on the open
 * stream, and ACKs each. When the operator has its own server, this test should drive that instead.
 */
import assert from "node:assert/strict";
import http2 from "node:http2";
import { Buffer } from "node:buffer";
import {
  ensureRatelimitEngine,
  startEngine,
  startRedis,
  startTestClient,
} from "../../tools/ratelimit-engine/mod.ts";

const ADS = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources";
const RLS_CONFIG = "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig";
const SECOND = 1; // ratelimit.config.ratelimit.v3.RateLimitUnit

const enc = new TextEncoder();
const dec = new TextDecoder();

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 127) {
    out.push((n & 127) | 128);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}
const bytesField = (
  no: number,
  b: Uint8Array,
) => [...varint(no * 8 + 2), ...varint(b.length), ...b];
const stringField = (no: number, s: string) => bytesField(no, enc.encode(s));
const uintField = (no: number, n: number) => [...varint(no * 8), ...varint(n)];

/** RateLimitConfig{name, domain, descriptors: [{key: "client", rate_limit: {unit, requests}}]}. */
function rateLimitConfig(domain: string, perSecond: number): Uint8Array {
  const policy = new Uint8Array([...uintField(1, SECOND), ...uintField(2, perSecond)]);
  const descriptor = new Uint8Array([...stringField(1, "client"), ...bytesField(3, policy)]);
  return new Uint8Array([
    ...stringField(1, domain),
    ...stringField(2, domain),
    ...bytesField(3, descriptor),
  ]);
}

/** DiscoveryResponse{version_info, resources: [Any], type_url, nonce}, gRPC-framed. */
function response(version: string, nonce: string, config: Uint8Array): Buffer {
  const any = new Uint8Array([...stringField(1, RLS_CONFIG), ...bytesField(2, config)]);
  const msg = new Uint8Array([
    ...stringField(1, version),
    ...bytesField(2, any),
    ...stringField(4, RLS_CONFIG),
    ...stringField(5, nonce),
  ]);
  const framed = Buffer.alloc(5 + msg.length);
  framed.writeUInt32BE(msg.length, 1);
  framed.set(msg, 5);
  return framed;
}

/** The length-delimited top-level fields of a message, by number (enough for a DiscoveryRequest). */
function fields(b: Uint8Array): Map<number, Uint8Array> {
  const out = new Map<number, Uint8Array>();
  let i = 0;
  const read = () => {
    let v = 0;
    for (let s = 1;; s *= 128) {
      const x = b[i++];
      v += (x & 127) * s;
      if (x < 128) return v;
    }
  };
  while (i < b.length) {
    const key = read();
    if ((key & 7) === 0) read();
    else if ((key & 7) === 2) {
      const len = read();
      out.set(Math.floor(key / 8), b.subarray(i, i + len));
      i += len;
    } else throw new Error(`wire type ${key & 7} not expected in a DiscoveryRequest`);
  }
  return out;
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
    if (headers[":path"] !== ADS) {
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
    const push = (v: number) =>
      stream.write(response(String(v), String(++nonce), rateLimitConfig("demo.api", limit)));
    pushes.push(push);
    let buf = Buffer.alloc(0);
    stream.on("data", (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
        const len = buf.readUInt32BE(1);
        const f = fields(buf.subarray(5, 5 + len));
        buf = buf.subarray(5 + len);
        const s = {
          version: dec.decode(f.get(1) ?? new Uint8Array()),
          nonce: dec.decode(f.get(5) ?? new Uint8Array()),
          error: f.has(6),
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
        domain: "demo.api",
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
