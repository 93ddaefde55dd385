/** A scriptable API server on 127.0.0.1 for wire tests: records requests, answers with a handler. */

/** A request as the server saw it. */
export interface Seen {
  method: string;
  /** Path and query, e.g. `/api/v1/pods?limit=5`. */
  url: string;
  path: string;
  query: URLSearchParams;
  headers: Headers;
  body: string;
}

/** Answers one request. */
export type Handler = (req: Seen) => Response | Promise<Response>;

/** A running fake server. */
export interface FakeServer {
  url: string;
  seen: Seen[];
  handler: Handler;
  close(): Promise<void>;
}

/** TLS material for an HTTPS fake server (PEM). */
export interface ServerTls {
  cert: string;
  key: string;
}

/** A JSON answer. */
export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** A metav1.Status error answer. */
export function status(
  code: number,
  reason: string,
  message: string,
  headers: Record<string, string> = {},
) {
  return json(
    { kind: "Status", apiVersion: "v1", status: "Failure", code, reason, message },
    code,
    headers,
  );
}

/** Starts a server whose handler can be swapped per test. */
export function startServer(handler: Handler, tls?: ServerTls): Promise<FakeServer> {
  return new Promise((ready) => {
    const seen: Seen[] = [];
    const server: FakeServer = {
      url: "",
      seen,
      handler,
      close: async () => {
        await httpServer.shutdown();
      },
    };
    const httpServer = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      ...(tls ?? {}),
      onListen: ({ port }) => {
        server.url = `${tls ? "https" : "http"}://127.0.0.1:${port}`;
        ready(server);
      },
    }, async (request) => {
      const url = new URL(request.url);
      const req: Seen = {
        method: request.method,
        url: url.pathname + url.search,
        path: url.pathname,
        query: url.searchParams,
        headers: new Headers(request.headers),
        body: await request.text(),
      };
      seen.push(req);
      return server.handler(req);
    });
  });
}

/**
 * A streamed answer the test writes to line by line: `send` an event, `end` the stream, or leave it
 * open to model a stalled connection.
 */
export function streamed(): { response: Response; send(event: unknown): void; end(): void } {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    cancel() {},
  });
  const encoder = new TextEncoder();
  return {
    response: new Response(body, { headers: { "content-type": "application/json" } }),
    send: (event) => controller.enqueue(encoder.encode(JSON.stringify(event) + "\n")),
    end: () => {
      try {
        controller.close();
      } catch {
        // Already closed by a client cancel.
      }
    },
  };
}
