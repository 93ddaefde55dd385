/** Builders for RateLimit reconcile tests: raw objects, pods, and applying a Plan to a small world. */
import type { KubeObject } from "../../src/api/object.ts";
import type { Plan } from "../../src/reconcile/plan.ts";
import { type RateLimitInput, reconcileRateLimit } from "../../src/reconcile/ratelimit/mod.ts";
import {
  type HeldLimits,
  heldLimitsOf,
  type HeldRecord,
  proxyStatusObject,
} from "../../src/api/istiod.ts";
import { LOCAL_RATELIMIT_FILTER } from "../../src/api/envoy.ts";
import type { EngineObservation, EnginePod } from "../../src/reconcile/ratelimit/input.ts";
import { judgeSpec, STAT_PREFIX } from "../../src/reconcile/ratelimit/render.ts";

/** A bucket as users write it. */
export interface RawBucket {
  maxTokens: unknown;
  tokensPerFill: unknown;
  fillInterval: unknown;
}

/** A raw RateLimit: spec and metadata fields override the defaults. */
export function rateLimit(
  opts: {
    name?: string;
    namespace?: string;
    uid?: string;
    generation?: number;
    created?: string;
    selectorLabels?: Record<string, string>;
    enableResponseHeaders?: boolean;
    /** spec.enforce as written (any value, to try bad ones). */
    enforce?: unknown;
    grpcStatus?: unknown;
    defaultBucket?: RawBucket;
    buckets?: unknown[];
    /** spec.local.maxClients as written. */
    maxClients?: unknown;
    /** spec.global as written; absent by default. */
    global?: unknown;
    /** false: no spec.local (a RateLimit with global limits only). */
    local?: false;
    status?: unknown;
  } = {},
): KubeObject {
  const name = opts.name ?? "httpbin";
  return {
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    metadata: {
      name,
      namespace: opts.namespace ?? "demo",
      uid: opts.uid ?? `uid-${name}`,
      generation: opts.generation ?? 1,
      creationTimestamp: opts.created ?? "2025-01-01T00:00:00Z",
    },
    spec: {
      selectorLabels: opts.selectorLabels ?? { app: "httpbin" },
      ...(opts.enableResponseHeaders !== undefined
        ? { enableResponseHeaders: opts.enableResponseHeaders }
        : {}),
      ...(opts.enforce !== undefined ? { enforce: opts.enforce } : {}),
      ...(opts.grpcStatus !== undefined ? { grpcStatus: opts.grpcStatus } : {}),
      ...(opts.local === false ? {} : {
        local: {
          defaultBucket: opts.defaultBucket ??
            { maxTokens: 10, tokensPerFill: 10, fillInterval: "30s" },
          ...(opts.buckets ? { buckets: opts.buckets } : {}),
          ...(opts.maxClients !== undefined ? { maxClients: opts.maxClients } : {}),
        },
      }),
      ...(opts.global !== undefined ? { global: opts.global } : {}),
    },
    ...(opts.status ? { status: opts.status } : {}),
  };
}

/** A bucket literal. */
export function bucket(maxTokens: number, tokensPerFill: number, fillInterval: string): RawBucket {
  return { maxTokens, tokensPerFill, fillInterval };
}

/** A Pod with labels. */
export function pod(name: string, labels: Record<string, string>, namespace = "demo"): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace, uid: `pod-${name}`, labels },
    status: { conditions: [{ type: "Ready", status: "True" }] },
  };
}

/** `p` with the mesh's proxy container: a sidecar's (`proxy sidecar`) or a gateway's (`proxy router`). */
export function withProxy(p: KubeObject, kind: "sidecar" | "router"): KubeObject {
  const proxy = { name: "istio-proxy", image: "istio/proxyv2", args: ["proxy", kind] };
  return { ...p, spec: { containers: [{ name: "app", image: "app" }, proxy] } };
}

/** A proxy image pinned by digest alone: its reference says no Istio version. */
export const DIGEST_ONLY =
  "docker.io/istio/proxyv2@sha256:0f5e7a1c0b4b6f2e1b9d3c8a7e6f5d4c3b2a1908f7e6d5c4b3a29180f7e6d5c4";

/** `p` (with a proxy container, `withProxy`) whose proxy container runs `image`. */
export function withImage(p: KubeObject, image: string): KubeObject {
  const spec = p.spec as { containers: { name: string }[] };
  return {
    ...p,
    spec: {
      ...spec,
      containers: spec.containers.map((c) => c.name === "istio-proxy" ? { ...c, image } : c),
    },
  };
}

