/**
 * The protobuf messages the operator's xDS server exchanges with the rate limit engines
 * (envoyproxy/ratelimit in CONFIG_TYPE=GRPC_XDS_SOTW, docs/global-engine.md), written by hand:
 * `RateLimitConfig` (the engine's api/ratelimit/config/ratelimit/v3/rls_conf.proto), wrapped in
 * `google.protobuf.Any`, in a `DiscoveryResponse`; and the `DiscoveryRequest` each engine sends
 * (envoy/service/discovery/v3/discovery.proto, with envoy/config/core/v3/base.proto `Node` and
 * google/rpc/status.proto `Status`), read for what the server needs. Plus gRPC's message framing
 * (a compressed flag byte and a 4-byte big-endian length before each message).
 *
 * Field numbers, from those files:
 * - RateLimitConfig: name 1, domain 2, descriptors 3.
 * - RateLimitDescriptor: key 1, value 2, rate_limit 3, descriptors 4, shadow_mode 5.
 * - RateLimitPolicy: unit 1 (enum RateLimitUnit: SECOND 1, MINUTE 2, HOUR 3, DAY 4), requests_per_unit 2.
 * - Any: type_url 1, value 2.
 * - DiscoveryResponse: version_info 1, resources 2, type_url 4, nonce 5.
 * - DiscoveryRequest: version_info 1, node 2, resource_names 3, type_url 4, response_nonce 5,
 *   error_detail 6. Node: id 1, cluster 2. Status: code 1, message 2.
 */
import type {
  EngineDescriptor,
  EngineDomainConfig,
  EngineUnit,
} from "../reconcile/ratelimit/engine_config.ts";
import { ENGINE_CONFIG_TYPE } from "../api/global_engine.ts";

/** rls_conf.proto `RateLimitUnit` numbers. */
const UNIT_NUMBER: Readonly<Record<EngineUnit, number>> = {
  SECOND: 1,
  MINUTE: 2,
  HOUR: 3,
  DAY: 4,
};

const enc = new TextEncoder();
const dec = new TextDecoder("utf-8", { fatal: true });

/**
 * An encoder of one message: its fields appended in order, into a plain array of bytes (faster
 * here than many small typed arrays: a configuration is hundreds of short fields).
 */
class Writer {
  readonly #out: number[] = [];

  /** A varint of a non-negative integer up to 2^53. */
  #varint(n: number): void {
    while (n > 127) {
      this.#out.push((n % 128) | 128);
      n = Math.floor(n / 128);
    }
    this.#out.push(n);
  }

  /** A varint field (wire type 0); zero is left out, as proto3 does. */
  uint(no: number, n: number): this {
    if (n === 0) return this;
    this.#varint(no * 8);
    this.#varint(n);
    return this;
  }

  /** A bool field; false is left out. */
  bool(no: number, b: boolean | undefined): this {
    return b ? this.uint(no, 1) : this;
  }

  /** The key and length of a length-delimited field (wire type 2) whose bytes follow. */
  key(no: number, length: number): this {
    this.#varint(no * 8 + 2);
    this.#varint(length);
    return this;
  }

  /** A length-delimited field (wire type 2). */
  bytes(no: number, b: ArrayLike<number>): this {
    this.key(no, b.length);
    const out = this.#out;
    for (let i = 0; i < b.length; i++) out.push(b[i]);
    return this;
  }

  /** A string field (UTF-8); the empty string is left out. */
  string(no: number, s: string | undefined): this {
    if (s === undefined || s === "") return this;
    // ASCII, the usual case, byte by byte; anything else through the encoder.
    for (let i = 0; i < s.length; i++) {
      if (s.charCodeAt(i) > 127) return this.bytes(no, enc.encode(s));
    }
    this.#varint(no * 8 + 2);
    this.#varint(s.length);
    const out = this.#out;
    for (let i = 0; i < s.length; i++) out.push(s.charCodeAt(i));
    return this;
  }

  /** The message's bytes so far, to nest in another (`bytes`). */
  get parts(): readonly number[] {
    return this.#out;
  }

  /** The message. */
  done(): Uint8Array {
    return Uint8Array.from(this.#out);
  }
}

