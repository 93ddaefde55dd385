/**
 * Granting without holding (issue #48 point 3), asked of a real API server's RBAC escalation
 * checks as ServiceAccounts with each choice of roles (the local control plane, no node):
 *
 * - holding (deploy/scaler, what deploy/ does): the operator holds every rule of KEDA's roles;
 * - escalate and bind limited by `resourceNames` to KEDA's ClusterRoles (and the built-in
 *   `system:auth-delegator` KEDA binds), holding none of KEDA's rules;
 * - bind alone by name, with KEDA's ClusterRoles created by the admin at install time;
 * - the RateLimit-only variant's roles.
 *
 * What each can do to KEDA's RBAC and what it can reach from there shows which grants less
 * standing power (docs/operations.md, "Granting without holding").
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type ClusterHandle, up } from "../../tools/cluster/mod.ts";
import { CACHE_DIR } from "../../tools/cluster/paths.ts";
import { ok } from "../../tools/cluster/test_helpers.ts";
import type { KubeObject } from "../../src/api/object.ts";
import {
  controllerRbacObjects,
  DEFAULT_RBAC_NAMES,
  operatorRbacObjects,
  partRoleName,
  type RbacNames,
} from "../../src/kube/rbac.ts";
import { moduleRbac, moduleRbacNames, type PolicyRule } from "../../src/kube/module_grants.ts";

const log = (msg: string) => console.error(`[cluster] ${msg}`);
const NS = "esc";
/** Where KEDA's namespaced RBAC goes (the module's namespace). */
const KEDA_NS = "esc-keda";

/** The names of one ServiceAccount's roles, apart from deploy/'s own. */
function names(sa: string): RbacNames {
  return {
    ...DEFAULT_RBAC_NAMES,
    namespace: NS,
    serviceAccount: sa,
    clusterRole: `esc-${sa}`,
    leaseRole: `esc-${sa}-leases`,
    metricsReader: `esc-${sa}-metrics`,
  };
}

const json = (objs: readonly unknown[]) => objs.map((o) => JSON.stringify(o)).join("\n");

/** A ClusterRole and its binding to `sa` with `rules`. */
function clusterRole(sa: string, name: string, rules: PolicyRule[]): KubeObject[] {
  return [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name },
      rules,
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
      subjects: [{ kind: "ServiceAccount", name: sa, namespace: NS }],
    },
  ] as KubeObject[];
}

/** KEDA's RBAC objects, as the Scaler controller installs them into KEDA_NS. */
const keda = moduleRbac(KEDA_NS, ["scaler"]).filter((o) =>
  ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"].includes(o.kind)
);
const kedaClusterRoles = moduleRbacNames("ClusterRole", ["scaler"]);
const kedaRoles = keda.filter((o) => o.kind === "Role").map((o) => o.metadata.name);

