/** Objects that break the CRD schemas, and the check that kubectl apply refuses each clearly. */
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import type { E2E } from "./harness.ts";
import { rateLimit, scaler, serverless } from "./fixtures.ts";
import { boundCases } from "../reconcile/ratelimit_extremes.ts";

/** What the API server says of one over each bound of docs/ratelimit.md "Bounds". */
const OVER_BOUND: Record<string, RegExp> = {
  "rules": /spec\.local\.buckets: Too many: 9: must have at most 8 items/,
  "path length": /spec\.local\.buckets\[0\]\.path: Too long: may not be more than 1024/,
  "headers of a rule": /spec\.local\.buckets\[0\]\.headers: Too many: 5: must have at most 4 items/,
  "header name length":
    /spec\.local\.buckets\[0\]\.headers: Invalid value: "object": header names must have at most 64 characters/,
  "headers and query parameters of a rule together":
    /spec\.local\.buckets\[0\]: Invalid value: "object": headers and queryParams must have at most 4 entries together/,
  "query parameter name length":
    /spec\.local\.buckets\[0\]\.queryParams: Invalid value: "object": query parameter names must have at most 32 characters/,
  "query parameter value length":
    /spec\.local\.buckets\[0\]\.queryParams\.q: Too long: may not be more than 40/,
  "header value length":
    /spec\.local\.buckets\[0\]\.headers\.x-a: Too long: may not be more than 128/,
  "selector labels": /spec\.selectorLabels: Too many: 257: must have at most 256 items/,
  "label key length":
    /spec\.selectorLabels: Invalid value: "object": label keys must have at most 317 characters/,
  "label value length": /spec\.selectorLabels\.app: Too long: may not be more than 63/,
  "tokens":
    /spec\.local\.defaultBucket\.maxTokens: Invalid value: 4294967296: .*less than or equal to 4294967295/,
  "fillInterval":
    /spec\.local\.defaultBucket\.fillInterval: Invalid value: "1000000000s": .*should match/,
  "global rules": /spec\.global\.rules: Too many: 9: must have at most 8 items/,
  "global requests":
    /spec\.global\.default\.limit\.requests: Invalid value: \d+: .*less than or equal to/,
};

/** Each bound's case one over it, as an object kubectl applies in namespace default. */
function overBounds(): { what: string; obj: KubeObject; stderr: RegExp[] }[] {
  // A bound the operator holds and the CRD does not (operatorOnly) is stored by the API server.
  return boundCases().filter((c) => !c.operatorOnly).map((c, i) => {
    const obj = structuredClone(c.over);
    obj.metadata = { name: `over-bound-${i}`, namespace: "default" };
    return {
      what: `one over the bound: ${c.what}`,
      obj,
      stderr: [/is invalid/, OVER_BOUND[c.what] ?? new RegExp(`no OVER_BOUND entry for ${c.what}`)],
    };
  });
}

