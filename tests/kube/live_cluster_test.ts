import assert from "node:assert/strict";
import { ApiError } from "../../src/runtime/cluster.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { LiveCluster } from "../../src/kube/live_cluster.ts";
import { SMALL_BODY_BYTES } from "../../src/kube/transport.ts";
import { RESOURCES } from "../../src/api/resources.ts";
import { json, status } from "./fake_server.ts";
import {
  connectionTo,
  Deployment,
  Namespace,
  Pod,
  RateLimit,
  Serverless,
  withCluster,
} from "./helpers.ts";

const rl = (name: string, extra: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: "gateway.platform-project.io/v1alpha1",
  kind: "RateLimit",
  metadata: { name, namespace: "shop" },
  ...extra,
});

Deno.test("list builds the collection path and query, fills kind and passes managedFields through for the cache", async () => {
  await withCluster(
    () =>
      json({
        kind: "PodList",
        metadata: { resourceVersion: "42", continue: "next-page" },
        items: [{ metadata: { name: "p1", namespace: "shop", managedFields: [{ manager: "x" }] } }],
      }),
    async (cluster, server) => {
      const page = await cluster.list(Pod, {
        namespace: "shop",
        labelSelector: "app=a,tier in (x)",
        limit: 5,
      });
      assert.equal(server.seen[0].method, "GET");
      assert.equal(server.seen[0].path, "/api/v1/namespaces/shop/pods");
      assert.equal(server.seen[0].query.get("labelSelector"), "app=a,tier in (x)");
      assert.equal(server.seen[0].query.get("limit"), "5");
      assert.equal(server.seen[0].query.has("continue"), false);
      assert.equal(server.seen[0].headers.get("authorization"), "Bearer test-token");
      assert.equal(page.resourceVersion, "42");
      assert.equal(page.continue, "next-page");
      assert.equal(page.items[0].kind, "Pod");
      assert.equal(page.items[0].apiVersion, "v1");
      assert.deepEqual(page.items[0].metadata.managedFields, [{ manager: "x" }]);

      await cluster.list(RateLimit, { continue: "next-page" });
      assert.equal(
        server.seen[1].url,
        "/apis/gateway.platform-project.io/v1alpha1/ratelimits?continue=next-page",
      );
      await cluster.list(Namespace, { namespace: "ignored" });
      assert.equal(server.seen[2].url, "/api/v1/namespaces");
    },
  );
});

Deno.test("get returns the object, or undefined on 404", async () => {
  await withCluster(
    (req) =>
      req.path.endsWith("/missing")
        ? status(404, "NotFound", 'deployments.apps "missing" not found')
        : json({
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "d", managedFields: [] },
        }),
    async (cluster, server) => {
      const found = await cluster.get(Deployment, "shop", "d");
      assert.equal(server.seen[0].path, "/apis/apps/v1/namespaces/shop/deployments/d");
      assert.equal(found?.metadata.name, "d");
      assert.deepEqual(found?.metadata.managedFields, []);
      assert.equal(await cluster.get(Deployment, "shop", "missing"), undefined);
      await assert.rejects(() => cluster.get(Deployment, undefined, "d"), /namespaced/);
    },
  );
});

Deno.test("create POSTs to the collection and update PUTs the object", async () => {
  await withCluster(
    (req) => json(JSON.parse(req.body), req.method === "POST" ? 201 : 200),
    async (cluster, server) => {
      const created = await cluster.create(RateLimit, rl("a"));
      assert.equal(server.seen[0].method, "POST");
      assert.equal(
        server.seen[0].path,
        "/apis/gateway.platform-project.io/v1alpha1/namespaces/shop/ratelimits",
      );
      assert.equal(server.seen[0].headers.get("content-type"), "application/json");
      assert.equal(created.metadata.name, "a");
      await cluster.update(RateLimit, rl("a", { spec: { x: 1 } }));
      assert.equal(server.seen[1].method, "PUT");
      assert.equal(
        server.seen[1].path,
        "/apis/gateway.platform-project.io/v1alpha1/namespaces/shop/ratelimits/a",
      );
      assert.deepEqual(JSON.parse(server.seen[1].body).spec, { x: 1 });
    },
  );
});

