/** What the tests against a real istiod share. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "yaml";
import { renderFilters } from "../../src/cli/ratelimit/run.ts";
import type { JsonObject } from "../../src/api/json.ts";
import { type ClusterHandle, type Istiod, up } from "../../tools/cluster/mod.ts";
import { GATEWAY } from "../../tools/cluster/mesh.ts";
import { CACHE_DIR, REPO_ROOT } from "../../tools/cluster/paths.ts";
import { eventually, ok } from "../../tools/cluster/test_helpers.ts";
import {
  type proxyOfPod,
  type ProxySpec,
  type ProxyStandin,
  type ProxyView,
  startProxyStandin,
  type XdsType,
} from "../../tools/istio-check/proxy-standin/mod.ts";
import { OperatorProcess } from "../../tools/operator/process.ts";
import { DEFAULT_RBAC_NAMES } from "../../src/kube/rbac.ts";

/** A second EnvoyFilter on the demo workload's inbound routes, merging `value` into each route. */
export function otherFilter(name: string, value: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: "networking.istio.io/v1alpha3",
    kind: "EnvoyFilter",
    metadata: { name, namespace: "demo" },
    spec: {
      workloadSelector: { labels: { app: "httpbin" } },
      configPatches: [{
        applyTo: "HTTP_ROUTE",
        match: {
          context: "SIDECAR_INBOUND",
          routeConfiguration: { vhost: { route: { action: "ROUTE" } } },
        },
        patch: { operation: "MERGE", value },
      }],
    },
  });
}

/** A Pod as `kubectl get pod -o json` gives it: what the stand-in and these tests read. */
export type PodJson = Parameters<typeof proxyOfPod>[0] & {
  metadata: { annotations?: Record<string, string>; deletionTimestamp?: string };
};

/**
 * The annotation Istio's injector leaves on a Pod it injected. The Pods run on kwok, without a
 * proxy container: with this annotation the operator counts their proxy, which the stand-in plays.
 */
export const INJECTED = { "sidecar.istio.io/status": '{"containers":["istio-proxy"]}' };

/** The live (not terminating) Pods of `namespace` labelled `app=<app>`. */
export async function livePods(c: ClusterHandle, namespace: string, app: string) {
  const items = JSON.parse(
    await ok(c, ["get", "pods", "-n", namespace, "-l", `app=${app}`, "-o", "json"]),
  ).items as PodJson[];
  return items.filter((p) => !p.metadata.deletionTimestamp);
}

/**
 * samples/demo-workload.yaml with `replicas` httpbin Pods, each annotated as injected; resolves
 * with those Pods once exactly that many run, each with an IP.
 */
export async function injectedDemo(c: ClusterHandle, replicas = 1): Promise<PodJson[]> {
  await ok(c, ["apply", "-f", join(REPO_ROOT, "samples", "demo-workload.yaml")]);
  const spec = { replicas, template: { metadata: { annotations: INJECTED } } };
  await ok(c, [
    "patch",
    "deploy/httpbin",
    "-n",
    "demo",
    "--type=merge",
    "-p",
    JSON.stringify({ spec }),
  ]);
  await ok(c, ["rollout", "status", "-n", "demo", "deploy/httpbin", "--timeout=90s"]);
  return await eventually(`${replicas} injected httpbin Pods with an IP`, async () => {
    const live = await livePods(c, "demo", "httpbin");
    return live.length === replicas &&
        live.every((p) => p.metadata.annotations?.["sidecar.istio.io/status"] && p.status.podIP)
      ? live.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
      : undefined;
  });
}

/** The mesh's ingress gateway Pod (tools/cluster makes it, a router: `proxy router`). */
export async function gatewayPod(c: ClusterHandle): Promise<PodJson> {
  const [pod] = await eventually("the ingress gateway Pod with an IP", async () => {
    const live = await livePods(c, GATEWAY.namespace, GATEWAY.name);
    return live.length === 1 && live[0].status.podIP ? live : undefined;
  });
  return pod;
}

/** One condition of a status. */
export interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

/** The part of a RateLimit's status these tests read. */
export interface RateLimitStatus {
  proxies?: Record<string, number>;
  conditions?: Condition[];
  observedGeneration?: number;
  /** The generation whose limits the EnvoyFilter in place enforces. */
  enforcedGeneration?: number;
}

/** The condition `type` (`Ready`, `Enforced`, `Accepted`) of a status. */
export const conditionOf = (s: RateLimitStatus, type: string): Condition | undefined =>
  s.conditions?.find((x) => x.type === type);

