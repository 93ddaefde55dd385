/**
 * Envoy Gateway's BackendTrafficPolicy with global rules as a RateLimit (src/cli/ratelimit/
 * envoy_gateway.ts): what maps, what is refused naming the field, and the preview reading one.
 */
import assert from "node:assert/strict";
import {
  fromBackendTrafficPolicy,
  GATEWAY_NAME_LABEL,
  isBackendTrafficPolicy,
} from "../../src/cli/ratelimit/envoy_gateway.ts";
import { parse } from "yaml";
import { parseRateLimit } from "../../src/api/ratelimit.ts";
import { formatPath } from "../../src/api/issues.ts";
import { run, runLines } from "./preview.ts";

const EXAMPLES = new URL("../../docs/examples/", import.meta.url);
const example = (name: string) => new URL(name, EXAMPLES).pathname;

type Obj = Record<string, unknown>;

function policy(rules: unknown[], spec: Obj = {}): Obj {
  return {
    apiVersion: "gateway.envoyproxy.io/v1alpha1",
    kind: "BackendTrafficPolicy",
    metadata: { name: "p", namespace: "demo", resourceVersion: "7" },
    spec: {
      targetRefs: [{ group: "gateway.networking.k8s.io", kind: "HTTPRoute", name: "orders" }],
      rateLimit: { type: "Global", global: { rules } },
      ...spec,
    },
  };
}

function converted(p: Obj): Obj {
  const c = fromBackendTrafficPolicy(p);
  assert.ok(c.ok, JSON.stringify(c));
  // What comes out is a RateLimit the API takes.
  const parsed = parseRateLimit({
    ...c.rateLimit,
    metadata: { ...c.rateLimit.metadata as Obj, uid: "u" },
  });
  assert.ok(parsed.ok, JSON.stringify(parsed));
  return c.rateLimit.spec as Obj;
}

function refused(p: Obj): string[] {
  const c = fromBackendTrafficPolicy(p);
  assert.ok(!c.ok, "refused");
  return c.problems;
}

Deno.test("envoy gateway: the kinds recognised", () => {
  assert.ok(isBackendTrafficPolicy(policy([])));
  assert.ok(!isBackendTrafficPolicy({ ...policy([]), apiVersion: "gateway.envoyproxy.io/v1" }));
  assert.ok(!isBackendTrafficPolicy({ ...policy([]), kind: "ClientTrafficPolicy" }));
});

Deno.test("envoy gateway: selectors map to path, headers, perClient; a rule for everything to the default", () => {
  const spec = converted(policy([
    {
      clientSelectors: [{
        path: { type: "Exact", value: "/orders" },
        headers: [{ name: "x-api-key", type: "Distinct" }, { name: "x-tier", value: "gold" }],
      }],
      limit: { requests: 10, unit: "Second" },
    },
    {
      clientSelectors: [{ sourceCIDR: { type: "Distinct", value: "0.0.0.0/0" } }, {
        path: { value: "/" },
      }],
      limit: { requests: 3, unit: "Minute" },
    },
    { limit: { requests: 1000, unit: "Day" } },
  ]));
  assert.deepEqual(spec, {
    selectorLabels: { app: "orders" },
    enableResponseHeaders: true,
    global: {
      rules: [
        {
          path: "/orders",
          headers: { "x-tier": "gold" },
          perClient: { header: "x-api-key" },
          limit: { requests: 10, unit: "Second" },
        },
        { perClient: { clientIP: true }, limit: { requests: 3, unit: "Minute" } },
      ],
      default: { limit: { requests: 1000, unit: "Day" } },
    },
  });
});

Deno.test("envoy gateway: methods map to methods, all selectors' in common; a rule of methods alone is a rule, not the default", () => {
  const spec = converted(policy([
    {
      clientSelectors: [
        { methods: [{ value: "POST" }, { value: "PUT" }, { value: "POST" }, { value: "PATCH" }] },
        { path: { value: "/api/" }, methods: [{ value: "PATCH" }, { value: "PUT" }] },
      ],
      limit: { requests: 10, unit: "Second" },
    },
    {
      clientSelectors: [{ methods: [{ value: "DELETE", invert: false }] }],
      limit: { requests: 1, unit: "Second" },
    },
    { limit: { requests: 1000, unit: "Day" } },
  ]));
  assert.deepEqual(spec, {
    selectorLabels: { app: "orders" },
    enableResponseHeaders: true,
    global: {
      rules: [
        { pathPrefix: "/api/", methods: ["PUT", "PATCH"], limit: { requests: 10, unit: "Second" } },
        { methods: ["DELETE"], limit: { requests: 1, unit: "Second" } },
      ],
      default: { limit: { requests: 1000, unit: "Day" } },
    },
  });
});

