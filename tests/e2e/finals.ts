/**
 * The final statuses of a scenario run, in one comparable form for the simulator and the real
 * cluster: per object (`Kind namespace/name`), its state, served and each condition's
 * `Type=Status/Reason`, or `(deleted)`. Also the cleanup between scenarios on the real cluster.
 */
import { isDeepStrictEqual } from "node:util";
import type { TimelineEntry } from "../../sim/trace.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { envoyFilterCrd } from "../../src/crd/istio.ts";
import { type E2E, waitFor } from "./harness.ts";
import { managedObjects } from "./invariants.ts";
import { resourceArg } from "./scenario_real.ts";
import { statusOf } from "./status.ts";

/** One object's final status. */
export interface Final {
  state?: string;
  served?: string;
  conditions: string[];
}

/** Final statuses by object. */
export type Finals = Record<string, Final>;

/** The kinds whose statuses the simulator's timeline records. */
export const STATUS_RESOURCES: Record<string, string> = {
  Serverless: "serverlesses.operator.platform-project.io",
  Scaler: "scalers.operator.platform-project.io",
  RateLimit: "ratelimits.gateway.platform-project.io",
};

/**
 * The objects whose final statuses differ between `want` (the simulator's) and `got` (the real
 * cluster's), each with both; empty when they are equal.
 */
export function finalsDiff(want: Finals, got: Finals): string {
  const keys = [...new Set([...Object.keys(want), ...Object.keys(got)])].sort();
  return keys.filter((k) => !isDeepStrictEqual(want[k], got[k]))
    .map((k) =>
      `${k}:\n    simulator: ${JSON.stringify(want[k] ?? "(never had a status)")}\n    real:      ${
        JSON.stringify(got[k] ?? "(none)")
      }`
    )
    .join("\n");
}

/** The last status of every object in a simulator timeline. */
export function simFinals(timeline: readonly TimelineEntry[]): Finals {
  const out: Finals = {};
  for (const e of timeline) {
    if (e.event !== "status") continue;
    out[e.object] = {
      ...(e.state !== undefined ? { state: e.state } : {}),
      ...(e.served !== undefined ? { served: e.served } : {}),
      conditions: [...e.conditions].sort(),
    };
  }
  return out;
}

