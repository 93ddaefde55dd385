import assert from "node:assert/strict";
import { CONTROLLER_NAMES } from "../../src/controllers/registry.ts";
import { DEFAULT_CONCURRENCY, MAX_CONCURRENCY } from "../../src/runtime/mod.ts";
import {
  DEFAULT_IMAGES,
  envName,
  flagEnvNames,
  parseRunFlags,
  RUN_FLAGS,
  runHelp,
  type RunOptions,
} from "../../src/cli/run_flags.ts";

const noEnv = () => undefined;

function options(args: string[], env: Record<string, string> = {}): RunOptions {
  const parsed = parseRunFlags(args, (n) => env[n]);
  if (parsed.kind !== "options") throw new Error(`expected options, got ${JSON.stringify(parsed)}`);
  return parsed.options;
}

Deno.test("defaults: leader election on platform-system/platform-operator, :8080/:8081, info json, all controllers", () => {
  const o = options([]);
  assert.equal(o.leaderElect, true);
  assert.equal(o.leaseNamespace, "platform-system");
  assert.equal(o.leaseName, "platform-operator");
  assert.equal(o.metricsAddr, ":8080");
  assert.equal(o.probeAddr, ":8081");
  assert.equal(o.logLevel, "info");
  assert.equal(o.logFormat, "json");
  assert.deepEqual(o.controllers, [...CONTROLLER_NAMES]);
  assert.deepEqual(o.images, DEFAULT_IMAGES);
  assert.equal(o.kubeconfig, undefined);
  assert.equal(o.identity, undefined);
});

Deno.test("flags win over variables, PLATFORM_OPERATOR_* over the conventional ones, variables over defaults", () => {
  const env = {
    KUBECONFIG: "/k/conventional",
    PLATFORM_OPERATOR_LEASE_NAME: "from-env",
    POD_NAME: "pod-1",
    IMAGE_KEDA_OPERATOR: "reg/keda:env",
    PLATFORM_OPERATOR_LOG_LEVEL: "debug",
  };
  const o = options(["--lease-name=from-flag", "--keda-webhook-image", "reg/webhook:flag"], env);
  assert.equal(o.kubeconfig, "/k/conventional");
  assert.equal(o.leaseName, "from-flag");
  assert.equal(o.identity, "pod-1");
  assert.equal(o.images.kedaOperator, "reg/keda:env");
  assert.equal(o.images.kedaAdmissionWebhooks, "reg/webhook:flag");
  assert.equal(o.images.kedaMetricsServer, DEFAULT_IMAGES.kedaMetricsServer);
  assert.equal(o.logLevel, "debug");
  assert.equal(
    options([], { ...env, PLATFORM_OPERATOR_KUBECONFIG: "/k/ours" }).kubeconfig,
    "/k/ours",
  );
  assert.equal(options([], { ...env, PLATFORM_OPERATOR_IDENTITY: "me" }).identity, "me");
});

Deno.test("booleans: --leader-elect, --leader-elect=false, --no-leader-elect, and the variable", () => {
  assert.equal(options(["--leader-elect"]).leaderElect, true);
  assert.equal(options(["--leader-elect=false"]).leaderElect, false);
  assert.equal(options(["--no-leader-elect"]).leaderElect, false);
  assert.equal(options([], { PLATFORM_OPERATOR_LEADER_ELECT: "false" }).leaderElect, false);
});

Deno.test("controllers are a checked, ordered subset", () => {
  assert.deepEqual(options(["--controllers=ratelimit,serverless"]).controllers, [
    "serverless",
    "ratelimit",
  ]);
  const bad = parseRunFlags(["--controllers=serverless,keda"], noEnv);
  assert.equal(bad.kind, "error");
  assert.match(
    bad.kind === "error" ? bad.message : "",
    /use a comma-separated list of serverless, scaler, ratelimit/,
  );
});

Deno.test("bad values and unknown flags are errors that say what to use", () => {
  const cases: [string[], RegExp][] = [
    [["--log-level=loud"], /invalid log level "loud": use one of debug, info, warn, error/],
    [["--log-format=xml"], /invalid log format/],
    [["--metrics-addr=8080"], /invalid --metrics-addr "8080": use \[host\]:port/],
    [["--leader-elect=maybe"], /invalid --leader-elect "maybe": use true or false/],
    [["--nope"], /^unknown flag --nope$/],
    [["--log-levl=info"], /^unknown flag --log-levl; did you mean --log-level\?$/],
    [["stray"], /^unexpected argument "stray": this command takes none$/],
    [["--probe-addr"], /^--probe-addr needs a value$/],
  ];
  for (const [args, message] of cases) {
    const parsed = parseRunFlags(args, noEnv);
    assert.equal(parsed.kind, "error", args.join(" "));
    assert.match(parsed.kind === "error" ? parsed.message : "", message);
  }
  assert.equal(options(["--metrics-addr=0", "--probe-addr=[::1]:9000"]).metricsAddr, "0");
  assert.equal(parseRunFlags(["--help"], noEnv).kind, "help");
});