Deno.test("apply is a server-side apply PATCH with fieldManager and force, without managedFields", async () => {
  await withCluster((req) => json(JSON.parse(req.body)), async (cluster, server) => {
    const obj = rl("a", { spec: { selectorLabels: { app: "a" } } });
    obj.metadata.managedFields = [{ manager: "old" }];
    await cluster.apply(RateLimit, obj, { fieldManager: "platform-operator", force: true });
    const req = server.seen[0];
    assert.equal(req.method, "PATCH");
    assert.equal(
      req.path,
      "/apis/gateway.platform-project.io/v1alpha1/namespaces/shop/ratelimits/a",
    );
    assert.equal(req.headers.get("content-type"), "application/apply-patch+yaml");
    assert.equal(req.query.get("fieldManager"), "platform-operator");
    assert.equal(req.query.get("force"), "true");
    const sent = JSON.parse(req.body);
    assert.deepEqual(sent.spec, { selectorLabels: { app: "a" } });
    assert.equal("managedFields" in sent.metadata, false);
    assert.ok(obj.metadata.managedFields, "the caller's object is not changed");

    await cluster.apply(RateLimit, rl("b"), { fieldManager: "m", force: false });
    assert.equal(server.seen[1].query.has("force"), false);
  });
});

Deno.test("applyStatus applies to the /status subresource", async () => {
  await withCluster((req) => json(JSON.parse(req.body)), async (cluster, server) => {
    const obj: KubeObject = {
      apiVersion: "operator.platform-project.io/v1alpha1",
      kind: "Serverless",
      metadata: { name: "default", namespace: "platform-system" },
      status: { state: "Ready", served: "True" },
    };
    const back = await cluster.applyStatus(Serverless, obj, { fieldManager: "platform-operator" });
    const req = server.seen[0];
    assert.equal(req.method, "PATCH");
    assert.equal(
      req.path,
      "/apis/operator.platform-project.io/v1alpha1/namespaces/platform-system/serverlesses/default/status",
    );
    assert.equal(req.headers.get("content-type"), "application/apply-patch+yaml");
    assert.equal(req.query.get("force"), "true");
    assert.deepEqual(JSON.parse(req.body).status, { state: "Ready", served: "True" });
    assert.equal(back.status && (back.status as { state: string }).state, "Ready");
  });
});

Deno.test("patch sends a JSON Patch", async () => {
  await withCluster(() => json(rl("a")), async (cluster, server) => {
    const ops = [
      { op: "test" as const, path: "/metadata/finalizers", value: ["f"] },
      { op: "remove" as const, path: "/metadata/finalizers/0" },
    ];
    await cluster.patch(RateLimit, "shop", "a", ops);
    assert.equal(server.seen[0].method, "PATCH");
    assert.equal(server.seen[0].headers.get("content-type"), "application/json-patch+json");
    assert.deepEqual(JSON.parse(server.seen[0].body), ops);
    assert.equal(server.seen[0].query.has("timeout"), false);
  });
});

Deno.test("every write carries its server-side timeout as a Go duration, never shortened", async () => {
  await withCluster(() => json(rl("a")), async (cluster, server) => {
    const timeoutMs = 1234.2;
    await cluster.create(RateLimit, rl("a"), { timeoutMs });
    await cluster.update(RateLimit, rl("a"), { timeoutMs });
    await cluster.apply(RateLimit, rl("a"), { fieldManager: "m", timeoutMs });
    await cluster.applyStatus(RateLimit, rl("a"), { fieldManager: "m", timeoutMs });
    await cluster.patch(RateLimit, "shop", "a", [], { timeoutMs });
    await cluster.delete(RateLimit, "shop", "a", { timeoutMs: 0.2 });
    assert.deepEqual(server.seen.map((r) => `${r.method} ${r.query.get("timeout")}`), [
      "POST 1235ms",
      "PUT 1235ms",
      "PATCH 1235ms",
      "PATCH 1235ms",
      "PATCH 1235ms",
      "DELETE 1ms",
    ]);
    assert.equal(server.seen[2].query.get("fieldManager"), "m");
  });
});

Deno.test("delete propagates in the background, sends preconditions, and is false on 404", async () => {
  await withCluster(
    (req) =>
      req.path.endsWith("/gone")
        ? status(404, "NotFound", "gone")
        : json({ kind: "Status", status: "Success" }),
    async (cluster, server) => {
      assert.equal(
        await cluster.delete(Deployment, "shop", "d", { preconditions: { uid: "u1" } }),
        true,
      );
      const req = server.seen[0];
      assert.equal(req.method, "DELETE");
      assert.equal(req.path, "/apis/apps/v1/namespaces/shop/deployments/d");
      const body = JSON.parse(req.body);
      assert.equal(body.kind, "DeleteOptions");
      assert.equal(body.propagationPolicy, "Background");
      assert.deepEqual(body.preconditions, { uid: "u1" });
      assert.equal(await cluster.delete(Deployment, "shop", "gone"), false);
      await cluster.delete(Namespace, undefined, "ns", { propagationPolicy: "Foreground" });
      assert.equal(server.seen[2].path, "/api/v1/namespaces/ns");
      assert.equal(JSON.parse(server.seen[2].body).propagationPolicy, "Foreground");
    },
  );
});

