/**
 * Each proxy's Envoy, end to end (issue 42 point 6): the operator reads each proxy's Istio version
 * from a real istiod's /debug/syncz and never sends per-client buckets (dynamic descriptors, Envoy
 * 1.34+) to a proxy whose Envoy is older. The proxies are the proxy stand-in
 * (tools/istio-check/proxy-standin, a test harness standing in for Envoy), each announcing an
 * Istio version as pilot-agent does (node metadata ISTIO_VERSION) and an Envoy build version;
 * told an Envoy before 1.34 it also refuses what that Envoy refuses (a descriptor entry without a
 * value), so a per-client filter that reached it would be rejected, as a real one would be.
 *
 * - a proxy says Istio 1.25.2: istiod's syncz shows `istio_version: "1.25.2"`;
 * - samples/ratelimit-workload.yaml, no per-client rule: applied and Accepted on that proxy;
 * - edited to add a per-client rule: Ready False ProxyTooOld naming the Pod with Istio 1.25.2 and
 *   Envoy 1.33 (what the operator derived from istiod's answer), the EnvoyFilter untouched, istiod
 *   holding no per-client buckets (configz and the proxy's config dump), the proxy still holding
 *   the first generation's limit, acknowledged, Accepted True on it;
 * - that proxy away from istiod (the stand-in stops it: gone from syncz) and a per-client edit
 *   applied meanwhile: still Ready False ProxyTooOld, the Pod known old by its proxy image's tag
 *   (`docker.io/istio/proxyv2:1.25.2`, set on the Deployment here), the EnvoyFilter untouched;
 * - that proxy back as Istio 1.26.1 (Envoy 1.34), its image unchanged: istiod's version wins, Ready
 *   True Applied, the per-client limit acknowledged by the proxy, Accepted True;
 * - a second Pod whose proxy says Istio 1.25.3 joins that generation in force: Accepted False
 *   ProxyTooOld naming it (its proxy rejects the listener), and the filter stays.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { REPO_ROOT } from "../../tools/cluster/paths.ts";
import { eventually, ok } from "../../tools/cluster/test_helpers.ts";
import {
  type JsonObject,
  proxyOfPod,
  type ProxySpec,
  type ProxyStandin,
  type ProxyView,
} from "../../tools/istio-check/proxy-standin/mod.ts";
import { LOCAL_RATELIMIT_FILTER } from "../../src/dataplane/mod.ts";
import { loadLocalRateLimit } from "../../src/dataplane/envoyconfig.ts";
import {
  acceptedOf,
  assertNoNacks,
  conditionOf,
  holding,
  injectedDemo,
  meshTest,
  proxyKey as key,
  renderedRoutePatch,
  WORKLOAD_RATELIMIT as RL,
} from "./mesh_fixtures.ts";

/** A per-client rule: each X-Api-Key 2 requests to /anything, then 1 every 30 s. */
const PER_CLIENT_RULE = {
  path: "/anything",
  perClient: { header: "X-Api-Key" },
  bucket: { maxTokens: 2, tokensPerFill: 1, fillInterval: "30s" },
};

/** Istio 1.25 ships Envoy 1.33, 1.26 ships 1.34 (src/api/envoy.ts ISTIO_ENVOY_ROWS). */
const OLD = { istioVersion: "1.25.2", envoyVersion: "1.33.8" };
const NEW = { istioVersion: "1.26.1", envoyVersion: "1.34.6" };
const OLD_TOO = { istioVersion: "1.25.3", envoyVersion: "1.33.8" };

/** The image of the workload's proxy container: Istio 1.25.2, as Istio's injector tags it. */
const OLD_IMAGE = "docker.io/istio/proxyv2:1.25.2";

/** Every per-route local rate limit config in what a proxy holds (a sidecar's inline routes). */
function perRouteConfigs(v: ProxyView): JsonObject[] {
  const out: JsonObject[] = [];
  const walk = (x: unknown) => {
    if (Array.isArray(x)) return x.forEach(walk);
    if (x === null || typeof x !== "object") return;
    const o = x as JsonObject;
    const per = o.typed_per_filter_config as JsonObject | undefined;
    if (per?.[LOCAL_RATELIMIT_FILTER]) out.push(per[LOCAL_RATELIMIT_FILTER] as JsonObject);
    Object.values(o).forEach(walk);
  };
  walk(v.config?.listeners);
  walk(v.config?.routes);
  return out;
}