Deno.test("--help lists every flag with its variables and default", () => {
  const help = runHelp();
  for (const f of RUN_FLAGS) {
    assert.match(help, new RegExp(`--${f.name}\\b`));
    for (const env of f.env) assert.ok(help.includes(env), `${env} in --help`);
    assert.ok(f.env[0] === envName(f.name));
    if (f.default) assert.ok(help.includes(`(default ${f.default})`), `default of ${f.name}`);
  }
  for (
    const v of [
      "KUBECONFIG",
      "POD_NAME",
      "IMAGE_SERVERLESS_CONTROLLER",
      "IMAGE_KEDA_METRICS_APISERVER",
    ]
  ) {
    assert.ok(flagEnvNames().includes(v), v);
  }
});

Deno.test("--istiod-service: namespace/name, several for revisions, each once; not with --istiod-url", () => {
  assert.deepEqual(options([]).istiodServices, []);
  assert.deepEqual(options(["--istiod-service=istio-system/istiod"]).istiodServices, [
    { namespace: "istio-system", name: "istiod" },
  ]);
  assert.deepEqual(
    options([], {
      [envName("istiod-service")]:
        "istio-system/istiod, istio-system/istiod-canary,istio-system/istiod",
    }).istiodServices,
    [
      { namespace: "istio-system", name: "istiod" },
      { namespace: "istio-system", name: "istiod-canary" },
    ],
  );
  for (
    const bad of ["istiod", "istio-system/", "a/b/c", "Istio/istiod", "istio-system/istiod:15014"]
  ) {
    const parsed = parseRunFlags([`--istiod-service=${bad}`], noEnv);
    assert.match(
      parsed.kind === "error" ? parsed.message : "",
      /^invalid --istiod-service ".*": use namespace\/name of istiod's Service, e.g. istio-system\/istiod$/,
      bad,
    );
  }
  const both = parseRunFlags(
    ["--istiod-service=istio-system/istiod", "--istiod-url=http://istiod.istio-system.svc:15014"],
    noEnv,
  );
  assert.match(
    both.kind === "error" ? both.message : "",
    /^--istiod-url and --istiod-service are exclusive/,
  );
});

Deno.test("--concurrency: the runtime's default, 1 to 64 from the flag or its variable, else refused", () => {
  assert.equal(options([]).concurrency, DEFAULT_CONCURRENCY);
  assert.equal(DEFAULT_CONCURRENCY, 4);
  assert.equal(options(["--concurrency=1"]).concurrency, 1);
  assert.equal(options([], { PLATFORM_OPERATOR_CONCURRENCY: "16" }).concurrency, 16);
  assert.equal(options([`--concurrency=${MAX_CONCURRENCY}`]).concurrency, 64);
  for (const bad of ["0", "65", "two", "-1", "1.5", ""]) {
    const parsed = parseRunFlags([`--concurrency=${bad}`], noEnv);
    assert.equal(parsed.kind, "error", bad);
    assert.match(
      parsed.kind === "error" ? parsed.message : "",
      new RegExp(`invalid --concurrency "${bad}": use a number from 1 to 64`),
    );
  }
});

Deno.test("the engine's replicas, requests and limits: defaults, canonical quantities, refusals", () => {
  const d = options([]);
  assert.equal(d.globalEngineReplicas, 2);
  assert.deepEqual(d.globalEngineResources, {
    requests: { cpu: "100m", memory: "64Mi" },
    limits: { cpu: "1", memory: "256Mi" },
  });
  const o = options(["--global-engine-replicas=3", "--global-engine-limits=memory=0.5Gi"], {
    PLATFORM_OPERATOR_GLOBAL_ENGINE_REQUESTS: "cpu=0.25,memory=128Mi",
  });
  assert.equal(o.globalEngineReplicas, 3);
  assert.deepEqual(o.globalEngineResources, {
    requests: { cpu: "250m", memory: "128Mi" },
    limits: { memory: "512Mi" },
  });
  // Empty: none at all (a platform that sets them by LimitRange).
  assert.deepEqual(
    options(["--global-engine-requests=", "--global-engine-limits="]).globalEngineResources,
    { requests: {}, limits: {} },
  );
  const refused: [string[], RegExp][] = [
    [
      ["--global-engine-replicas=0"],
      /invalid --global-engine-replicas "0": use a number from 1 to 50/,
    ],
    [["--global-engine-replicas=two"], /invalid --global-engine-replicas "two"/],
    [
      ["--global-engine-requests=cpu=lots"],
      /invalid --global-engine-requests "cpu=lots": use cpu=QUANTITY/,
    ],
    [["--global-engine-limits=gpu=1"], /invalid --global-engine-limits "gpu=1"/],
    [["--global-engine-limits=cpu=1,cpu=2"], /each at most once/],
    [
      ["--global-engine-requests=memory=1Gi"],
      /--global-engine-requests memory=1Gi is over --global-engine-limits memory=256Mi/,
    ],
  ];
  for (const [args, message] of refused) {
    const parsed = parseRunFlags(args, noEnv);
    assert.equal(parsed.kind, "error", args.join(" "));
    assert.match(parsed.kind === "error" ? parsed.message : "", message);
  }
});

