import assert from "node:assert/strict";
import { main, runOperator } from "../../src/cli/run.ts";
import { parseRunFlags, type RunOptions } from "../../src/cli/run_flags.ts";
import { type Handler, json, startServer } from "./fake_server.ts";
import { kubeconfigFor, Lease, Namespace, RateLimit } from "./helpers.ts";
import { SimApi } from "./sim_api.ts";
import { rateLimit } from "../api/fixtures.ts";
import { DEFAULT_CONCURRENCY } from "../../src/runtime/mod.ts";
import { scrapeHttps } from "../../tools/operator/scrape_https.ts";

function opts(args: string[]): RunOptions {
  const parsed = parseRunFlags(args, () => undefined);
  if (parsed.kind !== "options") throw new Error(JSON.stringify(parsed));
  return parsed.options;
}

async function waitFor<T>(
  what: string,
  f: () => T | undefined | Promise<T | undefined>,
): Promise<T> {
  for (let i = 0; i < 500; i++) {
    const v = await f();
    if (v !== undefined && v !== false) return v;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

interface Started {
  lines: Record<string, unknown>[];
  addrs: { probes?: string; metrics?: string };
  stop: AbortController;
  exit: Promise<number>;
}

async function start(
  api: SimApi,
  args: string[],
  handler: Handler = api.handle,
): Promise<Started & { close(): Promise<void> }> {
  const server = await startServer(handler);
  const kubeconfig = await kubeconfigFor(server.url);
  const lines: Record<string, unknown>[] = [];
  const stop = new AbortController();
  let addrs: Started["addrs"] = {};
  const exit = runOperator(
    opts([
      `--kubeconfig=${kubeconfig}`,
      // The fake API server is plain HTTP on loopback.
      "--allow-insecure-http",
      "--probe-addr=127.0.0.1:0",
      "--metrics-addr=127.0.0.1:0",
      "--identity=test-replica",
      "--log-level=debug",
      ...args,
    ]),
    {
      shutdown: stop.signal,
      sink: (l) => lines.push(JSON.parse(l)),
      preflightBackoff: { initialMs: 5, maxMs: 5 },
      onListening: (a) => (addrs = a),
    },
  );
  await waitFor("the endpoints", () => addrs.probes);
  return {
    lines,
    get addrs() {
      return addrs;
    },
    stop,
    exit,
    close: async () => {
      api.close();
      await server.close();
    },
  };
}

async function get(
  addr: string | undefined,
  path: string,
): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://${addr}${path}`);
  return { status: res.status, body: await res.text() };
}

/** An API server holding namespace `demo`, and the user that created it (kubectl). */
function withDemoNamespace() {
  const api = new SimApi();
  const user = { name: "user", manager: "kubectl" };
  api.sim.store.create(Namespace, {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: "demo" },
  }, user);
  return { api, user };
}

Deno.test("a missing CRD is one log line saying what to do, retried; alive but not ready; SIGTERM exits 0", async () => {
  const api = new SimApi();
  api.uninstall(RateLimit);
  const op = await start(api, []);
  try {
    await waitFor(
      "several retries",
      () => op.lines.filter((l) => l.msg === "cluster checks still failing; retrying").length >= 3,
    );
    const errors = op.lines.filter((l) => l.level === "error");
    assert.equal(errors.length, 1, JSON.stringify(errors));
    assert.equal(
      errors[0].msg,
      "CRD ratelimits.gateway.platform-project.io is not installed: run kubectl apply -k deploy/",
    );
    assert.equal((await get(op.addrs.probes, "/healthz")).status, 200);
    assert.deepEqual(await get(op.addrs.probes, "/readyz"), {
      status: 503,
      body: "not ready: checking the cluster\n",
    });
    const metrics = await get(op.addrs.metrics, "/metrics");
    assert.match(metrics.body, /platform_operator_api_requests_total\{[^}]*code="404"[^}]*\} \d+/);
    assert.equal(op.lines.some((l) => typeof l.stack === "string"), false, "no stack traces");
    op.stop.abort();
    assert.equal(await op.exit, 0);
  } finally {
    await op.close();
  }
});