function descriptorParts(d: EngineDescriptor): readonly number[] {
  const w = new Writer().string(1, d.key).string(2, d.value);
  if (d.rateLimit !== undefined) {
    w.bytes(
      3,
      new Writer()
        .uint(1, UNIT_NUMBER[d.rateLimit.unit])
        .uint(2, d.rateLimit.requestsPerUnit)
        .parts,
    );
  }
  for (const inner of d.descriptors ?? []) w.bytes(4, descriptorParts(inner));
  return w.bool(5, d.shadowMode).parts;
}

function rateLimitConfigWriter(config: EngineDomainConfig): Writer {
  const w = new Writer().string(1, config.domain).string(2, config.domain);
  for (const d of config.descriptors) w.bytes(3, descriptorParts(d));
  return w;
}

/** `RateLimitConfig` of a domain, named after it (the engine logs errors by that name). */
export function encodeRateLimitConfig(config: EngineDomainConfig): Uint8Array {
  return rateLimitConfigWriter(config).done();
}

/** `google.protobuf.Any` holding `value`, a message of type `typeUrl`. */
export function encodeAny(typeUrl: string, value: Uint8Array): Uint8Array {
  return new Writer().string(1, typeUrl).bytes(2, value).done();
}

/** A domain's configuration as the xDS resource: `RateLimitConfig` in an `Any`. */
export function engineResource(config: EngineDomainConfig): Uint8Array {
  return new Writer().string(1, ENGINE_CONFIG_TYPE).bytes(2, rateLimitConfigWriter(config).parts)
    .done();
}

/**
 * A `DiscoveryResponse` but for its nonce: `version_info`, `resources` (already `Any`s),
 * `type_url`. A message is the concatenation of its fields, so one body serves every stream,
 * each adding its own nonce (`withNonce`).
 */
export function discoveryResponseBody(r: {
  version: string;
  resources: readonly Uint8Array[];
  typeUrl: string;
}): Uint8Array {
  const size = r.resources.reduce((n, x) => n + x.length + 10, 0) + 64 + r.version.length +
    r.typeUrl.length * 3;
  const out = new Uint8Array(size);
  let at = 0;
  const put = (b: ArrayLike<number>) => {
    out.set(b, at);
    at += b.length;
  };
  put(new Writer().string(1, r.version).parts);
  for (const res of r.resources) {
    put(new Writer().key(2, res.length).parts);
    put(res);
  }
  put(new Writer().string(4, r.typeUrl).parts);
  return out.slice(0, at);
}

/** `body` (`discoveryResponseBody`) with its `nonce` field, gRPC-framed: what a stream is sent. */
export function framedWithNonce(body: Uint8Array, nonce: string): Uint8Array {
  const tail = new Writer().string(5, nonce).parts;
  const out = new Uint8Array(5 + body.length + tail.length);
  new DataView(out.buffer).setUint32(1, body.length + tail.length);
  out.set(body, 5);
  out.set(tail, 5 + body.length);
  return out;
}

/** `DiscoveryResponse{version_info, resources, type_url, nonce}`; `resources` already `Any`s. */
export function encodeDiscoveryResponse(r: {
  version: string;
  resources: readonly Uint8Array[];
  typeUrl: string;
  nonce: string;
}): Uint8Array {
  return framedWithNonce(discoveryResponseBody(r), r.nonce).slice(5);
}

/** What the server reads of a `DiscoveryRequest`. */
export interface DiscoveryRequest {
  /** The version the engine last loaded (ACKed); empty before any. */
  versionInfo: string;
  /** The node's id (the engine's CONFIG_GRPC_XDS_NODE_ID); empty when not sent. */
  nodeId: string;
  typeUrl: string;
  /** The nonce of the response this answers; empty on a stream's first request. */
  responseNonce: string;
  /** Present on a NACK: the engine's error. */
  errorDetail?: { code: number; message: string };
}

/** A message that cannot be read as its type. */
export class ProtoError extends Error {}

/** A decoder of one message's fields. */
class Reader {
  #at = 0;
  constructor(readonly b: Uint8Array) {}

  get more(): boolean {
    return this.#at < this.b.length;
  }

