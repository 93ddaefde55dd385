/** The reusable map functions, and how a controller's triggers are put together from them. */
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { apiVersionOf, RESOURCES } from "../../src/api/resources.ts";
import { type ControllerSpec, triggersOf } from "../../src/runtime/controller_spec.ts";
import {
  everyPrimary,
  ownerByLabel,
  whenLabelled,
  whenNamed,
} from "../../src/controllers/triggers.ts";
import { fakeCache } from "../reconcile/module_fixtures.ts";

const obj = (kind: string, name: string, namespace?: string, labels?: Record<string, string>) =>
  ({
    apiVersion: "v1",
    kind,
    metadata: { name, ...(namespace ? { namespace } : {}), ...(labels ? { labels } : {}) },
  }) as KubeObject;
const rl = (ns: string, name: string) => ({
  ...obj("RateLimit", name, ns),
  apiVersion: apiVersionOf(RESOURCES.RateLimit),
});
const cache = fakeCache([rl("b", "two"), rl("a", "one")]);

Deno.test("everyPrimary: every cached primary, sorted", () => {
  assert.deepEqual(everyPrimary(RESOURCES.RateLimit)(obj("Pod", "p", "a"), cache), [
    "a/one",
    "b/two",
  ]);
});

Deno.test("whenLabelled and whenNamed pass on only what they name", () => {
  const every = everyPrimary(RESOURCES.RateLimit);
  const claimed = whenLabelled({ claim: "keda", tier: "x" }, every);
  assert.deepEqual(claimed(obj("Lease", "l", "a", { claim: "keda" }), cache), []);
  assert.equal(claimed(obj("Lease", "l", "a", { claim: "keda", tier: "x" }), cache).length, 2);
  const crd = whenNamed("envoyfilters.networking.istio.io", every);
  assert.deepEqual(crd(obj("CustomResourceDefinition", "other"), cache), []);
  assert.equal(
    crd(obj("CustomResourceDefinition", "envoyfilters.networking.istio.io"), cache).length,
    2,
  );
});

Deno.test("ownerByLabel: the owner the label names, else the orphan's answer", () => {
  const owner = ownerByLabel(
    RESOURCES.RateLimit,
    "owner",
    (m) => `${m.namespace}.${m.name}`,
    () => [
      "orphan",
    ],
  );
  assert.deepEqual(owner(obj("ConfigMap", "c", "x", { owner: "b.two" }), cache), ["b/two"]);
  assert.deepEqual(owner(obj("ConfigMap", "c", "x", { owner: "gone.x" }), cache), ["orphan"]);
});

Deno.test("triggersOf: a primary's own key first, each key once, a throwing map function told and skipped", () => {
  const spec: Pick<ControllerSpec, "primary" | "watches" | "peers"> = {
    primary: RESOURCES.RateLimit,
    peers: everyPrimary(RESOURCES.RateLimit),
    watches: [
      { type: RESOURCES.Pod, trigger: () => ["a/one"] },
      { type: RESOURCES.Pod, labelSelector: "x=1", trigger: () => ["a/one", "b/two"] },
      {
        type: RESOURCES.ConfigMap,
        trigger: () => {
          throw new Error("boom");
        },
      },
    ],
  };
  const errors: string[] = [];
  const t = triggersOf(spec, (err) => errors.push(String(err)));
  assert.deepEqual(t(RESOURCES.RateLimit, rl("c", "new"), cache), ["c/new", "a/one", "b/two"]);
  assert.deepEqual(t(RESOURCES.Pod, obj("Pod", "p", "a"), cache), ["a/one", "b/two"]);
  assert.deepEqual(t(RESOURCES.ConfigMap, obj("ConfigMap", "c", "a"), cache), []);
  assert.deepEqual(errors, ["Error: boom"]);
  assert.deepEqual(t(RESOURCES.Service, obj("Service", "s", "a"), cache), []);
  assert.throws(() => triggersOf(spec)(RESOURCES.ConfigMap, obj("ConfigMap", "c"), cache), /boom/);
});