Deno.test("once the CRD appears the manager starts, becomes ready, and a stop releases the lease and exits 0", async () => {
  const api = new SimApi();
  api.uninstall(RateLimit);
  const op = await start(api, ["--leader-elect=true", "--lease-namespace=platform-system"]);
  try {
    await waitFor("the CRD problem", () => op.lines.some((l) => l.check === "crd-missing"));
    api.install(RateLimit);
    await waitFor("readiness", async () => (await get(op.addrs.probes, "/readyz")).status === 200);
    const lease = api.sim.store.get(Lease, "platform-system", "platform-operator");
    assert.equal((lease?.spec as { holderIdentity?: string }).holderIdentity, "test-replica");
    op.stop.abort();
    assert.equal(await op.exit, 0);
    const released = api.sim.store.get(Lease, "platform-system", "platform-operator");
    assert.notEqual((released?.spec as { holderIdentity?: string }).holderIdentity, "test-replica");
    assert.ok(op.lines.some((l) => l.msg === "stopped"));
  } finally {
    await op.close();
  }
});

Deno.test("the first checks go out after the Lease read and the lists; nothing is reconciled, nor ready, until they pass", async () => {
  const { api, user } = withDemoNamespace();
  api.sim.store.create(RateLimit, rateLimit(), user);
  const seen: string[] = [];
  let passChecks!: () => void;
  const checksHeld = new Promise<void>((r) => passChecks = r);
  const op = await start(
    api,
    ["--leader-elect=true", "--lease-namespace=platform-system", "--controllers=ratelimit"],
    async (req) => {
      const limit = req.query.get("limit");
      seen.push(`${req.method} ${req.path}${limit ? `?limit=${limit}` : ""}`);
      // The rules reviews answer the checks' access part: held, the checks cannot pass.
      if (req.path.endsWith("/selfsubjectrulesreviews")) await checksHeld;
      return api.handle(req);
    },
  );
  try {
    const isList = (l: string) => l.startsWith("GET ") && l.endsWith("/ratelimits");
    await waitFor("the RateLimits listed while the checks wait", () => seen.some(isList));
    // The Lease read goes first and alone; the lists (pages of 500) go out before the checks'
    // requests (rules reviews), which would otherwise delay the read's answer. The checks take
    // what the lists' first pages say of each type: they probe none again.
    assert.match(
      seen[0],
      /^GET \/apis\/coordination\.k8s\.io\/v1\/namespaces\/platform-system\/leases\//,
    );
    // Pods are not among them: they are listed a namespace at a time, once RateLimits are listed
    // (issue 46), so the checks may probe them with one item.
    const lists = seen.flatMap((l, i) =>
      l.endsWith("?limit=500") && !l.includes("/pods?") ? [i] : []
    );
    const checks = seen.flatMap((l, i) => l.endsWith("/selfsubjectrulesreviews") ? [i] : []);
    assert.ok(lists.length >= 3 && checks.length === 2, seen.join("\n"));
    assert.ok(Math.max(...lists) < Math.min(...checks), seen.join("\n"));
    const probes = seen.filter((l) => l.endsWith("?limit=1"));
    assert.ok(probes.every((l) => l === "GET /api/v1/pods?limit=1"), probes.join("\n"));
    const lease = api.sim.store.get(Lease, "platform-system", "platform-operator");
    assert.equal((lease?.spec as { holderIdentity?: string }).holderIdentity, "test-replica");
    await new Promise((r) => setTimeout(r, 100));
    const writes = () =>
      seen.filter((l) =>
        !l.startsWith("GET ") && !l.includes("/leases") && !l.endsWith("/selfsubjectrulesreviews")
      );
    assert.deepEqual(writes(), [], "nothing written before the checks pass");
    assert.equal(op.lines.some((l) => l.msg === "reconciled"), false);
    assert.equal((await get(op.addrs.probes, "/readyz")).status, 503);
    passChecks();
    await waitFor("readiness", async () => (await get(op.addrs.probes, "/readyz")).status === 200);
    await waitFor(
      "the RateLimit's EnvoyFilter",
      () => writes().some((l) => l.includes("/envoyfilters/")),
    );
    const passed = op.lines.findIndex((l) =>
      l.msg === "cluster checks passed: CRDs installed, access granted"
    );
    const reconciling = op.lines.findIndex((l) =>
      l.msg === "caches synced and leading: reconciling"
    );
    assert.ok(passed >= 0 && reconciling > passed, "reconciling begins after the checks passed");
    op.stop.abort();
    assert.equal(await op.exit, 0);
  } finally {
    passChecks(); // a failed assertion must not leave requests held
    await op.close();
  }
});

