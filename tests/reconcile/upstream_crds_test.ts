/**
 * The modules' upstream CRDs are imported on demand (src/reconcile/upstream_crds.ts): read before
 * they are loaded they throw instead of rendering a module without its CRDs (which would prune
 * them, and with them every user object of their kinds); loading imports once, and a failed
 * import is tried again.
 */
import assert from "node:assert/strict";
import { embeddedCrds, inflate } from "../../src/controllers/embedded_crds.ts";
import { deflate } from "../../tools/crdgen/embed.ts";

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
  const CRDS_GZIP_BASE64 = await deflate(JSON.stringify([CRD]));
  assert.equal(await inflate(CRDS_GZIP_BASE64), JSON.stringify([CRD]));
  let imports = 0;
  const crds = embeddedCrds("the things' CRDs", () => {
    imports++;
    return imports === 1
      ? Promise.reject(new Error("module not found"))
      : Promise.resolve({ CRDS_GZIP_BASE64 });
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
