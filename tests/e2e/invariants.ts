/**
 * Whole-cluster checks after chaos: every object the operator created belongs to something that
 * still asks for it (no orphans) and exists once (no duplicates).
 */
import type { KubeObject } from "../../src/api/object.ts";
import type { Kube } from "./kube.ts";
import { MANAGED } from "./fixtures.ts";
import { statusOf } from "./status.ts";

/** Every type the operator may create, for one `kubectl get a,b,c -A -l managed-by`. */
export const MANAGED_TYPES = [
  "deployments.apps",
  "serviceaccounts",
  "configmaps",
  "services",
  "secrets",
  "roles.rbac.authorization.k8s.io",
  "rolebindings.rbac.authorization.k8s.io",
  "clusterroles.rbac.authorization.k8s.io",
  "clusterrolebindings.rbac.authorization.k8s.io",
  "customresourcedefinitions.apiextensions.k8s.io",
  "apiservices.apiregistration.k8s.io",
  "validatingwebhookconfigurations.admissionregistration.k8s.io",
  "envoyfilters.networking.istio.io",
];

const MODULE_LABEL = "operator.platform-project.io/module";

/** Every object carrying the operator's managed-by label. */
export async function managedObjects(kube: Kube): Promise<KubeObject[]> {
  return await kube.list(MANAGED_TYPES.join(","), { allNamespaces: true, labelSelector: MANAGED });
}

function ref(o: KubeObject): string {
  return `${o.kind} ${o.metadata.namespace ? o.metadata.namespace + "/" : ""}${o.metadata.name}`;
}

/**
 * Problems with the managed objects, given the module objects and RateLimits that exist now:
 * module objects only in the served module object's namespace (or cluster-scoped), none for a
 * module nobody serves; one EnvoyFilter per Ready RateLimit and none for any other.
 */
export async function ownershipProblems(kube: Kube): Promise<string[]> {
  const problems: string[] = [];
  const managed = await managedObjects(kube);
  const servedNs = new Map<string, string | undefined>();
  for (const [module, resource] of [["serverless", "serverlesses"], ["keda", "scalers"]] as const) {
    const objs = await kube.list(resource, { allNamespaces: true });
    const served = objs.filter((o) => statusOf(o).served === "True");
    if (served.length > 1) {
      problems.push(`${served.length} ${resource} are served: ${served.map(ref).join(", ")}`);
    }
    servedNs.set(module, served[0]?.metadata.namespace);
  }
  const seen = new Map<string, string>();
  for (const o of managed) {
    const module = o.metadata.labels?.[MODULE_LABEL] ?? "";
    if (module === "serverless" || module === "keda") {
      const ns = servedNs.get(module);
      if (ns === undefined) problems.push(`orphan: ${ref(o)} of ${module}, which no object serves`);
      else if (o.metadata.namespace && o.metadata.namespace !== ns) {
        problems.push(`orphan: ${ref(o)} of ${module} outside the served namespace ${ns}`);
      }
      // One installation: the same kind and name may not appear in two namespaces.
      const key = `${o.kind}/${o.metadata.name}`;
      const prev = seen.get(key);
      if (prev !== undefined && prev !== o.metadata.namespace) {
        problems.push(`duplicate: ${key} in ${prev} and ${o.metadata.namespace}`);
      }
      seen.set(key, o.metadata.namespace ?? "");
    } else if (module !== "ratelimit") {
      problems.push(`${ref(o)} has no known ${MODULE_LABEL} label (${module || "none"})`);
    }
  }
  problems.push(
    ...await envoyFilterProblems(kube, managed.filter((o) => o.kind === "EnvoyFilter")),
  );
  return problems;
}

async function envoyFilterProblems(kube: Kube, filters: KubeObject[]): Promise<string[]> {
  const problems: string[] = [];
  const limits = await kube.list("ratelimits", { allNamespaces: true });
  const ready = limits.filter((l) =>
    statusOf(l).state === "Ready" && !l.metadata.deletionTimestamp
  );
  const byUid = new Map(ready.map((l) => [l.metadata.uid, l]));
  const perLimit = new Map<string, number>();
  for (const f of filters) {
    const owner = f.metadata.ownerReferences?.find((r) => r.kind === "RateLimit");
    const limit = owner
      ? byUid.get(owner.uid)
      : ready.find((l) =>
        l.metadata.namespace === f.metadata.namespace && f.metadata.name.includes(l.metadata.name)
      );
    if (!limit) {
      problems.push(`orphan: ${ref(f)} belongs to no Ready RateLimit`);
      continue;
    }
    const k = ref(limit);
    perLimit.set(k, (perLimit.get(k) ?? 0) + 1);
  }
  for (const l of ready) {
    const n = perLimit.get(ref(l)) ?? 0;
    if (n !== 1) problems.push(`${ref(l)} is Ready with ${n} EnvoyFilters (want 1)`);
  }
  return problems;
}
