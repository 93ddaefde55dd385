/**
 * The Helm chart deploy/helm/platform-operator/, checked by helm itself (built from
 * helm.sh/helm/v3 by `deno task build --only=helm`): `helm lint`, and `helm template` with the
 * default values gives exactly the objects of `kubectl kustomize deploy/` (the control plane's
 * kubectl, `deno task build --only=cluster`); each value lands where it should; bad values and a
 * missing monitoring CRD are refused with a message naming what to fix; `istiodService` renders
 * exactly deploy/ with the deploy/istiod component, `globalEngine.redisSecret` exactly deploy/
 * with the deploy/global-engine component, and half a globalEngine is refused.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { binaryPaths } from "../../tools/cluster/build.ts";
import { ensureHelm } from "../../tools/helm/build.ts";
import { monitoringObjects } from "../../src/deploy/monitoring_objects.ts";
import { DEPLOY, withComponent, withIstiodComponent } from "./kustomize.ts";
import { CONTROLLER_NAMES } from "../../src/controllers/registry.ts";
import { envName, parseRunFlags } from "../../src/cli/run_flags.ts";
import { CONCURRENCY_ENV } from "../../src/deploy/chart.ts";
import { partRoleName } from "../../src/kube/rbac.ts";
import { notServedName } from "../../src/deploy/variants.ts";

const CHART = join(DEPLOY, "helm", "platform-operator");
type Obj = { kind: string; metadata: { name: string; namespace?: string }; [k: string]: unknown };

async function run(
  cmd: string,
  args: string[],
): Promise<{ ok: boolean; out: string; err: string }> {
  const o = await new Deno.Command(cmd, { args, stdin: "null" }).output();
  const dec = new TextDecoder();
  return { ok: o.success, out: dec.decode(o.stdout), err: dec.decode(o.stderr) };
}

function objects(text: string): Obj[] {
  const key = (o: Obj) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;
  return parseAllDocuments(text).map((d) => d.toJS() as Obj).filter(Boolean)
    .sort((a, b) => (key(a) < key(b) ? -1 : 1));
}

async function template(...args: string[]): Promise<{ ok: boolean; out: string; err: string }> {
  return run(await ensureHelm(), ["template", "platform-operator", CHART, ...args]);
}

const MONITORING_APIS = [
  "--api-versions=monitoring.coreos.com/v1/ServiceMonitor",
  "--api-versions=monitoring.coreos.com/v1/PrometheusRule",
];

Deno.test("helm lint passes on the chart", async () => {
  const lint = await run(await ensureHelm(), ["lint", "--strict", CHART]);
  assert.ok(lint.ok, lint.out + lint.err);
  assert.match(lint.out, /1 chart\(s\) linted, 0 chart\(s\) failed/);
});

Deno.test("helm template with the default values gives exactly kubectl kustomize deploy/", async () => {
  const helm = await template("--include-crds");
  assert.ok(helm.ok, helm.err);
  const kustomize = await run((await binaryPaths()).kubectl, ["kustomize", DEPLOY]);
  assert.ok(kustomize.ok, kustomize.err);
  const fromHelm = objects(helm.out);
  assert.equal(fromHelm.length, 32);
  assert.deepEqual(fromHelm, objects(kustomize.out));
});

Deno.test("each value lands in its place; monitoring adds deploy/monitoring's objects", async () => {
  const set = await template(
    "--set=replicas=3",
    "--set=image.repository=registry.example/op",
    "--set=image.tag=1.2.3",
    "--set=resources.limits.memory=1Gi",
    "--set=meshRootNamespace=mesh-root",
    "--set=concurrency=8",
    "--set=monitoring.enabled=true",
    ...MONITORING_APIS,
  );
  assert.ok(set.ok, set.err);
  const all = objects(set.out);
  const d = all.find((o) => o.kind === "Deployment") as unknown as {
    spec: {
      replicas: number;
      template: {
        spec: {
          containers: {
            image: string;
            resources: { limits: { memory: string } };
            env: { name: string; value: string }[];
          }[];
        };
      };
    };
  };
  const c = d.spec.template.spec.containers[0];
  assert.equal(d.spec.replicas, 3);
  assert.equal(c.image, "registry.example/op:1.2.3");
  assert.equal(c.resources.limits.memory, "1Gi");
  assert.equal(
    c.env.find((e) => e.name === "PLATFORM_OPERATOR_MESH_ROOT_NAMESPACE")?.value,
    "mesh-root",
  );
  assert.equal(CONCURRENCY_ENV, envName("concurrency"));
  assert.equal(c.env.find((e) => e.name === CONCURRENCY_ENV)?.value, "8");
  const monitoring = all.filter((o) =>
    ["ServiceMonitor", "PrometheusRule"].includes(o.kind) ||
    o.metadata.name === "platform-operator-dashboard"
  );
  // Template delimiters in the rules and the dashboard come through as written.
  assert.deepEqual(
    monitoring,
    objects(monitoringObjects().map((o) => JSON.stringify(o)).join("\n---\n")),
  );
});

Deno.test("bad values and a missing monitoring CRD are refused, naming what to fix", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const malformed = join(dir, "malformed.yaml");
    await Deno.writeTextFile(malformed, "replicas: [3\n");
    const r1 = await template("-f", malformed);
    assert.equal(r1.ok, false);
    assert.match(r1.err, /malformed\.yaml/);
    assert.match(r1.err, /yaml|YAML/);

    const wrongType = join(dir, "wrong.yaml");
    await Deno.writeTextFile(wrongType, "replicas: two\nmonitoring: { enable: true }\n");
    const r2 = await template("-f", wrongType);
    assert.equal(r2.ok, false);
    assert.match(r2.err, /replicas/);
    assert.match(r2.err, /enable/);

    // --concurrency's range: 1 to 64.
    for (const bad of ["0", "65"]) {
      const r = await template(`--set=concurrency=${bad}`);
      assert.equal(r.ok, false, bad);
      assert.match(r.err, /concurrency/);
    }

    const r3 = await template("--set=monitoring.enabled=true");
    assert.equal(r3.ok, false);
    assert.match(
      r3.err,
      /monitoring\.enabled needs prometheus-operator's CRDs \(servicemonitors\.monitoring\.coreos\.com, prometheusrules\.monitoring\.coreos\.com\): install prometheus-operator first/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("istiodService gives exactly deploy/ with the deploy/istiod component, in the Service's namespace", async () => {
  await withIstiodComponent(async (dir) => {
    const helm = await template("--include-crds", "--set=istiodService=istio-system/istiod");
    assert.ok(helm.ok, helm.err);
    const kustomize = await run((await binaryPaths()).kubectl, ["kustomize", dir]);
    assert.ok(kustomize.ok, kustomize.err);
    const fromHelm = objects(helm.out);
    assert.equal(fromHelm.length, 34);
    assert.deepEqual(fromHelm, objects(kustomize.out));
    // Another Service: the Role goes to its namespace, the variable names it.
    const other = objects((await template("--set=istiodService=mesh/istiod-canary")).out);
    const role = other.find((o) =>
      o.kind === "Role" && o.metadata.name === "platform-operator-istiod"
    );
    assert.equal(role?.metadata.namespace, "mesh");
    assert.match(
      JSON.stringify(other),
      /"name":"PLATFORM_OPERATOR_ISTIOD_SERVICE","value":"mesh\/istiod-canary"/,
    );
    // Not a namespace/name: refused, naming the value.
    const bad = await template("--set=istiodService=istiod");
    assert.equal(bad.ok, false);
    assert.match(bad.err, /istiodService/);
  });
});

Deno.test("globalEngine.redisSecret gives exactly deploy/ with the deploy/global-engine component; half a configuration is refused", async () => {
  await withComponent("global-engine", async (dir) => {
    const helm = await template(
      "--include-crds",
      "--set=globalEngine.redisSecret=platform-ratelimit/redis",
    );
    assert.ok(helm.ok, helm.err);
    const kustomize = await run((await binaryPaths()).kubectl, ["kustomize", dir]);
    assert.ok(kustomize.ok, kustomize.err);
    const fromHelm = objects(helm.out);
    assert.equal(fromHelm.length, 37);
    assert.deepEqual(fromHelm, objects(kustomize.out));
  });
  // Another Secret and an image: both variables.
  const other = await template(
    "--set=globalEngine.redisSecret=platform-ratelimit/redis-tls",
    "--set=globalEngine.image=registry.example/ratelimit:1",
  );
  assert.ok(other.ok, other.err);
  assert.match(
    JSON.stringify(objects(other.out)),
    /"name":"PLATFORM_OPERATOR_GLOBAL_REDIS_SECRET","value":"platform-ratelimit\/redis-tls"},\{"name":"PLATFORM_OPERATOR_GLOBAL_ENGINE_IMAGE","value":"registry.example\/ratelimit:1"}/,
  );
  // The engine's size: a variable only where it differs from the operator's defaults.
  const sized = await template(
    "--set=globalEngine.redisSecret=platform-ratelimit/redis",
    "--set=globalEngine.replicas=3",
    "--set=globalEngine.resources.requests.memory=128Mi",
  );
  assert.ok(sized.ok, sized.err);
  const env = JSON.stringify(objects(sized.out));
  assert.match(env, /"name":"PLATFORM_OPERATOR_GLOBAL_ENGINE_REPLICAS","value":"3"/);
  assert.match(
    env,
    /"name":"PLATFORM_OPERATOR_GLOBAL_ENGINE_REQUESTS","value":"cpu=100m,memory=128Mi"/,
  );
  assert.doesNotMatch(env, /PLATFORM_OPERATOR_GLOBAL_ENGINE_LIMITS/);
  for (
    const bad of [
      "--set=globalEngine.replicas=0",
      "--set=globalEngine.replicas=51",
      "--set=globalEngine.resources.requests.gpu=1",
      "--set=globalEngine.resources.limits.cpu=lots",
    ]
  ) {
    const refused = await template("--set=globalEngine.redisSecret=platform-ratelimit/redis", bad);
    assert.equal(refused.ok, false, bad);
    assert.match(refused.err, /globalEngine/, bad);
  }
  // An image without a Secret, a Secret elsewhere or without a namespace: refused, naming the field.
  for (
    const bad of [
      ["--set=globalEngine.image=registry.example/ratelimit:1"],
      ["--set=globalEngine.redisSecret=default/redis"],
      ["--set=globalEngine.redisSecret=redis"],
    ]
  ) {
    const refused = await template(...bad);
    assert.equal(refused.ok, false, bad.join(" "));
    assert.match(refused.err, /globalEngine/, bad.join(" "));
  }
});

Deno.test("modules: only modules.ratelimit enabled gives exactly deploy/variants/ratelimit-only", async () => {
  const helm = await template(
    "--include-crds",
    "--set=modules.scaler.enabled=false",
    "--set=modules.serverless.enabled=false",
  );
  assert.ok(helm.ok, helm.err);
  const variant = join(DEPLOY, "variants", "ratelimit-only");
  const kustomize = await run((await binaryPaths()).kubectl, ["kustomize", variant]);
  assert.ok(kustomize.ok, kustomize.err);
  const fromHelm = objects(helm.out);
  assert.equal(fromHelm.length, 24);
  assert.deepEqual(fromHelm, objects(kustomize.out));
  // Another choice: each enabled module brings its roles, the flag names them, the other is refused.
  const two = objects((await template("--set=modules.serverless.enabled=false")).out);
  const names = two.map((o) => `${o.kind}/${o.metadata.name}`);
  for (
    const n of ["ClusterRole/platform-operator-scaler", "ClusterRole/platform-operator-ratelimit"]
  ) {
    assert.ok(names.includes(n), n);
  }
  assert.ok(names.includes("ValidatingAdmissionPolicy/platform-operator-serverless-not-served"));
  assert.ok(!names.some((n) => n.includes("platform-operator-serverless-grants")));
  assert.match(JSON.stringify(two), /"--controllers=scaler,ratelimit"/);
});

Deno.test("modules: a values file cannot enable a module without its roles, nor run no controller", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const cases: [string, string, RegExp][] = [
      // A module's roles have no key of their own: they come and go with `enabled`.
      ["roles-off", "modules:\n  scaler:\n    enabled: true\n    roles: false\n", /roles/],
      [
        "rbac-off",
        "modules:\n  ratelimit:\n    enabled: true\n    rbac: { create: false }\n",
        /rbac/,
      ],
      ["string", 'modules:\n  serverless:\n    enabled: "yes"\n', /modules\/serverless\/enabled/],
      [
        "none",
        "modules:\n  serverless: { enabled: false }\n  scaler: { enabled: false }\n  ratelimit: { enabled: false }\n",
        /modules/,
      ],
      [
        "engine-without-ratelimit",
        'modules:\n  ratelimit: { enabled: false }\nglobalEngine:\n  redisSecret: platform-ratelimit/redis\n  image: ""\n',
        /modules\/ratelimit\/enabled/,
      ],
      ["unknown-module", "modules:\n  keda: { enabled: true }\n", /keda/],
    ];
    for (const [name, text, names] of cases) {
      const file = join(dir, `${name}.yaml`);
      await Deno.writeTextFile(file, text);
      const r = await template("-f", file);
      assert.equal(r.ok, false, name);
      assert.match(r.err, /values don't meet the specifications of the schema/, name);
      assert.match(r.err, names, `${name}: ${r.err}`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("modules: for every choice of modules, --controllers, the roles and the refusals agree", async () => {
  for (let mask = 1; mask < 1 << CONTROLLER_NAMES.length; mask++) {
    const on = CONTROLLER_NAMES.filter((_, i) => mask & (1 << i));
    const sets = CONTROLLER_NAMES.map((c) => `--set=modules.${c}.enabled=${on.includes(c)}`);
    const r = await template(...sets);
    assert.ok(r.ok, `${on}: ${r.err}`);
    const all = objects(r.out);
    const d = all.find((o) => o.kind === "Deployment") as unknown as {
      spec: { template: { spec: { containers: { args: string[] }[] } } };
    };
    const parsed = parseRunFlags(d.spec.template.spec.containers[0].args, () => undefined);
    assert.equal(parsed.kind, "options", on.join());
    if (parsed.kind === "options") assert.deepEqual(parsed.options.controllers, on);
    const names = (kind: string) => all.filter((o) => o.kind === kind).map((o) => o.metadata.name);
    for (const c of CONTROLLER_NAMES) {
      assert.equal(names("ClusterRole").includes(partRoleName(c)), on.includes(c), `${on}: ${c}`);
      assert.equal(
        names("ValidatingAdmissionPolicy").includes(notServedName(c)),
        !on.includes(c),
        `${on}: ${c} refused`,
      );
    }
    // Module grants only with their module.
    for (const m of ["serverless", "scaler"] as const) {
      assert.equal(names("ClusterRole").includes(`platform-operator-${m}-grants`), on.includes(m));
    }
  }
});

Deno.test("values Kubernetes or the operator would refuse, or that would be dropped, are refused by the schema, naming the field", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // A tag that would add fields to the operator's container if pasted unquoted.
    const inject = join(dir, "inject.yaml");
    await Deno.writeTextFile(
      inject,
      'image:\n  repository: ghcr.io/platform-project/platform-operator\n  tag: |-\n    0.1.0"\n              command: ["/bin/sh"]\n',
    );
    const cases: [string[], RegExp][] = [
      [["-f", inject], /\/image\/tag/],
      [['--set=image.tag=1"x'], /\/image\/tag/],
      [["--set=image.repository=ghcr.io/foo bar"], /\/image\/repository/],
      [["--set=image.repository=GHCR.io/Platform/Operator"], /\/image\/repository/],
      [["--set=image.repository=ghcr.io/x/y:1.0"], /\/image\/repository/],
      [["--set=replicas=3000000000"], /\/replicas/],
      [["--set=resources.requests.memory=-1Gi"], /\/resources\/requests\/memory/],
      [["--set=resources.requests.cpu=abc"], /\/resources\/requests\/cpu/],
      [["--set=istiodService=" + "a".repeat(70) + "/istiod"], /\/istiodService/],
      // Engine settings without a Secret would be dropped without a word.
      [["--set=globalEngine.replicas=7"], /\/globalEngine\/replicas/],
      [["--set=globalEngine.resources.limits.cpu=2"], /\/globalEngine\/resources/],
      ...[
        "--set=globalEngine.redisSecret=platform-ratelimit/a..b",
        "--set=globalEngine.image=Foo Bar",
        "--set-string=globalEngine.resources.requests.cpu=-1",
        // Emptied, it would render as no setting, which the operator reads as its defaults.
        "--set=globalEngine.resources.requests=null",
      ].map((bad): [string[], RegExp] => [
        ["--set=globalEngine.redisSecret=platform-ratelimit/redis", bad],
        /\/globalEngine\//,
      ]),
    ];
    for (const [args, field] of cases) {
      const r = await template(...args);
      assert.equal(r.ok, false, `${args.join(" ")}: rendered`);
      assert.match(r.err, /values don't meet the specifications of the schema/, args.join(" "));
      assert.match(r.err, field, args.join(" "));
    }
    // Valid ones stay valid: a registry port, a digest, a dotted Secret name, numbers for cpu.
    const ok = await template(
      "--set=image.repository=registry.example:5000/team/operator",
      "--set=image.tag=v1.2.3-rc.1",
      "--set=resources.limits.cpu=2",
      "--set=globalEngine.redisSecret=platform-ratelimit/redis.v2",
      `--set=globalEngine.image=ghcr.io/x/engine:1.2@sha256:${"0123456789abcdef".repeat(4)}`,
    );
    assert.ok(ok.ok, ok.err);
    assert.match(ok.out, /image: "registry\.example:5000\/team\/operator:v1\.2\.3-rc\.1"/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("one replica renders no PodDisruptionBudget: it would hold every drain of its node", async () => {
  const kinds = async (...args: string[]) => {
    const r = await template(...args);
    assert.ok(r.ok, r.err);
    return objects(r.out).map((o) => o.kind);
  };
  assert.ok(!(await kinds("--set=replicas=1")).includes("PodDisruptionBudget"));
  assert.ok((await kinds("--set=replicas=2")).includes("PodDisruptionBudget"));
});
