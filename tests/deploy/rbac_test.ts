/**
 * The RBAC table (src/kube/rbac.ts) against what the code does: the controllers' watches and
 * primaries, the types the modules install, and the runtime's own calls on fixed types (Lease,
 * Event), found by reading the runtime's source. Grants beyond these, or missing ones, fail.
 */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { CONTROLLERS } from "../../src/controllers/registry.ts";
import { SCALER_MODULE } from "../../src/controllers/scaler.ts";
import { SERVERLESS_MODULE } from "../../src/controllers/serverless.ts";
import {
  ACCESS,
  type Access,
  partAccessOf,
  type RbacPart,
  type Verb,
} from "../../src/kube/rbac.ts";
import { CONTROLLER_NAMES } from "../../src/controllers/registry.ts";
import type { ResourceType } from "../../src/api/object.ts";
import { resourceFor } from "../../src/api/resources.ts";
import { engineControllerFor } from "../../src/controllers/engine.ts";
import { DEFAULT_ENGINE_RESOURCES, ENGINE_KINDS } from "../../src/reconcile/engine/mod.ts";
import { GLOBAL_ENGINE_SERVICE } from "../../src/api/global_engine.ts";

type Kind = keyof typeof RESOURCES;
const MODULES = [SERVERLESS_MODULE, SCALER_MODULE];

/** Cluster method to the RBAC verbs it needs (an apply that creates is authorized as create). */
const METHOD_VERBS: Record<string, Verb[]> = {
  list: ["list"],
  watch: ["watch"],
  get: ["get"],
  create: ["create"],
  update: ["update"],
  patch: ["patch"],
  apply: ["create", "patch"],
  delete: ["delete"],
};

class Needed {
  readonly verbs = new Map<string, Set<Verb>>();
  add(type: ResourceType, verbs: readonly Verb[], sub?: string) {
    const key = `${type.kind}${sub ? `/${sub}` : ""}`;
    const set = this.verbs.get(key) ?? new Set();
    verbs.forEach((v) => set.add(v));
    this.verbs.set(key, set);
  }
}

async function sourceFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) out.push(...await sourceFiles(path));
    else if (e.name.endsWith(".ts")) out.push(await Deno.readTextFile(path));
  }
  return out;
}

const root = new URL("../../src/", import.meta.url).pathname;