Deno.test("envoy gateway: X-RateLimit headers are on as there by default, off when every rule turns them off", () => {
  const on = fromBackendTrafficPolicy(policy([{ limit: { requests: 1, unit: "Second" } }]));
  assert.ok(on.ok);
  assert.equal((on.rateLimit.spec as Obj).enableResponseHeaders, true);
  assert.ok(
    on.differences.some((d) => d.startsWith("spec.enableResponseHeaders: true, as Envoy Gateway")),
  );
  for (const [value, want] of [["Off", false], ["DraftVersion03", true]] as const) {
    const c = fromBackendTrafficPolicy(policy([
      {
        clientSelectors: [{ path: { value: "/a" } }],
        xRateLimitHeaders: value,
        limit: { requests: 1, unit: "Second" },
      },
      { xRateLimitHeaders: value, limit: { requests: 1, unit: "Second" } },
    ]));
    assert.ok(c.ok, JSON.stringify(c));
    assert.equal((c.rateLimit.spec as Obj).enableResponseHeaders, want);
    assert.ok(!c.differences.some((d) => d.startsWith("spec.enableResponseHeaders")));
  }
});

Deno.test("envoy gateway: local rules become token buckets filled once a unit; the rule for every request the default bucket", () => {
  const spec = converted(policy([], {
    rateLimit: {
      local: {
        rules: [
          { limit: { requests: 100, unit: "Minute" } },
          {
            clientSelectors: [{
              path: { type: "Exact", value: "/login" },
              methods: [{ value: "POST" }],
            }],
            limit: { requests: 5, unit: "Hour" },
          },
          {
            clientSelectors: [{ headers: [{ name: "x-api-key", type: "Distinct" }] }],
            limit: { requests: 1000, unit: "Day" },
          },
        ],
      },
    },
  }));
  assert.deepEqual(spec, {
    selectorLabels: { app: "orders" },
    enableResponseHeaders: true,
    local: {
      defaultBucket: { maxTokens: 100, tokensPerFill: 100, fillInterval: "1m" },
      buckets: [
        {
          path: "/login",
          methods: ["POST"],
          bucket: { maxTokens: 5, tokensPerFill: 5, fillInterval: "60m" },
        },
        {
          perClient: { header: "x-api-key" },
          bucket: { maxTokens: 1000, tokensPerFill: 1000, fillInterval: "1440m" },
        },
      ],
      maxClients: 10000,
    },
  });
  // No rule for every request: Envoy Gateway's default, uint32 max a second; Week to Year fill once a unit.
  const c = fromBackendTrafficPolicy(policy([], {
    rateLimit: {
      local: {
        rules: [{
          clientSelectors: [{ path: { value: "/reports/" } }],
          limit: { requests: 3, unit: "Year" },
        }],
      },
      global: { rules: [{ limit: { requests: 50, unit: "Second" } }] },
    },
  }));
  assert.ok(c.ok, JSON.stringify(c));
  const both = c.rateLimit.spec as Obj;
  assert.deepEqual(both.local, {
    defaultBucket: { maxTokens: 4294967295, tokensPerFill: 4294967295, fillInterval: "1s" },
    buckets: [{
      pathPrefix: "/reports/",
      bucket: { maxTokens: 3, tokensPerFill: 3, fillInterval: "525600m" },
    }],
  });
  assert.deepEqual(both.global, { default: { limit: { requests: 50, unit: "Second" } } });
  assert.ok(
    c.differences.some((d) =>
      d.startsWith("spec.local.defaultBucket: 4294967295 requests a second")
    ),
  );
  assert.ok(
    parseRateLimit({ ...c.rateLimit, metadata: { name: "p", namespace: "d", uid: "u" } }).ok,
  );
});

