/**
 * The modules' upstream CRDs are imported on demand (src/controllers/embedded_crds.ts): read before
 * they are loaded they throw instead of rendering a module without its CRDs (which would prune
 * them, and with them every user object of their kinds); loading imports once, a failed import is
 * tried again, and a data file that is not a list of CRDs is a clear error.
 */
import assert from "node:assert/strict";
import { embeddedCrds, parseCrds } from "../../src/controllers/embedded_crds.ts";

const CRD = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "things.example.io" },
  spec: {
    group: "example.io",
    names: { kind: "Thing", plural: "things" },
    scope: "Namespaced",
    versions: [{ name: "v1", served: true, storage: true }],
  },
};

Deno.test("embedded CRDs: unreadable before load, imported once, frozen, a failed import retried", async () => {
  const text = JSON.stringify([CRD], null, 2);
  let imports = 0;
  const crds = embeddedCrds("the things' CRDs", () => {
    imports++;
    return imports === 1
      ? Promise.reject(new Error("module not found"))
      : Promise.resolve({ default: text });
  });
  assert.throws(() => crds.get(), /the things' CRDs not loaded yet/);
  await assert.rejects(crds.load(), /module not found/);
  assert.throws(() => crds.get(), /not loaded yet/);
  const [a, b] = await Promise.all([crds.load(), crds.load()]);
  assert.equal(a, b);
  assert.equal(imports, 2, "one import for both loads after the failed one");
  assert.equal(crds.get()[0].spec.names.kind, "Thing");
  assert.ok(Object.isFrozen(crds.get()[0].spec.versions[0]), "shared by every render, frozen");
});

Deno.test("a CRD data file that is not a list of named CRDs is an error naming the module", async () => {
  assert.throws(() => parseCrds("KEDA's CRDs", "{}"), /KEDA's CRDs: want a non-empty JSON array/);
  assert.throws(() => parseCrds("KEDA's CRDs", "[]"), /non-empty JSON array/);
  assert.throws(
    () => parseCrds("KEDA's CRDs", JSON.stringify([CRD, { kind: "ConfigMap" }])),
    /KEDA's CRDs: \[1\] is not a named CustomResourceDefinition/,
  );
  assert.deepEqual(parseCrds("x", JSON.stringify([CRD])), [CRD]);
  const crds = embeddedCrds("the things' CRDs", () => Promise.resolve({ default: "[1]" }));
  await assert.rejects(crds.load(), /the things' CRDs: \[0\] is not a named/);
  assert.throws(() => crds.get(), /not loaded yet/);
});
