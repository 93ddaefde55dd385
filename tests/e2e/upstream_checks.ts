/**
 * What a user of KEDA's or Kyma's own CRDs sees, checked on the real control plane: an example
 * from the project's docs is accepted, bad objects are refused by the API server with the
 * schema's messages (nothing stored), `kubectl explain` shows the field docs, `kubectl get <short
 * name>` prints the printer columns.
 */
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { type E2E, waitFor } from "./harness.ts";

/** One kind's checks. */
export interface KindChecks {
  /** The resource as kubectl names it (`scaledobject`). */
  resource: string;
  shortName: string;
  /** An example from the project's documentation. */
  valid: KubeObject;
  /** Objects the schema refuses, with the API server's message for each. */
  refused: { what: string; obj: KubeObject; message: RegExp }[];
  /** `kubectl explain <resource>.spec` must show these (the project's field docs). */
  explain: RegExp[];
  /** `kubectl get <shortName>`'s header. */
  columns: string[];
}

/** Runs one kind's checks; the valid object is left in place. */
export async function checkKind(env: E2E, c: KindChecks): Promise<void> {
  const ns = c.valid.metadata.namespace;
  for (const r of c.refused) {
    const out = await env.kube.tryApply([r.obj]);
    assert.notEqual(out.code, 0, `${r.what}: accepted:\n${out.stdout}`);
    assert.match(out.stderr, /is invalid/, `${r.what}:\n${out.stderr}`);
    assert.match(out.stderr, r.message, `${r.what}:\n${out.stderr}`);
    const stored = await env.kube.get(c.resource, r.obj.metadata.name, r.obj.metadata.namespace);
    assert.equal(stored, undefined, `${r.what}: the refused object was stored`);
  }
  await env.kube.apply([c.valid]);
  assert.ok(await env.kube.get(c.resource, c.valid.metadata.name, ns), "the example is stored");
  // The API server publishes a CRD's OpenAPI for explain shortly after it changes.
  const explained = await waitFor(
    `kubectl explain ${c.resource}.spec to show the docs`,
    async () => {
      const r = await env.kube.run(["explain", `${c.resource}.spec`]);
      return r.code === 0 && c.explain.every((re) => re.test(r.stdout)) ? r.stdout : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 1_000 },
  );
  for (const re of c.explain) assert.match(explained, re);
  const table = await env.kube.table(c.shortName, { namespace: ns });
  const [header, ...rows] = table.trimEnd().split("\n");
  assert.deepEqual(header.trim().split(/\s+/), c.columns, table);
  assert.ok(
    rows.some((r) => r.trim().split(/\s+/)[0] === c.valid.metadata.name),
    `kubectl get ${c.shortName} lacks ${c.valid.metadata.name}:\n${table}`,
  );
}

const withSpec = (obj: KubeObject, spec: Record<string, unknown>): KubeObject => ({
  ...obj,
  metadata: { ...obj.metadata, name: `${obj.metadata.name}-bad` },
  spec,
});

/** KEDA's cron scaler example (keda.sh docs, "Cron" scaler), in `namespace`. */
export function kedaDocsScaledObject(namespace: string): KubeObject {
  return {
    apiVersion: "keda.sh/v1alpha1",
    kind: "ScaledObject",
    metadata: { name: "cron-scaledobject", namespace },
    spec: {
      scaleTargetRef: { name: "my-deployment" },
      triggers: [{
        type: "cron",
        metadata: {
          timezone: "Asia/Kolkata",
          start: "30 * * * *",
          end: "45 * * * *",
          desiredReplicas: "10",
        },
      }],
    },
  };
}

/** The ScaledObject checks: no scaleTargetRef and minReplicaCount "two" are refused. */
export function scaledObjectChecks(namespace: string): KindChecks {
  const valid = kedaDocsScaledObject(namespace);
  const spec = valid.spec as Record<string, unknown>;
  return {
    resource: "scaledobject",
    shortName: "so",
    valid,
    refused: [
      {
        what: "a ScaledObject without scaleTargetRef",
        obj: withSpec(valid, { triggers: spec.triggers }),
        message: /spec\.scaleTargetRef: Required value/,
      },
      {
        what: 'a ScaledObject with minReplicaCount "two"',
        obj: withSpec(valid, { ...spec, minReplicaCount: "two" }),
        message:
          /spec\.minReplicaCount: Invalid value: "string": spec\.minReplicaCount in body must be of type integer: "string"/,
      },
    ],
    explain: [
      /ScaledObjectSpec is the spec for a ScaledObject resource/,
      /scaleTargetRef\s+<Object> -required-/,
      /ScaleTarget holds the reference to the scale target Object/,
    ],
    columns: [
      "NAME",
      "SCALETARGETKIND",
      "SCALETARGETNAME",
      "MIN",
      "MAX",
      "READY",
      "ACTIVE",
      "FALLBACK",
      "PAUSED",
      "TRIGGERS",
      "AUTHENTICATIONS",
      "AGE",
    ],
  };
}

/** Kyma's inline Function example (Serverless docs, "Create an inline Function"), in our group. */
export function kymaDocsFunction(namespace: string): KubeObject {
  return {
    apiVersion: "serverless.platform-project.io/v1alpha2",
    kind: "Function",
    metadata: { name: "my-function", namespace },
    spec: {
      runtime: "nodejs22",
      source: {
        inline: {
          source:
            'module.exports = {\n  main: function (event, context) {\n    return "Hello World!";\n  }\n}',
        },
      },
    },
  };
}

/** The Function checks: no runtime, an unknown runtime and two sources are refused. */
export function functionChecks(namespace: string): KindChecks {
  const valid = kymaDocsFunction(namespace);
  const spec = valid.spec as Record<string, unknown>;
  return {
    resource: "function",
    shortName: "fn",
    valid,
    refused: [
      {
        what: "a Function without runtime",
        obj: withSpec(valid, { source: spec.source }),
        message: /spec\.runtime: Required value/,
      },
      {
        what: "a Function with runtime nodejs12",
        obj: withSpec(valid, { ...spec, runtime: "nodejs12" }),
        message:
          /spec\.runtime: Unsupported value: "nodejs12": supported values: "nodejs20", "nodejs22", "nodejs24", "python312"/,
      },
      {
        what: "a Function with an inline and a git source (Kyma's CEL rule)",
        obj: withSpec(valid, {
          ...spec,
          source: {
            inline: { source: "x" },
            gitRepository: {
              url: "https://github.com/kyma-project/serverless",
              baseDir: "/",
              reference: "main",
            },
          },
        }),
        message: /spec\.source: Invalid value: "object": Use GitRepository or Inline source/,
      },
    ],
    explain: [
      /FunctionSpec defines the desired state of Function\./,
      /runtime\s+<string> -required-/,
      /Specifies the runtime of the Function/,
    ],
    columns: ["NAME", "CONFIGURED", "RUNNING", "RUNTIME", "VERSION", "AGE"],
  };
}
