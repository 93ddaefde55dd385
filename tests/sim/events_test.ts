/**
 * The Events of installing the samples, as a user would: every module from nothing to Ready and
 * the three sample RateLimits, on the simulated cluster without faults. One Event a step a user
 * cares about (a condition's status or reason changing), none for progress messages.
 */
import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { RESOURCES } from "../../src/api/resources.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { NO_FAULTS } from "../../sim/faults.ts";
import { Simulation } from "../../sim/simulation.ts";

const SAMPLES = [
  "serverless.yaml",
  "scaler.yaml",
  "demo-workload.yaml",
  "ratelimit-gateway.yaml",
  "ratelimit-invalid.yaml",
  "ratelimit-workload.yaml",
];

/** The Events each object may get, in order: the whole install makes no more than these. */
const EXPECTED: Record<string, string[]> = {
  "Serverless platform-system/default": [
    "Normal ConfigurationCheck",
    "Normal Configured",
    "Normal Installation",
    "Normal Installed",
  ],
  "Scaler platform-system/default": [
    "Normal Initialized",
    "Normal Verification",
    "Normal Verified",
  ],
  // The gateway's Pod runs the mesh's proxy: the limit is enforced, and once the simulated
  // istiod says the proxy acknowledged the push holding it, Accepted (sim/istiod.ts).
  "RateLimit mesh-system/ingressgateway": ["Normal Applied", "Normal Enforced", "Normal Accepted"],
  "RateLimit demo/httpbin-invalid": ["Warning InvalidSpec"],
  // The simulated injector gives httpbin's Pod a sidecar (namespace demo has istio-injection=enabled),
  // so the limit is enforced. When the RateLimit is looked at before httpbin's Pod exists (seed 1),
  // a Normal NoPodSelected comes first: news, not a Warning (see `optional`).
  "RateLimit demo/httpbin": ["Normal Applied", "Normal Enforced", "Normal Accepted"],
};

interface EventObject {
  metadata: { resourceVersion?: string };
  involvedObject: { kind: string; namespace?: string; name: string };
  type: string;
  reason: string;
}

async function installSamples(seed: number): Promise<Simulation> {
  const sim = new Simulation({ seed, faults: NO_FAULTS });
  await sim.boot();
  for (const file of SAMPLES) {
    const text = await Deno.readTextFile(new URL(`../../samples/${file}`, import.meta.url));
    for (const doc of parseAllDocuments(text)) {
      const obj = doc.toJS() as KubeObject | null;
      if (!obj) continue;
      const type = sim.cluster.store.types.byKind(obj.apiVersion, obj.kind);
      assert.ok(type, `${file}: no type for ${obj.apiVersion} ${obj.kind}`);
      await sim.drive(sim.user.apply(type, obj, { fieldManager: "kubectl", force: true }));
    }
  }
  await sim.runUntil(5 * 60_000);
  return sim;
}

for (const seed of [1, 2, 3]) {
  Deno.test(
    `installing the samples makes one Event a step, and ${
      Object.values(EXPECTED).flat().length
    } in all (seed ${seed})`,
    async () => {
      const sim = await installSamples(seed);
      for (const type of [RESOURCES.Serverless, RESOURCES.Scaler]) {
        for (const o of sim.cluster.store.objects(type)) {
          assert.equal((o.status as { state?: string }).state, "Ready", `${o.kind} is not Ready`);
        }
      }
      const events = (sim.cluster.store.objects(RESOURCES.Event) as unknown as EventObject[])
        .sort((a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion));
      const got: Record<string, string[]> = {};
      for (const e of events) {
        const { kind, namespace, name } = e.involvedObject;
        (got[`${kind} ${namespace}/${name}`] ??= []).push(`${e.type} ${e.reason}`);
      }
      // The one Event that depends on timing: a Normal NoPodSelected before the Pod exists.
      const optional = "Normal NoPodSelected";
      const httpbin = got["RateLimit demo/httpbin"] ?? [];
      if (httpbin.includes(optional)) {
        // Each seed replays exactly, so which look early is known: 1 and 3, none other.
        assert.ok([1, 3].includes(seed), `seed ${seed} looks before the Pod exists`);
        got["RateLimit demo/httpbin"] = httpbin.filter((e) => e !== optional);
      }
      assert.deepEqual(got, EXPECTED);
    },
  );
}
