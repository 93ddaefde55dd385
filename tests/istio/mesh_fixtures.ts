/** What the tests against a real istiod share. */
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
  startProxyStandin,
} from "../../tools/istio-check/proxy-standin/mod.ts";
import { OperatorProcess } from "../../tools/operator/process.ts";

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

/**
 * The operator (ratelimit controller only) asking istiod at `istiodUrl` with the token in
 * `tokenFile`; its log goes to `dir`/logs.
 */
export function operatorAskingIstiod(
  c: ClusterHandle,
  dir: string,
  identity: string,
  istiodUrl: string,
  tokenFile: string,
): Promise<OperatorProcess> {
  return OperatorProcess.start({
    kubeconfig: c.operatorKubeconfig,
    identity,
    logDir: join(dir, "logs"),
    extraArgs: [
      "--controllers=ratelimit",
      `--istiod-url=${istiodUrl}`,
      `--istiod-token-file=${tokenFile}`,
    ],
  });
}

/**
 * Waits until the status of RateLimit `namespace/name` satisfies `test` (default 90 s,
 * ACCEPTED_WAIT_MS); on a timeout the error says what the status and the operator's istiod log
 * lines last said.
 */
export async function untilStatus(
  c: ClusterHandle,
  operator: OperatorProcess,
  [namespace, name]: [string, string],
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
   * Starts the operator asking istiod at `istiodUrl` ({@link operatorAskingIstiod}); it is stopped
   * when the test ends, if the test did not stop it.
   */
  operator(identity: string, istiodUrl: string, tokenFile: string): Promise<OperatorProcess>;
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
          operator: async (identity, url, tokenFile) => {
            const op = await operatorAskingIstiod(c, dir, identity, url, tokenFile);
            defer(() => op.stop());
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