/** The most EnvoyFilter applies in flight at once, each held 40 ms, while 8 RateLimits settle. */
async function mostAppliesInFlight(args: string[]): Promise<number> {
  const { api, user } = withDemoNamespace();
  const names = Array.from({ length: 8 }, (_, i) => `rl-${i}`);
  for (const name of names) {
    const rl = rateLimit();
    api.sim.store.create(RateLimit, {
      ...rl,
      metadata: { ...rl.metadata, name },
      spec: { ...rl.spec, selectorLabels: { app: name } },
    }, user);
  }
  let now = 0;
  let most = 0;
  const op = await start(api, ["--controllers=ratelimit", ...args], async (req) => {
    if (req.method !== "PATCH" || !req.path.includes("/envoyfilters/")) return api.handle(req);
    most = Math.max(most, ++now);
    try {
      await new Promise((r) => setTimeout(r, 40));
      return await api.handle(req);
    } finally {
      now--;
    }
  });
  try {
    await waitFor(
      "every RateLimit reconciled",
      () =>
        names.every((n) =>
          op.lines.some((l) => l.msg === "reconciled" && l.key === `demo/${n}` && l.writes === 2)
        ),
    );
    op.stop.abort();
    assert.equal(await op.exit, 0);
    return most;
  } finally {
    await op.close();
  }
}

Deno.test("--concurrency bounds the RateLimits reconciled at once; the default is DEFAULT_CONCURRENCY", async () => {
  assert.equal(await mostAppliesInFlight(["--concurrency=1"]), 1);
  assert.equal(await mostAppliesInFlight(["--concurrency=3"]), 3);
  assert.equal(await mostAppliesInFlight([]), DEFAULT_CONCURRENCY);
});

Deno.test("a probe address in use is one error line and exit code 1; the Lease taken meanwhile is released", async () => {
  const api = new SimApi();
  let listenFailed!: () => void;
  const failed = new Promise<void>((r) => listenFailed = r);
  // The Lease and the lists go out before the endpoints listen: the Lease's write is held until
  // the listen has failed, so the stop comes while it is in flight, and it succeeds after.
  const server = await startServer(async (req) => {
    if (req.method !== "GET" && req.path.includes("/leases")) await failed;
    return api.handle(req);
  });
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const lines: Record<string, unknown>[] = [];
  const sink = (l: string) => {
    lines.push(JSON.parse(l));
    if (/^cannot listen/.test(JSON.parse(l).msg)) listenFailed();
  };
  try {
    const code = await runOperator(
      opts([
        `--kubeconfig=${await kubeconfigFor(server.url)}`,
        "--allow-insecure-http",
        `--probe-addr=127.0.0.1:${(taken.addr as Deno.NetAddr).port}`,
        "--metrics-addr=127.0.0.1:0",
        "--identity=test-replica",
        "--leader-elect=true",
        "--lease-namespace=platform-system",
        "--controllers=ratelimit",
      ]),
      { shutdown: new AbortController().signal, sink },
    );
    assert.equal(code, 1);
    const errors = lines.filter((l) => l.level === "error").map((l) => l.msg);
    assert.equal(errors.length, 1, JSON.stringify(errors));
    assert.match(String(errors[0]), /^cannot listen: .*choose other --probe-addr\/--metrics-addr$/);
    const lease = api.sim.store.get(Lease, "platform-system", "platform-operator");
    const holder = (lease?.spec as { holderIdentity?: string } | undefined)?.holderIdentity;
    assert.notEqual(holder, "test-replica", "no Lease left held by a process that exited");
  } finally {
    taken.close();
    api.close();
    await server.close();
  }
});