Deno.test("errors carry the code, the Status reason and message, and Retry-After", async () => {
  const answers: Record<string, Response | (() => Response)> = {
    "/c409": () => status(409, "Conflict", "the object has been modified"),
    "/c410": () => status(410, "Expired", "too old resource version"),
    "/c422": () => status(422, "Invalid", 'RateLimit "a" is invalid: spec.local: Required value'),
    "/c429": () => status(429, "TooManyRequests", "slow down", { "retry-after": "7" }),
    "/c500": () => new Response("upstream broke", { status: 500 }),
    "/c403": () => status(403, "Forbidden", 'cannot patch resource "deployments"'),
  };
  await withCluster(
    (req) => {
      const key = Object.keys(answers).find((k) => req.path.endsWith(k.slice(1)));
      const answer = key ? answers[key] : undefined;
      return typeof answer === "function" ? answer() : json({});
    },
    async (cluster) => {
      const expect = async (
        name: string,
        code: number,
        reason: string,
        message: RegExp,
        retry?: number,
      ) => {
        const err = await cluster.update(RateLimit, rl(name)).then(() => undefined, (e) => e);
        assert.ok(err instanceof ApiError, `${name}: ApiError expected`);
        assert.equal(err.code, code);
        assert.equal(err.reason, reason);
        assert.match(err.message, message);
        assert.equal(err.retryAfterSeconds, retry);
      };
      await expect("c409", 409, "Conflict", /modified/);
      await expect("c410", 410, "Expired", /too old/);
      await expect("c422", 422, "Invalid", /spec.local: Required/);
      await expect("c429", 429, "TooManyRequests", /slow down/, 7);
      await expect("c500", 500, "InternalError", /upstream broke/);
      await expect("c403", 403, "Forbidden", /cannot patch/);
    },
  );
});

Deno.test("no answer is ApiError code 0: refused connections and request timeouts", async () => {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const refused = new LiveCluster(connectionTo(`http://127.0.0.1:${port}`));
  const err = await refused.list(Pod).then(() => undefined, (e) => e);
  refused.close();
  assert.ok(err instanceof ApiError);
  assert.equal(err.code, 0);
  assert.equal(err.reason, "NetworkError");

  const hang = Promise.withResolvers<Response>();
  await withCluster(() => hang.promise, async (cluster) => {
    const err = await cluster.list(Pod).then(() => undefined, (e) => e);
    assert.ok(err instanceof ApiError);
    assert.equal(err.code, 0);
    assert.equal(err.reason, "Timeout");
    hang.resolve(json({}));
  }, { requestTimeoutMs: 100 });
});

Deno.test("reads, watches and bodies under 1 KiB share the HTTP/2-capable client; larger bodies go over HTTP/1.1", async () => {
  const made: { options: Deno.CreateHttpClientOptions; client: Deno.HttpClient }[] = [];
  const createHttpClient = (options: Deno.CreateHttpClientOptions) => {
    const client = Deno.createHttpClient(options);
    made.push({ options, client });
    return client;
  };
  const used: Deno.HttpClient[] = [];
  const realFetch = globalThis.fetch;
  globalThis.fetch =
    ((input: RequestInfo | URL, init?: RequestInit & { client?: Deno.HttpClient }) => {
      if (init?.client) used.push(init.client);
      return realFetch(input, init);
    }) as typeof fetch;
  try {
    await withCluster(() => json(rl("a")), async (cluster) => {
      assert.equal(made.length, 2);
      const [reads, bodies] = made;
      assert.equal(reads.options.http2, undefined, "HTTP/2 where the server offers it");
      assert.equal(bodies.options.http2, false);
      // A body's length in bytes decides, not its length in characters: "é" is two bytes.
      const bytes = (o: KubeObject) => new TextEncoder().encode(JSON.stringify(o)).length;
      const sized = (size: number, char: "x" | "é" = "x") => {
        const object = rl("a", { spec: { pad: "" } });
        const pad = (size - bytes(object)) / new TextEncoder().encode(char).length;
        object.spec = { pad: char.repeat(pad) };
        assert.equal(bytes(object), size);
        return object;
      };
      await cluster.get(RateLimit, "shop", "a");
      await cluster.create(RateLimit, sized(SMALL_BODY_BYTES - 1));
      await cluster.create(RateLimit, sized(SMALL_BODY_BYTES));
      await cluster.create(RateLimit, sized(SMALL_BODY_BYTES + 1, "é"));
      await cluster.apply(RateLimit, sized(4096), { fieldManager: "m" });
      await cluster.patch(RateLimit, "shop", "a", []);
      await cluster.delete(RateLimit, "shop", "a");
      assert.deepEqual(used.map((c) => c === reads.client ? "reads" : "bodies"), [
        "reads",
        "reads",
        "bodies",
        "bodies",
        "bodies",
        "reads",
        "reads",
      ]);
    }, { createHttpClient });
  } finally {
    globalThis.fetch = realFetch;
  }
});

