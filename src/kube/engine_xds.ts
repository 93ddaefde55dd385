/**
 * The operator as the rate limit engines' xDS management server (docs/global-engine.md, "How the
 * configuration reaches the engine"): every engine (envoyproxy/ratelimit with
 * CONFIG_TYPE=GRPC_XDS_SOTW) opens one ADS stream, `envoy.service.discovery.v3
 * .AggregatedDiscoveryService/StreamAggregatedResources`, over HTTP/2 (`node:http2`), cleartext or,
 * with `tls`, TLS with the platform team's certificate and optionally a client certificate
 * required of each engine (engine_xds_tls.ts), and is served the snapshot: one `RateLimitConfig`
 * resource per domain (engine_proto.ts).
 *
 * State of the world, as the engine's client expects it (go-control-plane pkg/client/sotw/v3
 * client.go, used by the engine's src/provider/xds_grpc_sotw_provider.go): the first request of
 * a stream is answered with the current snapshot (after a reconnect it carries the version and
 * nonce of the previous stream, which say nothing of this one); each later request answers the
 * response whose nonce it carries: an ACK (no `error_detail`; `version_info` is then that
 * response's version) or a NACK (`error_detail.message` the engine's error; the engine keeps its
 * previous configuration). A new snapshot is pushed on every open stream at once, or, where the
 * engine has not answered the last response yet, as soon as it does (the newest only: the engine
 * loads one response at a time); an ACK or NACK brings nothing more unless a newer snapshot exists. The engine loads a response's resources as
 * one set and refuses the whole set for one bad domain, so only domains that pass
 * `checkEngineDomain` are sent; a domain that fails keeps the configuration last sent for it by
 * this server, if any.
 *
 * `serveEngineConfig` runs it from the operator's cache of EnvoyFilters: their
 * ENGINE_DOMAIN_ANNOTATIONs are the snapshot (engine_config.ts `engineDomainSources`), each read
 * again only when its text changed; one that cannot be read keeps its domain's last good
 * configuration, as one that fails the check does.
 */
import http2 from "node:http2";
import { createHash } from "node:crypto";
import type { KubeObject } from "../api/object.ts";
import { ENGINE_CONFIG_TYPE, ENGINE_XDS } from "../api/global_engine.ts";
import {
  checkEngineDomain,
  type DomainSource,
  type EngineDomainConfig,
  engineDomainSources,
} from "../reconcile/ratelimit/engine_config.ts";
import { type Clock, Counter, Gauge, type Logger, type Metrics } from "../runtime/mod.ts";
import {
  decodeDiscoveryRequest,
  type DiscoveryRequest,
  discoveryResponseBody,
  engineResource,
  framedWithNonce,
  GrpcDeframer,
} from "./engine_proto.ts";
import {
  readXdsTls,
  stampOf,
  type XdsServingFiles,
  type XdsTlsMaterial,
} from "./engine_xds_tls.ts";

export { type XdsServingFiles, XdsTlsError } from "./engine_xds_tls.ts";

/** The ADS method's path. */
export const ADS_PATH =
  "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources";

/** gRPC status codes used here. */
const GRPC = { OK: 0, INVALID_ARGUMENT: 3, UNIMPLEMENTED: 12, UNAVAILABLE: 14 };

/** What one engine's stream says of it: who, and what it last loaded or refused. */
export interface EngineStream {
  /** This server's number for the stream. */
  id: number;
  /** The engine's node id (CONFIG_GRPC_XDS_NODE_ID; the deployment sets the Pod's name). */
  node: string;
  /** The peer's address and port. */
  address: string;
  /** The subject of the client certificate it showed (TLS with a client CA); absent without. */
  client?: string;
  /** When the stream opened (ms since the epoch). */
  openedAt: number;
  /** The version last sent on it, if any. */
  sent?: string;
  /** The version it last ACKed on this stream (it loaded that snapshot), and when. */
  acked?: string;
  ackedAt?: number;
  /** The last NACK on this stream: the version refused, the engine's error, when. */
  nacked?: { version: string; error: string; at: number };
}

