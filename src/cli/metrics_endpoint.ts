/**
 * /metrics, served so that only those allowed read it. On a loopback address it is plain HTTP and
 * open: only processes on the machine (in a Pod, its own containers) can connect. On any other
 * address, the default `:8080` included, it is HTTPS with a self-signed certificate made at start,
 * and each request needs a bearer token the API server authenticates and authorizes for `get` on
 * `/metrics` (AccessReview, as controller-runtime's secure metrics; tokens not seen before are
 * reviewed at most 20 at once and 5 a second, the rest answered 429 with Retry-After).
 */
import {
  AccessReview,
  type Clock,
  type Cluster,
  type Logger,
  type Metrics,
  METRICS_CONTENT_TYPE,
} from "../runtime/mod.ts";
import { type Endpoint, isLoopback, parseListenAddr, serveRoutes, text } from "./run_http.ts";
import { selfSignedCert } from "./self_signed.ts";

/** What serving /metrics needs. */
export interface MetricsEndpointOptions {
  /** `--metrics-addr`; "0" serves nothing. */
  addr: string;
  /** What /metrics shows. */
  metrics: Metrics;
  /** Where TokenReviews and SubjectAccessReviews go. */
  cluster: Cluster;
  clock: Clock;
  log: Logger;
}

/** The /metrics answer: the metrics, with the process's memory as it is now. */
function render(metrics: Metrics): Response {
  const m = Deno.memoryUsage();
  metrics.memory.set({ kind: "rss" }, m.rss);
  metrics.memory.set({ kind: "heap_used" }, m.heapUsed);
  metrics.memory.set({ kind: "heap_total" }, m.heapTotal);
  metrics.memory.set({ kind: "external" }, m.external);
  return text(200, metrics.render(), METRICS_CONTENT_TYPE);
}

/** True when /metrics on `addr` needs authentication and authorization (any non-loopback address). */
export function metricsReviewed(addr: string): boolean {
  return addr !== "0" && !isLoopback(parseListenAddr(addr).hostname);
}

/** Serves /metrics on `opts.addr` as the module's rules say; undefined when addr is "0". */
export async function serveMetrics(opts: MetricsEndpointOptions): Promise<Endpoint | undefined> {
  if (!metricsReviewed(opts.addr)) {
    return serveRoutes(
      "metrics",
      opts.addr,
      { "/metrics": () => render(opts.metrics) },
      opts.log,
      undefined,
      { access: "open: loopback only" },
    );
  }
  const access = new AccessReview(opts.cluster, opts.clock);
  // A flood of new tokens is worth a warning, but one a minute, with the count since the last.
  let floodWarnedAt = Number.NEGATIVE_INFINITY;
  let floodRefused = 0;
  const guarded = async (req: Request) => {
    const url = new URL(req.url);
    const decision = await access.decide(
      req.headers.get("authorization"),
      req.method,
      url.pathname,
    );
    if (decision.status === 200) return render(opts.metrics);
    // A refused scraper is routine; an API server that cannot decide is worth a warning.
    if (decision.status === 429) {
      floodRefused++;
      if (opts.clock.now() - floodWarnedAt >= 60_000) {
        opts.log.warn("metrics requests refused: too many new bearer tokens", {
          status: 429,
          refused: floodRefused,
          reason: decision.message,
        });
        floodWarnedAt = opts.clock.now();
        floodRefused = 0;
      }
    } else {
      opts.log[decision.status === 500 ? "warn" : "debug"]("metrics request refused", {
        status: decision.status,
        reason: decision.message,
      });
    }
    const refused = text(decision.status, `${decision.message}\n`);
    if (decision.retryAfterSeconds !== undefined) {
      refused.headers.set("retry-after", String(decision.retryAfterSeconds));
    }
    return refused;
  };
  const tls = await selfSignedCert("platform-operator", ["localhost"]);
  return serveRoutes("metrics", opts.addr, { "/metrics": guarded }, opts.log, tls, {
    access: "bearer token: TokenReview, SubjectAccessReview get /metrics",
  });
}
