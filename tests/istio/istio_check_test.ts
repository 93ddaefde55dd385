/**
 * Istio's own EnvoyFilter patching, run by tools/istio-check on the EnvoyFilter the operator
 * renders for every sample and fixture RateLimit: the local rate limit filter right before the
 * router in the intended listener, the per-route config on every forwarding route and on no other
 * route, nothing else changed, and every listener and route configuration valid for
 * go-control-plane. Then the same check against deliberately broken filters, one per assertion,
 * to show each can fail (the first is the route patch as the generator used to write it).
 *
 * Needs Go (the binary is built once into .cache/istio-check and rebuilt when its inputs change).
 */
import assert from "node:assert/strict";
import { ensureIstioCheck } from "../../tools/istio-check/build.ts";
import {
  type Case,
  renderCases,
  repoSources,
  type Source,
  writeCases,
} from "../../tools/istio-check/render.ts";
import { DEFAULT_MESH } from "../../src/dataplane/mod.ts";
import { parseRateLimit } from "../../src/api/ratelimit.ts";
import { customResourceDefinitions } from "../../src/crd/definitions.ts";
import { admits } from "../crd/admission.ts";
import * as e2e from "../e2e/fixtures.ts";
import {
  boundCases,
  largestRateLimit,
  largestWithGlobal,
  oddRateLimits,
} from "../reconcile/ratelimit_extremes.ts";
import { GLOBAL_ENGINE_CLUSTER } from "../../src/api/global_engine.ts";
import { bucket, rateLimit } from "../reconcile/ratelimit_fixtures.ts";

type Json = Record<string, unknown>;

/** A Pod with `app: <app>` and an istio-proxy container started with `args`. */
function proxyPod(namespace: string, name: string, app: string, args = ["proxy", "sidecar"]) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { namespace, name, labels: { app } },
    spec: { containers: [{ name: "istio-proxy", image: "istio/proxyv2", args }] },
  };
}

/** The RateLimits the tests build in code: the e2e builder's shapes and the reconcile fixture's. */
function fixtureSources(): Source[] {
  const src = (name: string, rl: unknown) => ({ name, rateLimit: rl as Source["rateLimit"] });
  return [
    src("tests/e2e/fixtures.ts rateLimit (no rules)", e2e.rateLimit("e2e-rl", "rl-ok", "web")),
    src("tests/e2e/fixtures.ts rateLimit (20s rule)", e2e.rateLimit("e2e", "rl-20", "w", "20s")),
    src("tests/e2e/fixtures.ts rateLimit (1m rule)", e2e.rateLimit("e2e", "rl-1m", "w", "1m")),
    src(
      "tests/e2e/fixtures.ts rateLimit (gateway, no rules)",
      e2e.rateLimit(
        DEFAULT_MESH.gateway.namespace,
        "gateway-no-rules",
        DEFAULT_MESH.gateway.labels.app,
      ),
    ),
    {
      // Pods of both kinds selected: one filter patching GATEWAY and SIDECAR_INBOUND, checked on each.
      ...src(
        "a selector over a gateway Pod and a sidecar Pod",
        e2e.rateLimit("e2e", "mixed", "web"),
      ),
      pods: [proxyPod("e2e", "gw-0", "web", ["proxy", "router"]), proxyPod("e2e", "app-0", "web")],
    },
    src("tests/reconcile/ratelimit_fixtures.ts rateLimit()", rateLimit()),
    src(
      "tests/reconcile/ratelimit_fixtures.ts rateLimit (headers rule, no response headers)",
      rateLimit({
        enableResponseHeaders: false,
        buckets: [{ headers: { "X-A": "1", "x-b": "" }, bucket: bucket(1, 1, "1m") }],
      }),
    ),
    // Shadow mode: filter_enforced 0% and request_headers_to_add_when_not_enforced, with rules.
    src(
      "shadow mode (enforce: false) with a rule",
      rateLimit({
        name: "shadow",
        enforce: false,
        buckets: [{ path: "/slow", bucket: bucket(1, 1, "1m") }],
      }),
    ),
    // gRPC: rate_limited_as_resource_exhausted is set by default; Unavailable leaves it out.
    src(
      "grpcStatus Unavailable",
      rateLimit({ name: "grpc-unavailable", grpcStatus: "Unavailable" }),
    ),
    src(
      "shadow mode on the gateway with grpcStatus Unavailable",
      rateLimit({
        name: "shadow-gateway",
        namespace: DEFAULT_MESH.gateway.namespace,
        selectorLabels: { ...DEFAULT_MESH.gateway.labels },
        enforce: false,
        grpcStatus: "Unavailable",
      }),
    ),
    // Per-client buckets: a wildcard descriptor (empty value) with request_headers or
    // remote_address, and max_dynamic_descriptors on the route config, on each kind of proxy.
    src(
      "per-client by header after a path rule, largest maxClients",
      rateLimit({
        name: "per-client-header",
        maxClients: 100000,
        buckets: [
          { path: "/login", bucket: bucket(1, 1, "1m") },
          { path: "/api", perClient: { header: "X-Api-Key" }, bucket: bucket(10, 10, "1m") },
        ],
      }),
    ),
    src(
      "per-client by address on the gateway, every request",
      rateLimit({
        name: "per-client-ip",
        namespace: DEFAULT_MESH.gateway.namespace,
        selectorLabels: { ...DEFAULT_MESH.gateway.labels },
        maxClients: 1,
        buckets: [{ perClient: { clientIP: true }, bucket: bucket(5, 5, "1m") }],
      }),
    ),
    // The largest intervals and token counts the CRD admits: Istio must accept them all.
    src(
      "largest: 999999999s and 4294967295 tokens",
      rateLimit({
        name: "largest",
        defaultBucket: bucket(4294967295, 4294967295, "999999999s"),
      }),
    ),
    src(
      "largest minutes: 9999999m default and rule",
      rateLimit({
        name: "largest-minutes",
        defaultBucket: bucket(1, 1, "9999999m"),
        buckets: [{ path: "/slow", bucket: bucket(4294967295, 1, "9999999m") }],
      }),
    ),
    ...globalSources(),
    ...extremeSources(),
  ];
}

