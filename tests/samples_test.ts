/** Every sample parses with its kind's schema; the Scaler and Serverless samples use every field. */
import assert from "node:assert/strict";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { Service } from "kubernetes-models/v1/Service";
import { parse, parseAllDocuments } from "yaml";
import { z } from "zod";
import { parseFillInterval } from "../src/api/duration.ts";
import { parseRateLimit, type RateLimit } from "../src/api/ratelimit.ts";
import { parseScaler } from "../src/api/scaler.ts";
import { ScalerSpecSchema } from "../src/api/schema/scaler.ts";
import { ServerlessSpecSchema } from "../src/api/schema/serverless.ts";
import { GlobalSchema } from "../src/api/schema/ratelimit.ts";
import { reconcileRateLimit } from "../src/reconcile/ratelimit/mod.ts";
import { ONE_READY_ENGINE } from "../src/reconcile/ratelimit/input.ts";
import { parseServerless } from "../src/api/serverless.ts";
import type { ParseResult } from "../src/api/issues.ts";

const SAMPLES = new URL("../samples/", import.meta.url);
const read = (name: string): unknown => parse(Deno.readTextFileSync(new URL(name, SAMPLES)));

function ok<T>(result: ParseResult<T>): T {
  assert.ok(result.ok, result.ok ? "" : JSON.stringify(result.errors));
  return result.value;
}

/** Unwraps optional, default and prefault wrappers to the schema that holds the shape. */
function inner(schema: z.ZodType): z.ZodType {
  if (
    schema instanceof z.ZodOptional || schema instanceof z.ZodDefault ||
    schema instanceof z.ZodPrefault
  ) {
    return inner(schema.def.innerType as z.ZodType);
  }
  return schema;
}

/** Paths of object fields of `schema` that none of `values` sets (list items are pooled). */
function unusedFields(schema: z.ZodType, values: unknown[], path: string): string[] {
  const s = inner(schema);
  if (s instanceof z.ZodArray) {
    return unusedFields(s.element as z.ZodType, values.flat(), `${path}[]`);
  }
  if (!(s instanceof z.ZodObject)) return [];
  return Object.entries(s.shape as Record<string, z.ZodType>).flatMap(([key, child]) => {
    const set = values.flatMap((v) => {
      const value = (v as Record<string, unknown>)[key];
      return value === undefined ? [] : [value];
    });
    return set.length === 0 ? [`${path}.${key}`] : unusedFields(child, set, `${path}.${key}`);
  });
}

Deno.test("serverless.yaml: name default in platform-system, the finalizer, every spec field", () => {
  const raw = read("serverless.yaml");
  const sample = ok(parseServerless(raw));
  assert.equal(sample.metadata.name, "default");
  assert.equal(sample.metadata.namespace, "platform-system");
  assert.deepEqual(sample.metadata.finalizers, [
    "serverless-manager.platform-project.io/deletion-hook",
  ]);
  assert.deepEqual(
    unusedFields(ServerlessSpecSchema, [(raw as { spec: unknown }).spec], "spec"),
    [],
  );
});

Deno.test("scaler.yaml: the finalizer and every spec field used", () => {
  const raw = read("scaler.yaml");
  const sample = ok(parseScaler(raw));
  assert.equal(sample.metadata.name, "default");
  assert.equal(sample.metadata.namespace, "platform-system");
  assert.deepEqual(sample.metadata.finalizers, ["keda-manager.platform-project.io/deletion-hook"]);
  // containerName is left out on purpose: env goes to every component, so no one name fits.
  assert.deepEqual(unusedFields(ScalerSpecSchema, [(raw as { spec: unknown }).spec], "spec"), [
    "spec.env[].valueFrom.resourceFieldRef.containerName",
  ]);
});

/** The fillIntervals of the default bucket and of each additional bucket, in milliseconds. */
function intervals(rl: RateLimit): { base: number; extra: number[] } {
  const ms = (text: string) => parseFillInterval(text) ?? assert.fail(`bad interval ${text}`);
  return {
    base: ms(rl.spec.local!.defaultBucket.fillInterval),
    extra: rl.spec.local!.buckets.map((b) => ms(b.bucket.fillInterval)),
  };
}

