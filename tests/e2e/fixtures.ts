/** Manifests the e2e tests apply, and the samples of `samples/` read as objects. */
import { join, relative } from "node:path";
import { parseAllDocuments } from "yaml";
import type { KubeObject } from "../../src/api/object.ts";
import { REPO_ROOT } from "./operator.ts";

/** apiVersion of Serverless and Scaler. */
export const OPERATOR_API = "operator.platform-project.io/v1alpha1";
/** apiVersion of RateLimit. */
export const GATEWAY_API = "gateway.platform-project.io/v1alpha1";
/** Label selector of every object the operator created. */
export const MANAGED = "app.kubernetes.io/managed-by=platform-operator";
/** Label selector of the objects the operator installed for one module. */
export function moduleSelector(module: "serverless" | "keda" | "ratelimit"): string {
  return `${MANAGED},operator.platform-project.io/module=${module}`;
}

/** A Serverless object. */
export function serverless(
  namespace: string,
  name: string,
  spec: Record<string, unknown> = {},
): KubeObject {
  return { apiVersion: OPERATOR_API, kind: "Serverless", metadata: { name, namespace }, spec };
}

/** A Scaler object. */
export function scaler(
  namespace: string,
  name: string,
  spec: Record<string, unknown> = {},
): KubeObject {
  return { apiVersion: OPERATOR_API, kind: "Scaler", metadata: { name, namespace }, spec };
}

/** A bucket literal. */
export function bucket(maxTokens: number, tokensPerFill: number, fillInterval: string) {
  return { maxTokens, tokensPerFill, fillInterval };
}

/**
 * A RateLimit selecting `app: <app>`; `extraInterval` adds one path bucket with that fill interval
 * (not a multiple of the default's 10s makes it invalid: state Error).
 */
export function rateLimit(
  namespace: string,
  name: string,
  app: string,
  extraInterval?: string,
): KubeObject {
  return {
    apiVersion: GATEWAY_API,
    kind: "RateLimit",
    metadata: { name, namespace, labels: { app } },
    spec: {
      selectorLabels: { app },
      enableResponseHeaders: true,
      local: {
        defaultBucket: bucket(10, 10, "10s"),
        buckets: extraInterval ? [{ path: "/headers", bucket: bucket(2, 2, extraInterval) }] : [],
      },
    },
  };
}

/**
 * A Deployment of `replicas` Pods with `labels` (and the Pod template's `annotations`), with the
 * mesh's sidecar container or without (the control plane runs no injector: the container is what
 * the operator counts).
 */
export function meshDeployment(
  namespace: string,
  name: string,
  labels: Record<string, string>,
  replicas: number,
  sidecar: boolean,
  annotations?: Record<string, string>,
): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels, ...(annotations ? { annotations } : {}) },
        spec: {
          containers: [
            { name: "app", image: "registry.example/httpbin:1" },
            ...(sidecar ? [{ name: "istio-proxy", image: "docker.io/istio/proxyv2:1.30.3" }] : []),
          ],
        },
      },
    },
  };
}

/** A namespace. */
export function namespace(name: string): KubeObject {
  return { apiVersion: "v1", kind: "Namespace", metadata: { name } };
}

/** A Serverless module user object: a Function. */
export function fn(namespace: string, name: string): KubeObject {
  return {
    apiVersion: "serverless.platform-project.io/v1alpha2",
    kind: "Function",
    metadata: { name, namespace },
    spec: {
      runtime: "nodejs20",
      source: { inline: { source: "module.exports = { main: () => 'hello' }" } },
    },
  };
}

/** A Scaler module user object: a ScaledObject scaling Deployment `target`. */
export function scaledObject(namespace: string, name: string, target: string): KubeObject {
  return {
    apiVersion: "keda.sh/v1alpha1",
    kind: "ScaledObject",
    metadata: { name, namespace },
    spec: {
      scaleTargetRef: { name: target },
      minReplicaCount: 0,
      maxReplicaCount: 2,
      triggers: [{
        type: "cron",
        metadata: {
          timezone: "Etc/UTC",
          start: "0 8 * * *",
          end: "0 18 * * *",
          desiredReplicas: "1",
        },
      }],
    },
  };
}

/** A ResourceQuota that forbids every new Pod in `namespace`. */
export function noPodsQuota(namespace: string, name = "no-pods"): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ResourceQuota",
    metadata: { name, namespace },
    spec: { hard: { pods: "0" } },
  };
}

/** One object of a sample file. */
export interface Sample {
  /** Path relative to the repository root. */
  file: string;
  object: KubeObject;
}

/** Every object of every YAML file under `samples/`, in file order. */
export async function readSamples(): Promise<Sample[]> {
  const root = join(REPO_ROOT, "samples");
  const files: string[] = [];
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(dir)) {
      const p = join(dir, e.name);
      if (e.isDirectory) await walk(p);
      else if (/\.ya?ml$/.test(e.name)) files.push(p);
    }
  };
  await walk(root);
  files.sort();
  const out: Sample[] = [];
  for (const f of files) {
    for (const doc of parseAllDocuments(await Deno.readTextFile(f))) {
      const object = doc.toJS() as KubeObject | null;
      if (object?.kind) out.push({ file: relative(REPO_ROOT, f), object });
    }
  }
  return out;
}

/** The kinds the operator serves (their samples get a state to wait for). */
export const SERVED_KINDS = new Set(["Serverless", "Scaler", "RateLimit"]);