/** The Accepted condition of a status. */
export const acceptedOf = (s: RateLimitStatus): Condition | undefined => conditionOf(s, "Accepted");

/** Reads the status of RateLimit `namespace/name`. */
export async function rateLimitStatus(
  c: ClusterHandle,
  namespace: string,
  name: string,
): Promise<RateLimitStatus> {
  return JSON.parse(await ok(c, ["get", "ratelimit", name, "-n", namespace, "-o", "json"]))
    .status ?? {};
}

/** The RateLimit of samples/ratelimit-workload.yaml, on the demo workload. */
export const WORKLOAD_RATELIMIT: readonly [string, string] = ["demo", "httpbin"];

/** How {@link MeshRun.operator} starts the operator; every field has a default. */
export interface MeshOperatorOptions {
  /** `--istiod-url` (default: the mesh's istiod, its debug port). */
  url?: string;
  /** `--istiod-service` (namespace/name) instead of `--istiod-url`. */
  service?: string;
  /** The kubeconfig the operator uses (default: the cluster's operator user). */
  kubeconfig?: string;
  /**
   * `--istiod-token-file`, written by the caller; by default `<dir>/istiod-token`, written
   * before the start with a token of the operator's own ServiceAccount (audience istio-ca).
   */
  tokenFile?: string;
}

/** The operator (ratelimit controller only) asking the mesh's istiod, and its RateLimits' status. */
export interface MeshOperator {
  process: OperatorProcess;
  /** The token file it was given (`--istiod-token-file`). */
  tokenFile: string;
  /**
   * Waits until the status of `rateLimit` (default {@link WORKLOAD_RATELIMIT}) satisfies `test`
   * (default 90 s, ACCEPTED_WAIT_MS); on a timeout the error says what the status and the
   * operator's istiod log lines last said.
   */
  until(
    what: string,
    test: (s: RateLimitStatus) => boolean,
    rateLimit?: readonly [string, string],
  ): Promise<RateLimitStatus>;
}

/** Starts the operator for {@link MeshRun.operator}. */
async function startMeshOperator(
  c: ClusterHandle,
  istiod: Istiod,
  dir: string,
  identity: string,
  o: MeshOperatorOptions,
): Promise<MeshOperator> {
  let tokenFile = o.tokenFile;
  if (tokenFile === undefined) {
    tokenFile = join(dir, "istiod-token");
    const names = DEFAULT_RBAC_NAMES;
    await Deno.writeTextFile(tokenFile, await istiod.token(names.namespace, names.serviceAccount));
  }
  const operator = await OperatorProcess.start({
    kubeconfig: o.kubeconfig ?? c.operatorKubeconfig,
    identity,
    logDir: join(dir, "logs"),
    extraArgs: [
      "--controllers=ratelimit",
      o.service === undefined
        ? `--istiod-url=${o.url ?? istiod.debug}`
        : `--istiod-service=${o.service}`,
      `--istiod-token-file=${tokenFile}`,
    ],
  });
  return {
    process: operator,
    tokenFile,
    until: (what, test, rateLimit = WORKLOAD_RATELIMIT) =>
      untilStatus(c, operator, rateLimit, what, test),
  };
}

/** Waits until the status of RateLimit `namespace/name` satisfies `test` ({@link MeshOperator}). */
async function untilStatus(
  c: ClusterHandle,
  operator: OperatorProcess,
  [namespace, name]: readonly [string, string],
  what: string,
  test: (s: RateLimitStatus) => boolean,
): Promise<RateLimitStatus> {
  try {
    return await eventually(
      `${namespace}/${name}: ${what}`,
      async () => {
        const s = await rateLimitStatus(c, namespace, name);
        return test(s) ? s : undefined;
      },
      Number(Deno.env.get("ACCEPTED_WAIT_MS") ?? 90_000),
    );
  } catch (e) {
    const log = await Deno.readTextFile(operator.logPath).catch(() => "");
    const lines = log.split("\n").filter((l) => /istiod|error|warn/i.test(l)).slice(-20);
    throw new Error(
      `${(e as Error).message}; status: ${
        JSON.stringify(await rateLimitStatus(c, namespace, name))
      }\n${lines.join("\n")}`,
    );
  }
}

/** The four xDS types a proxy subscribes to. */
export const XDS_TYPES: readonly XdsType[] = ["CDS", "EDS", "LDS", "RDS"];