Deno.test({
  name:
    "granting KEDA's RBAC: holding its rules vs escalate and bind by name, against the API server's escalation checks",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const dir = join(CACHE_DIR, `test-escalation-${Deno.pid}`);
    const c: ClusterHandle = await up({ dir, log });
    try {
      const user = (sa: string) => `system:serviceaccount:${NS}:${sa}`;
      const as = (sa: string, args: string[], stdin?: string) =>
        c.kubectl([...args, `--as=${user(sa)}`], stdin === undefined ? {} : { stdin });
      const can = async (sa: string, ...args: string[]) =>
        (await as(sa, ["auth", "can-i", ...args])).stdout.trim();
      await ok(c, ["create", "namespace", NS]);
      await ok(c, ["create", "namespace", KEDA_NS]);
      for (const sa of ["holder", "named", "binder", "ratelimit"]) {
        await ok(c, ["create", "serviceaccount", sa, "-n", NS]);
      }
      await ok(c, ["create", "secret", "generic", "db", "-n", "kube-system", "--from-literal=k=v"]);

      // holding: deploy/scaler's roles (its controller's own and the grants), and the operator's.
      const holder = names("holder");
      await ok(
        c,
        ["apply", "-f", "-"],
        json([
          ...operatorRbacObjects(holder),
          ...controllerRbacObjects("scaler", holder),
          // The grants Role where KEDA is installed (moduleGrantsRole's, in KEDA_NS).
          ...controllerRbacObjects("scaler", { ...holder, namespace: KEDA_NS })
            .filter((o) => o.metadata.namespace === KEDA_NS)
            .map((o) =>
              o.kind === "RoleBinding"
                ? { ...o, subjects: [{ kind: "ServiceAccount", name: "holder", namespace: NS }] }
                : o
            ),
        ]),
      );
      // escalate and bind by name: the Scaler controller's own rules (create and named patch of
      // ClusterRoles and bindings), none of KEDA's, and the two verbs on KEDA's roles' names.
      const named = names("named");
      const own = controllerRbacObjects("scaler", named)
        .filter((o) => o.metadata.name === partRoleName("scaler", named));
      const byName = (verbs: string[]): PolicyRule[] => [{
        apiGroups: ["rbac.authorization.k8s.io"],
        resources: ["clusterroles"],
        verbs,
        resourceNames: [...kedaClusterRoles, "system:auth-delegator"],
      }, {
        apiGroups: ["rbac.authorization.k8s.io"],
        resources: ["roles"],
        verbs,
        resourceNames: kedaRoles,
      }];
      await ok(
        c,
        ["apply", "-f", "-"],
        json([
          ...own,
          ...clusterRole("named", "esc-named-escalate-bind", byName(["escalate", "bind"])),
        ]),
      );
      // bind alone by name (the ClusterRoles would be the admin's, shipped in the component).
      const binder = names("binder");
      await ok(
        c,
        ["apply", "-f", "-"],
        json([
          ...controllerRbacObjects("scaler", binder)
            .filter((o) => o.metadata.name === partRoleName("scaler", binder)),
          ...clusterRole("binder", "esc-binder-bind", byName(["bind"])),
        ]),
      );
      // The RateLimit-only variant's roles.
      const rl = names("ratelimit");
      await ok(
        c,
        ["apply", "-f", "-"],
        json([
          ...operatorRbacObjects(rl),
          ...controllerRbacObjects("ratelimit", rl),
        ]),
      );

      const kedaOperator = keda.find((o) =>
        o.kind === "ClusterRole" && o.metadata.name === "keda-operator"
      )!;
      const everything = { apiGroups: ["*"], resources: ["*"], verbs: ["*"] };
      const widened = {
        ...kedaOperator,
        rules: [...(kedaOperator as KubeObject & { rules: PolicyRule[] }).rules, everything],
      };
      const selfBinding = (sa: string) => ({
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: `esc-${sa}-takes-keda-operator` },
        roleRef: {
          apiGroup: "rbac.authorization.k8s.io",
          kind: "ClusterRole",
          name: "keda-operator",
        },
        subjects: [{ kind: "ServiceAccount", name: sa, namespace: NS }],
      });

      await t.step("standing power before any write", async () => {
        // Holding KEDA's rules reads every Secret now (keda-operator's get on */*).
        assert.equal(await can("holder", "get", "secrets", "-n", "kube-system"), "yes");
        // By name: nothing of KEDA's is held.
        for (const sa of ["named", "binder", "ratelimit"]) {
          assert.equal(await can(sa, "get", "secrets", "-n", "kube-system"), "no", sa);
        }
        for (const sa of ["holder", "named", "binder", "ratelimit"]) {
          assert.equal(await can(sa, "*", "*"), "no", sa);
          assert.equal(await can(sa, "delete", "nodes"), "no", sa);
        }
        assert.equal(await can("named", "escalate", "clusterroles/keda-operator"), "yes");
        assert.equal(await can("named", "escalate", "clusterroles/cluster-admin"), "no");
      });

      await t.step(
        "installing KEDA's RBAC: holding can; escalate by name cannot create a role",
        async () => {
          const created = await as("holder", ["create", "-f", "-"], json(keda));
          assert.equal(created.code, 0, created.stderr);
          // Clean up for the next one (as the admin).
          await ok(c, ["delete", "-f", "-", "--wait=false"], json(keda));
          // escalate is asked with the request's name, which a create has not: refused.
          const refused = await as("named", ["create", "-f", "-"], json([kedaOperator]));
          assert.notEqual(refused.code, 0);
          assert.match(
            refused.stderr,
            /is attempting to grant RBAC permissions not currently held/,
          );
          console.error(`[escalation] named create: ${refused.stderr.trim().slice(0, 300)}`);
          const rlRefused = await as("ratelimit", ["create", "-f", "-"], json([kedaOperator]));
          assert.notEqual(rlRefused.code, 0);
          assert.match(rlRefused.stderr, /forbidden/);
        },
      );

      await t.step(
        "with KEDA's roles there: escalate and bind by name become any rule; holding stays bounded",
        async () => {
          // The admin creates KEDA's ClusterRoles (as a component shipping them would).
          await ok(c, ["apply", "-f", "-"], json(keda.filter((o) => o.kind === "ClusterRole")));
          // holding cannot widen keda-operator beyond what it holds, nor take more by binding it.
          const held = await as("holder", [
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            "-",
          ], JSON.stringify(widened));
          assert.notEqual(held.code, 0, "holding cannot add */*/*");
          assert.match(held.stderr, /attempting to grant RBAC permissions not currently held/);
          const hb = await as(
            "holder",
            ["create", "-f", "-"],
            JSON.stringify(selfBinding("holder")),
          );
          assert.equal(hb.code, 0, hb.stderr);
          assert.equal(await can("holder", "*", "*"), "no");
          assert.equal(await can("holder", "delete", "nodes"), "no");
          // bind alone: cannot change the role, can take it (KEDA's rules, as holding has them).
          const br = await as(
            "binder",
            ["apply", "--server-side", "--force-conflicts", "-f", "-"],
            JSON.stringify(widened),
          );
          assert.notEqual(br.code, 0, "bind alone cannot add */*/*");
          const bb = await as(
            "binder",
            ["create", "-f", "-"],
            JSON.stringify(selfBinding("binder")),
          );
          assert.equal(bb.code, 0, bb.stderr);
          assert.equal(await can("binder", "get", "secrets", "-n", "kube-system"), "yes");
          assert.equal(await can("binder", "*", "*"), "no");
          // escalate and bind by name: two writes and it may do anything.
          const nr = await as(
            "named",
            ["apply", "--server-side", "--force-conflicts", "-f", "-"],
            JSON.stringify(widened),
          );
          assert.equal(nr.code, 0, `escalate by name lets it write any rule: ${nr.stderr}`);
          const nb = await as("named", ["create", "-f", "-"], JSON.stringify(selfBinding("named")));
          assert.equal(nb.code, 0, nb.stderr);
          assert.equal(await can("named", "*", "*"), "yes");
          assert.equal(await can("named", "delete", "nodes"), "yes");
          assert.equal(await can("named", "get", "secrets", "-n", "kube-system"), "yes");
          // The RateLimit-only roles touch none of it.
          const rr = await as(
            "ratelimit",
            ["create", "-f", "-"],
            JSON.stringify(selfBinding("ratelimit")),
          );
          assert.notEqual(rr.code, 0);
          assert.equal(await can("ratelimit", "get", "secrets", "-A"), "no");
          console.error(
            "[escalation] holding: reads every Secret from the start, cannot add */*/* (refused); " +
              "bind by name: the same after one write; escalate+bind by name: cluster-admin after two writes",
          );
        },
      );
    } finally {
      await c.down();
    }
  },
});
