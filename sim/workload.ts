/**
 * The generated workload of the seed sweep: a random sequence of user actions on Serverless,
 * Scaler, RateLimit and Function objects (creates, updates, deletes, duplicates, invalid specs),
 * each with an outcome this file knows by construction, so the oracle can judge the end state
 * without re-deriving the reducers.
 */
import type { KubeObject } from "../src/api/object.ts";
import { MANAGED_BY, MANAGED_BY_LABEL, MODULE_LABEL } from "../src/reconcile/labels.ts";
import type { Prng } from "./prng.ts";

/** The namespace and labels of the sweep's demo workload. */
export const DEMO = { namespace: "demo", labels: { app: "httpbin" } } as const;
/** The default bucket's maxTokens of every valid generated RateLimit. */
export const SWEEP_MAX_TOKENS = 3;
/** The path of every generated RateLimit's rule (whose bucket has one token). */
export const SWEEP_RULE_PATH = "/headers";
/** The header a generated per-client rule keys its clients on. */
export const SWEEP_CLIENT_HEADER = "x-api-key";
/** The path of every generated global rule (no local rule matches it). */
export const SWEEP_GLOBAL_PATH = "/global";

/**
 * The unit of a generated RateLimit's global rule, by its name: one unit a name, so the invariant
 * on global windows (sim/global_windows.ts) never compares windows of two units of one rule.
 */
export function sweepGlobalUnit(name: string): "Second" | "Minute" {
  return name === "rl-b" || name === "gateway" ? "Minute" : "Second";
}

/** One user action at a virtual time (ms since the epoch). */
export type WorkloadAction =
  | { at: number; op: "apply"; obj: KubeObject }
  | { at: number; op: "delete"; kind: string; namespace: string; name: string };

const OPERATOR = "operator.platform-project.io/v1alpha1";
const GATEWAY = "gateway.platform-project.io/v1alpha1";

/** The demo namespace and its one-replica workload, in the mesh (applied at time 0). */
export function demoWorkload(): KubeObject[] {
  return [
    // In the mesh: Istio's injector gives each of its Pods a sidecar (only then do limits apply).
    {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: DEMO.namespace, labels: { "istio-injection": "enabled" } },
    },
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "httpbin", namespace: DEMO.namespace, labels: { ...DEMO.labels } },
      spec: {
        replicas: 1,
        selector: { matchLabels: { ...DEMO.labels } },
        template: {
          metadata: { labels: { ...DEMO.labels } },
          spec: { containers: [{ name: "httpbin", image: "kennethreitz/httpbin" }] },
        },
      },
    },
  ];
}

/** The label on a generated object saying whether its spec is valid (read by the oracle). */
export const VALIDITY_LABEL = "sim.platform-project.io/spec";

function labelled(obj: KubeObject, valid: boolean): KubeObject {
  obj.metadata.labels = {
    ...(obj.metadata.labels ?? {}),
    [VALIDITY_LABEL]: valid ? "valid" : "invalid",
  };
  return obj;
}

function serverless(r: Prng, namespace: string, name: string): KubeObject {
  const variants: [boolean, Record<string, unknown>][] = [
    [true, {}],
    [true, { logLevel: "debug" }],
    [true, { eventing: { endpoint: "http://publisher.example.svc:8080/publish" } }],
    [true, { functionRequeueDuration: "10m", healthzLivenessTimeout: "20s" }],
    [false, { eventing: { endpoint: "not a url" } }],
    [false, { functionRequeueDuration: "soon" }],
  ];
  const [valid, spec] = r.pick(variants);
  return labelled(
    { apiVersion: OPERATOR, kind: "Serverless", metadata: { name, namespace }, spec },
    valid,
  );
}

function scaler(r: Prng, namespace: string, name: string): KubeObject {
  const variants: [boolean, Record<string, unknown>][] = [
    [true, {}],
    [true, { logging: { operator: { level: "debug" } } }],
    [true, { podAnnotations: { operator: { "example.com/team": "a" } } }],
    [true, { podAnnotations: { operator: { "platform-project.io/x": "y" } } }],
    [false, { resources: { operator: { limits: { cpu: "100m" }, requests: { cpu: "200m" } } } }],
    [false, {
      env: [{ name: "X", value: "1", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }],
    }],
  ];
  const [valid, spec] = r.pick(variants);
  return labelled(
    { apiVersion: OPERATOR, kind: "Scaler", metadata: { name, namespace }, spec },
    valid,
  );
}

/**
 * A RateLimit: valid or not (its rule's interval), with or without response headers, and, drawn
 * from `features` (a fork, so the main stream and with it every earlier seed's workload stay as
 * they were), in shadow mode or not and with either gRPC status: a shadow limit's update to an
 * enforced one is an edit of one field the sweep makes, faults and all. With `perClient` (only
 * for an Envoy with dynamic descriptors) the rule gives each client its own bucket. From `global`
 * (a fork too), a global rule on SWEEP_GLOBAL_PATH beside the local part.
 */