/** A domain left out of the snapshot, and why. */
export interface RefusedDomain {
  domain: string;
  problems: string[];
  /** True when the configuration last sent for it is sent instead. */
  keptLast: boolean;
}

/** Settings of {@link EngineXdsServer}. */
export interface EngineXdsOptions {
  /** Port to listen on; 0 for any free one. Default ENGINE_XDS.port. */
  port?: number;
  /** Address to listen on; default every address, IPv4 and IPv6 (`::`, dual-stack). */
  hostname?: string;
  log: Logger;
  /** Where its counters go (see `EngineXdsMetrics`); none when absent. */
  metrics?: Metrics;
  /** Milliseconds since the epoch; default Date.now. */
  now?: () => number;
  /** Checks a domain before it is sent; default `checkEngineDomain` (tests may bypass it). */
  check?: (config: EngineDomainConfig) => string[];
  /** How often each connection is pinged to find peers gone without a word; default 30 s. */
  pingMs?: number;
  /** Serve TLS from these files (looked at again every `reloadMs`, default 10 s); none: cleartext. */
  tls?: XdsServingFiles & { reloadMs?: number };
  /**
   * Called when an engine has loaded a version it was sent (its ACK): what it holds changed, so
   * whoever reads the engines back may look now rather than at its next tick.
   */
  onLoaded?: (version: string) => void;
}

/** The server's metrics. */
class EngineXdsMetrics {
  readonly replies = new Counter(
    "platform_operator_engine_config_replies_total",
    "Replies of rate limit engines to the configuration the operator sent, by result (ack, nack).",
  );
  readonly streams = new Gauge(
    "platform_operator_engine_config_streams",
    "Rate limit engines' open xDS streams to this operator replica.",
  );
  readonly domains = new Gauge(
    "platform_operator_engine_config_domains",
    "Domains in the rate limit engines' configuration this replica serves, by state (sent, refused).",
  );
  readonly pushes = new Counter(
    "platform_operator_engine_config_pushes_total",
    "Responses sent to rate limit engines (snapshots pushed or first answers).",
  );

  register(m: Metrics): void {
    for (const f of [this.replies, this.streams, this.domains, this.pushes]) m.add(f);
  }
}

/** One engine's stream. */
interface Stream {
  info: EngineStream;
  http: http2.ServerHttp2Stream;
  /** The response sent and not answered yet: its nonce and version. */
  inFlight?: { nonce: string; version: string };
  nonce: number;
  /** True once its first request has come. */
  started: boolean;
  /** The gRPC status its trailers will carry. */
  trailers: { status: number; message: string };
}

/** The current snapshot: its version and each domain's resource. */
interface Snapshot {
  version: string;
  /** Its DiscoveryResponse but for the nonce (`discoveryResponseBody`). */
  body: Uint8Array;
}

/**
 * What is kept of a domain between snapshots: the text it was last given with, that text's
 * problems, and what is sent for it (that text's configuration, or when it has problems the last
 * good one's): its digest and resource.
 */
interface Prepared {
  text: string;
  problems: string[];
  good?: { digest: string; resource: Uint8Array };
}

/**
 * The engines' xDS server: `start`, then `setSnapshot` whenever the domains change; `streams`
 * tells what each connected engine last loaded or refused.
 */
export class EngineXdsServer {
  readonly #o: EngineXdsOptions;
  readonly #log: Logger;
  readonly #metrics: EngineXdsMetrics;
  readonly #check: (config: EngineDomainConfig) => string[];
  readonly #now: () => number;
  #server?: http2.Http2Server | http2.Http2SecureServer;
  /** The TLS material served to new connections, and the stamp of files last refused. */
  #tls?: XdsTlsMaterial;
  #tlsRefused?: string;
  #tlsTimer?: ReturnType<typeof setInterval>;
  /** Handshakes refused since the last one logged, and when that was. */
  #handshakes = { refused: 0, loggedAt: -Infinity };
  readonly #sessions = new Set<http2.ServerHttp2Session>();
  readonly #streams = new Map<number, Stream>();
  #nextId = 0;
  #snapshot?: Snapshot;
  /** Each domain of the last snapshot, as prepared (kept for a domain that turns bad). */
  #domains = new Map<string, Prepared>();
  #refused: RefusedDomain[] = [];
  #pinger?: ReturnType<typeof setInterval>;
  #address?: { hostname: string; port: number };