Deno.test("envoy gateway: the deprecated type converts its part alone, as Envoy Gateway builds it alone", () => {
  const both = {
    global: { rules: [{ limit: { requests: 50, unit: "Second" } }] },
    local: { rules: [{ limit: { requests: 10, unit: "Second" } }] },
  };
  const c = fromBackendTrafficPolicy(policy([], { rateLimit: { type: "Local", ...both } }));
  assert.ok(c.ok, JSON.stringify(c));
  const spec = c.rateLimit.spec as Obj;
  assert.equal(spec.global, undefined);
  assert.deepEqual(spec.local, {
    defaultBucket: { maxTokens: 10, tokensPerFill: 10, fillInterval: "1s" },
  });
  assert.ok(
    c.differences.includes(
      "spec.rateLimit.global: not converted: with spec.rateLimit.type Local, Envoy Gateway ignores it",
    ),
  );
  const g = converted(policy([], { rateLimit: { type: "Global", ...both } }));
  assert.deepEqual([g.local, g.global], [
    undefined,
    both.global.rules[0] && {
      default: { limit: { requests: 50, unit: "Second" } },
    },
  ]);
  assert.deepEqual(refused(policy([], { rateLimit: { type: "Global", local: both.local } })), [
    "spec.rateLimit.global: missing, and spec.rateLimit.type is Global",
  ]);
});

Deno.test("envoy gateway: differences are said: first match, the default, the guessed selector", () => {
  const c = fromBackendTrafficPolicy(policy([
    {
      clientSelectors: [{ headers: [{ name: "a", value: "1" }] }],
      limit: { requests: 1, unit: "Hour" },
    },
    {
      clientSelectors: [{ headers: [{ name: "b", value: "1" }] }],
      limit: { requests: 1, unit: "Hour" },
    },
    { limit: { requests: 5, unit: "Hour" } },
  ]));
  assert.ok(c.ok);
  const text = c.differences.join("\n");
  assert.match(text, /selectorLabels app: orders is a guess/);
  assert.match(text, /counted by the first of them only/);
  assert.match(text, /becomes spec\.global\.default/);
  assert.deepEqual(c.rateLimit.metadata, { name: "p", namespace: "demo" });
});

Deno.test("envoy gateway: a Gateway target selects its Pods by Istio's gateway-name label; shadow on every rule is enforce false", () => {
  const spec = converted(policy(
    [{
      clientSelectors: [{ path: { type: "Exact", value: "/x" } }],
      limit: { requests: 1, unit: "Second" },
      shadowMode: true,
    }],
    { targetRefs: [{ group: "gateway.networking.k8s.io", kind: "Gateway", name: "public" }] },
  ));
  assert.deepEqual(spec.selectorLabels, { [GATEWAY_NAME_LABEL]: "public" });
  assert.equal(spec.enforce, false);
});

Deno.test("envoy gateway: a PathPrefix becomes pathPrefix, and the difference in segments is said", () => {
  for (
    const [value, note] of [
      ["/api", "it takes /apix too (write /api/ to keep to whole segments)"],
      ["/api/", "it does not take /api itself"],
    ]
  ) {
    const p = policy([{
      clientSelectors: [{ path: { type: "PathPrefix", value } }],
      limit: { requests: 5, unit: "Minute" },
    }]);
    const spec = converted(p);
    assert.deepEqual((spec.global as Obj).rules, [{
      pathPrefix: value,
      limit: { requests: 5, unit: "Minute" },
    }]);
    const c = fromBackendTrafficPolicy(p);
    assert.ok(c.ok);
    assert.ok(
      c.differences.includes(
        `spec.rateLimit.global.rules[0].clientSelectors[0].path: PathPrefix ${value} becomes pathPrefix ${value}, which compares characters: ${note}; Envoy Gateway compares whole path segments`,
      ),
      c.differences.join("\n"),
    );
  }
});

Deno.test("envoy gateway: Exact query parameters become queryParams, and the first-occurrence difference is said", () => {
  const p = policy([{
    clientSelectors: [
      {
        path: { type: "Exact", value: "/export" },
        queryParams: [{ name: "format", value: "csv" }],
      },
      {
        queryParams: [{ name: "ids[]", type: "Exact", value: "" }, {
          name: "format",
          value: "csv",
        }],
      },
    ],
    limit: { requests: 5, unit: "Minute" },
  }]);
  assert.deepEqual((converted(p).global as Obj).rules, [{
    path: "/export",
    queryParams: { format: "csv", "ids[]": "" },
    limit: { requests: 5, unit: "Minute" },
  }]);
  const c = fromBackendTrafficPolicy(p);
  assert.ok(c.ok);
  assert.ok(
    c.differences.includes(
      "spec.rateLimit.global.rules[0].clientSelectors[0].queryParams: a parameter a request repeats is taken here when any occurrence has the value; Envoy Gateway compares the first",
    ),
    c.differences.join("\n"),
  );
});

