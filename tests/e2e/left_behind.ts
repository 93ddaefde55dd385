/**
 * What a removed module must not leave behind: an APIService or webhook configuration pointing at
 * a Service that no longer exists (the first breaks discovery and namespace deletion for everyone,
 * the second every create of the kinds it covers), or a CRD of the module's groups. Checked on the
 * cluster as a user meets it: discovery answers in full and a namespace with objects is deleted.
 */
import assert from "node:assert/strict";
import type { E2E } from "./harness.ts";
import { namespace } from "./fixtures.ts";
import { FUNCTION_CRD } from "../../src/reconcile/serverless/render.ts";

/** The API groups of each module's CRDs: none may be left once the module is removed. */
export const MODULE_GROUPS: Readonly<Record<"serverless" | "keda", readonly string[]>> = {
  serverless: [FUNCTION_CRD.slice(FUNCTION_CRD.indexOf(".") + 1)],
  keda: ["keda.sh", "eventing.keda.sh"],
};

interface ServiceRef {
  name: string;
  namespace: string;
}

interface ApiServiceJson {
  metadata: { name: string };
  spec: { service?: ServiceRef };
}

interface WebhookConfigJson {
  kind: string;
  metadata: { name: string };
  webhooks?: { name: string; clientConfig: { service?: ServiceRef } }[];
}

/** `kind/name -> namespace/service` for each APIService and webhook whose Service is missing. */
async function danglingServiceRefs(env: E2E): Promise<string[]> {
  const refs: { what: string; to: ServiceRef }[] = [];
  for (const a of await env.kube.list<ApiServiceJson>("apiservices")) {
    if (a.spec.service) refs.push({ what: `APIService ${a.metadata.name}`, to: a.spec.service });
  }
  for (const kind of ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"]) {
    for (const h of await env.kube.list<WebhookConfigJson>(kind)) {
      for (const w of h.webhooks ?? []) {
        const to = w.clientConfig.service;
        if (to) refs.push({ what: `${kind} ${h.metadata.name} (${w.name})`, to });
      }
    }
  }
  const dangling: string[] = [];
  for (const r of refs) {
    if (!await env.kube.get("service", r.to.name, r.to.namespace)) {
      dangling.push(`${r.what} -> ${r.to.namespace}/${r.to.name}`);
    }
  }
  return dangling;
}

/**
 * Asserts that nothing of a removed module harms the cluster: no APIService or webhook pointing at
 * a missing Service, no CRD of `groups`, discovery answering every group, and a namespace holding
 * an object deleted within a minute.
 */
export async function nothingLeftBehind(env: E2E, groups: readonly string[]): Promise<void> {
  assert.deepEqual(await danglingServiceRefs(env), []);
  const crds = await env.kube.list<{ metadata: { name: string }; spec: { group: string } }>("crds");
  const left = crds.filter((c) => groups.includes(c.spec.group)).map((c) => c.metadata.name);
  assert.deepEqual(left, [], `CRDs of ${groups.join(", ")} left`);
  // Discovery: kubectl exits non-zero, naming the group, when one does not answer.
  const r = await env.kube.run(["api-resources", "-o", "name"]);
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /unable to retrieve|couldn't get resource list/, r.stderr);
  // The namespace controller deletes a namespace's objects kind by kind, from discovery.
  const ns = `e2e-gone-${Date.now() % 100000}`;
  await env.kube.apply([namespace(ns), {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "c", namespace: ns },
    data: { a: "1" },
  }]);
  await env.kube.delete("namespace", [ns]);
  await env.waitGone("namespace", undefined, ns, { timeoutMs: 60_000 });
}