Deno.test("a metadata-only list asks for PartialObjectMetadataList and names its items so; a plain list asks for JSON", async () => {
  const CRD = RESOURCES.CustomResourceDefinition;
  await withCluster(
    (req) =>
      json({
        kind: req.headers.get("accept")?.includes("PartialObjectMetadataList")
          ? "PartialObjectMetadataList"
          : "CustomResourceDefinitionList",
        apiVersion: "meta.k8s.io/v1",
        metadata: { resourceVersion: "7" },
        items: [{ metadata: { name: "envoyfilters.networking.istio.io", resourceVersion: "5" } }],
      }),
    async (cluster, server) => {
      const page = await cluster.list(CRD, { metadataOnly: true });
      assert.equal(
        server.seen[0].headers.get("accept"),
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
      );
      assert.equal(server.seen[0].path, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
      assert.deepEqual(
        [page.items[0].apiVersion, page.items[0].kind, page.items[0].metadata.name],
        ["meta.k8s.io/v1", "PartialObjectMetadata", "envoyfilters.networking.istio.io"],
      );
      const plain = await cluster.list(CRD);
      assert.equal(server.seen[1].headers.get("accept"), "application/json");
      assert.equal(plain.items[0].kind, "CustomResourceDefinition");
    },
  );
});

Deno.test("a metadata-only watch asks for PartialObjectMetadata", async () => {
  await withCluster(() => {
    const body = JSON.stringify({
      type: "ADDED",
      object: {
        apiVersion: "meta.k8s.io/v1",
        kind: "PartialObjectMetadata",
        metadata: { name: "x.g", resourceVersion: "3" },
      },
    }) + "\n";
    return new Response(body, { headers: { "content-type": "application/json" } });
  }, async (cluster, server) => {
    const events = [];
    for await (
      const e of cluster.watch(
        RESOURCES.CustomResourceDefinition,
        { resourceVersion: "1", metadataOnly: true },
        new AbortController().signal,
      )
    ) events.push(e);
    assert.equal(
      server.seen[0].headers.get("accept"),
      "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
    );
    assert.deepEqual(events.map((e) => [e.type, e.object.kind, e.object.metadata.name]), [
      ["ADDED", "PartialObjectMetadata", "x.g"],
    ]);
  });
});

Deno.test("requests share one deadline timer; a hung request after many answered still times out", async () => {
  const realSetTimeout = globalThis.setTimeout;
  let timers = 0;
  let hang: PromiseWithResolvers<Response> | undefined;
  await withCluster(() => hang ? hang.promise : json(rl("a")), async (cluster) => {
    globalThis.setTimeout = ((fn: () => void, ms?: number) => {
      timers++;
      return realSetTimeout(fn, ms);
    }) as typeof setTimeout;
    try {
      const started = performance.now();
      for (let i = 0; i < 200; i++) await cluster.get(RateLimit, "shop", "a");
      // One timer a deadline period at most (a slow machine takes more periods), not one a request.
      const periods = Math.ceil((performance.now() - started) / 300);
      assert.ok(timers <= periods + 1, `${timers} timers for 200 requests over ${periods} periods`);
      hang = Promise.withResolvers<Response>();
      const sent = performance.now();
      const err = await cluster.get(RateLimit, "shop", "a").then(() => undefined, (e) => e);
      assert.ok(err instanceof ApiError && err.reason === "Timeout", `${err}`);
      assert.ok(performance.now() - sent >= 250, "not before its own deadline");
      hang.resolve(json({}));
    } finally {
      globalThis.setTimeout = realSetTimeout;
    }
  }, { requestTimeoutMs: 300 });
});