Deno.test("envoy gateway: what does not map is refused, each naming its field", () => {
  const at = "spec.rateLimit.global.rules[0]";
  const cases: [Obj, RegExp][] = [
    [
      policy([{
        clientSelectors: [{
          queryParams: [{ name: "page", type: "RegularExpression", value: "1" }],
        }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /clientSelectors\[0\]\.queryParams\[0\]\.type: RegularExpression has no equivalent: query parameters here match exact values/,
    ],
    [
      policy([{
        clientSelectors: [{ queryParams: [{ name: "page", type: "Distinct" }] }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /clientSelectors\[0\]\.queryParams\[0\]\.type: Distinct has no equivalent/,
    ],
    [
      policy([{
        clientSelectors: [{ queryParams: [{ name: "q", value: "a&b" }] }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /clientSelectors\[0\]\.queryParams\[0\]\.value: "a&b" is not a query parameter's value here/,
    ],
    [
      policy([{
        clientSelectors: [{ queryParams: [{ name: "a b", value: "1" }] }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /clientSelectors\[0\]\.queryParams\[0\]\.name: "a b" is not a query parameter's name here/,
    ],
    [
      policy([{
        clientSelectors: [{
          queryParams: [{ name: "q", value: "1" }, { name: "q", value: "2" }],
        }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /clientSelectors\[0\]\.queryParams\[1\]: query parameter q is also "1"; a rule here holds one value a parameter/,
    ],
    [
      policy([{
        clientSelectors: [{
          headers: [{ name: "x-a", value: "1" }, { name: "x-b", value: "1" }],
          queryParams: [{ name: "a", value: "1" }, { name: "b", value: "1" }, {
            name: "c",
            value: "1",
          }],
        }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /rules\[0\]\.clientSelectors: 5 headers and query parameters; a rule here matches at most 4 together/,
    ],
    [
      policy([{
        clientSelectors: [{ sourceCIDR: { type: "Distinct", value: "0.0.0.0/0", invert: true } }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /clientSelectors\[0\]\.sourceCIDR\.invert: an inverted address range has no match here/,
    ],
    [
      policy([{
        clientSelectors: [{ path: { value: "/a" } }],
        limit: { requests: 0, unit: "Second" },
      }]),
      /rules\[0\]\.limit\.requests: 0 \(every request refused\) has no equivalent/,
    ],
    [
      policy([{
        clientSelectors: [{ path: { value: "/a" } }],
        limit: { requests: 1, unit: "Second", fromMetadata: { namespace: "n", key: "k" } },
      }]),
      /rules\[0\]\.limit\.fromMetadata: not supported/,
    ],
    [
      policy([
        { clientSelectors: [{ path: { value: "/a" } }], limit: { requests: 1, unit: "Second" } },
        { xRateLimitHeaders: "Off", limit: { requests: 1, unit: "Second" } },
      ]),
      /rules\[\]\.xRateLimitHeaders: unset, "Off" on different rules; X-RateLimit headers here are one switch/,
    ],
    [
      policy([{ xRateLimitHeaders: "On", limit: { requests: 1, unit: "Second" } }]),
      /rules\[0\]\.xRateLimitHeaders: "On" is not Off or DraftVersion03/,
    ],
    [
      policy([{
        clientSelectors: [{ methods: [{ value: "GET", invert: true }] }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /rules\[0\]\.clientSelectors\[0\]\.methods\[0\]\.invert: an inverted method has no match here/,
    ],
    [
      policy([{
        clientSelectors: [{ methods: [{ value: "get" }] }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /clientSelectors\[0\]\.methods\[0\]\.value: "get" is not one of GET, HEAD, POST/,
    ],
    [
      policy([{
        clientSelectors: [{ methods: { value: "GET" } }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /clientSelectors\[0\]\.methods: not a list/,
    ],
    [
      policy([{
        clientSelectors: [{ methods: [{ value: "GET", vlaue: "POST" }] }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /clientSelectors\[0\]\.methods\[0\]\.vlaue: unknown field/,
    ],
    [
      policy([{
        clientSelectors: [{ methods: [{ value: "GET" }] }, { methods: [{ value: "POST" }] }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /clientSelectors\[1\]\.methods: no method in common with the rule's other selectors/,
    ],
    [
      policy([{
        clientSelectors: [{ path: { value: "/api" } }, { path: { type: "Exact", value: "/b" } }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /clientSelectors\[1\]\.path: a second path; a rule here has one/,
    ],
    [
      policy([{
        clientSelectors: [{ path: { type: "RegularExpression", value: "/a.*" } }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /path: RegularExpression \/a\.\* has no equivalent/,
    ],
    [
      policy([{
        clientSelectors: [{ headers: [{ name: "x", type: "RegularExpression", value: "a.*" }] }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /headers\[0\]\.type: RegularExpression has no equivalent/,
    ],
    [
      policy([{
        clientSelectors: [{ headers: [{ name: "x", value: "1", invert: true }] }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /headers\[0\]\.invert/,
    ],
    [
      policy([{
        clientSelectors: [{ sourceCIDR: { type: "Exact", value: "10.0.0.0/8" } }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /sourceCIDR: Exact 10\.0\.0\.0\/8 has no equivalent/,
    ],
    [
      policy([{
        clientSelectors: [{
          headers: [{ name: "a", type: "Distinct" }],
          sourceCIDR: { type: "Distinct", value: "0.0.0.0/0" },
        }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /sourceCIDR: a second distinct client key/,
    ],
    [
      policy([{
        clientSelectors: [{ path: { type: "Exact", value: "/a" } }],
        limit: { requests: 1, unit: "Month" },
      }]),
      new RegExp(`${at.replace(/[[\].]/g, "\\$&")}\\.limit\\.unit: Month has no equivalent`),
    ],
    [
      policy([{
        clientSelectors: [{ path: { type: "Exact", value: "/a" } }],
        limit: { requests: 1, unit: "Second" },
        cost: { request: { from: "Number", number: 2 } },
      }]),
      /rules\[0\]\.cost: every request counts 1 here/,
    ],
    [
      policy([
        { limit: { requests: 1, unit: "Second" } },
        { limit: { requests: 2, unit: "Second" } },
      ]),
      /rules\[1\]\.clientSelectors: a second rule for every request/,
    ],
    [
      policy([
        {
          clientSelectors: [{ path: { type: "Exact", value: "/a" } }],
          limit: { requests: 1, unit: "Second" },
          shadowMode: true,
        },
        {
          clientSelectors: [{ path: { type: "Exact", value: "/b" } }],
          limit: { requests: 1, unit: "Second" },
        },
      ]),
      /shadowMode: set on some rules only/,
    ],
    [
      policy([], {
        targetRefs: [
          { group: "gateway.networking.k8s.io", kind: "Gateway", name: "public" },
          { group: "gateway.networking.k8s.io", kind: "HTTPRoute", name: "b" },
        ],
      }),
      /spec\.targetRefs: a Gateway and routes together; here a request through the gateway to one of the routes would pass both RateLimits' limits/,
    ],
    [
      policy([], {
        targetRefs: [
          { group: "gateway.networking.k8s.io", kind: "HTTPRoute", name: "b" },
          { group: "gateway.networking.k8s.io", kind: "GRPCRoute", name: "b" },
        ],
      }),
      /spec\.targetRefs\[1\]\.name: b again \(as spec\.targetRefs\[0\]\)/,
    ],
    [policy([], { targetRefs: [] }), /spec\.targetRefs: no target/],
    [
      policy([], {
        targetRefs: [{
          group: "gateway.networking.k8s.io",
          kind: "HTTPRoute",
          name: "r".repeat(64),
        }],
      }),
      /spec\.targetRefs\[0\]\.name: "r+\.\.\. cannot be a label's value \(at most 63 characters\)/,
    ],
    [
      policy([], { targetRefs: [{ kind: "TCPRoute", name: "a" }] }),
      /spec\.targetRefs\[0\]\.kind: TCPRoute/,
    ],
    [policy([], { targetSelectors: [{ kind: "HTTPRoute" }] }), /spec\.targetSelectors/],
    // What Envoy Gateway's own CRD refuses, so no policy of it holds it.
    [
      policy([{ clientSelectors: [{}], limit: { requests: 1, unit: "Second" } }]),
      /rules\[0\]\.clientSelectors\[0\]: none of headers, methods, path, sourceCIDR or queryParams/,
    ],
    [
      policy([], { targetRefs: [{ group: "apps", kind: "HTTPRoute", name: "a" }] }),
      /spec\.targetRefs\[0\]\.group: "apps": Envoy Gateway's policies target gateway\.networking\.k8s\.io's/,
    ],
    [
      policy([], { targetRefs: [{ kind: "HTTPRoute", name: "a" }] }),
      /spec\.targetRefs\[0\]\.group: missing/,
    ],
    [
      policy([], {
        targetRef: { group: "gateway.networking.k8s.io", kind: "HTTPRoute", name: "b" },
      }),
      /spec\.targetRef: given with spec\.targetRefs/,
    ],
    [
      policy([], {
        targetRefs: { group: "gateway.networking.k8s.io", kind: "Gateway", name: "a" },
      }),
      /spec\.targetRefs: not a list/,
    ],
    [policy([]), /spec\.rateLimit\.global\.rules: empty/],
    [
      policy([], { faultInjection: { abort: { httpStatus: 500 } } }),
      /spec\.faultInjection: not a rate limit/,
    ],
    [
      policy([], {
        rateLimit: {
          local: {
            rules: [
              { limit: { requests: 10, unit: "Minute" } },
              {
                clientSelectors: [{ path: { value: "/a" } }],
                limit: { requests: 1, unit: "Second" },
              },
            ],
          },
        },
      }),
      /spec\.rateLimit\.local\.rules\[1\]\.limit\.unit: Second is not a multiple of the default rule's Minute \(spec\.rateLimit\.local\.rules\[0\]\); Envoy Gateway refuses such a policy/,
    ],
    [
      policy([], {
        rateLimit: { local: { rules: [{ limit: { requests: 1, unit: "Fortnight" } }] } },
      }),
      /spec\.rateLimit\.local\.rules\[0\]\.limit\.unit: "Fortnight" is not one of Second, Minute, Hour, Day, Week, Month, Year/,
    ],
    [
      policy([], {
        rateLimit: {
          local: {
            rules: [{ limit: { requests: 1, unit: "Second" } }, {
              limit: { requests: 2, unit: "Second" },
            }],
          },
        },
      }),
      /spec\.rateLimit\.local\.rules\[1\]\.clientSelectors: a second local rule for every request/,
    ],
    [
      policy([{ limit: { requests: 1, unit: "Second" }, shadowMode: true }], {
        rateLimit: {
          global: { rules: [{ limit: { requests: 1, unit: "Second" }, shadowMode: true }] },
          local: { rules: [{ limit: { requests: 1, unit: "Second" } }] },
        },
      }),
      /shadowMode: set on some rules only/,
    ],
    [
      policy([], { rateLimit: { local: { rules: [] } } }),
      /spec\.rateLimit\.local\.rules: empty/,
    ],
    [policy([], { rateLimit: {} }), /spec\.rateLimit: neither global nor local rules/],
    [
      policy([{
        clientSelectors: [{ headers: [{ name: "x api", value: "1" }] }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /clientSelectors\[0\]\.headers\[0\]\.name: "x api" is not an HTTP header name/,
    ],
    [
      policy([{
        clientSelectors: [{ headers: [{ name: "x-a", value: "a\u0007" }] }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /clientSelectors\[0\]\.headers\[0\]\.value: "a\\u0007" has a control character/,
    ],
    [
      policy([{
        clientSelectors: [{ headers: [{ name: "x-a", value: "1" }, { name: "X-A", value: "2" }] }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /clientSelectors\[0\]\.headers\[1\]: header x-a must also be "1"; the rule would match nothing/,
    ],
    [
      policy([{
        clientSelectors: [{ path: { type: "Exact", value: "/a?b" } }],
        limit: { requests: 1, unit: "Second" },
      }]),
      /clientSelectors\[0\]\.path\.value: "\/a\?b" is not a path here/,
    ],
    [
      policy([
        { clientSelectors: [{ path: { value: "/api/" } }], limit: { requests: 9, unit: "Second" } },
        {
          clientSelectors: [{ path: { type: "Exact", value: "/api/login" } }],
          limit: { requests: 1, unit: "Second" },
        },
      ]),
      /global\.rules\[1\]: every request it matches, spec\.rateLimit\.global\.rules\[0\] matches too; here only the first matching rule applies/,
    ],
  ];
  for (const [p, want] of cases) {
    const problems = refused(p);
    assert.ok(problems.some((x) => want.test(x)), `${want}: ${problems.join("; ")}`);
  }
});

Deno.test("envoy gateway: the preview converts a policy, prints the RateLimit and runs it", async () => {
  const r = await run([
    "-f",
    example("envoy-gateway-policy.yaml"),
    "--rate",
    "8/s",
    "--for",
    "1s",
    "--path",
    "/orders",
    "--header",
    "X-Api-Key=alice",
    "--replicas",
    "2",
  ]);
  assert.equal(r.code, 0, r.err);
  assert.match(
    r.out[0],
    /^# Envoy Gateway's BackendTrafficPolicy demo\/httpbin \(gateway\.envoyproxy\.io\/v1alpha1\)/,
  );
  assert.ok(r.out.includes("8 requests: 5 admitted, 3 rejected (0 by local limits, 3 by global)"));
  const render = await run(["-f", example("envoy-gateway-policy.yaml"), "--render"]);
  assert.equal(render.code, 0);
  assert.ok(render.out.includes("kind: RateLimit"));
  const bad = await run(["-f", example("envoy-gateway-uncarried.yaml"), "--render"]);
  assert.equal(bad.code, 2);
  assert.match(
    bad.err,
    /cannot carry over Envoy Gateway's BackendTrafficPolicy: spec\.rateLimit\.global\.rules\[0\]\.clientSelectors\[0\]\.methods\[0\]\.invert/,
  );
  assert.deepEqual(render.out.filter((l) => l.startsWith("error")), []);
});

/** The example policy (docs/examples/envoy-gateway-policy.yaml), read afresh. */
async function examplePolicy(): Promise<Obj> {
  return parse(await Deno.readTextFile(example("envoy-gateway-policy.yaml"))) as Obj;
}

/** The object at `path` in `doc`. */
function dig(doc: Obj, path: (string | number)[]): Obj {
  return path.reduce<unknown>((v, k) => (v as Record<string | number, unknown>)[k], doc) as Obj;
}

Deno.test("envoy gateway: a field unknown at any level is refused by its path, never dropped", async () => {
  const rule0 = ["spec", "rateLimit", "global", "rules", 0];
  const places: (string | number)[][] = [
    [],
    ["metadata"],
    ["spec", "targetRefs", 0],
    ["spec", "rateLimit"],
    ["spec", "rateLimit", "global"],
    ["spec", "rateLimit", "global", "rules", 1],
    ["spec", "rateLimit", "global", "rules", 2, "limit"],
    [...rule0, "clientSelectors", 0, "path"],
    [...rule0, "clientSelectors", 0, "headers", 0],
  ];
  for (const place of places) {
    const doc = await examplePolicy();
    dig(doc, place).bogusKey = 1;
    assert.deepEqual(refused(doc), [`${formatPath([...place, "bogusKey"])}: unknown field`]);
  }
  // A misspelt field is named with the one meant.
  const typo = await examplePolicy();
  const rateLimit = dig(typo, ["spec", "rateLimit"]);
  rateLimit.typex = rateLimit.type;
  delete rateLimit.type;
  assert.deepEqual(refused(typo), ["spec.rateLimit.typex: unknown field; did you mean type?"]);
  // A misspelt path value is refused, not read as the value's default (/, every path).
  const noValue = await examplePolicy();
  const path = dig(noValue, [...rule0, "clientSelectors", 0, "path"]);
  path.valuex = path.value;
  delete path.value;
  const at = "spec.rateLimit.global.rules[0].clientSelectors[0].path";
  assert.deepEqual(refused(noValue), [`${at}.valuex: unknown field; did you mean value?`]);
  // A type Envoy Gateway does not have, and a list written as a map, are not read as nothing.
  const badType = await examplePolicy();
  dig(badType, ["spec", "rateLimit"]).type = "Globall";
  assert.deepEqual(refused(badType), ['spec.rateLimit.type: "Globall" is not Global or Local']);
  const headerMap = await examplePolicy();
  const selector = dig(headerMap, [...rule0, "clientSelectors", 0]);
  selector.headers = (selector.headers as unknown[])[0];
  assert.deepEqual(refused(headerMap), [
    "spec.rateLimit.global.rules[0].clientSelectors[0].headers: not a list",
  ]);
  // The preview says it in one line, exit 2.
  const text = await Deno.readTextFile(example("envoy-gateway-policy.yaml"));
  const r = await runLines(["-f", "-", "--render"], text.replace("type: Global", "typex: Global"));
  assert.equal(r.code, 2);
  assert.deepEqual(r.err, [
    "error: stdin: cannot carry over Envoy Gateway's BackendTrafficPolicy: spec.rateLimit.typex: unknown field; did you mean type?",
  ]);
  assert.deepEqual(r.out, []);
});

Deno.test("envoy gateway: fields of its API that do not convert are refused as not supported, not unknown", async () => {
  const shared = await examplePolicy();
  dig(shared, ["spec", "rateLimit", "global", "rules", 0]).shared = true;
  assert.deepEqual(refused(shared), [
    "spec.rateLimit.global.rules[0].shared: not supported: a RateLimit counts each route of a gateway apart; no counter is shared across targets",
  ]);
  const section = await examplePolicy();
  dig(section, ["spec", "targetRefs", 0]).sectionName = "http";
  assert.deepEqual(refused(section), [
    "spec.targetRefs[0].sectionName: not supported: a RateLimit limits all of a route's or gateway's Pods, not a section of it",
  ]);
  // What the API server adds to metadata, and shared at its default, convert.
  const served = await examplePolicy();
  Object.assign(dig(served, ["metadata"]), { uid: "u", generation: 2, managedFields: [] });
  dig(served, ["spec", "rateLimit", "global", "rules", 0]).shared = false;
  served.status = { ancestors: [] };
  converted(served);
});

Deno.test("envoy gateway: a policy of several targets is a RateLimit each, named after both, with the same limits", () => {
  const refs = ["orders", "carts"].map((name) => ({
    group: "gateway.networking.k8s.io",
    kind: "HTTPRoute",
    name,
  }));
  const c = fromBackendTrafficPolicy(
    policy([{ limit: { requests: 5, unit: "Minute" } }], { targetRefs: refs }),
  );
  assert.ok(c.ok, JSON.stringify(c));
  assert.deepEqual(
    c.rateLimits.map((r) => [(r.metadata as Obj).name, (r.spec as Obj).selectorLabels]),
    [["p-orders", { app: "orders" }], ["p-carts", { app: "carts" }]],
  );
  assert.equal(c.rateLimit, c.rateLimits[0]);
  const specs = c.rateLimits.map((r) => {
    const { selectorLabels: _, ...rest } = r.spec as Obj;
    return rest;
  });
  assert.deepEqual(specs[1], specs[0]);
  for (const r of c.rateLimits) {
    assert.ok(parseRateLimit({ ...r, metadata: { ...r.metadata as Obj, uid: "u" } }).ok);
  }
  assert.match(
    c.differences.join("\n"),
    /spec\.targetRefs: 2 targets: one RateLimit each \(p-orders, p-carts\), with the same limits, each target's counted apart as under Envoy Gateway; the preview runs the first/,
  );
  // A name Kubernetes would refuse is refused here.
  const long = fromBackendTrafficPolicy({
    ...policy([{ limit: { requests: 5, unit: "Minute" } }], {
      targetRefs: [refs[0], { ...refs[1], name: "c".repeat(63) }],
    }),
    metadata: { name: "p".repeat(190), namespace: "demo" },
  });
  assert.ok(!long.ok);
  assert.match(
    long.problems.join("\n"),
    /spec\.targetRefs\[1\]\.name: its RateLimit's name would have 254 characters, over Kubernetes' 253/,
  );
});

Deno.test("the preview of a policy of two targets prints both RateLimits and runs the first", async () => {
  const text = (second: string) =>
    JSON.stringify(
      policy([{ limit: { requests: 2, unit: "Minute" } }], {
        targetRefs: ["orders", second].map((name) => ({
          group: "gateway.networking.k8s.io",
          kind: "HTTPRoute",
          name,
        })),
        rateLimit: { local: { rules: [{ limit: { requests: 2, unit: "Minute" } }] } },
      }),
    );
  const r = await runLines(["-f", "-", "--rate", "1/s", "--for", "3s"], text("carts"));
  assert.equal(r.code, 0, r.err.join("\n"));
  const docs = r.out.join("\n").split("\n\n")[0];
  assert.match(docs, /as this project's RateLimits\./);
  assert.deepEqual(
    [...docs.matchAll(/^ {2}name: (.*)$/gm)].map((m) => m[1]),
    ["p-orders", "p-carts"],
  );
  assert.match(r.out.join("\n"), /3 requests: 2 admitted, 1 rejected/);
  // A target name no label can hold, in the second only: refused, naming it.
  const bad = await runLines(["-f", "-", "--render"], text("c".repeat(64)));
  assert.equal(bad.code, 2);
  assert.match(
    bad.err.join("\n"),
    /spec\.targetRefs\[1\]\.name: "c+\.\.\. cannot be a label's value/,
  );
});