function finalOf(o: KubeObject): Final {
  const s = statusOf(o);
  return {
    ...(s.state !== undefined ? { state: s.state } : {}),
    ...(s.served !== undefined ? { served: s.served } : {}),
    conditions: (s.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`).sort(),
  };
}

/**
 * The real cluster's final statuses for the objects `keys` names (absent ones are `(deleted)`),
 * plus every other object of the status kinds that has a status.
 */
export async function realFinals(env: E2E, keys: readonly string[]): Promise<Finals> {
  const out: Finals = {};
  for (const [kind, resource] of Object.entries(STATUS_RESOURCES)) {
    for (const o of await env.kube.list(resource, { allNamespaces: true })) {
      const key = `${kind} ${o.metadata.namespace ?? ""}/${o.metadata.name}`;
      if (keys.includes(key) || o.status) out[key] = finalOf(o);
    }
  }
  for (const k of keys) out[k] ??= { state: "(deleted)", conditions: [] };
  return out;
}

/**
 * `f` without the RateLimits' `Accepted` conditions: the differential's real run has no istiod, so
 * there the operator says `Unknown/IstiodNotAsked`, while the simulator models istiod and its
 * proxies (tests/istio holds Accepted to a real istiod). Throws when a real Accepted says anything
 * else, which would mean the operator claims what it never asked.
 */
export function withoutAccepted(f: Finals, real: boolean): Finals {
  const out: Finals = {};
  for (const [k, v] of Object.entries(f)) {
    const accepted = v.conditions.filter((c) => c.startsWith("Accepted="));
    if (real && accepted.some((c) => c !== "Accepted=Unknown/IstiodNotAsked")) {
      throw new Error(`${k}: ${accepted.join(", ")} from an operator that does not ask istiod`);
    }
    out[k] = { ...v, conditions: v.conditions.filter((c) => !c.startsWith("Accepted=")) };
  }
  return out;
}

/**
 * `f` (the simulator's) as a cluster whose KEDA Pods never serve shows it: on the differential's
 * kwok node the API server's aggregator reports KEDA's metrics APIService not Available, so a
 * Scaler the simulator shows installed and verified (Ready, or Warning row 13) is row 14 there:
 * Warning, `Installed=False/MetricsAPIUnavailable`.
 */
export function asKedaUnreachable(f: Finals): Finals {
  const out: Finals = {};
  for (const [k, v] of Object.entries(f)) {
    const verified = k.startsWith("Scaler ") && v.conditions.includes("Installed=True/Verified");
    out[k] = verified
      ? {
        ...v,
        state: "Warning",
        conditions: v.conditions.map((c) =>
          c === "Installed=True/Verified" ? "Installed=False/MetricsAPIUnavailable" : c
        ).sort(),
      }
      : v;
  }
  return out;
}

/** User objects of the modules, deleted first so module deletion is never blocked by them. */
const USER_RESOURCES = [
  "functions.serverless.platform-project.io",
  "scaledobjects.keda.sh",
  "scaledjobs.keda.sh",
  "triggerauthentications.keda.sh",
];

/**
 * Returns the cluster to its starting point with the operator still running: user objects, then
 * every module object and RateLimit (the operator uninstalls), waiting until they are gone. What the
 * operator failed to remove is forced away and reported, so the next scenario starts clean.
 */
export async function cleanup(env: E2E, applied: readonly KubeObject[]): Promise<string[]> {
  const problems: string[] = [];
  const kube = env.kube;
  for (const r of [...USER_RESOURCES, ...Object.values(STATUS_RESOURCES)]) {
    const res = await kube.run(["delete", r, "--all", "-A", "--wait=false", "--ignore-not-found"]);
    if (res.code !== 0 && !/doesn't have a resource type/.test(res.stderr)) {
      problems.push(res.stderr.trim());
    }
  }
  const left = async () => {
    const out: KubeObject[] = [];
    for (const r of Object.values(STATUS_RESOURCES)) {
      out.push(...await kube.list(r, { allNamespaces: true }));
    }
    return out;
  };
  try {
    await waitFor(
      "module objects and RateLimits to be deleted",
      async () => (await left()).length === 0,
      { timeoutMs: 60_000 },
    );
  } catch {
    for (const o of await left()) {
      problems.push(
        `${o.kind} ${o.metadata.namespace}/${o.metadata.name} was not deleted within 60 s`,
      );
      await kube.run([
        "patch",
        STATUS_RESOURCES[o.kind],
        o.metadata.name,
        "-n",
        o.metadata.namespace ?? "",
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":null}}',
      ]);
    }
  }
  // Dependents with an owner reference go through the garbage collector, which learns a new CRD's
  // type only at its next discovery resync (up to 30 s), so allow for that.
  await waitFor(
    "installed objects to be removed",
    async () => (await managedObjects(kube)).length === 0,
    {
      timeoutMs: 45_000,
      intervalMs: 500,
    },
  ).catch(() => {});
  await env.stopOperators();
  for (const o of await managedObjects(kube)) {
    problems.push(`${o.kind} ${o.metadata.namespace ?? ""}/${o.metadata.name} was left installed`);
    await kube.run([
      "delete",
      resourceArg(o.kind, o.apiVersion),
      o.metadata.name,
      ...(o.metadata.namespace ? ["-n", o.metadata.namespace] : []),
      "--wait=false",
    ]);
  }
  // The scenario's own objects (workloads, namespaces stay: they are cheap and harmless).
  for (const o of applied) {
    if (
      o.kind === "Namespace" || o.kind === "CustomResourceDefinition" || STATUS_RESOURCES[o.kind]
    ) continue;
    await kube.run([
      "delete",
      resourceArg(o.kind, o.apiVersion),
      o.metadata.name,
      "--ignore-not-found",
      "--wait=false",
      ...(o.metadata.namespace ? ["-n", o.metadata.namespace] : []),
    ]);
  }
  await kube.run([
    "delete",
    "lease",
    "platform-operator",
    "-n",
    "platform-system",
    "--ignore-not-found",
  ]);
  // A scenario may have removed the mesh's CRD; the next one starts with it, as the simulator's world does.
  if (!await kube.get("crd", "envoyfilters.networking.istio.io")) {
    await kube.apply([envoyFilterCrd()]);
  }
  return problems;
}