  constructor(o: EngineXdsOptions) {
    this.#o = o;
    this.#log = o.log;
    this.#metrics = new EngineXdsMetrics();
    if (o.metrics) this.#metrics.register(o.metrics);
    this.#check = o.check ?? checkEngineDomain;
    this.#now = o.now ?? Date.now;
  }

  /** Where it listens, once started. */
  get address(): { hostname: string; port: number } | undefined {
    return this.#address;
  }

  /** The version served now, if a snapshot was set. */
  get version(): string | undefined {
    return this.#snapshot?.version;
  }

  /** The domains of the last `setSnapshot` left out, and why. */
  refused(): readonly RefusedDomain[] {
    return this.#refused;
  }

  /** The serving certificate's subject, names and end, with TLS. */
  get certificate(): { subject: string; names: string; notAfter: string } | undefined {
    const t = this.#tls;
    return t && { subject: t.subject, names: t.names, notAfter: t.notAfter };
  }

  /**
   * Listens; resolves once it does (rejects when it cannot, e.g. the port is taken, or with
   * XdsTlsError when the TLS files cannot serve).
   */
  async start(): Promise<void> {
    const tls = this.#o.tls;
    this.#tls = tls ? await readXdsTls(tls, this.#now()) : undefined;
    const server = this.#tls
      ? http2.createSecureServer(this.#secureOptions(this.#tls))
      : http2.createServer();
    this.#server = server;
    if (this.#tls) {
      for (const w of this.#tls.warnings) this.#log.warn(`the engines' xDS certificate: ${w}`);
      server.on(
        "tlsClientError",
        (err: Error, socket: { remoteAddress?: string }) =>
          this.#refusedHandshake(err, socket.remoteAddress ?? ""),
      );
    }
    server.on("session", (session: http2.ServerHttp2Session) => {
      this.#sessions.add(session);
      session.on("close", () => this.#sessions.delete(session));
      session.on(
        "error",
        (err: Error) => this.#log.debug("xDS connection error", { error: err.message }),
      );
    });
    server.on("stream", (s, headers) => this.#onStream(s as http2.ServerHttp2Stream, headers));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      const listening = () => {
        server.off("error", reject);
        server.on(
          "error",
          (err: Error) => this.#log.error("xDS server error", { error: err.message }),
        );
        resolve();
      };
      const port = this.#o.port ?? ENGINE_XDS.port;
      if (this.#o.hostname === undefined) server.listen(port, listening);
      else server.listen(port, this.#o.hostname, listening);
    });
    const addr = server.address();
    if (addr !== null && typeof addr === "object") {
      this.#address = { hostname: addr.address, port: addr.port };
    }
    const pingMs = this.#o.pingMs ?? 30_000;
    this.#pinger = setInterval(() => this.#pingAll(), pingMs);
    if (tls) {
      this.#tlsTimer = setInterval(() => void this.#reloadTls(tls), tls.reloadMs ?? 10_000);
    }
    this.#log.info("serving the rate limit engines' configuration", {
      addr: `${this.#address?.hostname}:${this.#address?.port}`,
      tls: this.#tls
        ? `${
          this.#tls.ca
            ? "mutual TLS (engines need a client certificate of " + tls?.clientCaFile + ")"
            : "TLS"
        }, certificate ${this.#tls.subject} (${this.#tls.names}), valid until ${this.#tls.notAfter}`
        : "none (cleartext)",
    });
  }

  /** What a secure context is made of; with a client CA, a certificate it signed is required. */
  #secureOptions(m: XdsTlsMaterial): http2.SecureServerOptions {
    return {
      cert: m.cert,
      key: m.key,
      ...(m.ca !== undefined ? { ca: m.ca, requestCert: true, rejectUnauthorized: true } : {}),
      ALPNProtocols: ["h2"],
    };
  }