function rateLimit(
  r: Prng,
  namespace: string,
  name: string,
  selector: Record<string, string>,
  features: Prng,
  perClient: boolean,
  global: Prng,
): KubeObject {
  const valid = r.chance(0.75);
  // Every rule's fillInterval must be a multiple of the default's (docs/design.md): 3s, 15s, 90s are not.
  const [fill, good, bad] = r.pick([["2s", "4s", "3s"], ["10s", "20s", "15s"], [
    "1m",
    "2m",
    "90s",
  ]]);
  const rule = {
    path: SWEEP_RULE_PATH,
    ...(perClient ? { perClient: { header: SWEEP_CLIENT_HEADER } } : {}),
    bucket: { maxTokens: 1, tokensPerFill: 1, fillInterval: valid ? good : bad },
  };
  const spec = {
    selectorLabels: selector,
    enableResponseHeaders: r.chance(0.5),
    ...(features.chance(0.3) ? { enforce: false } : {}),
    ...(features.chance(0.3) ? { grpcStatus: "Unavailable" } : {}),
    local: {
      defaultBucket: { maxTokens: SWEEP_MAX_TOKENS, tokensPerFill: 1, fillInterval: fill },
      buckets: [rule],
    },
    // A global limit on a path of its own (drawn from a fork of its own): 1 to 4 requests a window,
    // for each client or for all together.
    ...(global.chance(0.35)
      ? {
        global: {
          rules: [{
            path: SWEEP_GLOBAL_PATH,
            ...(global.chance(0.5) ? { perClient: { header: SWEEP_CLIENT_HEADER } } : {}),
            limit: { requests: global.int(1, 4), unit: sweepGlobalUnit(name) },
          }],
          ...(global.chance(0.3) ? { failureMode: "Deny" } : {}),
        },
      }
      : {}),
  };
  return labelled(
    { apiVersion: GATEWAY, kind: "RateLimit", metadata: { name, namespace }, spec },
    valid,
  );
}

function fn(name: string): KubeObject {
  return {
    apiVersion: "serverless.platform-project.io/v1alpha2",
    kind: "Function",
    metadata: { name, namespace: "default" },
    spec: { runtime: "nodejs20", source: { inline: { source: "module.exports = {}" } } },
  };
}

/**
 * A random workload: 4 to 14 actions in the first `windowMs`. `dynamicDescriptors`: the mesh's
 * Envoy has them, so a RateLimit may have a per-client rule (drawn from a fork of its own, which
 * leaves every other draw as it was).
 */
export function generateWorkload(
  r: Prng,
  windowMs: number,
  dynamicDescriptors = true,
): WorkloadAction[] {
  const modules: [string, string][] = [["platform-system", "default"], [
    "platform-system",
    "second",
  ], ["default", "third"]];
  const limits: [string, string, Record<string, string>][] = [
    [DEMO.namespace, "rl-a", { ...DEMO.labels }],
    [DEMO.namespace, "rl-b", { ...DEMO.labels }],
    [DEMO.namespace, "rl-c", { ...DEMO.labels }],
    ["mesh-system", "gateway", { app: "mesh-ingressgateway" }],
    // In the mesh's root namespace, selecting demo's workload: refused (MeshWide), never applied.
    ["mesh-system", "everyone", { ...DEMO.labels }],
  ];
  const n = r.int(4, 14);
  const actions: WorkloadAction[] = [];
  for (let i = 0; i < n; i++) {
    const at = r.int(0, windowMs);
    const choice = r.int(0, 9);
    if (choice <= 1) {
      const [ns, name] = r.pick(modules);
      actions.push({ at, op: "apply", obj: serverless(r, ns, name) });
    } else if (choice <= 3) {
      const [ns, name] = r.pick(modules);
      actions.push({ at, op: "apply", obj: scaler(r, ns, name) });
    } else if (choice <= 5) {
      const [ns, name, sel] = r.pick(limits);
      const perClient = dynamicDescriptors && r.fork(`per-client/${i}`).chance(0.3);
      const obj = rateLimit(
        r,
        ns,
        name,
        sel,
        r.fork(`features/${i}`),
        perClient,
        r.fork(`global/${i}`),
      );
      actions.push({ at, op: "apply", obj });
    } else if (choice === 6) {
      actions.push({ at, op: "apply", obj: fn(r.pick(["fn-a", "fn-b"])) });
    } else {
      const kind = r.pick(["Serverless", "Scaler", "RateLimit", "Function"]);
      const [namespace, name] = kind === "RateLimit"
        ? r.pick(limits)
        : kind === "Function"
        ? ["default", r.pick(["fn-a", "fn-b"])]
        : r.pick(modules);
      actions.push({ at, op: "delete", kind, namespace, name });
    }
  }
  // A user's own object that carries an installed module's labels (copied from one, or set by a
  // kustomization's common labels): the module must neither prune it nor wait for it. Drawn from a
  // fork of its own, which leaves every other draw as it was.
  const u = r.fork("labelled-user-object");
  if (u.chance(0.3)) {
    const [namespace] = u.pick(modules);
    actions.push({ at: u.int(0, windowMs), op: "apply", obj: labelledUserObject(namespace) });
  }
  return actions.sort((a, b) => a.at - b.at);
}

/** A user's ConfigMap with the Serverless module's labels, which the operator did not write. */
export function labelledUserObject(namespace: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: "user-labelled",
      namespace,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [MODULE_LABEL]: "serverless" },
    },
    data: { note: "the user's own, labelled like the module's" },
  };
}
