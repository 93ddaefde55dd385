/**
 * deploy/global-engine/, the kustomize Component that makes the operator deploy the global rate
 * limit engine (--global-redis-secret): the engine's namespace, the operator's Role there allowing
 * exactly the `engine-namespace` rows of src/kube/rbac.ts (Secrets read by list and watch only,
 * no get, no write), the xDS Service and the NetworkPolicy beside the operator, and the
 * Deployment's variable and port, as the control plane's kubectl renders deploy/ with the
 * component.
 */
import assert from "node:assert/strict";
import { envName, parseRunFlags } from "../../src/cli/run_flags.ts";
import { partAccessOf } from "../../src/kube/rbac.ts";
import { RESOURCES } from "../../src/api/resources.ts";
import { ruleAllows } from "../../src/kube/self_access.ts";
import {
  ENGINE_XDS,
  engineXdsServerUrl,
  GLOBAL_ENGINE_LABELS,
  GLOBAL_ENGINE_SERVICE,
} from "../../src/api/global_engine.ts";
import {
  GLOBAL_ENGINE_IMAGE_ENV,
  GLOBAL_ENGINE_SIZE_ENV,
  GLOBAL_REDIS_SECRET_ENV,
} from "../../src/deploy/global_engine_objects.ts";
import { engineControllerFor } from "../../src/controllers/engine.ts";
import { DEFAULT_ENGINE_RESOURCES } from "../../src/reconcile/engine/mod.ts";
import { DEPLOY, kustomizeObjects, withComponent } from "./kustomize.ts";
import { preflight } from "../../src/kube/preflight.ts";
import { json, type Seen } from "../kube/fake_server.ts";
import { withCluster } from "../kube/helpers.ts";

const NS_ENGINE = GLOBAL_ENGINE_SERVICE.namespace;

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
type Container = {
  name: string;
  env?: { name: string; value?: string }[];
  ports?: { name: string; containerPort: number }[];
};
type Obj = {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  rules?: Rule[];
  subjects?: unknown[];
  spec?: Record<string, unknown> & {
    template?: { spec: { containers: Container[] } };
  };
};

const key = (o: Obj) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;

function kustomize(dir: string): Promise<Obj[]> {
  return kustomizeObjects<Obj>(dir);
}

const operator = (objs: Obj[]) =>
  objs.find((o) => o.kind === "Deployment")!.spec!.template!.spec.containers.find((c) =>
    c.name === "operator"
  )!;