/** RateLimits with a global part, rendered as the operator does once the engine is Ready. */
function globalSources(): Source[] {
  const limit = (requests: number, unit: string) => ({ requests, unit });
  const src = (name: string, rl: unknown, pods?: Source["pods"]): Source => ({
    name,
    rateLimit: rl as Source["rateLimit"],
    globalEngineReady: true,
    ...(pods ? { pods } : {}),
  });
  const global = {
    rules: [
      { path: "/orders", limit: limit(5, "Second") },
      { perClient: { header: "X-Api-Key" }, limit: limit(1000, "Hour") },
    ],
    default: { limit: limit(100000, "Day") },
  };
  return [
    src(
      "global: local and global on a sidecar with response headers",
      rateLimit({
        name: "global-both",
        enableResponseHeaders: true,
        buckets: [{ path: "/orders", bucket: bucket(2, 2, "1m") }],
        global,
      }),
    ),
    src(
      "global: only global on the gateway in shadow mode with failureMode Deny per client IP",
      rateLimit({
        name: "global-gateway",
        namespace: DEFAULT_MESH.gateway.namespace,
        selectorLabels: { ...DEFAULT_MESH.gateway.labels },
        local: false,
        enforce: false,
        grpcStatus: "Unavailable",
        global: {
          rules: [{ perClient: { clientIP: true }, limit: limit(20, "Second") }],
          failureMode: "Deny",
        },
      }),
    ),
    src(
      "global: local and global over a gateway Pod and a sidecar Pod",
      rateLimit({ name: "global-mixed", selectorLabels: { app: "web" }, global }),
      [proxyPod("demo", "gw-0", "web", ["proxy", "router"]), proxyPod("demo", "app-0", "web")],
    ),
    ...largestWithGlobal("escaped").filter((_, i, all) => i === 0 || i === all.length - 1)
      .map((l) => src(`global: largest with ${l.what}`, l.rateLimit)),
  ];
}

/**
 * The largest valid RateLimits (docs/ratelimit.md "Bounds"), in plain characters and in those Go's
 * JSON escapes, on a workload and on the gateway; odd but valid text; each bound at its limit.
 */
function extremeSources(): Source[] {
  return [
    { name: "largest: plain characters", rateLimit: largestRateLimit("plain") },
    { name: "largest: characters Go escapes", rateLimit: largestRateLimit("escaped") },
    { name: "largest: on the gateway", rateLimit: largestRateLimit("escaped", "gateway") },
    ...oddRateLimits().map((o) => ({ name: `odd: ${o.name}`, rateLimit: o.rateLimit })),
    ...boundCases().map((c) => ({ name: `at the bound: ${c.what}`, rateLimit: c.at })),
  ];
}