/** What the code needs, derived from the code. */
async function derived(): Promise<Needed> {
  const needed = new Needed();
  for (const c of Object.values(CONTROLLERS)) {
    // The runner: finalizers by JSON patch, status by apply to /status, the primary read back
    // after a write that got no answer (plan_writes.ts); owner references with
    // blockOwnerDeletion need update on finalizers.
    needed.add(c.primary, ["get", "list", "watch", "patch"]);
    needed.add(c.primary, ["patch"], "status");
    needed.add(c.primary, ["update"], "finalizers");
    for (const w of c.watches) needed.add(w.type, ["list", "watch"]);
  }
  // The engine's controller (with --global-redis-secret): its primary, the Redis Secret, is only
  // read (its Plans carry no status and no finalizer: tests/reconcile/engine_test.ts); it applies
  // and prunes the engine's kinds.
  const engine = engineControllerFor({
    secret: { namespace: GLOBAL_ENGINE_SERVICE.namespace, name: "redis" },
    image: "engine",
    replicas: 2,
    resources: DEFAULT_ENGINE_RESOURCES,
  });
  needed.add(engine.primary, ["list", "watch"]);
  for (const w of engine.watches) needed.add(w.type, ["list", "watch"]);
  for (const t of ENGINE_KINDS) {
    needed.add(resourceFor(t.apiVersion, t.kind)!, ["get", "create", "patch", "delete"]);
  }
  // Plans apply what the modules install and prune it (a get first when the type is not cached).
  const rendered = new Set<ResourceType>(MODULES.flatMap((m) => m.installed));
  for (const text of await sourceFiles(`${root}reconcile`)) {
    for (const [, kind] of text.matchAll(/RESOURCES\.(\w+)\.kind/g)) {
      rendered.add(RESOURCES[kind as Kind]);
    }
  }
  for (const type of rendered) needed.add(type, ["get", "create", "patch", "delete"]);
  // Claims (create-if-absent, never applied; a stale one deleted after a get from the cache).
  const reconcileText = (await sourceFiles(`${root}reconcile`)).join("\n");
  if (/kind: "Lease"/.test(reconcileText) && /create: \[claimLease/.test(reconcileText)) {
    needed.add(RESOURCES.Lease, ["create", "delete"]);
  }
  // What the modules' RBAC grants, the operator holds (module_grants.ts): no escalate, no bind.
  // The runtime's own calls on fixed types, e.g. cluster.update(RESOURCES.Lease, ...).
  for (const text of await sourceFiles(`${root}runtime`)) {
    for (const [, method, kind] of text.matchAll(/cluster\.(\w+)\(\s*RESOURCES\.(\w+)/g)) {
      needed.add(RESOURCES[kind as Kind], METHOD_VERBS[method]);
    }
  }
  return needed;
}

function granted(): Needed {
  const g = new Needed();
  for (const [kind, access] of Object.entries(ACCESS) as [Kind, Access][]) {
    const type = RESOURCES[kind];
    g.add(type, access.verbs);
    if (access.status) g.add(type, access.status, "status");
    if (access.finalizers) g.add(type, access.finalizers, "finalizers");
  }
  return g;
}

const show = (n: Needed) =>
  Object.fromEntries(
    [...n.verbs].filter(([, v]) => v.size > 0).map(([k, v]) => [k, [...v].sort()]).sort(),
  );

Deno.test("the RBAC table has one row for every resource type the operator knows", () => {
  assert.deepEqual(Object.keys(ACCESS).sort(), Object.keys(RESOURCES).sort());
});

Deno.test("the RBAC table grants exactly what the code uses", async () => {
  const needed = await derived();
  // The scan found the runtime's fixed calls (leader election, Events) and the claims.
  assert.deepEqual([...needed.verbs.get("Lease") ?? []].sort(), [
    "create",
    "delete",
    "get",
    "list",
    "update",
    "watch",
  ]);
  assert.deepEqual([...needed.verbs.get("Event") ?? []].sort(), ["create", "get", "patch"]);
  assert.deepEqual(show(granted()), show(needed));
});

Deno.test("only leases are namespaced to the lease namespace, and the engine's Secret, PodDisruptionBudget and NetworkPolicy to its namespace; everything else is cluster-wide", () => {
  const scoped = (scope: string) =>
    Object.entries(ACCESS).filter(([, a]) => a.scope === scope).map(([k]) => k).sort();
  assert.deepEqual(scoped("lease-namespace"), ["Lease"]);
  assert.deepEqual(scoped("engine-namespace"), ["NetworkPolicy", "PodDisruptionBudget", "Secret"]);
  // Secrets are never read cluster-wide: only list and watch, in the engine's namespace.
  assert.deepEqual(ACCESS.Secret.verbs, ["list", "watch"]);
});

Deno.test("each part's rows cover what its controller uses, read from the controller (or the operator's own rows do)", () => {
  const has = (type: ResourceType, part: RbacPart, verbs: readonly Verb[], sub?: string) => {
    const covered = [part, "operator" as const].some((p) => {
      const a = partAccessOf(type, p);
      const got = sub === "status" ? a?.status : sub === "finalizers" ? a?.finalizers : a?.verbs;
      return verbs.every((v) => got?.includes(v));
    });
    assert.ok(covered, `${part}: ${verbs.join(",")} ${type.kind}${sub ? `/${sub}` : ""}`);
  };
  const modules = { serverless: SERVERLESS_MODULE, scaler: SCALER_MODULE };
  for (const name of CONTROLLER_NAMES) {
    const c = CONTROLLERS[name];
    has(c.primary, name, ["get", "list", "watch", "patch"]);
    has(c.primary, name, ["patch"], "status");
    has(c.primary, name, ["update"], "finalizers");
    for (const w of c.watches.filter((w) => !w.local)) has(w.type, name, ["list", "watch"]);
    const m = name === "ratelimit" ? undefined : modules[name];
    for (const t of m?.installed ?? []) has(t, name, ["get", "create", "patch", "delete"]);
  }
  has(RESOURCES.EnvoyFilter, "ratelimit", ["get", "create", "patch", "delete"]);
  const engine = engineControllerFor({
    secret: { namespace: GLOBAL_ENGINE_SERVICE.namespace, name: "redis" },
    image: "engine",
    replicas: 2,
    resources: DEFAULT_ENGINE_RESOURCES,
  });
  for (const t of [engine.primary, ...engine.watches.map((w) => w.type)]) {
    has(t, "global-engine", ["list", "watch"]);
    assert.equal(partAccessOf(t, "global-engine")?.scope, "engine-namespace", t.kind);
  }
  for (const t of ENGINE_KINDS) {
    has(resourceFor(t.apiVersion, t.kind)!, "global-engine", ["get", "create", "patch", "delete"]);
  }
});