  varint(): number {
    let v = 0;
    for (let scale = 1; scale <= 2 ** 63; scale *= 128) {
      if (this.#at >= this.b.length) throw new ProtoError("a varint runs past the end");
      const x = this.b[this.#at++];
      v += (x & 127) * scale;
      if (x < 128) return v;
    }
    throw new ProtoError("a varint longer than 10 bytes");
  }

  /** The next field: its number, wire type and, for wire type 2, its bytes; others skipped. */
  field(): { no: number; type: number; bytes?: Uint8Array; value?: number } {
    const key = this.varint();
    const no = Math.floor(key / 8);
    const type = key % 8;
    if (no === 0) throw new ProtoError("field number 0");
    switch (type) {
      case 0:
        return { no, type, value: this.varint() };
      case 1:
        return { no, type, bytes: this.#take(8) };
      case 2:
        return { no, type, bytes: this.#take(this.varint()) };
      case 5:
        return { no, type, bytes: this.#take(4) };
      default:
        throw new ProtoError(`wire type ${type} (field ${no})`);
    }
  }

  #take(n: number): Uint8Array {
    if (this.#at + n > this.b.length) throw new ProtoError("a field runs past the end");
    const out = this.b.subarray(this.#at, this.#at + n);
    this.#at += n;
    return out;
  }
}

function text(f: { type: number; bytes?: Uint8Array }, what: string): string {
  if (f.type !== 2 || f.bytes === undefined) throw new ProtoError(`${what}: not length-delimited`);
  try {
    return dec.decode(f.bytes);
  } catch {
    throw new ProtoError(`${what}: not UTF-8`);
  }
}

/** Each field of `b` in order, to `on`. */
function eachField(
  b: Uint8Array,
  on: (f: { no: number; type: number; bytes?: Uint8Array; value?: number }) => void,
): void {
  const r = new Reader(b);
  while (r.more) on(r.field());
}

/** A `DiscoveryRequest`; throws ProtoError when it cannot be read as one. */
export function decodeDiscoveryRequest(b: Uint8Array): DiscoveryRequest {
  const out: DiscoveryRequest = { versionInfo: "", nodeId: "", typeUrl: "", responseNonce: "" };
  eachField(b, (f) => {
    if (f.no === 1) out.versionInfo = text(f, "version_info");
    else if (f.no === 2) {
      if (f.type !== 2 || !f.bytes) throw new ProtoError("node: not a message");
      eachField(f.bytes, (n) => {
        if (n.no === 1) out.nodeId = text(n, "node.id");
      });
    } else if (f.no === 4) out.typeUrl = text(f, "type_url");
    else if (f.no === 5) out.responseNonce = text(f, "response_nonce");
    else if (f.no === 6) {
      if (f.type !== 2 || !f.bytes) throw new ProtoError("error_detail: not a message");
      const detail = { code: 0, message: "" };
      eachField(f.bytes, (s) => {
        if (s.no === 1 && s.type === 0) detail.code = s.value ?? 0;
        else if (s.no === 2) detail.message = text(s, "error_detail.message");
      });
      out.errorDetail = detail;
    }
  });
  return out;
}

/**
 * `DiscoveryRequest{version_info, node{id}, type_url, response_nonce, error_detail{message}}`: what
 * an engine sends (go-control-plane's sotw client), for tests that speak as one.
 */
export function encodeDiscoveryRequest(r: Partial<DiscoveryRequest>): Uint8Array {
  const w = new Writer().string(1, r.versionInfo);
  if (r.nodeId) w.bytes(2, new Writer().string(1, r.nodeId).done());
  w.string(4, r.typeUrl).string(5, r.responseNonce);
  if (r.errorDetail) {
    w.bytes(6, new Writer().uint(1, r.errorDetail.code).string(2, r.errorDetail.message).done());
  }
  return w.done();
}

/**
 * What `decodeDiscoveryResponse` reads: the response's fields, and each resource's type and
 * bytes. For tests and tools that speak as an engine.
 */
export interface DiscoveryResponse {
  versionInfo: string;
  resources: { typeUrl: string; value: Uint8Array }[];
  typeUrl: string;
  nonce: string;
}

/** A `DiscoveryResponse`; throws ProtoError when it cannot be read as one. */
export function decodeDiscoveryResponse(b: Uint8Array): DiscoveryResponse {
  const out: DiscoveryResponse = { versionInfo: "", resources: [], typeUrl: "", nonce: "" };
  eachField(b, (f) => {
    if (f.no === 1) out.versionInfo = text(f, "version_info");
    else if (f.no === 2) {
      if (f.type !== 2 || !f.bytes) throw new ProtoError("resources: not a message");
      const any: { typeUrl: string; value: Uint8Array } = { typeUrl: "", value: new Uint8Array() };
      eachField(f.bytes, (a) => {
        if (a.no === 1) any.typeUrl = text(a, "Any.type_url");
        else if (a.no === 2 && a.bytes) any.value = a.bytes;
      });
      out.resources.push(any);
    } else if (f.no === 4) out.typeUrl = text(f, "type_url");
    else if (f.no === 5) out.nonce = text(f, "nonce");
  });
  return out;
}

/** A `RateLimitConfig` read back into its JSON form (the inverse of `encodeRateLimitConfig`). */
export function decodeRateLimitConfig(b: Uint8Array): EngineDomainConfig & { name: string } {
  const units = Object.fromEntries(Object.entries(UNIT_NUMBER).map(([u, n]) => [n, u]));
  const descriptor = (bytes: Uint8Array): EngineDescriptor => {
    const d: EngineDescriptor = { key: "" };
    eachField(bytes, (f) => {
      if (f.no === 1) d.key = text(f, "key");
      else if (f.no === 2) d.value = text(f, "value");
      else if (f.no === 3 && f.bytes) {
        const limit = { unit: "", requestsPerUnit: 0 };
        eachField(f.bytes, (p) => {
          if (p.no === 1) limit.unit = units[p.value ?? 0] ?? `UNIT_${p.value}`;
          else if (p.no === 2) limit.requestsPerUnit = p.value ?? 0;
        });
        d.rateLimit = { unit: limit.unit as EngineUnit, requestsPerUnit: limit.requestsPerUnit };
      } else if (f.no === 4 && f.bytes) (d.descriptors ??= []).push(descriptor(f.bytes));
      else if (f.no === 5) d.shadowMode = f.value === 1;
    });
    return d;
  };
  const out = { name: "", domain: "", descriptors: [] as EngineDescriptor[] };
  eachField(b, (f) => {
    if (f.no === 1) out.name = text(f, "name");
    else if (f.no === 2) out.domain = text(f, "domain");
    else if (f.no === 3 && f.bytes) out.descriptors.push(descriptor(f.bytes));
  });
  return out;
}

/** gRPC's frame of one message: flag 0 (not compressed), its length (4 bytes, big-endian), it. */
export function grpcFrame(message: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + message.length);
  new DataView(out.buffer).setUint32(1, message.length);
  out.set(message, 5);
  return out;
}

/**
 * Splits gRPC frames out of a byte stream as it arrives: `push` each chunk, get the whole
 * messages it completes. A compressed frame (the server offers no compression) or one over
 * `maxMessage` bytes is a ProtoError.
 */
export class GrpcDeframer {
  #buf = new Uint8Array(0);
  constructor(readonly maxMessage = 4 * 1024 * 1024) {}

  push(chunk: Uint8Array): Uint8Array[] {
    const joined = new Uint8Array(this.#buf.length + chunk.length);
    joined.set(this.#buf);
    joined.set(chunk, this.#buf.length);
    const out: Uint8Array[] = [];
    let at = 0;
    while (joined.length - at >= 5) {
      if (joined[at] !== 0) throw new ProtoError(`gRPC frame flag ${joined[at]}: compressed`);
      const len = new DataView(joined.buffer, joined.byteOffset + at + 1, 4).getUint32(0);
      if (len > this.maxMessage) throw new ProtoError(`gRPC message of ${len} bytes`);
      if (joined.length - at - 5 < len) break;
      out.push(joined.slice(at + 5, at + 5 + len));
      at += 5 + len;
    }
    this.#buf = joined.slice(at);
    return out;
  }
}