/** Each case: a manifest that breaks the schema and what stderr must say. */
const REFUSALS: { what: string; obj: KubeObject; stderr: RegExp[] }[] = [
  {
    what: "maxTokens 0",
    obj: withSpec(
      rateLimit("default", "bad-tokens", "web"),
      (s) => (s.local as { defaultBucket: { maxTokens: number } }).defaultBucket.maxTokens = 0,
    ),
    stderr: [/is invalid/, /spec\.local\.defaultBucket\.maxTokens/, /greater than or equal to 1/],
  },
  {
    what: "fillInterval 10x",
    obj: withSpec(
      rateLimit("default", "bad-interval", "web"),
      (s) =>
        (s.local as { defaultBucket: { fillInterval: string } }).defaultBucket.fillInterval = "10x",
    ),
    stderr: [/is invalid/, /spec\.local\.defaultBucket\.fillInterval/, /should match/],
  },
  {
    what: "maxTokens as a string",
    obj: withSpec(
      rateLimit("default", "bad-type", "web"),
      (s) => (s.local as { defaultBucket: { maxTokens: unknown } }).defaultBucket.maxTokens = "ten",
    ),
    stderr: [
      /is invalid/,
      /spec\.local\.defaultBucket\.maxTokens/,
      /must be of type integer|Invalid value/,
    ],
  },
  {
    what: "enforce as a string (shadow mode is a boolean)",
    obj: withSpec(rateLimit("default", "bad-enforce", "web"), (s) => s.enforce = "false"),
    stderr: [/is invalid/, /spec\.enforce/, /must be of type boolean|Invalid value/],
  },
  {
    what: "grpcStatus Internal",
    obj: withSpec(rateLimit("default", "bad-grpc", "web"), (s) => s.grpcStatus = "Internal"),
    stderr: [/is invalid/, /spec\.grpcStatus/, /Unsupported value: "Internal"/],
  },
  {
    what: "a rule with both path and pathPrefix (the CRD's CEL rule)",
    obj: withSpec(
      rateLimit("default", "bad-paths", "web"),
      (s) =>
        (s.local as { buckets: unknown[] }).buckets = [{
          path: "/api",
          pathPrefix: "/api/",
          bucket: { maxTokens: 1, tokensPerFill: 1, fillInterval: "30s" },
        }],
    ),
    stderr: [
      /is invalid/,
      /spec\.local\.buckets\[0\]/,
      /a rule takes path or pathPrefix, not both/,
    ],
  },
  {
    what: "a rule listing a method twice (a set in the CRD), and a method not of the nine",
    obj: withSpec(
      rateLimit("default", "bad-methods", "web"),
      (s) =>
        (s.local as { buckets: unknown[] }).buckets = [{
          methods: ["GET", "GET"],
          bucket: { maxTokens: 1, tokensPerFill: 1, fillInterval: "30s" },
        }, {
          methods: ["get"],
          bucket: { maxTokens: 1, tokensPerFill: 1, fillInterval: "30s" },
        }],
    ),
    stderr: [
      /is invalid/,
      /spec\.local\.buckets\[0\]\.methods\[1\]: Duplicate value: "GET"/,
      /spec\.local\.buckets\[1\]\.methods\[0\]: Unsupported value: "get"/,
    ],
  },
  {
    what:
      "a rule listing a host twice, a host in upper case, and hosts over 512 characters together (a CEL sum)",
    obj: withSpec(
      rateLimit("default", "bad-hosts", "web"),
      (s) =>
        (s.local as { buckets: unknown[] }).buckets = [{
          hosts: ["a.example.com", "a.example.com"],
          bucket: { maxTokens: 1, tokensPerFill: 1, fillInterval: "30s" },
        }, {
          hosts: ["API.example.com"],
          bucket: { maxTokens: 1, tokensPerFill: 1, fillInterval: "30s" },
        }, {
          hosts: ["a", "b", "c"].map((l) => `${l.repeat(63)}.${l.repeat(63)}.${l.repeat(50)}`),
          bucket: { maxTokens: 1, tokensPerFill: 1, fillInterval: "30s" },
        }],
    ),
    stderr: [
      /is invalid/,
      /spec\.local\.buckets\[0\]\.hosts\[1\]: Duplicate value: "a\.example\.com"/,
      /spec\.local\.buckets\[1\]\.hosts\[0\]: Invalid value: "API\.example\.com"/,
      /spec\.local\.buckets\[2\]\.hosts: Invalid value: "array": hosts must have at most 512 characters together/,
    ],
  },
  {
    what: "Scaler log level verbose",
    obj: scaler("default", "bad-level", { logging: { operator: { level: "verbose" } } }),
    stderr: [/is invalid/, /spec\.logging\.operator\.level/, /Unsupported value: "verbose"/],
  },
  {
    what: "Serverless eventing without endpoint",
    obj: serverless("default", "bad-eventing", { eventing: {} }),
    stderr: [/is invalid/, /spec\.eventing\.endpoint/, /Required value/],
  },
  {
    what: "an unknown spec field",
    obj: serverless("default", "bad-field", { logLevle: "debug" }),
    stderr: [/unknown field "spec\.logLevle"/],
  },
];

function withSpec(obj: KubeObject, edit: (spec: Record<string, unknown>) => void): KubeObject {
  const copy = structuredClone(obj);
  edit(copy.spec as Record<string, unknown>);
  return copy;
}

/** Applies each refused object: kubectl fails, stderr names the field and the rule, nothing is stored. */
export async function schemaRefusals(env: E2E): Promise<void> {
  for (const c of [...REFUSALS, ...overBounds()]) {
    const r = await env.kube.tryApply([c.obj]);
    assert.notEqual(r.code, 0, `${c.what}: kubectl apply accepted it:\n${r.stdout}`);
    for (const re of c.stderr) {
      assert.match(r.stderr, re, `${c.what}: stderr lacks ${re}:\n${r.stderr}`);
    }
    const stored = await env.kube.get(
      c.obj.kind.toLowerCase(),
      c.obj.metadata.name,
      c.obj.metadata.namespace,
    );
    assert.equal(stored, undefined, `${c.what}: the refused object was stored`);
  }
}