Deno.test("deploy/ with components: [deploy/global-engine] is deploy/ plus the engine's namespace, the Role, the xDS Service, the NetworkPolicy, the variable and the port", async () => {
  assert.equal(GLOBAL_REDIS_SECRET_ENV, envName("global-redis-secret"));
  assert.equal(GLOBAL_ENGINE_IMAGE_ENV, envName("global-engine-image"));
  for (const [part, name] of Object.entries(GLOBAL_ENGINE_SIZE_ENV)) {
    assert.equal(name, envName(`global-engine-${part}`));
  }
  await withComponent("global-engine", async (dir) => {
    const plain = await kustomize(DEPLOY);
    const withEngine = await kustomize(dir);
    const added = withEngine.filter((o) => !plain.map(key).includes(key(o)));
    assert.deepEqual(added.map(key).sort(), [
      "Namespace//platform-ratelimit",
      "NetworkPolicy/platform-system/platform-operator-global-engine",
      "Role/platform-ratelimit/platform-operator-global-engine",
      "RoleBinding/platform-ratelimit/platform-operator-global-engine",
      "Service/platform-system/platform-operator-xds",
    ]);
    const get = (kind: string) => added.find((o) => o.kind === kind)!;

    // The Role: exactly the global engine's part of the table (its Secret, and the workload it
    // installs there: no cluster-wide grant, so it works with deploy/variants/ratelimit-only
    // too); every verb the startup checks ask is allowed.
    const role = get("Role");
    const rows = Object.values(RESOURCES).flatMap((type) => {
      const access = partAccessOf(type, "global-engine");
      return access ? [[type, access] as const] : [];
    });
    assert.deepEqual(rows.map(([t]) => t.kind).sort(), [
      "Deployment",
      "NetworkPolicy",
      "PodDisruptionBudget",
      "Secret",
      "Service",
      "ServiceAccount",
    ]);
    let verbs = 0;
    for (const [type, access] of rows) {
      assert.equal(access.scope, "engine-namespace", type.kind);
      for (const verb of access.verbs) {
        const check = { type, verb, namespace: GLOBAL_ENGINE_SERVICE.namespace };
        assert.ok(role.rules!.some((r) => ruleAllows(r, check)), `${verb} ${type.plural}`);
        verbs++;
      }
    }
    assert.equal(
      role.rules!.flatMap((r) => r.verbs.map((v) => r.resources.map(() => v))).flat().length,
      verbs,
    );
    const secrets = role.rules!.filter((r) => r.resources.includes("secrets"));
    assert.deepEqual(secrets.map((r) => r.verbs), [["list", "watch"]]);
    // Every type the engine's controller watches or writes in the namespace is either the Role's
    // or the ClusterRole's (cluster scope): nothing is left ungranted.
    const engine = engineControllerFor({
      secret: { namespace: "platform-ratelimit", name: "redis" },
      image: "i",
      replicas: 2,
      resources: DEFAULT_ENGINE_RESOURCES,
    });
    for (const t of [engine.primary, ...engine.watches.map((w) => w.type)]) {
      const a = partAccessOf(t, "global-engine");
      assert.ok(a?.verbs.includes("list") && a.verbs.includes("watch"), t.kind);
      assert.equal(a?.scope, "engine-namespace", t.kind);
    }
    assert.deepEqual(get("RoleBinding").subjects, [{
      kind: "ServiceAccount",
      name: "platform-operator",
      namespace: "platform-system",
    }]);

    // The xDS Service: its name and namespace are those the engines dial.
    const service = get("Service");
    assert.equal(
      `${service.metadata.name}.${service.metadata.namespace}.svc:${
        (service.spec!.ports as { port: number }[])[0].port
      }`,
      engineXdsServerUrl("platform-system"),
    );
    assert.deepEqual(service.spec!.selector, { "app.kubernetes.io/name": "platform-operator" });
    // It leads to the operator's Pods, which the Deployment's template labels so.
    const template = withEngine.find((o) => o.kind === "Deployment")!.spec!.template as unknown as {
      metadata: { labels: Record<string, string> };
    };
    assert.equal(template.metadata.labels["app.kubernetes.io/name"], "platform-operator");

    // The policy: engines in to 18001, the operator out to their debug and health ports.
    const policy = get("NetworkPolicy").spec! as {
      ingress: { from: { podSelector: { matchLabels: unknown } }[]; ports: { port: number }[] }[];
      egress: { to: unknown[]; ports: { port: number }[] }[];
    };
    assert.deepEqual(policy.ingress[0].from[0].podSelector.matchLabels, GLOBAL_ENGINE_LABELS);
    assert.deepEqual(policy.ingress[0].ports.map((p) => p.port), [ENGINE_XDS.port]);
    assert.deepEqual(policy.egress[0].ports.map((p) => p.port), [6070, 8080]);

    // The namespace: restricted Pod Security, which the engine's Pods meet.
    assert.equal(
      get("Namespace").metadata.labels!["pod-security.kubernetes.io/enforce"],
      "restricted",
    );

    // The Deployment: the variable, read as the flag, and the xDS port; nothing else changed.
    const before = operator(plain);
    const after = operator(withEngine);
    const env = (after.env ?? []).filter((e) => !(before.env ?? []).some((b) => b.name === e.name));
    assert.deepEqual(env, [{ name: GLOBAL_REDIS_SECRET_ENV, value: "platform-ratelimit/redis" }]);
    const parsed = parseRunFlags([], (n) => env.find((e) => e.name === n)?.value);
    assert.deepEqual(parsed.kind === "options" && parsed.options.globalRedisSecret, {
      namespace: "platform-ratelimit",
      name: "redis",
    });
    const ports = (after.ports ?? []).filter((p) =>
      !(before.ports ?? []).some((b) => b.name === p.name)
    );
    assert.deepEqual(ports, [{ name: "engine-xds", containerPort: 18001, protocol: "TCP" }]);
    const rest = (objs: Obj[]) =>
      objs.filter((o) => o.kind !== "Deployment" && !added.map(key).includes(key(o)));
    assert.deepEqual(rest(withEngine), rest(plain));
  });
});

