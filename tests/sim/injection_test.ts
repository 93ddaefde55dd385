/**
 * The simulated injector decides as Istio's injection webhooks for the default revision
 * (istio-discovery chart, templates/mutatingwebhook.yaml): a table of namespace and Pod labels.
 */
import assert from "node:assert/strict";
import { meshProxyOf } from "../../src/api/pod.ts";
import { injectMeshProxy, selectsForInjection } from "../../sim/cluster/injection.ts";
import type { KubeObject } from "../../src/api/object.ts";

const CASES: [string, Record<string, string>, Record<string, string>, boolean][] = [
  ["namespace istio-injection=enabled", { "istio-injection": "enabled" }, {}, true],
  ["...but the Pod opts out", { "istio-injection": "enabled" }, {
    "sidecar.istio.io/inject": "false",
  }, false],
  ["namespace istio-injection=disabled, even if the Pod asks", { "istio-injection": "disabled" }, {
    "sidecar.istio.io/inject": "true",
  }, false],
  ["namespace istio.io/rev=default", { "istio.io/rev": "default" }, {}, true],
  ["namespace istio.io/rev of another revision", { "istio.io/rev": "canary" }, {}, false],
  [
    "istio-injection wins over istio.io/rev",
    {
      "istio-injection": "enabled",
      "istio.io/rev": "canary",
    },
    {},
    true,
  ],
  ["no namespace label, Pod sidecar.istio.io/inject=true", {}, {
    "sidecar.istio.io/inject": "true",
  }, true],
  ["no namespace label, Pod istio.io/rev=default", {}, { "istio.io/rev": "default" }, true],
  ["no namespace label, Pod inject=true but another revision", {}, {
    "sidecar.istio.io/inject": "true",
    "istio.io/rev": "canary",
  }, false],
  ["no labels at all (enableNamespacesByDefault is off)", {}, {}, false],
];

for (const [name, ns, pod, injected] of CASES) {
  Deno.test(`injection: ${name}: ${injected ? "injected" : "not injected"}`, () => {
    assert.equal(selectsForInjection(ns, pod), injected);
  });
}

function pod(annotations: Record<string, string> = {}, containers = [{ name: "app" }]): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p", namespace: "demo", labels: { app: "x" }, annotations },
    spec: { containers },
  };
}

Deno.test("injection: a sidecar by default, a router for the gateway template, one proxy", () => {
  const ns = { "istio-injection": "enabled" };
  const side = pod();
  injectMeshProxy(side, ns);
  assert.equal(meshProxyOf(side), "sidecar");
  assert.equal(side.metadata.labels?.["security.istio.io/tlsMode"], "istio");
  const gw = pod({ "inject.istio.io/templates": "gateway" }, [{ name: "istio-proxy" }]);
  injectMeshProxy(gw, ns);
  assert.equal(meshProxyOf(gw), "router");
  const names = (gw.spec as { containers: { name: string }[] }).containers.map((c) => c.name);
  assert.deepEqual(names, ["istio-proxy"], "the chart's placeholder is filled, not doubled");
  const plain = pod();
  injectMeshProxy(plain, {});
  assert.equal(meshProxyOf(plain), undefined);
});