  /**
   * Reads the TLS files again when their stamps changed: good ones are served to new connections
   * (open streams go on with the certificate they began with); bad ones are logged once and the
   * certificate served before stays.
   */
  async #reloadTls(files: XdsServingFiles): Promise<void> {
    const server = this.#server;
    const current = this.#tls;
    if (!server || !current || !("setSecureContext" in server)) return;
    const stamp = await stampOf(files);
    if (stamp === current.stamp || stamp === this.#tlsRefused) return;
    let next: XdsTlsMaterial;
    try {
      next = await readXdsTls(files, this.#now());
    } catch (err) {
      this.#tlsRefused = stamp;
      this.#log.error(
        `the engines' xDS TLS files changed but cannot serve: ${
          (err as Error).message
        }; the certificate served before stays (${current.subject}, valid until ${current.notAfter})`,
      );
      return;
    }
    this.#tlsRefused = undefined;
    if (this.#server !== server) return;
    this.#tls = next;
    if (next.cert === current.cert && next.key === current.key && next.ca === current.ca) return;
    server.setSecureContext(this.#secureOptions(next));
    for (const w of next.warnings) this.#log.warn(`the engines' xDS certificate: ${w}`);
    this.#log.info("the engines' xDS TLS files changed: new connections get the new ones", {
      certificate: next.subject,
      names: next.names,
      notAfter: next.notAfter,
      clientCa: next.ca !== current.ca ? "changed" : "same",
    });
  }

  /**
   * A connection refused in its TLS handshake (no or a wrong client certificate, cleartext, a
   * client that does not trust the server): logged at most every 30 s, with how many.
   */
  #refusedHandshake(err: Error, address: string): void {
    this.#handshakes.refused++;
    const now = this.#now();
    if (now - this.#handshakes.loggedAt < 30_000) return;
    this.#log.warn(
      "a connection to the engines' xDS port was refused in its TLS handshake (an engine without a client certificate of --global-engine-xds-client-ca-file, or not trusting the operator's certificate, or not an engine)",
      { address, error: err.message, refused: this.#handshakes.refused },
    );
    this.#handshakes = { refused: 0, loggedAt: now };
  }

