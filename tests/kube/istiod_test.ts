/**
 * The istiod client against a loopback server that answers as istiod's debug endpoint does, and
 * as it fails: every failure is an answer with a reason, never a throw.
 */
import assert from "node:assert/strict";
import { istiodClient } from "../../src/kube/istiod.ts";
import { bearerToken, type Credentials } from "../../src/kube/credentials.ts";
import { LISTENER_TYPE, ROUTE_TYPE } from "../../src/api/istiod.ts";

const NONCE = "2026-11-28T11:00:00Z/17" + "0123456789abcdef0123456789abcdef0123".slice(0, 36);

/** One entry as istiod's Syncz writes it (pilot/pkg/xds/debug.go SyncStatus). */
const ENTRY = {
  cluster_id: "Kubernetes",
  proxy: "demo-0.apps",
  proxy_type: "sidecar",
  istio_version: "1.31.0",
  listener_sent: NONCE,
  listener_acked: NONCE,
  route_sent: NONCE,
  route_acked: NONCE,
  resources: {
    [LISTENER_TYPE]: { sent: NONCE, acked: NONCE, sentTime: "2026-11-28T11:00:00.5Z" },
    [ROUTE_TYPE]: { sent: NONCE, acked: NONCE, sentTime: "2026-11-28T11:00:00.5Z" },
  },
};

async function serving(
  handler: (req: Request) => Response | Promise<Response>,
  body: (url: string, seen: { path: string; authorization: string | null }[]) => Promise<void>,
): Promise<void> {
  const seen: { path: string; authorization: string | null }[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    seen.push({ path: new URL(req.url).pathname, authorization: req.headers.get("authorization") });
    return handler(req);
  });
  try {
    await body(`http://127.0.0.1:${server.addr.port}`, seen);
  } finally {
    await server.shutdown();
  }
}

Deno.test("syncz: the proxies istiod lists, asked with the bearer token", async () => {
  await serving(() => Response.json([ENTRY, 7]), async (url, seen) => {
    const answer = await istiodClient({ url, credentials: bearerToken("t0k") }).syncz();
    assert.ok(answer.ok);
    assert.equal(answer.value.proxies.length, 1);
    assert.equal(answer.value.skipped, 1);
    assert.equal(answer.value.proxies[0].id, "demo-0.apps");
    assert.equal(answer.value.proxies[0].listeners.acked, NONCE);
    assert.deepEqual(seen, [{ path: "/debug/syncz", authorization: "Bearer t0k" }]);
  });
});

Deno.test("syncz: 401 and 403 are reasons of their own; a 401 drops the cached token", async () => {
  let invalidated = 0;
  const creds: Credentials = {
    headers: () => Promise.resolve({ authorization: "Bearer x" }),
    invalidate: () => (invalidated++, true),
  };
  await serving(() => new Response("", { status: 401 }), async (url) => {
    const a = await istiodClient({ url, credentials: creds }).syncz();
    assert.ok(!a.ok);
    assert.equal(a.reason, "Unauthenticated");
    assert.match(a.message, /istio-ca/);
    assert.equal(invalidated, 1);
  });
  await serving(() => new Response("", { status: 403 }), async (url) => {
    const a = await istiodClient({ url, credentials: creds }).syncz();
    assert.ok(!a.ok);
    assert.equal(a.reason, "Forbidden");
    assert.match(a.message, /DEBUG_ENDPOINT_AUTH_ALLOWED_NAMESPACES/);
  });
});

Deno.test("syncz: a 500, a body that is not JSON, and one over the bound are bad answers", async () => {
  const cases: [Response, RegExp][] = [
    [new Response("boom", { status: 500 }), /HTTP 500/],
    [new Response("<html>"), /not JSON/],
    [new Response("[" + " ".repeat(2048) + "]"), /larger than 1024 bytes/],
  ];
  for (const [res, message] of cases) {
    await serving(() => res, async (url) => {
      const a = await istiodClient({ url, credentials: bearerToken("t"), maxBytes: 1024 })
        .syncz();
      assert.ok(!a.ok);
      assert.equal(a.reason, "BadAnswer");
      assert.match(a.message, message);
    });
  }
});

Deno.test("syncz: nobody listening, and an answer that never comes, are Unreachable", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const refused = await istiodClient({
    url: `http://127.0.0.1:${port}`,
    credentials: bearerToken("t"),
  })
    .syncz();
  assert.ok(!refused.ok);
  assert.equal(refused.reason, "Unreachable");

  let release = () => {};
  const held = new Promise<void>((r) => release = r);
  await serving(async () => {
    await held;
    return Response.json([]);
  }, async (url) => {
    const a = await istiodClient({ url, credentials: bearerToken("t"), timeoutMs: 200 }).syncz();
    assert.ok(!a.ok);
    assert.equal(a.reason, "Unreachable");
    assert.match(a.message, /no answer in 200 ms/);
    release();
  });
});

Deno.test("listenersAndRoutes: the proxy's LDS and RDS dump; 404 is NotFound with istiod's words", async () => {
  const seen: string[] = [];
  await serving((req) => {
    const u = new URL(req.url);
    seen.push(`${u.pathname}?${u.searchParams}`);
    return u.searchParams.get("proxyID") === "web.v2-1.apps"
      ? Response.json({ configs: [] })
      : new Response("Proxy not connected to this Pilot instance.\n", { status: 404 });
  }, async (url) => {
    const client = istiodClient({ url, credentials: bearerToken("t") });
    assert.deepEqual(await client.listenersAndRoutes("web.v2-1.apps"), {
      ok: true,
      value: { configs: [] },
    });
    const gone = await client.listenersAndRoutes("gone.apps");
    assert.ok(!gone.ok);
    assert.equal(gone.reason, "NotFound");
    assert.match(gone.message, /404, Proxy not connected to this Pilot instance\.$/);
  });
  assert.deepEqual(seen, [
    "/debug/config_dump?proxyID=web.v2-1.apps&types=lds%2Crds",
    "/debug/config_dump?proxyID=gone.apps&types=lds%2Crds",
  ]);
});

Deno.test("a token that cannot be read is Unauthenticated, saying why, and nothing is sent", async () => {
  let asked = 0;
  await serving(() => (asked++, Response.json([])), async (url) => {
    const { TokenFile } = await import("../../src/kube/credentials.ts");
    const a = await istiodClient({ url, credentials: new TokenFile("/nonexistent/istiod/token") })
      .syncz();
    assert.ok(!a.ok);
    assert.equal(a.reason, "Unauthenticated");
    assert.match(a.message, /no token to show istiod/);
  });
  assert.equal(asked, 0);
});
