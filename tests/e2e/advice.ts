/**
 * deploy/ratelimit/advice.yaml on a real API server: `kubectl apply` of a RateLimit prints the
 * preview's advice on its rules as warnings, word for word and in order, and nothing for rules that
 * need none; the write is never refused.
 */
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { parseRateLimit } from "../../src/api/ratelimit.ts";
import { ruleAdvice } from "../../src/api/ratelimit_advice.ts";
import { ADVICE_NAME, adviceObjects } from "../../src/deploy/advice_objects.ts";
import type { E2E } from "./harness.ts";
import { bucket, GATEWAY_API } from "./fixtures.ts";

const PREFIX =
  `Warning: Validation failed for ValidatingAdmissionPolicy '${ADVICE_NAME}' with binding '${ADVICE_NAME}': `;

/** A RateLimit in namespace default with these local bucket rules and global rules. */
function withRules(name: string, buckets: object[], rules: object[]): KubeObject {
  return {
    apiVersion: GATEWAY_API,
    kind: "RateLimit",
    metadata: { name, namespace: "default" },
    spec: {
      selectorLabels: { app: `advice-${name}` },
      local: { defaultBucket: bucket(10, 10, "1s"), buckets },
      ...(rules.length > 0 ? { global: { rules } } : {}),
    },
  };
}

const limit = { requests: 10, unit: "Second" };
const path = (i: number) => `/p${i}`;

/**
 * Rules at every place a check is generated for: the first and last index of both lists. Values are
 * never `y`, `n`, `on` or `off`, which kubectl (YAML 1.1) reads as booleans.
 */
const CASES: KubeObject[] = [
  withRules(
    "host-header",
    [{ headers: { Host: "api.example.com" }, bucket: bucket(1, 1, "1s") }],
    [],
  ),
  withRules(
    "each-kind",
    [
      ...Array.from({ length: 6 }, (_, i) => ({ path: path(i), bucket: bucket(1, 1, "1s") })),
      { path: "/k", headers: { "Keep-Alive": "x" }, bucket: bucket(1, 1, "1s") },
      { path: "/h", perClient: { header: "HOST" }, bucket: bucket(1, 1, "1s") },
    ],
    [
      { path: "/t", perClient: { header: "transfer-encoding" }, limit },
      ...Array.from({ length: 6 }, (_, i) => ({ path: path(i), limit })),
      { path: "/x", headers: { host: "a.example.com", "proxy-connection": "close" }, limit },
    ],
  ),
  withRules("none", [{ path: "/a", headers: { "x-hostname": "h" }, bucket: bucket(1, 1, "1s") }], [
    { path: "/b", perClient: { header: "x-host" }, limit },
  ]),
];

/** The warnings of a `kubectl apply` of `obj`, as the preview's lines. */
async function warningsOf(env: E2E, obj: KubeObject, extra: string[] = []): Promise<string[]> {
  const r = await env.kube.tryApply([obj], extra);
  assert.equal(r.code, 0, `advice never refuses: ${r.stderr}`);
  return r.stderr.split("\n").filter((l) => l.startsWith("Warning: ")).map((l) => {
    assert.ok(l.startsWith(PREFIX), l);
    return l.slice(PREFIX.length);
  });
}

/** Installs the advice policy and checks each case's warnings against the preview's advice. */
export async function adviceWarnings(env: E2E): Promise<void> {
  await env.kube.apply(adviceObjects());
  // A policy takes effect within a second or two of being created: probe until it warns. Server
  // dry runs, since kubectl sends nothing for an object that is unchanged (and then nothing warns);
  // each case below is a new object, so its apply is a create.
  const probe = CASES[0];
  const deadline = Date.now() + 30_000;
  while ((await warningsOf(env, probe, ["--dry-run=server"])).length === 0) {
    assert.ok(Date.now() < deadline, "the advice policy never warned within 30 s");
    await new Promise((r) => setTimeout(r, 500));
  }
  for (const obj of CASES) {
    const parsed = parseRateLimit(obj);
    assert.ok(parsed.ok, `${obj.metadata.name}: ${JSON.stringify(parsed)}`);
    const want = ruleAdvice(parsed.value);
    assert.deepEqual(await warningsOf(env, obj), want, obj.metadata.name);
  }
  // Each kind, at the last place of both lists and the first of the global rules (host-header
  // has the first local bucket): four kinds and Host beside a hop-by-hop header.
  assert.equal(ruleAdvice(parseOk(CASES[1])).length, 5);
  assert.equal(ruleAdvice(parseOk(CASES[2])).length, 0);
  await env.kube.delete("ratelimits", CASES.map((o) => o.metadata.name), "default");
  await env.kube.delete("validatingadmissionpolicybindings", [ADVICE_NAME]);
  await env.kube.delete("validatingadmissionpolicies", [ADVICE_NAME]);
}

function parseOk(obj: KubeObject) {
  const parsed = parseRateLimit(obj);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed));
  return parsed.value;
}