  /** Pings every connection; one that has not answered by the next round is closed. */
  #pingAll(): void {
    for (const session of this.#sessions) {
      if (session.closed || session.destroyed) continue;
      try {
        session.ping((err) => {
          if (err && !session.destroyed) {
            this.#log.debug("xDS connection did not answer a ping: closed", { error: err.message });
            session.destroy();
          }
        });
      } catch {
        // Too many pings outstanding: the peer answers none; close it.
        session.destroy();
      }
    }
  }

  /**
   * Serves `domains` from now on (`setSnapshotOf` with each configuration's JSON as its text).
   * Returns the version.
   */
  setSnapshot(domains: readonly EngineDomainConfig[]): string {
    return this.setSnapshotOf(domains.map((config) => ({
      domain: config.domain,
      text: JSON.stringify(config),
      read: () => config,
    })));
  }

  /**
   * Serves `sources` from now on: each domain whose configuration can be read and passes the
   * check (once: a domain given twice is served from its first); for one that does not, the
   * configuration last sent for it, if any. A source whose text is the one seen last for its
   * domain is not read again. The version is a digest of what is served; when it changed, it is
   * pushed on every open stream. Returns the version.
   */
  setSnapshotOf(sources: Iterable<DomainSource>): string {
    const next = new Map<string, Prepared>();
    const refused: RefusedDomain[] = [];
    for (const source of sources) {
      if (next.has(source.domain)) {
        refused.push({
          domain: source.domain,
          problems: ["the domain is given twice: the first is served"],
          keptLast: false,
        });
        continue;
      }
      const p = this.#prepare(source);
      next.set(source.domain, p);
      if (p.problems.length > 0) {
        refused.push({ domain: source.domain, problems: p.problems, keptLast: !!p.good });
      }
    }
    this.#domains = next;
    this.#refused = refused;
    const served = [...next].filter(([, p]) => p.good !== undefined)
      .sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
    const hash = createHash("sha256");
    for (const [domain, p] of served) hash.update(`${domain} ${p.good!.digest}\n`);
    this.#metrics.domains.set({ state: "sent" }, served.length);
    this.#metrics.domains.set({ state: "refused" }, refused.length);
    const version = hash.digest("hex").slice(0, 16);
    if (this.#snapshot?.version === version) return version;
    const body = discoveryResponseBody({
      version,
      resources: served.map(([, p]) => p.good!.resource),
      typeUrl: ENGINE_CONFIG_TYPE,
    });
    this.#snapshot = { version, body };
    this.#log.info("rate limit engines' configuration", {
      version,
      domains: served.length,
      refused: refused.length,
      streams: this.#streams.size,
    });
    for (const s of this.#streams.values()) if (s.started) this.#send(s);
    return version;
  }

  /**
   * A source as served: what was prepared for its domain when its text is the same (the text
   * then taken from the source, so the older copy can go), else read, checked and encoded; a
   * refusal is logged once, when its text is new.
   */
  #prepare(source: DomainSource): Prepared {
    const before = this.#domains.get(source.domain);
    if (before?.text === source.text) {
      before.text = source.text;
      return before;
    }
    const read = source.read();
    const problems = "problem" in read ? [read.problem] : this.#check(read);
    if (problems.length === 0 && !("problem" in read)) {
      const digest = createHash("sha256").update(source.text).digest("hex").slice(0, 16);
      return { text: source.text, problems, good: { digest, resource: engineResource(read) } };
    }
    const good = before?.good;
    this.#log.warn("a domain of the rate limit engines' configuration is not sent", {
      domain: source.domain,
      problems: problems.join("; "),
      kept: good ? "the configuration last sent for it" : "none",
    });
    return { text: source.text, problems, ...(good ? { good } : {}) };
  }

  /** Each open stream: the engine, and what it last ACKed or NACKed on it. */
  streams(): EngineStream[] {
    return [...this.#streams.values()].map((s) => ({
      ...s.info,
      ...(s.info.nacked ? { nacked: { ...s.info.nacked } } : {}),
    }));
  }

  /**
   * Ends every stream (gRPC UNAVAILABLE: the engines keep their configuration and dial again)
   * and stops listening.
   */
  async close(): Promise<void> {
    if (this.#pinger !== undefined) clearInterval(this.#pinger);
    this.#pinger = undefined;
    if (this.#tlsTimer !== undefined) clearInterval(this.#tlsTimer);
    this.#tlsTimer = undefined;
    for (const s of this.#streams.values()) this.#end(s, GRPC.UNAVAILABLE, "the operator stops");
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const session of this.#sessions) session.close();
    // Sessions that do not close at once (a peer that does not answer GOAWAY) are cut.
    const timer = setTimeout(() => {
      for (const session of this.#sessions) session.destroy();
    }, 1000);
    await closed;
    clearTimeout(timer);
  }

  #onStream(http: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
    http.on("error", (err: Error) => this.#log.debug("xDS stream error", { error: err.message }));
    if (headers[":path"] !== ADS_PATH) {
      http.respond({
        ":status": 200,
        "content-type": "application/grpc",
        "grpc-status": String(GRPC.UNIMPLEMENTED),
        "grpc-message": encodeURIComponent(`unknown method ${headers[":path"] ?? ""}`),
      }, { endStream: true });
      return;
    }
    http.respond({ ":status": 200, "content-type": "application/grpc" }, {
      waitForTrailers: true,
    });
    const socket = http.session?.socket;
    const client = this.#tls?.ca !== undefined ? clientSubject(socket) : undefined;
    const stream: Stream = {
      info: {
        id: ++this.#nextId,
        node: "",
        address: socket ? `${socket.remoteAddress}:${socket.remotePort}` : "",
        ...(client ? { client } : {}),
        openedAt: this.#now(),
      },
      http,
      nonce: 0,
      started: false,
      trailers: { status: GRPC.OK, message: "" },
    };
    const trailers = stream.trailers;
    http.on("wantTrailers", () => {
      http.sendTrailers({
        "grpc-status": String(trailers.status),
        ...(trailers.message ? { "grpc-message": encodeURIComponent(trailers.message) } : {}),
      });
      // The status ends the call; a peer still sending is told so (as gRPC servers do), and the
      // stream is gone on both sides.
      setTimeout(() => {
        if (!http.closed && !http.destroyed) http.close(http2.constants.NGHTTP2_NO_ERROR);
      }, 0);
    });
    this.#streams.set(stream.info.id, stream);
    this.#metrics.streams.set({}, this.#streams.size);
    const deframer = new GrpcDeframer();
    http.on("data", (chunk: Uint8Array) => {
      try {
        for (const message of deframer.push(chunk)) {
          this.#onRequest(stream, decodeDiscoveryRequest(message));
        }
      } catch (err) {
        this.#log.warn("an engine's xDS request cannot be read: stream ended", {
          node: stream.info.node,
          address: stream.info.address,
          error: (err as Error).message,
        });
        this.#end(stream, GRPC.INVALID_ARGUMENT, (err as Error).message);
      }
    });
    // The engine closed its side: end ours.
    http.on("end", () => this.#end(stream, GRPC.OK, ""));
    http.on("close", () => {
      if (this.#streams.delete(stream.info.id)) {
        this.#metrics.streams.set({}, this.#streams.size);
        this.#log.info("an engine's xDS stream closed", {
          node: stream.info.node,
          address: stream.info.address,
          acked: stream.info.acked ?? "",
        });
      }
    });
  }

  #end(stream: Stream, status: number, message: string): void {
    const http = stream.http;
    stream.trailers.status = status;
    stream.trailers.message = message;
    if (!http.closed && !http.destroyed && http.writable) {
      try {
        http.end();
      } catch {
        http.destroy();
      }
    }
  }

  #onRequest(stream: Stream, req: DiscoveryRequest): void {
    const info = stream.info;
    if (req.nodeId !== "") info.node = req.nodeId;
    if (req.typeUrl !== "" && req.typeUrl !== ENGINE_CONFIG_TYPE) {
      this.#log.warn("an engine asked for another xDS type: not served", {
        node: info.node,
        type: req.typeUrl,
      });
      return;
    }
    if (!stream.started) {
      // A stream's first request: answered with the snapshot (or once there is one). After a
      // reconnect its version and nonce are the previous stream's.
      stream.started = true;
      this.#log.info("an engine opened its xDS stream", {
        node: info.node,
        address: info.address,
        ...(info.client ? { client: info.client } : {}),
        has: req.versionInfo,
      });
      if (this.#snapshot) this.#send(stream);
      return;
    }
    // Only the answer to the response in flight counts; one to an older nonce is stale.
    const answered = stream.inFlight?.nonce === req.responseNonce ? stream.inFlight : undefined;
    if (answered === undefined) {
      this.#log.debug("an engine answered another response than the last: ignored", {
        node: info.node,
        nonce: req.responseNonce,
      });
      return;
    }
    stream.inFlight = undefined;
    const version = answered.version;
    if (req.errorDetail) {
      const refused = version;
      info.nacked = { version: refused, error: req.errorDetail.message, at: this.#now() };
      this.#metrics.replies.inc({ result: "nack" });
      this.#log.warn("an engine refused its configuration (NACK)", {
        node: info.node,
        address: info.address,
        version: refused,
        kept: req.versionInfo,
        error: req.errorDetail.message,
      });
    } else {
      info.acked = req.versionInfo;
      info.ackedAt = this.#now();
      this.#metrics.replies.inc({ result: "ack" });
      this.#log.debug("an engine loaded its configuration (ACK)", {
        node: info.node,
        version: req.versionInfo,
      });
      try {
        this.#o.onLoaded?.(req.versionInfo);
      } catch (err) {
        this.#log.warn("reading the engines back after an ACK could not start", {
          error: (err as Error).message,
        });
      }
    }
    // An ACK or NACK brings the snapshot only when a newer one was not sent yet.
    if (this.#snapshot && this.#snapshot.version !== info.sent) this.#send(stream);
  }

  /**
   * Sends the snapshot on `stream`, unless a response is in flight there: the engine loads one
   * response at a time, so a newer snapshot waits for the answer to the last (then only the
   * newest goes out) instead of queueing every version behind a slow engine.
   */
  #send(stream: Stream): void {
    const snapshot = this.#snapshot;
    const http = stream.http;
    if (!snapshot || stream.inFlight || http.closed || http.destroyed || !http.writable) return;
    const nonce = String(++stream.nonce);
    stream.inFlight = { nonce, version: snapshot.version };
    stream.info.sent = snapshot.version;
    http.write(framedWithNonce(snapshot.body, nonce));
    this.#metrics.pushes.inc();
  }
}

