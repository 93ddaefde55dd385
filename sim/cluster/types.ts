/**
 * Which resource types the simulated API server serves: the built-in ones always, a custom one
 * only while its CustomResourceDefinition exists (as on a real server, where listing a type whose
 * CRD is not installed gives 404).
 */
import { RESOURCES, resourceType } from "../../src/api/resources.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";
import { noSuchType } from "./errors.ts";
import { builtinListRules, type ListRules, schemaListRules } from "./fields.ts";

/**
 * Keys of the type objects asked about: the same few objects (the RESOURCES table, the registry's
 * answers) are asked about several times a request, and a new key string must be hashed anew.
 */
const typeKeys = new WeakMap<object, string>();

/** The stable identity of a type regardless of version: `apps/deployments`, `/pods`. */
export function typeKey(type: { group: string; plural: string }): string {
  let key = typeKeys.get(type);
  if (key === undefined) typeKeys.set(type, key = `${type.group}/${type.plural}`);
  return key;
}

const BUILTIN_GROUPS = new Set([
  "",
  "apps",
  "batch",
  "policy",
  "autoscaling",
  "networking.k8s.io",
  "rbac.authorization.k8s.io",
  "coordination.k8s.io",
  "events.k8s.io",
  "apiextensions.k8s.io",
  "apiregistration.k8s.io",
  "admissionregistration.k8s.io",
]);

/** Built-in types beyond the project's RESOURCES table that installed modules may render. */
export const EXTRA_BUILTINS: ResourceType[] = [
  resourceType(
    "admissionregistration.k8s.io",
    "v1",
    "MutatingWebhookConfiguration",
    "mutatingwebhookconfigurations",
    false,
  ),
  resourceType("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets"),
  resourceType("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers"),
  resourceType("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies"),
  resourceType("apps", "v1", "ReplicaSet", "replicasets"),
  resourceType("batch", "v1", "Job", "jobs"),
];

/** Built-in kinds with a /status subresource (main-resource writes ignore their status). */
const BUILTIN_STATUS = new Set([
  "Deployment",
  "Pod",
  "Namespace",
  "APIService",
  "CustomResourceDefinition",
  "ReplicaSet",
  "Job",
]);

interface Served {
  type: ResourceType;
  versions: Set<string>;
  status: boolean;
  builtin: boolean;
  /** How its lists merge in server-side apply. */
  rules: ListRules;
  /** What `resolve` answered for each version asked for (every request resolves its type). */
  resolved?: Map<string, ResourceType>;
}

/** The served types; custom ones come and go with their CRDs. */
export class TypeRegistry {
  #byKey = new Map<string, Served>();
  /** `all()`, sorted once until a type comes or goes (the oracle asks on every liveness check). */
  #all: ResourceType[] | undefined;