Deno.test("--global-redis-secret: namespace/name in the engine's namespace, or refused naming why", () => {
  const parse = (v: string) => parseRunFlags([`--global-redis-secret=${v}`], () => undefined);
  const ok = parse("platform-ratelimit/redis");
  assert.equal(ok.kind, "options");
  const other = parse("default/redis");
  assert.equal(other.kind, "error");
  assert.match(
    other.kind === "error" ? other.message : "",
    /must be in namespace platform-ratelimit, where the engine's Pods read/,
  );
  const bad = parse("redis");
  assert.match(bad.kind === "error" ? bad.message : "", /use namespace\/name of the Redis Secret/);
  const none = parseRunFlags([], () => undefined);
  assert.equal(none.kind === "options" && none.options.globalRedisSecret, undefined);
  assert.match(
    none.kind === "options" ? none.options.globalEngineImage : "",
    /^ghcr\.io\/platform-project\/ratelimit-engine:1\.4\.1-/,
  );
});

/** An API server whose rules reviews are incomplete and which refuses what `deny` says. */
function apiServer(deny: (attrs: Record<string, string>) => boolean) {
  return (req: Seen) => {
    if (req.method === "POST" && req.path.endsWith("/selfsubjectrulesreviews")) {
      return json(
        { ...JSON.parse(req.body), status: { resourceRules: [], incomplete: true } },
        201,
      );
    }
    if (req.method === "POST" && req.path.endsWith("/selfsubjectaccessreviews")) {
      const review = JSON.parse(req.body);
      return json({ ...review, status: { allowed: !deny(review.spec.resourceAttributes) } }, 201);
    }
    return json({ items: [], metadata: { resourceVersion: "1" } });
  };
}

Deno.test("the startup checks ask for the engine's verbs in its namespace and name the component's Role when they are missing", async () => {
  const engine = engineControllerFor({
    secret: { namespace: NS_ENGINE, name: "redis" },
    image: "i",
    replicas: 2,
    resources: DEFAULT_ENGINE_RESOURCES,
  });
  const types = [{ type: engine.primary }, ...engine.watches];
  // Without the Role: every engine-namespace verb refused, the rest granted.
  const noRole = (a: Record<string, string>) => a.namespace === NS_ENGINE;
  await withCluster(apiServer(noRole), async (cluster, server) => {
    const problems = await preflight(cluster, { types, server: server.url, source: "test" });
    assert.deepEqual(problems.map((p) => p.kind), ["forbidden"]);
    assert.match(problems[0].message, /list,watch secrets in namespace platform-ratelimit/);
    assert.match(
      problems[0].message,
      /: apply deploy\/global-engine's Role platform-operator-global-engine in namespace platform-ratelimit \(docs\/operations\.md, The global rate limit engine\)$/,
    );
    // Secrets are asked in the engine's namespace only, never cluster-wide.
    const asked = server.seen.filter((r) => r.path.endsWith("/selfsubjectaccessreviews"))
      .map((r) => JSON.parse(r.body).spec.resourceAttributes as Record<string, string>)
      .filter((a) => a.resource === "secrets");
    assert.deepEqual(asked.map((a) => `${a.verb} ${a.namespace}`).sort(), [
      `list ${NS_ENGINE}`,
      `watch ${NS_ENGINE}`,
    ]);
  });
  // With it: no problem.
  await withCluster(apiServer(() => false), async (cluster, server) => {
    assert.deepEqual(await preflight(cluster, { types, server: server.url, source: "test" }), []);
  });
});