/** The subject of the peer certificate of a TLS socket, e.g. `CN=ratelimit-engine`. */
function clientSubject(socket: unknown): string | undefined {
  const s = socket as { getPeerCertificate?: () => { subject?: Record<string, string> } };
  const subject = s?.getPeerCertificate?.()?.subject;
  if (!subject) return undefined;
  return Object.entries(subject).map(([k, v]) => `${k}=${v}`).join(",");
}

/** Settings of {@link serveEngineConfig}. */
export interface ServeEngineConfigOptions {
  /**
   * The operator's EnvoyFilters as its cache has them, or undefined while it has not listed them
   * (then the last snapshot stays: an empty one would take every domain from the engines). The
   * cache hands out the same list until a filter changes, so asking is free.
   */
  filters: () => readonly KubeObject[] | undefined;
  port?: number;
  hostname?: string;
  /** TLS files (see `EngineXdsOptions.tls`); none: cleartext. */
  tls?: EngineXdsOptions["tls"];
  /** See `EngineXdsOptions.onLoaded`. */
  onLoaded?: EngineXdsOptions["onLoaded"];
  log: Logger;
  metrics?: Metrics;
  clock: Clock;
  /** How often `filters` is looked at; default 100 ms. */
  pollMs?: number;
  /** Stops serving when it aborts. */
  signal: AbortSignal;
}