  constructor() {
    const builtins = [
      ...Object.values(RESOURCES).filter((r) => BUILTIN_GROUPS.has(r.group)),
      ...EXTRA_BUILTINS,
    ];
    for (const type of builtins) {
      this.#byKey.set(typeKey(type), {
        type,
        versions: new Set([type.version]),
        status: BUILTIN_STATUS.has(type.kind),
        builtin: true,
        rules: builtinListRules,
      });
    }
  }

  /** True for a group served without a CRD. */
  static isBuiltinGroup(group: string): boolean {
    return BUILTIN_GROUPS.has(group);
  }

  /** The served type for a request, checked against the version asked for; 404 otherwise. */
  resolve(type: ResourceType): ResourceType {
    const served = this.#byKey.get(typeKey(type));
    if (!served || !served.versions.has(type.version)) throw noSuchType(type);
    const resolved = served.resolved ??= new Map();
    let out = resolved.get(type.version);
    if (!out) resolved.set(type.version, out = { ...served.type, version: type.version });
    return out;
  }

  /** True when the type is served (in any version). */
  serves(type: { group: string; plural: string }): boolean {
    return this.#byKey.has(typeKey(type));
  }

  /** How the type's lists merge in server-side apply (a CRD's list types, or the built-in merge keys). */
  listRules(type: ResourceType): ListRules {
    return this.#byKey.get(typeKey(type))?.rules ?? builtinListRules;
  }

  /** Whether the type has a /status subresource. */
  hasStatus(type: ResourceType): boolean {
    return this.#byKey.get(typeKey(type))?.status ?? false;
  }

  /** The served type of an apiVersion and kind (for kubectl-style applies); undefined if none. */
  byKind(apiVersion: string, kind: string): ResourceType | undefined {
    const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
    for (const served of this.#byKey.values()) {
      if (
        served.type.group === group && served.type.kind === kind && served.versions.has(version)
      ) {
        return { ...served.type, version };
      }
    }
    return undefined;
  }

  /** The served type of a kind in any version (first match by kind name, then group). */
  byKindName(kind: string): ResourceType | undefined {
    const matches = [...this.#byKey.values()].filter((s) => s.type.kind === kind);
    matches.sort((a, b) =>
      Number(b.builtin) - Number(a.builtin) || a.type.group.localeCompare(b.type.group)
    );
    return matches[0]?.type;
  }

  /** All served types, in a stable order. */
  all(): ResourceType[] {
    this.#all ??= [...this.#byKey.values()].map((s) => s.type).sort((a, b) =>
      typeKey(a).localeCompare(typeKey(b))
    );
    return this.#all.slice();
  }

  /** Starts serving the type a CRD object defines; returns it. */
  addCrd(crd: KubeObject): ResourceType {
    const spec = crd.spec as CrdSpec;
    const versions = spec.versions.filter((v) => v.served !== false);
    const storage = versions.find((v) => v.storage) ?? versions[0];
    const schema = (storage as { schema?: { openAPIV3Schema?: unknown } }).schema?.openAPIV3Schema;
    const type = resourceType(
      spec.group,
      storage.name,
      spec.names.kind,
      spec.names.plural,
      spec.scope !== "Cluster",
    );
    this.#all = undefined;
    this.#byKey.set(typeKey(type), {
      type,
      versions: new Set(versions.map((v) => v.name)),
      status: versions.some((v) => v.subresources?.status !== undefined),
      builtin: false,
      rules: schemaListRules(schema),
    });
    return type;
  }

  /** Stops serving a CRD's type; returns it. */
  removeCrd(crd: KubeObject): ResourceType | undefined {
    const spec = crd.spec as CrdSpec;
    const key = typeKey({ group: spec.group, plural: spec.names.plural });
    const served = this.#byKey.get(key);
    if (!served || served.builtin) return undefined;
    this.#byKey.delete(key);
    this.#all = undefined;
    return served.type;
  }
}

/** The part of a CRD spec the registry reads. */
export interface CrdSpec {
  group: string;
  names: { kind: string; plural: string };
  scope: "Namespaced" | "Cluster";
  versions: {
    name: string;
    served?: boolean;
    storage?: boolean;
    subresources?: { status?: unknown };
  }[];
}

/** Checks that a CRD object has what the registry needs; returns the problems. */
export function crdProblems(crd: KubeObject): string[] {
  const spec = crd.spec as Partial<CrdSpec> | undefined;
  const problems: string[] = [];
  if (!spec?.group) problems.push("spec.group: Required value");
  if (!spec?.names?.kind) problems.push("spec.names.kind: Required value");
  if (!spec?.names?.plural) problems.push("spec.names.plural: Required value");
  if (!spec?.versions?.length) problems.push("spec.versions: Required value");
  else if (!spec.versions.some((v) => v.served !== false)) {
    problems.push("spec.versions: Invalid value: no served version");
  }
  if (
    spec?.group && spec.names?.plural && crd.metadata.name !== `${spec.names.plural}.${spec.group}`
  ) {
    problems.push(
      `metadata.name: Invalid value: "${crd.metadata.name}": must be spec.names.plural+"."+spec.group`,
    );
  }
  return problems;
}