/** The output of one istio-check run, its report split into one block per case. */
interface Run {
  code: number;
  /** The report (stdout), then Istio's own error log (stderr). */
  output: string;
  blocks: Map<string, string>;
}

async function runCheck(cases: readonly Case[]): Promise<Run> {
  const bin = await ensureIstioCheck((m) => console.error(`[istio-check] ${m}`));
  const dir = await Deno.makeTempDir({ prefix: "istio-check-" });
  try {
    await writeCases(dir, cases);
    const out = await new Deno.Command(bin, { args: [dir], stdin: "null" }).output();
    const report = new TextDecoder().decode(out.stdout);
    const output = `${report}\n${new TextDecoder().decode(out.stderr)}`;
    const blocks = new Map<string, string>();
    let current = "";
    for (const line of report.split("\n")) {
      const m = line.match(/^(?:ok {3}|FAIL )(.*) -> (?:sidecar|gateway|both)/);
      if (m) current = m[1];
      if (current) blocks.set(current, (blocks.get(current) ?? "") + line + "\n");
    }
    return { code: out.code, output, blocks };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function allCases(): Promise<Case[]> {
  const { cases, rejected } = renderCases([...await repoSources(), ...fixtureSources()]);
  // A RateLimit the operator refuses applies nothing; the only refusals here are invalid specs.
  for (const r of rejected) assert.match(r.message, /^Invalid spec/, r.name);
  return cases;
}

Deno.test("one over each bound is refused by the schema, the CRD's and the operator's, before Istio", () => {
  const schema = customResourceDefinitions().find((c) => c.spec.names.kind === "RateLimit")!.spec
    .versions[0].schema.openAPIV3Schema;
  const over = boundCases();
  const { cases, rejected } = renderCases(
    over.map((c) => ({ name: c.what, rateLimit: c.over as Source["rateLimit"] })),
  );
  assert.deepEqual(cases, []);
  for (const c of over) {
    // A bound the operator alone holds (both parts together) is stored by the API server.
    assert.equal(admits(schema, c.over), c.operatorOnly === true, `the API server: ${c.what}`);
    const parsed = parseRateLimit(c.over);
    assert.equal(parsed.ok, c.operatorOnly === true, c.what);
    const message = rejected.find((r) => r.name === c.what)?.message ?? "";
    assert.ok(message.startsWith(`Invalid spec, limit not applied: ${c.says}`), message);
  }
});

Deno.test("istio-check: Istio patches every sample's and fixture's EnvoyFilter exactly where meant", async () => {
  const cases = await allCases();
  // The extremes are all applied, none refused: each must pass Istio.
  for (const s of extremeSources()) {
    assert.ok(cases.some((c) => c.name.split(", ").includes(s.name)), s.name);
  }
  assert.ok(cases.some((c) => c.name.startsWith("samples/ratelimit-gateway.yaml")));
  assert.ok(cases.some((c) => c.name.startsWith("samples/ratelimit-workload.yaml")));
  assert.ok(cases.filter((c) => c.target === "gateway").length >= 2);
  // The global sample before the engine is Ready (local only) and after, and the global fixtures.
  const withGlobal = cases.filter((c) => c.filters.includes("envoy.filters.http.ratelimit"));
  assert.ok(
    withGlobal.some((c) => c.name.includes("docs/examples/ratelimit-global.yaml (engine Ready)")),
  );
  assert.ok(
    cases.some((c) =>
      c.name.split(", ").includes("docs/examples/ratelimit-global.yaml") &&
      c.filters.join() === "envoy.filters.http.local_ratelimit"
    ),
  );
  for (const s of globalSources()) {
    assert.ok(withGlobal.some((c) => c.name.split(", ").includes(s.name)), s.name);
  }
  assert.ok(withGlobal.some((c) => c.target === "gateway"));
  assert.ok(withGlobal.some((c) => c.target === "both"));
  const run = await runCheck(cases);
  console.log(run.output);
  assert.equal(run.code, 0, run.output);
  for (const c of cases) {
    const block = run.blocks.get(c.name) ?? "";
    assert.match(block, /^ok {3}/, `${c.name}:\n${block || run.output}`);
    // The intended proxy got the filter and the route config somewhere: the check is not vacuous.
    assert.match(block, /in [1-9]\d* HTTP connection managers, per-route config on [1-9]/, c.name);
    // The global filter, where there is one, asks the engine's outbound cluster, which exists.
    const global = `the global filter asking cluster ${GLOBAL_ENGINE_CLUSTER} (present)`;
    assert.equal(
      block.includes(global),
      c.filters.includes("envoy.filters.http.ratelimit"),
      c.name,
    );
  }
  const gw = run.blocks.get(cases.find((c) => c.target === "gateway")!.name) ?? "";
  // The gateway's redirect and direct-response routes were there, and left alone.
  assert.match(gw, /[1-9]\d* other routes and the rest unchanged/);
});

type Mutation = (spec: { configPatches: Json[] }) => void;

const patchOf = (spec: { configPatches: Json[] }, applyTo: string): Json => {
  const p = spec.configPatches.find((p) => p.applyTo === applyTo);
  assert.ok(p, `no ${applyTo} patch`);
  return p;
};
const valueOf = (p: Json) => (p.patch as { value: Json }).value;
const globalFilterOf = (spec: { configPatches: Json[] }) => {
  const p = spec.configPatches.find((p) => valueOf(p).name === "envoy.filters.http.ratelimit");
  assert.ok(p, "no global filter patch");
  return p;
};
const perRoute = (spec: { configPatches: Json[] }) =>
  (valueOf(patchOf(spec, "HTTP_ROUTE")).typed_per_filter_config as Json)[
    "envoy.filters.http.local_ratelimit"
  ] as Json;

/** Broken variants of a sample's EnvoyFilter and what istio-check must say about each. */
const MUTATIONS: { name: string; sample: string; mutate: Mutation; expect: RegExp[] }[] = [
  {
    name: "route patch matching every route (the generator before issue 12)",
    sample: "samples/ratelimit-gateway.yaml",
    mutate: (s) => {
      patchOf(s, "HTTP_ROUTE").match = { context: "GATEWAY" };
    },
    expect: [
      /route \d+ "redirect" \(action route, was redirect\): changed by the EnvoyFilter/,
      /route \d+ "direct-response" \(action route, was direct_response\): changed/,
      /Validate: route configuration http\.8080: invalid RouteConfiguration\.VirtualHosts\[0\]/,
    ],
  },
  {
    name: "route patch without the route digest",
    sample: "samples/ratelimit-workload.yaml",
    mutate: (s) => {
      delete valueOf(patchOf(s, "HTTP_ROUTE")).metadata;
    },
    expect: [/route 0 "default".*its metadata has no platform-project\.io\/ratelimit digest/],
  },
  {
    name: "filter inserted after the router",
    sample: "samples/ratelimit-workload.yaml",
    mutate: (s) => {
      (patchOf(s, "HTTP_FILTER").patch as Json).operation = "INSERT_AFTER";
    },
    expect: [/virtualInbound.*the local rate limit filter is not right before the router/],
  },
  {
    name: "outbound instead of inbound",
    sample: "samples/ratelimit-workload.yaml",
    mutate: (s) => {
      for (const p of s.configPatches) (p.match as Json).context = "SIDECAR_OUTBOUND";
    },
    expect: [
      /sidecar proxy: no HTTP connection manager of the intended listener got the local rate/,
      /sidecar proxy: listener 0\.0\.0\.0_8000.*which the EnvoyFilter is not meant for/,
    ],
  },
  {
    name: "any context: the gateway is limited too",
    sample: "samples/ratelimit-workload.yaml",
    mutate: (s) => {
      for (const p of s.configPatches) (p.match as Json).context = "ANY";
    },
    expect: [/gateway proxy: listener 0\.0\.0\.0_8080.*which the EnvoyFilter is not meant for/],
  },
  {
    name: "listener-level filter enabled",
    sample: "samples/ratelimit-gateway.yaml",
    mutate: (s) => {
      ((valueOf(patchOf(s, "HTTP_FILTER")).typed_config) as Json).filter_enabled =
        perRoute(s).filter_enabled;
    },
    expect: [/the listener-level local rate limit filter is enabled/],
  },
  {
    name: "per-route config not enforced",
    sample: "samples/ratelimit-workload.yaml",
    mutate: (s) => {
      delete perRoute(s).filter_enforced;
    },
    expect: [/per-route config does not enable and enforce the limit/],
  },
  {
    name: "enforced for no request without the shadow header (a silent limit)",
    sample: "samples/ratelimit-workload.yaml",
    mutate: (s) => {
      (perRoute(s).filter_enforced as Json).default_value = { numerator: 0 };
    },
    expect: [/per-route config does not enable and enforce the limit/],
  },
  {
    name: "a misspelt gRPC field",
    sample: "samples/ratelimit-workload.yaml",
    mutate: (s) => {
      const cfg = perRoute(s);
      delete cfg.rate_limited_as_resource_exhausted;
      cfg.rate_limited_as_resource_exhaustion = true;
    },
    expect: [/rate_limited_as_resource_exhaustion/],
  },
  {
    name: "no client kept (Envoy requires max_dynamic_descriptors >= 1)",
    sample: "sim/scenarios/ratelimit-per-client.yaml",
    mutate: (s) => {
      perRoute(s).max_dynamic_descriptors = 0;
    },
    expect: [
      /Validate: .*LocalRateLimit.*MaxDynamicDescriptors: value must be greater than or equal to 1/,
    ],
  },
  {
    name: "invalid token bucket (Envoy requires tokens_per_fill > 0)",
    sample: "samples/ratelimit-workload.yaml",
    mutate: (s) => {
      (perRoute(s).token_bucket as Json).tokens_per_fill = 0;
    },
    expect: [
      /Validate: .*LocalRateLimit.*TokenBucket\.TokensPerFill: value must be greater than 0/,
    ],
  },
];

/** Broken variants of the global sample's filter (the engine Ready). */
const GLOBAL_SAMPLE = "docs/examples/ratelimit-global.yaml (engine Ready)";
MUTATIONS.push(
  {
    name: "global filter asking a cluster no proxy has",
    sample: GLOBAL_SAMPLE,
    mutate: (s) => {
      const cfg = valueOf(globalFilterOf(s)).typed_config as Json;
      (cfg.rate_limit_service as Json).grpc_service = {
        envoy_grpc: { cluster_name: "outbound|8081||ratelimit.nowhere.svc.cluster.local" },
      };
    },
    expect: [
      /asks cluster "outbound\|8081\|\|ratelimit\.nowhere\.svc\.cluster\.local", which the proxy does not have/,
    ],
  },
  {
    name: "global filter before the local one",
    sample: GLOBAL_SAMPLE,
    mutate: (s) => {
      const g = globalFilterOf(s);
      s.configPatches = [g, ...s.configPatches.filter((p) => p !== g)];
    },
    expect: [/the local rate limit filter is not right before envoy\.filters\.http\.ratelimit/],
  },
  {
    name: "global entries at stage 0 (the local filter would read them)",
    sample: GLOBAL_SAMPLE,
    mutate: (s) => {
      const value = valueOf(patchOf(s, "HTTP_ROUTE"));
      for (const e of (value.route as { rate_limits: Json[] }).rate_limits) delete e.stage;
    },
    expect: [/carries no global rate_limits entry/, /0 descriptors but 6 rate_limits entries/],
  },
  {
    name: "a global refusal without the local refusal's body",
    sample: GLOBAL_SAMPLE,
    mutate: (s) => {
      s.configPatches = s.configPatches.filter((p) => p.applyTo !== "NETWORK_FILTER");
    },
    expect: [/no local reply mapper gives a global refusal the body "local_rate_limited"/],
  },
  {
    name: "global filter without a domain",
    sample: GLOBAL_SAMPLE,
    mutate: (s) => {
      delete (valueOf(globalFilterOf(s)).typed_config as Json).domain;
    },
    expect: [/Validate: .*RateLimit.*Domain: value length must be at least 1/],
  },
);

Deno.test("istio-check fails on each broken filter, naming what is wrong", async () => {
  const samples = renderCases(await repoSources()).cases;
  const broken = MUTATIONS.map((m, i): Case => {
    const base = samples.find((c) => c.name.startsWith(m.sample));
    assert.ok(base, m.sample);
    const envoyFilter = structuredClone(base.envoyFilter);
    m.mutate(envoyFilter.spec as { configPatches: Json[] });
    return { ...base, name: `broken: ${m.name}`, file: `broken-${i}.yaml`, envoyFilter };
  });
  const run = await runCheck(broken);
  console.log(run.output);
  assert.equal(run.code, 1, run.output);
  for (const m of MUTATIONS) {
    const block = run.blocks.get(`broken: ${m.name}`) ?? "";
    assert.match(block, /^FAIL /, `${m.name}:\n${block || run.output}`);
    for (const re of m.expect) assert.match(block, re, `${m.name}:\n${block}`);
  }
});