/** A running configuration server. */
export interface EngineConfigServing {
  server: EngineXdsServer;
  /** Resolves once serving has stopped (after `signal` aborted). */
  done: Promise<void>;
}

/**
 * Serves the rate limit engines the domains of the operator's EnvoyFilters
 * (`engineDomainSources` of `filters()`), pushing a new snapshot within `pollMs` of a change of
 * the cached filters; every operator replica may run it (a standby's cache is as warm as the
 * leader's). Rejects when it cannot listen, or with XdsTlsError when its TLS files cannot serve.
 */
export async function serveEngineConfig(o: ServeEngineConfigOptions): Promise<EngineConfigServing> {
  const log = o.log;
  const server = new EngineXdsServer({
    port: o.port,
    hostname: o.hostname,
    ...(o.tls ? { tls: o.tls } : {}),
    ...(o.onLoaded ? { onLoaded: o.onLoaded } : {}),
    log,
    metrics: o.metrics,
    now: () => o.clock.now(),
  });
  await server.start();
  const pollMs = o.pollMs ?? 100;
  const lookedAt: { list?: readonly KubeObject[] } = {};
  const look = () => {
    let list: readonly KubeObject[] | undefined;
    try {
      list = o.filters();
    } catch (err) {
      log.debug("the EnvoyFilters cannot be read yet", { error: (err as Error).message });
      return;
    }
    if (list === undefined || list === lookedAt.list) return;
    lookedAt.list = list;
    server.setSnapshotOf(engineDomainSources(list));
  };
  const done = (async () => {
    try {
      while (!o.signal.aborted) {
        look();
        await o.clock.sleep(pollMs, o.signal).catch(() => {});
      }
    } finally {
      await server.close();
    }
  })();
  return { server, done };
}