Deno.test("an unusable kubeconfig is one error line and exit code 1; bad flags exit 2", async () => {
  const lines: string[] = [];
  const code = await runOperator(
    opts([
      "--kubeconfig=/nonexistent/kubeconfig",
      "--probe-addr=0",
      "--metrics-addr=0",
      "--controllers=ratelimit",
    ]),
    {
      shutdown: new AbortController().signal,
      sink: (l) => lines.push(l),
    },
  );
  assert.equal(code, 1);
  assert.equal(lines.length, 1);
  assert.match(
    JSON.parse(lines[0]).msg,
    /kubeconfig \/nonexistent\/kubeconfig does not exist: set --kubeconfig or KUBECONFIG/,
  );
  assert.equal(await main(["--log-level=loud"]), 2);
});

const READER = "system:serviceaccount:monitoring:prometheus";

/** The API server of `api`, also answering TokenReviews (tokens "reader", "nobody") and
 * SubjectAccessReviews (READER may get /metrics), and rules reviews as incomplete (as with a webhook
 * authorizer), so each access is asked alone; `reviews` records what it was asked. */
function withReviews(api: SimApi, reviews: Record<string, unknown>[]): Handler {
  const users: Record<string, string> = { reader: READER, nobody: "nobody" };
  return (req) => {
    const body = req.method === "POST" ? JSON.parse(req.body) : undefined;
    if (req.path === "/apis/authentication.k8s.io/v1/tokenreviews") {
      reviews.push(body);
      const user = users[body.spec.token];
      return json({
        ...body,
        status: user ? { authenticated: true, user: { username: user } } : {},
      });
    }
    if (req.path === "/apis/authorization.k8s.io/v1/subjectaccessreviews") {
      reviews.push(body);
      const { user, nonResourceAttributes: attrs } = body.spec;
      return json({ ...body, status: { allowed: user === READER && attrs.verb === "get" } });
    }
    if (req.path.endsWith("/selfsubjectrulesreviews")) {
      return json({ ...body, status: { resourceRules: [], incomplete: true } }, 201);
    }
    if (req.path.endsWith("/selfsubjectaccessreviews")) reviews.push(body);
    return api.handle(req);
  };
}

