/** Thin helpers over the real kubectl of a test cluster: apply, get as JSON, list, delete. */
import { stringify } from "yaml";
import type { ClusterHandle, KubectlOptions, KubectlResult } from "../../tools/cluster/mod.ts";
import type { KubeObject } from "../../src/api/object.ts";

/** Where to look: one namespace, all namespaces, or a cluster-scoped resource (neither). */
export interface Scope {
  namespace?: string;
  allNamespaces?: boolean;
  labelSelector?: string;
}

function scopeArgs(s: Scope): string[] {
  return [
    ...(s.allNamespaces ? ["-A"] : s.namespace ? ["-n", s.namespace] : []),
    ...(s.labelSelector ? ["-l", s.labelSelector] : []),
  ];
}

/** Serialises manifests to one YAML stream (strings are passed through). */
export function toYaml(docs: string | readonly object[]): string {
  return typeof docs === "string" ? docs : docs.map((d) => stringify(d)).join("---\n");
}

/** kubectl against one cluster, as the admin user unless a kubeconfig is given. */
export class Kube {
  constructor(readonly cluster: ClusterHandle) {}

  /** Runs kubectl; never throws on a non-zero exit. */
  run(args: string[], opts?: KubectlOptions): Promise<KubectlResult> {
    return this.cluster.kubectl(args, { timeoutMs: 60_000, ...opts });
  }

  /** Runs kubectl; throws with stderr on a non-zero exit; returns stdout. */
  async must(args: string[], opts?: KubectlOptions): Promise<string> {
    const r = await this.run(args, opts);
    if (r.code !== 0) {
      throw new Error(`kubectl ${args.join(" ")} exited ${r.code}:\n${r.stderr}${r.stdout}`);
    }
    return r.stdout;
  }

  /** `kubectl apply -f -` of manifests; returns the result without throwing. */
  tryApply(docs: string | readonly object[], extra: string[] = []): Promise<KubectlResult> {
    return this.run(["apply", ...extra, "-f", "-"], { stdin: toYaml(docs) });
  }

  /** `kubectl apply -f -` of manifests; throws with stderr when refused. */
  async apply(docs: string | readonly object[], extra: string[] = []): Promise<void> {
    const r = await this.tryApply(docs, extra);
    if (r.code !== 0) throw new Error(`kubectl apply exited ${r.code}:\n${r.stderr}${r.stdout}`);
  }

  /** `kubectl get <resource> <name> -o json`; undefined when not found. */
  async get<T = KubeObject>(
    resource: string,
    name: string,
    namespace?: string,
  ): Promise<T | undefined> {
    const r = await this.run([
      "get",
      resource,
      name,
      "-o",
      "json",
      ...(namespace ? ["-n", namespace] : []),
    ]);
    if (r.code === 0) return JSON.parse(r.stdout) as T;
    if (/NotFound|not found/.test(r.stderr)) return undefined;
    throw new Error(`kubectl get ${resource} ${name} exited ${r.code}: ${r.stderr}`);
  }

  /** `kubectl get <resource> -o json` items; an unknown resource type gives an empty list. */
  async list<T = KubeObject>(resource: string, scope: Scope = {}): Promise<T[]> {
    const r = await this.run(["get", resource, "-o", "json", ...scopeArgs(scope)]);
    if (r.code !== 0) {
      if (/the server doesn't have a resource type/.test(r.stderr)) return [];
      throw new Error(`kubectl get ${resource} exited ${r.code}: ${r.stderr}`);
    }
    return (JSON.parse(r.stdout) as { items: T[] }).items;
  }

  /** Deletes objects without waiting for finalizers; missing objects are fine. */
  async delete(
    resource: string,
    names: string[],
    namespace?: string,
    extra: string[] = [],
  ): Promise<void> {
    await this.must([
      "delete",
      resource,
      ...names,
      "--ignore-not-found",
      "--wait=false",
      ...(namespace ? ["-n", namespace] : []),
      ...extra,
    ]);
  }

  /** Plain-text `kubectl get` output (as users see it). */
  table(resource: string, scope: Scope = {}): Promise<string> {
    return this.must(["get", resource, ...scopeArgs(scope)]);
  }
}