/** istiod's name of a proxy: `<pod>.<namespace>`. */
export const proxyKey = (p: ProxySpec): string => `${p.pod}.${p.namespace}`;

/** Asserts that a proxy rejected nothing istiod sent it, of any type. */
export function assertNoNacks(v: ProxyView, who = v.id): void {
  for (const k of XDS_TYPES) {
    assert.equal(v.xds[k].nacks, 0, `${who} ${k}: ${v.xds[k].lastError}`);
  }
}

/**
 * What proxy `p` of `standin` holds once it is connected, has acknowledged the last config of every
 * type, and `test` is true of it.
 */
export function holding(
  standin: ProxyStandin,
  p: ProxySpec,
  what: string,
  test: (v: ProxyView) => boolean,
): Promise<ProxyView> {
  return eventually(`${p.pod} holds ${what}`, async () => {
    const v = await standin.proxy(proxyKey(p));
    const all = XDS_TYPES.every((k) => v.xds[k].acked);
    return v.connected && all && test(v) ? v : undefined;
  });
}

/** A local control plane with a real istiod, in a directory of its own, for one test. */
export interface MeshRun {
  c: ClusterHandle;
  istiod: Istiod;
  /** The cluster's directory (logs and token files go here too). */
  dir: string;
  log: (msg: string) => void;
  /** Starts the proxy stand-in with `proxies`; it is stopped when the test ends. */
  standin(proxies: ProxySpec[]): Promise<ProxyStandin>;
  /**
   * Starts the operator (ratelimit controller only) asking the mesh's istiod
   * ({@link MeshOperatorOptions}); it is stopped when the test ends, if the test did not stop it.
   */
  operator(identity: string, options?: MeshOperatorOptions): Promise<MeshOperator>;
  /** Runs `fn` when the test ends, before the rest is stopped (last deferred first). */
  defer(fn: () => Promise<unknown>): void;
}

/**
 * A Deno test on a control plane with a real istiod (`up({ mesh: true })`) in
 * `.cache/cluster/test-<cluster>-<pid>`, the project's CRDs established; whatever the test started
 * through {@link MeshRun} is stopped at its end, then the cluster.
 */
export function meshTest(
  name: string,
  cluster: string,
  body: (m: MeshRun, t: Deno.TestContext) => Promise<void>,
): void {
  Deno.test({
    name,
    async fn(t) {
      const log = (msg: string) => console.error(`[cluster] ${msg}`);
      const dir = join(CACHE_DIR, `test-${cluster}-${Deno.pid}`);
      const c = await up({ dir, log, mesh: true });
      const cleanups: (() => Promise<unknown>)[] = [];
      try {
        const istiod = c.istiod;
        if (!istiod) throw new Error("up({ mesh: true }) gave no istiod");
        await ok(c, ["apply", "-k", join(REPO_ROOT, "crds")]);
        await ok(c, ["wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"]);
        const defer = (fn: () => Promise<unknown>) => void cleanups.push(fn);
        await body({
          c,
          istiod,
          dir,
          log,
          defer,
          standin: async (proxies) => {
            const s = await startProxyStandin(istiod.xds, proxies, log);
            defer(async () => {
              const stderr = await s.stop();
              if (stderr.trim()) console.error(`[proxy-standin] ${stderr.slice(-2000)}`);
            });
            return s;
          },
          operator: async (identity, options = {}) => {
            const op = await startMeshOperator(c, istiod, dir, identity, options);
            defer(() => op.process.stop());
            return op;
          },
        }, t);
      } finally {
        for (const fn of cleanups.reverse()) await fn().catch((e) => console.error(e));
        await c.down();
        // What the test wrote there (token files) goes too.
        await Deno.remove(dir, { recursive: true }).catch(() => {});
      }
    },
  });
}

/** The HTTP_ROUTE patch value of the operator's EnvoyFilter for `sample` (RateLimit YAML). */
export function renderedRoutePatch(sample: string): JsonObject {
  const rendered = renderFilters(parse(sample));
  if (!rendered.ok) throw new Error(rendered.error);
  const patches = (rendered.value[0] as unknown as {
    spec: { configPatches: { applyTo: string; patch: { value: JsonObject } }[] };
  }).spec.configPatches;
  const route = patches.find((p) => p.applyTo === "HTTP_ROUTE");
  if (!route) throw new Error("the filter patches no routes");
  return route.patch.value;
}