Deno.test("/metrics on a non-loopback address: HTTPS, self-signed; 401 without a token or with one the API server refuses, 403 without get /metrics, 200 with it", async () => {
  const api = new SimApi();
  const reviews: Record<string, unknown>[] = [];
  const op = await start(api, ["--metrics-addr=0.0.0.0:0"], withReviews(api, reviews));
  try {
    const port = Number(op.addrs.metrics!.split(":").pop());
    const serving = op.lines.find((l) => l.msg === "serving metrics");
    assert.equal(serving?.scheme, "https");
    assert.equal((await scrapeHttps("127.0.0.1", port)).status, 401);
    assert.equal((await scrapeHttps("127.0.0.1", port, "forged")).status, 401);
    assert.deepEqual(await scrapeHttps("127.0.0.1", port, "nobody"), {
      status: 403,
      body: "Authorization denied for user nobody\n",
      issuer: "platform-operator",
    });
    const ok = await scrapeHttps("127.0.0.1", port, "reader");
    assert.equal(ok.status, 200);
    assert.match(ok.body, /^platform_operator_api_requests_total\{/m);
    assert.deepEqual(
      reviews.filter((r) => r.kind === "SubjectAccessReview").map((r) => r.spec),
      [
        { user: "nobody", nonResourceAttributes: { path: "/metrics", verb: "get" } },
        { user: READER, nonResourceAttributes: { path: "/metrics", verb: "get" } },
      ],
    );
    // Plain HTTP gets no metrics from a TLS port.
    await assert.rejects(fetch(`http://127.0.0.1:${port}/metrics`));
    // The startup checks include the access the reviews need.
    await waitFor(
      "the startup checks",
      () =>
        reviews.some((r) =>
          (r.spec as { resourceAttributes?: { resource?: string } }).resourceAttributes
            ?.resource === "subjectaccessreviews"
        ),
    );
    op.stop.abort();
    assert.equal(await op.exit, 0);
  } finally {
    await op.close();
  }
});

Deno.test("/metrics under a flood of new bearer tokens: at most 20 reviews at once, the rest 429 with Retry-After; the known scraper still served", async () => {
  const api = new SimApi();
  const reviews: Record<string, unknown>[] = [];
  const op = await start(api, ["--metrics-addr=0.0.0.0:0"], withReviews(api, reviews));
  try {
    const port = Number(op.addrs.metrics!.split(":").pop());
    assert.equal((await scrapeHttps("127.0.0.1", port, "reader")).status, 200);
    const started = performance.now();
    const flood = await Promise.all(
      Array.from({ length: 40 }, (_, i) => scrapeHttps("127.0.0.1", port, `forged-${i}`)),
    );
    const seconds = (performance.now() - started) / 1000;
    const tooMany = flood.filter((r) => r.status === 429);
    assert.ok(tooMany.length > 0, `no 429 among ${flood.map((r) => r.status)}`);
    assert.deepEqual(tooMany[0], {
      status: 429,
      body: "Too many new bearer tokens: at most 20 at once and 5 a second are reviewed\n",
      issuer: "platform-operator",
      retryAfter: "1",
    });
    assert.ok(flood.every((r) => r.status === 401 || r.status === 429));
    const tokenReviews = reviews.filter((r) => r.kind === "TokenReview").length;
    // The reader's, then 19 of the burst and what refilled meanwhile (5 a second).
    assert.ok(
      tokenReviews <= 20 + Math.ceil(5 * seconds),
      `${tokenReviews} TokenReviews in ${seconds.toFixed(2)} s`,
    );
    assert.equal((await scrapeHttps("127.0.0.1", port, "reader")).status, 200);
    // One warning for the flood (at most one a minute), not one a refused request.
    const warned = op.lines.filter((l) =>
      l.msg === "metrics requests refused: too many new bearer tokens"
    );
    assert.equal(warned.length, 1, JSON.stringify(warned));
    assert.equal(warned[0].level, "warn");
    op.stop.abort();
    assert.equal(await op.exit, 0);
  } finally {
    await op.close();
  }
});

Deno.test("/metrics on a loopback address is plain HTTP and open, and not reachable on the machine's other addresses", async () => {
  const other = Deno.networkInterfaces().find((i) =>
    i.family === "IPv4" && !i.address.startsWith("127.")
  );
  assert.ok(other, "this test needs an IPv4 address besides loopback");
  const api = new SimApi();
  const op = await start(api, []);
  try {
    const port = Number(op.addrs.metrics!.split(":").pop());
    const serving = op.lines.find((l) => l.msg === "serving metrics");
    assert.deepEqual([serving?.scheme, serving?.access], ["http", "open: loopback only"]);
    assert.equal((await get(op.addrs.metrics, "/metrics")).status, 200);
    await assert.rejects(fetch(`http://${other.address}:${port}/metrics`));
    op.stop.abort();
    assert.equal(await op.exit, 0);
  } finally {
    await op.close();
  }
});