Deno.test("ratelimit-workload.yaml: httpbin in demo with path, headers and path+headers buckets", () => {
  const rl = ok(parseRateLimit(read("ratelimit-workload.yaml")));
  assert.equal(rl.metadata.namespace, "demo");
  assert.deepEqual(rl.spec.selectorLabels, { app: "httpbin" });
  assert.equal(rl.spec.enableResponseHeaders, true);
  const shapes = rl.spec.local!.buckets.map((b) => [b.path !== undefined, b.headers !== undefined]);
  assert.deepEqual(shapes, [[true, true], [true, false], [false, true]]);
  assert.deepEqual(rl.spec.local!.buckets[0].path, "/headers");
  assert.deepEqual(rl.spec.local!.buckets[0].headers, { "X-Rate-Limited": "true" });
  const { base, extra } = intervals(rl);
  for (const ms of extra) {
    assert.equal(ms % base, 0, "every interval is a multiple of the default's");
  }
});

Deno.test("ratelimit-gateway.yaml: mesh-system, selecting app: mesh-ingressgateway", () => {
  const rl = ok(parseRateLimit(read("ratelimit-gateway.yaml")));
  assert.equal(rl.metadata.namespace, "mesh-system");
  assert.equal(rl.spec.selectorLabels.app, "mesh-ingressgateway");
  const { base, extra } = intervals(rl);
  for (const ms of extra) assert.equal(ms % base, 0);
});

Deno.test("ratelimit-invalid.yaml: schema-valid, but a bucket interval is not a multiple of the default's", () => {
  const rl = ok(parseRateLimit(read("ratelimit-invalid.yaml")));
  const { base, extra } = intervals(rl);
  assert.ok(extra.length > 0);
  assert.ok(extra.some((ms) => ms % base !== 0));
  const workload = ok(parseRateLimit(read("ratelimit-workload.yaml")));
  assert.notDeepEqual(
    rl.spec.selectorLabels,
    workload.spec.selectorLabels,
    "never competes with the valid one",
  );
});

Deno.test("docs/examples/ratelimit-global.yaml: local and global parts, every global field, valid for the operator", () => {
  // Not in samples/: it selects the workload sample's Pods, so applying samples/ (./deno task dev,
  // the deployed e2e) would make one of the two a conflict.
  const raw = read("../docs/examples/ratelimit-global.yaml");
  const rl = ok(parseRateLimit(raw));
  assert.equal(rl.metadata.namespace, "demo");
  assert.deepEqual(rl.spec.selectorLabels, { app: "httpbin" });
  assert.ok(rl.spec.local);
  assert.deepEqual(
    unusedFields(GlobalSchema, [(raw as { spec: { global: unknown } }).spec.global], "global"),
    [],
  );
  assert.deepEqual(rl.spec.global?.rules?.map((r) => [r.path ?? r.pathPrefix, r.limit.unit]), [
    ["/anything", "Minute"],
    ["/ip", "Second"],
    ["/anything/export", "Minute"],
    ["/delay/", "Second"],
    [undefined, "Day"],
  ]);
  // The operator applies it (the local part while the engine is not Ready, both once it is).
  for (const engine of [false, true]) {
    const plan = reconcileRateLimit({
      rateLimit: raw,
      peers: [],
      pods: [],
      meshInstalled: true,
      now: 0,
      ...(engine ? { globalEngine: ONE_READY_ENGINE } : {}),
    });
    assert.equal((plan.status as { state: string }).state, "Ready", String(engine));
    assert.equal(JSON.stringify(plan.apply).includes("envoy.filters.http.ratelimit"), engine);
  }
});

Deno.test("demo-workload.yaml: namespace demo and an httpbin Deployment whose pods the RateLimit selects", () => {
  const text = Deno.readTextFileSync(new URL("demo-workload.yaml", SAMPLES));
  const docs = parseAllDocuments(text).map((d) => d.toJS());
  const kinds = docs.map((d) => `${d.kind}/${d.metadata.name}`);
  assert.deepEqual(kinds, ["Namespace/demo", "Deployment/httpbin", "Service/httpbin"]);
  new Namespace(docs[0]).validate();
  new Deployment(docs[1]).validate();
  new Service(docs[2]).validate();
  const deployment = docs[1];
  assert.equal(deployment.metadata.namespace, "demo");
  const rl = ok(parseRateLimit(read("ratelimit-workload.yaml")));
  const podLabels: Record<string, string> = deployment.spec.template.metadata.labels;
  for (const [k, v] of Object.entries(rl.spec.selectorLabels)) assert.equal(podLabels[k], v);
  assert.deepEqual(deployment.spec.selector.matchLabels, podLabels);
});