/**
 * The ProxyStatus object the istiod poller publishes for Pod `name` of `demo` whose proxy reports
 * Istio `istioVersion` and acknowledged its last push (holding `held`, when given), built with
 * src/api/istiod.ts as the poller builds it: read it with `proxyStatusOf`.
 */
export function proxyStatus(
  name: string,
  istioVersion: string,
  held?: HeldRecord,
  namespace = "demo",
): KubeObject {
  const acked = { sent: "n1", acked: "n1", sentTime: "", lastError: "" };
  return proxyStatusObject(
    { id: `${name}.${namespace}`, type: "sidecar", istioVersion, listeners: acked, routes: acked },
    held,
  )!;
}

/**
 * What istiod's dump of a proxy holding the filter `rl` renders to shows (heldLimitsOf's reading
 * of a route its route patch was merged into: the limits and the route digest).
 */
export function heldOf(rl: KubeObject): HeldLimits {
  const verdict = judgeSpec(rl, rl.metadata.namespace ?? "demo");
  if (!verdict.ok) throw new Error(`not valid: ${verdict.problems.join("; ")}`);
  const patches = (verdict.desired.spec as { configPatches: { applyTo: string; patch: unknown }[] })
    .configPatches;
  const route = patches.find((p) => p.applyTo === "HTTP_ROUTE")?.patch as { value: unknown };
  const held = heldLimitsOf({ routes: [route.value] }, LOCAL_RATELIMIT_FILTER, STAT_PREFIX).limits;
  if (held.length !== 1) throw new Error(`${held.length} limits read`);
  return held[0];
}

/** An input with the usual defaults: mesh installed, no peers, no pods, no filter, time 0. */
export function input(rl: unknown, more: Partial<RateLimitInput> = {}): RateLimitInput {
  return {
    rateLimit: rl,
    peers: [],
    pods: [],
    meshInstalled: true,
    now: 1_700_000_000_000,
    ...more,
  };
}

/** The world a reconcile sees and a Plan changes: the RateLimit and its EnvoyFilter. */
export interface World {
  rateLimit: KubeObject;
  envoyFilter?: KubeObject;
}

/** Carries out a Plan the way the runtime would: apply, delete, then write status. */
export function applyPlan(world: World, plan: Plan): World {
  let envoyFilter = world.envoyFilter;
  for (const obj of plan.apply) {
    if (obj.kind === "EnvoyFilter") envoyFilter = structuredClone(obj);
  }
  for (const ref of plan.delete) {
    if (ref.kind === "EnvoyFilter" && envoyFilter?.metadata.name === ref.name) {
      envoyFilter = undefined;
    }
  }
  const rateLimit = plan.status
    ? { ...world.rateLimit, status: structuredClone(plan.status) }
    : world.rateLimit;
  return { rateLimit, envoyFilter };
}

/**
 * The writes a Plan would make on `world` after the runtime's comparison: applies whose object
 * differs from the observed one, deletes of objects that exist, a status that differs, events.
 */
export function writesOf(world: World, plan: Plan): string[] {
  const writes: string[] = [];
  for (const obj of plan.apply) {
    if (JSON.stringify(obj) !== JSON.stringify(world.envoyFilter)) writes.push(`apply ${obj.kind}`);
  }
  for (const ref of plan.delete) {
    if (world.envoyFilter?.metadata.name === ref.name) writes.push(`delete ${ref.kind}`);
  }
  if (plan.status && JSON.stringify(plan.status) !== JSON.stringify(world.rateLimit.status)) {
    writes.push("status");
  }
  for (const e of plan.events) writes.push(`event ${e.reason}`);
  return writes;
}

/** Reconciles `world` with the rest of `base`. */
export function reconcileWorld(world: World, base: RateLimitInput): Plan {
  return reconcileRateLimit({
    ...base,
    rateLimit: world.rateLimit,
    envoyFilter: world.envoyFilter,
  });
}

/**
 * The engine as the operator reads it back: its Pods listed, each Ready and reaching Redis with
 * nothing loaded unless said otherwise.
 */
export function enginePods(
  pods: readonly (Partial<EnginePod> & { name: string })[],
): EngineObservation {
  return {
    listing: { listed: true, pods: pods.length },
    pods: pods.map((p) => ({ ready: true, redis: "Reachable", loaded: {}, since: "", ...p })),
  };
}
