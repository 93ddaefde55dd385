/**
 * The operator's start-up access checks against a real API server, as deploy/'s ServiceAccount:
 * what they send (a rules review per scope, an access review only for what the rules do not
 * cover) and that a grant taken from deploy/'s RateLimit ClusterRole is named, with its controller. Run before any operator
 * replica starts: the grant is taken away for a moment.
 */
import assert from "node:assert/strict";
import type { ResourceType } from "../../src/api/object.ts";
import { checkCluster } from "../../src/cli/run_checks.ts";
import { parseRunFlags } from "../../src/cli/run_flags.ts";
import { controllersFor } from "../../src/controllers/registry.ts";
import { loadConnection } from "../../src/kube/config.ts";
import { LiveCluster } from "../../src/kube/live_cluster.ts";
import { partRoleName } from "../../src/kube/rbac.ts";
import type { Cluster } from "../../src/runtime/cluster.ts";
import { operatorRbacYaml } from "../../tools/cluster/operator_identity.ts";
import { type E2E, waitFor } from "./harness.ts";

/** Runs the checks as `mod.ts run` does with its defaults; returns the problems and what was created. */
async function check(live: LiveCluster): Promise<{ problems: string[]; created: string[] }> {
  const parsed = parseRunFlags([], () => undefined);
  if (parsed.kind !== "options") throw new Error(`run's defaults: ${parsed.kind}`);
  const opts = parsed.options;
  const registry = controllersFor({ meshRootNamespace: opts.meshRootNamespace });
  const created: string[] = [];
  const counting = {
    list: live.list.bind(live),
    create: (type: ResourceType, obj: Parameters<Cluster["create"]>[1]) => {
      created.push(type.plural);
      return live.create(type, obj);
    },
  } as unknown as Cluster;
  const problems = await checkCluster(
    counting,
    live,
    opts,
    opts.controllers.map((n) => registry[n]),
  );
  return { problems: problems.map((p) => p.message), created };
}

/**
 * With deploy/'s roles the checks pass on two rules reviews (the cluster, the lease namespace);
 * with the RateLimit status grant taken from the ClusterRole they name it, having asked that one
 * alone.
 */
export async function startupAccessChecks(env: E2E): Promise<void> {
  const live = new LiveCluster(loadConnection({ kubeconfig: env.cluster.operatorKubeconfig }));
  try {
    const granted = await check(live);
    assert.deepEqual(granted.problems, []);
    assert.deepEqual(granted.created, ["selfsubjectrulesreviews", "selfsubjectrulesreviews"]);

    const role = JSON.parse(
      await env.kube.must(["get", "clusterrole", partRoleName("ratelimit"), "-o", "json"]),
    );
    const rules = role.rules as { resources?: string[] }[];
    role.rules = rules.filter((r) => !r.resources?.includes("ratelimits/status"));
    assert.equal(role.rules.length, rules.length - 1, "one rule grants RateLimits' status");
    await env.kube.must(["replace", "-f", "-"], { stdin: JSON.stringify(role) });
    try {
      const denied = await waitFor("the checks to see the rule gone", async () => {
        const r = await check(live);
        return r.problems.length > 0 ? r : undefined;
      });
      assert.equal(denied.problems.length, 1, denied.problems.join("\n"));
      assert.match(
        denied.problems[0],
        /^RBAC forbids the operator to patch ratelimits\.gateway\.platform-project\.io\/status: controller ratelimit needs ClusterRole platform-operator-ratelimit .*: missing patch ratelimits\.gateway\.platform-project\.io\/status$/,
      );
      assert.deepEqual(
        denied.created.filter((p) => p === "selfsubjectaccessreviews").length,
        1,
        "only the check the rules do not cover is asked alone",
      );
    } finally {
      await env.kube.must(["apply", "-f", "-"], { stdin: await operatorRbacYaml() });
    }
    await waitFor(
      "the checks to pass again",
      async () => (await check(live)).problems.length === 0,
    );
  } finally {
    live.close();
  }
}
