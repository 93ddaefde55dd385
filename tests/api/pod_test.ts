/**
 * The Istio version a Pod's proxy image says (src/api/pod.ts): the tag of the image Istio's
 * injector writes, `{hub}/{proxy.image}:{tag}` with a variant maybe appended (pkg/kube/inject
 * `imageURL`, `updateImageTypeIfPresent`), read from the proxy container only (a regular
 * `istio-proxy` or a native sidecar); nothing from a digest alone or a tag that is no Istio 1
 * version.
 */
import assert from "node:assert/strict";
import { istioVersionOfImage, proxyImageVersion } from "../../src/api/pod.ts";

Deno.test("an Istio proxy image's tag is its Istio version, its variant dropped", () => {
  const cases: [string, string | undefined][] = [
    ["docker.io/istio/proxyv2:1.25.2", "1.25.2"],
    ["docker.io/istio/proxyv2:1.25.2-distroless", "1.25.2"],
    ["gcr.io/istio-release/proxyv2:1.26.0", "1.26.0"],
    ["registry.istio.io/release/proxyv2:1.12-distroless", "1.12"],
    ["registry.example:5000/istio/proxyv2:1.27.1-debug", "1.27.1"],
    ["gcr.io/gke-release/asm/proxyv2:1.11.2-asm.17-distroless", "1.11.2-asm.17"],
    ["istio/proxyv2:1.28-dev", "1.28-dev"],
    ["istio/proxyv2:1.26.0-beta.1", "1.26.0-beta.1"],
    // A tag and a digest: the tag says the version.
    ["docker.io/istio/proxyv2:1.26.0@sha256:0f5e7a1c", "1.26.0"],
    // Nothing: a digest alone, no tag (the colon is the registry's port), `latest`, the gateway
    // chart's `auto` placeholder, another product's numbering, an empty tag.
    ["docker.io/istio/proxyv2@sha256:0f5e7a1c", undefined],
    ["registry.example:5000/istio/proxyv2", undefined],
    ["docker.io/istio/proxyv2:latest", undefined],
    ["auto", undefined],
    ["registry.redhat.io/openshift-service-mesh/proxyv2-rhel8:2.6.5", undefined],
    ["docker.io/istio/proxyv2:", undefined],
    ["", undefined],
  ];
  for (const [image, version] of cases) assert.equal(istioVersionOfImage(image), version, image);
});

const proxy = (image: unknown, more: Record<string, unknown> = {}) => ({
  name: "istio-proxy",
  image,
  ...more,
});

Deno.test("a Pod's proxy image version comes from its proxy container only", () => {
  const pod = (spec: unknown) => ({ metadata: { name: "p" }, spec });
  const tagged = "docker.io/istio/proxyv2:1.25.2";
  assert.equal(proxyImageVersion(pod({ containers: [proxy(tagged)] })), "1.25.2");
  // A native sidecar: an init container that keeps running.
  assert.equal(
    proxyImageVersion(pod({ initContainers: [proxy(tagged, { restartPolicy: "Always" })] })),
    "1.25.2",
  );
  // Istio's init container runs the same image but proxies nothing; nor does a plain init
  // container named istio-proxy.
  assert.equal(
    proxyImageVersion(pod({ initContainers: [{ name: "istio-init", image: tagged }] })),
    undefined,
  );
  assert.equal(proxyImageVersion(pod({ initContainers: [proxy(tagged)] })), undefined);
  // Another container's image says nothing of the proxy.
  assert.equal(
    proxyImageVersion(pod({ containers: [{ name: "app", image: tagged }, proxy("auto")] })),
    undefined,
  );
  // No image, or not a string; no spec at all.
  assert.equal(proxyImageVersion(pod({ containers: [proxy(undefined)] })), undefined);
  assert.equal(proxyImageVersion(pod({ containers: [proxy(125)] })), undefined);
  assert.equal(proxyImageVersion({}), undefined);
});