/** A per-route config as the data-plane model loads it (the `@type` dropped). */
function loaded(config: unknown) {
  const { "@type": _type, ...fields } = config as JsonObject;
  const l = loadLocalRateLimit(fields, "config", true);
  if (!l.ok) throw new Error(JSON.stringify(l.errors));
  return l.value;
}

/** The operator's per-route config for RateLimit YAML `yaml`, as loaded. */
function renderedConfig(yaml: string) {
  const patch = renderedRoutePatch(yaml);
  return loaded((patch.typed_per_filter_config as JsonObject)[LOCAL_RATELIMIT_FILTER]);
}

const seconds = (t0: number) => `${((Date.now() - t0) / 1000).toFixed(1)} s`;

meshTest(
  "each proxy's Envoy from a real istiod: per-client buckets never sent to an older proxy",
  "proxy-version",
  async (m, t) => {
    const { c, istiod } = m;
    await injectedDemo(c, 1);
    // The workload's Pods carry the proxy container Istio's injector writes, image and all (the
    // operator reads the Istio version from its tag while istiod does not list the proxy).
    const proxyContainer = { name: "istio-proxy", image: OLD_IMAGE };
    await ok(c, [
      "patch",
      "deploy/httpbin",
      "-n",
      "demo",
      "-p",
      JSON.stringify({ spec: { template: { spec: { containers: [proxyContainer] } } } }),
    ]);
    const [pod] = await injectedDemo(c, 1);
    assert.match(
      JSON.stringify(pod.spec.containers),
      /"image":"docker\.io\/istio\/proxyv2:1\.25\.2"/,
    );
    const first: ProxySpec = { ...proxyOfPod(pod), ...OLD };
    const standin: ProxyStandin = await m.standin([first]);
    const { until } = await m.operator("proxy-version");
    /** Our EnvoyFilter's generation and resourceVersion: whether it was written. */
    const envoyFilter = async () => {
      const { generation, resourceVersion } = JSON.parse(
        await ok(c, ["get", "envoyfilter", RL[1], "-n", RL[0], "-o", "json"]),
      ).metadata as { generation: number; resourceVersion: string };
      return { generation, resourceVersion };
    };
    /** istiod's syncz entry of a proxy (loopback: istiod checks no token). */
    const syncz = async (p: ProxySpec) => {
      const r = await istiod.get("/debug/syncz", { loopback: true });
      assert.equal(r.status, 200, r.body);
      return (JSON.parse(r.body) as JsonObject[]).find((e) => e.proxy === key(p));
    };
    const sample = await Deno.readTextFile(
      join(REPO_ROOT, "samples", "ratelimit-workload.yaml"),
    );
    const perClientSample = (() => {
      const doc = parse(sample) as { spec: { local: { buckets: unknown[] } } };
      doc.spec.local.buckets.push(PER_CLIENT_RULE);
      return stringify(doc);
    })();
    /** The per-client sample with its per-client rule's burst `maxTokens`. */
    const perClientWith = (maxTokens: number) => {
      const doc = parse(perClientSample) as { spec: { local: { buckets: JsonObject[] } } };
      const rule = doc.spec.local.buckets.at(-1)!;
      rule.bucket = { ...(rule.bucket as JsonObject), maxTokens };
      return stringify(doc);
    };
    const gen3Sample = perClientWith(3);
    const gen1 = renderedConfig(sample);
    const gen3 = renderedConfig(gen3Sample);
    const perClient = (v: ProxyView) =>
      perRouteConfigs(v).some((x) => x.max_dynamic_descriptors !== undefined);

    await t.step("the stand-in announces Istio 1.25.2: istiod's syncz says so", async () => {
      const entry = await eventually("the proxy in syncz", () => syncz(first));
      assert.equal(entry.istio_version, "1.25.2");
      const v = await standin.proxy(key(first));
      assert.equal(v.connected, true);
    });

    let applied = { generation: 0, resourceVersion: "" };
    await t.step("no per-client rule: applied and Accepted on the old proxy", async () => {
      const t0 = Date.now();
      await ok(c, ["apply", "-f", "-"], sample);
      const s = await until(
        "Ready and Accepted",
        (s) => conditionOf(s, "Ready")?.status === "True" && acceptedOf(s)?.status === "True",
      );
      console.error(`apply to Accepted: ${seconds(t0)}`);
      assert.deepEqual(s.proxies, { accepted: 1, rejected: 0, pending: 0, notConnected: 0 });
      assert.equal(s.enforcedGeneration, 1);
      applied = await envoyFilter();
      const v = await holding(
        standin,
        first,
        "the sample's limit",
        (v) => perRouteConfigs(v).length > 0,
      );
      for (const cfg of perRouteConfigs(v)) assert.deepEqual(loaded(cfg), gen1);
    });

    await t.step(
      "edited to per-client: Ready False ProxyTooOld naming the Pod, Istio 1.25.2 and Envoy 1.33; nothing per-client reaches istiod or the proxy",
      async () => {
        const t0 = Date.now();
        await ok(c, ["apply", "-f", "-"], perClientSample);
        const s = await until(
          "Ready False ProxyTooOld",
          (s) => s.observedGeneration === 2 && conditionOf(s, "Ready")?.reason === "ProxyTooOld",
        );
        console.error(`edit to ProxyTooOld: ${seconds(t0)}`);
        const ready = conditionOf(s, "Ready")!;
        assert.equal(ready.status, "False");
        assert.equal(
          ready.message,
          `spec.local.buckets[3].perClient: per-client buckets need Envoy 1.34 (Istio 1.26) or later, and 1 selected proxy reports an older one, which refuses the filter: ${first.pod} (Istio 1.25.2, Envoy 1.33); upgrade its proxy (restart the Pod with a newer sidecar) or keep that Pod out of spec.selectorLabels, so generation 2 is not applied; generation 1 still enforced by EnvoyFilter demo/httpbin`,
        );
        // The first generation stays enforced, and the proxy holds it.
        assert.equal(s.enforcedGeneration, 1);
        assert.equal(conditionOf(s, "Enforced")?.status, "True");
        assert.equal(acceptedOf(s)?.status, "True", JSON.stringify(acceptedOf(s)));
        assert.deepEqual(s.proxies, { accepted: 1, rejected: 0, pending: 0, notConnected: 0 });
        assert.deepEqual(await envoyFilter(), applied, "our EnvoyFilter is not written");
        // istiod holds no per-client buckets: neither the EnvoyFilter it watches nor what it
        // generates for the proxy.
        const configz = await istiod.get("/debug/configz", { loopback: true });
        assert.equal(configz.status, 200);
        const ours = (JSON.parse(configz.body) as JsonObject[]).filter((x) =>
          x.kind === "EnvoyFilter" && (x.metadata as JsonObject).name === RL[1]
        );
        assert.equal(ours.length, 1, "istiod holds our EnvoyFilter");
        assert.ok(JSON.stringify(ours[0]).includes('"token_bucket"'));
        assert.ok(!JSON.stringify(ours[0]).includes("max_dynamic_descriptors"));
        const dump = await istiod.get(`/debug/config_dump?proxyID=${key(first)}`, {
          loopback: true,
        });
        assert.equal(dump.status, 200);
        // (istiod writes the dump's field names in camelCase.)
        assert.match(dump.body, /"tokenBucket"/, "istiod generates the first limit for it");
        assert.doesNotMatch(dump.body, /max_?[dD]ynamic_?[dD]escriptors/);
        const v = await standin.proxy(key(first));
        assert.ok(!perClient(v));
        for (const cfg of perRouteConfigs(v)) assert.deepEqual(loaded(cfg), gen1);
        assertNoNacks(v);
      },
    );

    await t.step(
      "the old proxy away from istiod, a per-client edit meanwhile: still ProxyTooOld, known by its image",
      async () => {
        const t0 = Date.now();
        await standin.remove(key(first));
        await eventually("the proxy gone from syncz", async () => !(await syncz(first)));
        await until("the proxy seen not connected", (s) => s.proxies?.notConnected === 1);
        console.error(`proxy stopped to not connected: ${seconds(t0)}`);
        await ok(c, ["apply", "-f", "-"], gen3Sample);
        const s = await until(
          "Ready False ProxyTooOld at generation 3",
          (s) => s.observedGeneration === 3 && conditionOf(s, "Ready")?.reason === "ProxyTooOld",
        );
        assert.equal(
          conditionOf(s, "Ready")?.message,
          `spec.local.buckets[3].perClient: per-client buckets need Envoy 1.34 (Istio 1.26) or later, and 1 selected proxy reports an older one, which refuses the filter: ${first.pod} (Istio 1.25.2, Envoy 1.33, by its image); upgrade its proxy (restart the Pod with a newer sidecar) or keep that Pod out of spec.selectorLabels, so generation 3 is not applied; generation 1 still enforced by EnvoyFilter demo/httpbin`,
        );
        assert.equal(s.enforcedGeneration, 1);
        assert.deepEqual(await envoyFilter(), applied, "our EnvoyFilter is not written");
        assert.equal(await syncz(first), undefined, "still away: known by the image alone");
      },
    );

    const upgraded: ProxySpec = { ...first, ...NEW };
    let inForce = { generation: 0, resourceVersion: "" };
    await t.step(
      "the proxy back as Istio 1.26.1 (its image still says 1.25.2): Ready, Applied, Accepted, the per-client limit acknowledged",
      async () => {
        const t0 = Date.now();
        await standin.add([upgraded]);
        const s = await until(
          "Ready Applied and Accepted at generation 3",
          (s) =>
            s.enforcedGeneration === 3 && conditionOf(s, "Ready")?.reason === "Applied" &&
            acceptedOf(s)?.status === "True",
        );
        console.error(`restart as 1.26.1 to Accepted: ${seconds(t0)}`);
        assert.equal(conditionOf(s, "Ready")?.status, "True");
        assert.equal(acceptedOf(s)?.reason, "Accepted");
        assert.deepEqual(s.proxies, { accepted: 1, rejected: 0, pending: 0, notConnected: 0 });
        assert.equal((await syncz(upgraded))?.istio_version, "1.26.1");
        const v = await holding(standin, upgraded, "the per-client limit", perClient);
        for (const cfg of perRouteConfigs(v)) assert.deepEqual(loaded(cfg), gen3);
        assertNoNacks(v);
        inForce = await envoyFilter();
        assert.ok(inForce.generation > applied.generation, "the EnvoyFilter was rewritten");
      },
    );

    await t.step(
      "an old proxy joins the generation in force: Accepted False ProxyTooOld naming it; the filter stays",
      async () => {
        const t0 = Date.now();
        const pods = await injectedDemo(c, 2);
        const second: ProxySpec = {
          ...proxyOfPod(pods.find((p) => p.metadata.name !== first.pod)!),
          ...OLD_TOO,
        };
        await standin.add([second]);
        // Its proxy rejects the listener as Envoy 1.33 does (istiod did send it the filter in
        // force); the status names it as too old, and counts the rejection.
        const s = await until(
          "Accepted False ProxyTooOld, the old proxy's rejection counted",
          (s) => acceptedOf(s)?.reason === "ProxyTooOld" && s.proxies?.rejected === 1,
        );
        console.error(`old proxy joining to ProxyTooOld: ${seconds(t0)}`);
        assert.equal(acceptedOf(s)?.status, "False");
        assert.equal(
          acceptedOf(s)?.message,
          `1 of 2 proxies runs an Envoy that refuses the per-client buckets of the limit in force (they need Envoy 1.34 (Istio 1.26) or later): ${second.pod} (Istio 1.25.3, Envoy 1.33); such a proxy rejects the config and keeps its previous one, which does not hold this limit: upgrade it; 1 of 2 proxies rejected the config istiod sent`,
        );
        assert.deepEqual(s.proxies, { accepted: 1, rejected: 1, pending: 0, notConnected: 0 });
        // The generation in force is not withdrawn: Ready stays, the filter is the same.
        assert.equal(conditionOf(s, "Ready")?.reason, "Applied");
        assert.equal(s.enforcedGeneration, 3);
        assert.deepEqual(await envoyFilter(), inForce, "our EnvoyFilter is not written");
        // The upgraded proxy keeps the per-client limit; the old one rejected it, as Envoy 1.33
        // does.
        const v = await holding(standin, upgraded, "the per-client limit still", perClient);
        for (const cfg of perRouteConfigs(v)) assert.deepEqual(loaded(cfg), gen3);
        const old = await eventually("the old proxy's answer to the listeners", async () => {
          const o = await standin.proxy(key(second));
          return o.xds.LDS.nacks > 0 ? o : undefined;
        });
        assert.match(
          old.xds.LDS.lastError ?? "",
          /virtualInbound: Proto constraint validation failed \(.*RateLimitDescriptor_Entry\.Value: value length must be at least 1 runes\)/,
        );
        assert.ok(!perClient(old), "the old proxy holds no per-client buckets");
      },
    );
  },
);