Deno.test("TLS to the engines: the xDS server's files, the engines' Secret and server name, only together and with the engine", () => {
  const redis = "--global-redis-secret=platform-ratelimit/redis";
  const none = options([redis]);
  assert.equal(none.globalEngineXdsTls, undefined);
  assert.equal(none.globalEngineXdsTlsSecret, undefined);
  assert.equal(none.globalEngineXdsTlsServerName, undefined);
  const mtls = options([
    redis,
    "--global-engine-xds-tls-cert-file=/etc/platform-operator/engine-xds-tls/tls.crt",
    "--global-engine-xds-client-ca-file=/etc/platform-operator/engine-xds-tls/ca.crt",
    "--global-engine-xds-tls-secret=platform-ratelimit/engine-xds-tls",
  ], {
    PLATFORM_OPERATOR_GLOBAL_ENGINE_XDS_TLS_KEY_FILE:
      "/etc/platform-operator/engine-xds-tls/tls.key",
    PLATFORM_OPERATOR_GLOBAL_ENGINE_XDS_TLS_SERVER_NAME: "xds.example.internal",
  });
  assert.deepEqual(mtls.globalEngineXdsTls, {
    certFile: "/etc/platform-operator/engine-xds-tls/tls.crt",
    keyFile: "/etc/platform-operator/engine-xds-tls/tls.key",
    clientCaFile: "/etc/platform-operator/engine-xds-tls/ca.crt",
  });
  assert.deepEqual(mtls.globalEngineXdsTlsSecret, {
    namespace: "platform-ratelimit",
    name: "engine-xds-tls",
  });
  assert.equal(mtls.globalEngineXdsTlsServerName, "xds.example.internal");
  const files = [
    "--global-engine-xds-tls-cert-file=/c",
    "--global-engine-xds-tls-key-file=/k",
  ];
  const secretFlag = "--global-engine-xds-tls-secret=platform-ratelimit/engine-xds-tls";
  const refused: [string[], RegExp][] = [
    [
      [...files, secretFlag],
      /--global-engine-xds-tls-\* configure TLS between the global rate limit engine and the operator: they need --global-redis-secret/,
    ],
    [
      [redis, "--global-engine-xds-tls-cert-file=/c", secretFlag],
      /^--global-engine-xds-tls-cert-file needs --global-engine-xds-tls-cert-file and --global-engine-xds-tls-key-file: the operator's xDS server would otherwise serve the engines in cleartext$/,
    ],
    [
      [redis, "--global-engine-xds-tls-key-file=/k", secretFlag],
      /^--global-engine-xds-tls-key-file needs/,
    ],
    [
      [redis, "--global-engine-xds-client-ca-file=/ca", secretFlag],
      /^--global-engine-xds-client-ca-file needs/,
    ],
    [
      [redis, secretFlag],
      /^--global-engine-xds-tls-secret needs --global-engine-xds-tls-cert-file/,
    ],
    [
      [redis, "--global-engine-xds-tls-server-name=x.example"],
      /^--global-engine-xds-tls-server-name needs/,
    ],
    [
      [redis, ...files],
      /^--global-engine-xds-tls-cert-file needs --global-engine-xds-tls-secret: the Secret whose ca\.crt the engines check the operator's certificate with$/,
    ],
    [
      [redis, ...files, "--global-engine-xds-tls-secret=default/engine-xds-tls"],
      /invalid --global-engine-xds-tls-secret "default\/engine-xds-tls": the Secret must be in namespace platform-ratelimit/,
    ],
    [
      [redis, ...files, "--global-engine-xds-tls-secret=engine-xds-tls"],
      /invalid --global-engine-xds-tls-secret "engine-xds-tls": use namespace\/name of the engines' xDS TLS Secret, e\.g\. platform-ratelimit\/engine-xds-tls/,
    ],
    [
      [redis, ...files, secretFlag, "--global-engine-xds-tls-server-name=a b"],
      /invalid --global-engine-xds-tls-server-name "a b": use a DNS name or an IP address/,
    ],
  ];
  for (const [args, message] of refused) {
    const parsed = parseRunFlags(args, noEnv);
    assert.equal(parsed.kind, "error", args.join(" "));
    assert.match(parsed.kind === "error" ? parsed.message : "", message, args.join(" "));
  }
  // Each flag has its variable, for the Deployment and the compiled binary's --allow-env.
  for (
    const name of [
      "global-engine-xds-tls-cert-file",
      "global-engine-xds-tls-key-file",
      "global-engine-xds-client-ca-file",
      "global-engine-xds-tls-secret",
      "global-engine-xds-tls-server-name",
    ]
  ) {
    assert.deepEqual(RUN_FLAGS.find((f) => f.name === name)?.env, [envName(name)]);
  }
});
