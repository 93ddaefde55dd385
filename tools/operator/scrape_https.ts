/**
 * GET /metrics from an operator that serves it over HTTPS with its self-signed certificate (any
 * address but loopback), as a Prometheus configured with `insecure_skip_verify` and a bearer token.
 */
import https from "node:https";

/**
 * What the scrape got: the status, the body, who issued the server's certificate, and the
 * Retry-After header when there is one.
 */
export interface HttpsScrape {
  status?: number;
  body: string;
  issuer?: string;
  retryAfter?: string;
}

/** Scrapes `https://host:port/metrics` with `token` (none when undefined), within `timeoutMs`. */
export function scrapeHttps(
  host: string,
  port: number,
  token?: string,
  timeoutMs = 5_000,
): Promise<HttpsScrape> {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host,
      port,
      path: "/metrics",
      rejectUnauthorized: false,
      timeout: timeoutMs,
      headers: token ? { authorization: `Bearer ${token}` } : {},
    }, (res) => {
      const socket = res.socket as unknown as {
        getPeerCertificate(): { issuer?: { CN?: string } };
      };
      const issuer = socket.getPeerCertificate().issuer?.CN;
      let body = "";
      res.on("data", (chunk) => (body += chunk));
      const retry = res.headers["retry-after"];
      res.on("end", () =>
        resolve({
          status: res.statusCode,
          body,
          issuer,
          ...(typeof retry === "string" ? { retryAfter: retry } : {}),
        }));
    });
    req.on("timeout", () => req.destroy(new Error(`no answer from ${host}:${port} in time`)));
    req.on("error", reject);
    req.end();
  });
}
