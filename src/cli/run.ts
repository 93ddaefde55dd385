/**
 * `mod.ts run` (`deno task start`): the operator. Loads the kubeconfig or in-cluster config, starts
 * the Manager (it takes the Lease and lists) and checks that the cluster is usable (CRDs installed,
 * RBAC granted, API reachable: one log line saying what to do, retried with backoff), serves
 * /healthz, /readyz and /metrics while the first answers come, then runs the Manager until SIGTERM
 * or SIGINT, when it finishes in-flight work, releases the lease and exits 0.
 */
import { ConfigError, IN_CLUSTER_SOURCE, loadConnection } from "../kube/config.ts";
import { YamlNotLoaded } from "../kube/kubeconfig.ts";
import { LiveCluster } from "../kube/live_cluster.ts";
import { trustingOnlyItsCa } from "../kube/trust.ts";
import { type FirstLists, recordFirstLists } from "../kube/first_lists.ts";
import {
  Backoff,
  type BackoffOptions,
  type Clock,
  type Cluster,
  type ControllerSpec,
  createLogger,
  healthz,
  instrumentCluster,
  LocalSource,
  type Logger,
  Manager,
  Metrics,
  type Random,
  readyz,
  systemClock,
  systemRandom,
} from "../runtime/mod.ts";
import { parseRunFlags, runHelp, type RunOptions } from "./run_flags.ts";
import { commandProgram, CONSOLE, failUsage } from "./usage.ts";
import { type Endpoint, serveRoutes, text } from "./run_http.ts";
import { serveMetrics } from "./metrics_endpoint.ts";
import { checkCluster, waitUntilUsable } from "./run_checks.ts";
import { reportOomRestart } from "./oom_restart.ts";
import { type ControllerName, controllersFor } from "../controllers/registry.ts";
import { ObjectMetrics } from "../controllers/object_metrics.ts";
import { PROXY_STATUS } from "../api/istiod.ts";
import { ENGINE_STATUS } from "../api/engine_status.ts";
import { DNS_LOOKUP } from "../api/cluster_dns.ts";
import { RESOURCES } from "../api/resources.ts";
import { STAT_PREFIX } from "../reconcile/ratelimit/stats.ts";
import { rateLimitsOfPod } from "../controllers/ratelimit.ts";
import { IstiodEndpoints, serviceRefText } from "../kube/istiod_endpoints.ts";
import { TokenFile } from "../kube/credentials.ts";

/** What `runOperator` takes from outside besides its options (tests replace these). */
export interface RunDeps {
  /** Aborts on SIGTERM/SIGINT: the operator stops gracefully. */
  shutdown: AbortSignal;
  /** Where log lines go; default stderr. */
  sink?: (line: string) => void;
  controllers?: Readonly<Partial<Record<ControllerName, ControllerSpec>>>;
  clock?: Clock;
  random?: Random;
  /** Retry delays of the startup checks; default 1 s doubling to 60 s, jittered. */
  preflightBackoff?: BackoffOptions;
  /** Called once the endpoints listen, with their bound addresses (tests use port 0). */
  onListening?: (addrs: { probes?: string; metrics?: string; engineXds?: number }) => void;
}

/** Probe answers while the startup checks run, before the manager exists. */
const CHECKING_ALIVE = { status: 200, body: "ok: checking the cluster\n" };
const CHECKING_NOT_READY = { status: 503, body: "not ready: checking the cluster\n" };

/** Whether the operator asks istiod: at fixed URLs, or at the replicas of its Services. */
function asksIstiod(opts: RunOptions): boolean {
  return opts.istiodUrls.length > 0 || opts.istiodServices.length > 0;
}

/**
 * The engine's controller for the operator's flags. Its code (the engine's reducer) loads only
 * with the engine, by a dynamic import with a literal specifier, which `deno compile` embeds.
 */
async function engineControllerOf(
  opts: RunOptions,
  secret: { namespace: string; name: string },
): Promise<ControllerSpec> {
  const { engineControllerFor } = await import("../controllers/engine.ts");
  return engineControllerFor({
    secret,
    image: opts.globalEngineImage,
    ...(opts.globalEngineXdsUrl ? { xdsServerUrl: opts.globalEngineXdsUrl } : {}),
    replicas: opts.globalEngineReplicas,
    resources: opts.globalEngineResources,
    ...(opts.globalEngineXdsTlsSecret
      ? {
        xdsTls: {
          secret: opts.globalEngineXdsTlsSecret,
          clientCertRequired: opts.globalEngineXdsTls?.clientCaFile !== undefined,
          ...(opts.globalEngineXdsTlsServerName
            ? { serverName: opts.globalEngineXdsTlsServerName }
            : {}),
        },
      }
      : {}),
  });
}

/** The xDS server's TLS files from the flags (checked together by run_flags.ts). */
function xdsTlsFiles(opts: RunOptions) {
  const t = opts.globalEngineXdsTls;
  if (!t?.certFile || !t.keyFile) return undefined;
  return {
    certFile: t.certFile,
    keyFile: t.keyFile,
    ...(t.clientCaFile ? { clientCaFile: t.clientCaFile } : {}),
  };
}

/**
 * istiod's poller and client, loaded only when the operator asks istiod (dynamic imports with
 * literal specifiers, which `deno compile` embeds).
 */
async function loadIstiod() {
  const [{ IstiodPoller }, { istiodClient }] = await Promise.all([
    import("../kube/istiod_source.ts"),
    import("../kube/istiod.ts"),
  ]);
  return { IstiodPoller, istiodClient };
}

/** A second SIGTERM/SIGINT at least this long after the first exits at once. */
const FORCE_AFTER_MS = 2_000;

/** Retry delays of the startup checks. */
const PREFLIGHT_BACKOFF = { initialMs: 1_000, maxMs: 60_000 };

/** The CLI entry: parses flags and environment, handles signals, runs the operator. */
export async function main(args: string[]): Promise<number> {
  const parsed = parseRunFlags(args, (name) => Deno.env.get(name));
  if (parsed.kind === "help") {
    console.log(runHelp());
    return 0;
  }
  if (parsed.kind === "error") return failUsage(CONSOLE, commandProgram("run"), parsed.message);
  const stop = new AbortController();
  let firstSignalAt: number | undefined;
  const onSignal = () => {
    // `deno task` forwards a signal that the terminal also sent to the whole process group, so
    // one Ctrl-C can arrive twice at once; only a later, deliberate second signal forces the exit.
    const now = Date.now();
    if (firstSignalAt !== undefined && now - firstSignalAt >= FORCE_AFTER_MS) {
      console.error("second signal: exiting without a graceful stop");
      Deno.exit(1);
    }
    firstSignalAt ??= now;
    stop.abort(new Error("signal"));
  };
  const names = ["SIGTERM", "SIGINT"] as const;
  names.forEach((s) => Deno.addSignalListener(s, onSignal));
  try {
    return await runOperator(parsed.options, { shutdown: stop.signal });
  } finally {
    names.forEach((s) => Deno.removeSignalListener(s, onSignal));
  }
}

function answer(probe: { status: number; body: string }): Response {
  return text(probe.status, probe.body);
}

/**
 * The watches of the live operator: the API server sends a bookmark 2 s before a watch's timeout
 * (and otherwise about once a minute: k8s.io/apiserver's cacher, defaultBookmarkFrequency), so a
 * watch of 20 s is never silent for longer than that when its stream is alive, and one silent for
 * 25 s has lost its stream (a watch-only partition: docs/faults.md) and is restarted: a lost
 * stream is noticed within 25 s instead of the runtime's default 90 s. The cost: each watch is
 * opened again every 20 s (about a request a second for both replicas' dozen watches each), from
 * its resourceVersion, which the API server's watch cache serves without reading etcd.
 */
const LIVE_WATCH = { timeoutSeconds: 20, idleMs: 25_000 } as const;

function hostname(): string {
  try {
    return Deno.hostname();
  } catch {
    return `platform-operator-${crypto.randomUUID().slice(0, 8)}`;
  }
}

/** Runs the operator with `opts` until `deps.shutdown` aborts; resolves to the exit code. */
export async function runOperator(opts: RunOptions, deps: RunDeps): Promise<number> {
  const clock = deps.clock ?? systemClock;
  const random = deps.random ?? systemRandom;
  const log = createLogger({
    clock,
    level: opts.logLevel,
    format: opts.logFormat,
    sink: deps.sink,
  });
  const identity = opts.identity ?? hostname();
  const registry = deps.controllers ??
    controllersFor({
      meshRootNamespace: opts.meshRootNamespace,
      proxyStatus: asksIstiod(opts),
      engineStatus: opts.globalRedisSecret !== undefined,
      clusterDns: true,
    });
  const unavailable = opts.controllers.filter((name) => !registry[name]);
  if (unavailable.length > 0) {
    log.error(
      `controller ${unavailable.join(", ")} is not in this build: choose from --controllers=${
        Object.keys(registry).join(",")
      }`,
    );
    return 2;
  }
  const controllers = opts.controllers.map((name) => registry[name]!);
  // The global rate limit engine, deployed and kept when the platform team names its Redis Secret.
  if (opts.globalRedisSecret) {
    controllers.push(await engineControllerOf(opts, opts.globalRedisSecret));
  }
  // What only some flags use is loaded only with them: istiod's poller, the engine's status.
  const istiod = asksIstiod(opts) ? await loadIstiod() : undefined;
  const engineSource = opts.globalRedisSecret
    ? await import("../kube/engine_source.ts")
    : undefined;

  let live: LiveCluster;
  const connect = () => {
    const conn = loadConnection({
      kubeconfig: opts.kubeconfig,
      context: opts.context,
      allowInsecureHttp: opts.allowInsecureHttp,
    });
    // The operator's first TLS client: the root store Deno builds for it holds the cluster's CA alone.
    return trustingOnlyItsCa(conn, () => new LiveCluster(conn));
  };
  try {
    try {
      live = connect();
    } catch (err) {
      // A YAML kubeconfig: load the parser only now (in a cluster there is no kubeconfig at all).
      if (!(err instanceof YamlNotLoaded)) throw err;
      await import("../kube/kubeconfig_yaml.ts");
      live = connect();
    }
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    log.error(err.message);
    return 1;
  }
  live.connection.warnings.forEach((w) => log.warn(w));
  log.info("using the cluster", {
    identity,
    server: live.connection.server,
    config: live.connection.source,
    controllers: opts.controllers.join(","),
    leaderElection: opts.leaderElect ? `${opts.leaseNamespace}/${opts.leaseName}` : "off",
  });

  const metrics = new Metrics();
  // The manager counts its own calls; the startup checks are counted into the same metrics.
  const cluster = instrumentCluster(live, metrics);
  // Its own OOM kill, said by this replica once it runs again (in a Pod only; in the background).
  void reportOomRestart({ cluster, metrics, log, clock, pod: identity });
  /** The manager, once the startup checks have passed: the probes answer for it from then on. */
  let manager: Manager | undefined;
  // Listed from the start; their series come once the manager's caches exist.
  new ObjectMetrics().register(
    metrics,
    () => manager && { cache: manager.cache, primaries: controllers.map((c) => c.primary) },
  );
  // What istiod says of the proxies, served inside the operator to every manager of this process.
  const proxyStatus = asksIstiod(opts) ? new LocalSource(PROXY_STATUS) : undefined;
  // What the global rate limit engine's Pods say, read back when the operator runs the engine.
  const engineStatus = opts.globalRedisSecret ? new LocalSource(ENGINE_STATUS) : undefined;
  // The names KEDA's Pods dial, as the operator's resolver answers them (empty when not asked).
  const dnsLookups = new LocalSource(DNS_LOOKUP);
  const newManager = (held: boolean, through: Cluster = live) =>
    new Manager({
      cluster: through,
      localSources: [proxyStatus, engineStatus, dnsLookups].filter((s) => s !== undefined),
      clock,
      random,
      log,
      metrics,
      controllers,
      images: opts.images,
      namespace: opts.leaseNamespace,
      identity,
      leaderElection: opts.leaderElect
        ? { namespace: opts.leaseNamespace, name: opts.leaseName }
        : false,
      held,
      concurrency: opts.concurrency,
      watchTimeoutSeconds: LIVE_WATCH.timeoutSeconds,
      watchIdleMs: LIVE_WATCH.idleMs,
    });
  const check = (listed?: FirstLists["answer"]) =>
    checkCluster(cluster, live, opts, controllers, listed);
  // The first checks run beside the manager's lists, which it sends anyway once they pass:
  // start-up waits for the slower of the two, not for both in turn. The manager reconciles
  // nothing, and is not ready, until they pass. The checks go out once the lists have: sent with
  // the Lease read, their requests delayed its answer, and the lists wait for that answer. They
  // take what the lists' first pages say of each type instead of probing it again.
  // The endpoints are served while the first answers are awaited.
  const firstLists = recordFirstLists(live);
  let m = newManager(true, firstLists.cluster);
  let running = supervise(m);
  if (proxyStatus && istiod) {
    const { IstiodPoller, istiodClient } = istiod;
    const credentials = new TokenFile(opts.istiodTokenFile);
    const istiodLog = log.child({ component: "istiod" });
    // istiod's replicas from its Services' EndpointSlices: a watch each, run beside the poller.
    const endpoints = opts.istiodServices.length > 0
      ? new IstiodEndpoints({
        cluster,
        services: opts.istiodServices,
        clock,
        random,
        log: istiodLog,
        metrics,
        // A missing Role is said once by the startup checks, naming it.
        quiet: () => manager === undefined,
      })
      : undefined;
    void endpoints?.run(deps.shutdown);
    const poller = new IstiodPoller({
      ...(endpoints
        ? {
          discovery: {
            view: () => endpoints.view(),
            clientOf: (url: string) => istiodClient({ url, credentials }),
          },
        }
        : { clients: opts.istiodUrls.map((url) => istiodClient({ url, credentials })) }),
      source: proxyStatus,
      namespace: opts.leaseNamespace,
      clock,
      log: istiodLog,
      statPrefix: STAT_PREFIX,
      // The operator's filters as cached: a list shared until it changes, so looking is free.
      changed: () => (manager ?? m).cache.list(RESOURCES.EnvoyFilter),
      // Only the proxies of Pods a RateLimit concerns (the same as its Pod watch's) are read in
      // depth.
      wants: ({ namespace, name }) => {
        const cache = (manager ?? m).cache;
        const pod = cache.get(RESOURCES.Pod, namespace, name);
        return pod !== undefined &&
          rateLimitsOfPod(cache, opts.meshRootNamespace, pod).length > 0;
      },
    });
    void poller.run(deps.shutdown);
    log.info("asking istiod about the proxies", {
      istiod: endpoints
        ? `the replicas of ${opts.istiodServices.map(serviceRefText).join(",")}`
        : opts.istiodUrls.join(","),
    });
  }
  // Nudged when an engine ACKs a push (below): it has loaded it, so read it back now.
  let enginePoller: { nudge(): void } | undefined;
  if (engineStatus && engineSource) {
    enginePoller = engineSource.startEngineStatus({
      cluster,
      source: engineStatus,
      clock,
      random,
      log: log.child({ component: "engine-status" }),
      metrics,
      // A missing grant is said once by the startup checks.
      quiet: () => manager === undefined,
      // The operator's filters as cached: the engines' snapshot follows them.
      changed: () => (manager ?? m).cache.list(RESOURCES.EnvoyFilter),
      signal: deps.shutdown,
    });
  }
  // Cluster DNS is asked where it answers as it does for KEDA's Pods: from the operator's Pod
  // (`auto` in a Pod), or at a server given; outside a Pod by default nothing is asked or said.
  // Only the Scaler reads it, and only the Scaler's controller watches the Deployments it names.
  const dns = opts.clusterDns;
  const inPod = live.connection.source === IN_CLUSTER_SOURCE;
  const scaler = opts.controllers.includes("scaler");
  if (scaler && (dns.kind === "server" || (dns.kind === "auto" && inPod))) {
    // Loaded only when asked, as the engine's parts are: kept out of the start-up graph.
    void import("../kube/cluster_dns.ts").then(({ startClusterDnsLookups }) =>
      startClusterDnsLookups({
        ask: dns.kind === "server" ? { ipAddr: dns.ipAddr, port: dns.port } : "pod",
        source: dnsLookups,
        namespace: opts.leaseNamespace,
        cache: () => (manager ?? m).cache,
        clock,
        log: log.child({ component: "cluster-dns" }),
        signal: deps.shutdown,
      })
    ).catch((err) =>
      // Nothing of the lookups may end the operator: without them the Scaler says nothing of DNS.
      log.error("cannot start the cluster DNS lookups", { error: (err as Error).message })
    );
  }
  const firstCheck = m.listing.then(() => check(firstLists.answer));
  const endpoints: Endpoint[] = [];
  try {
    const probes = serveRoutes("probes", opts.probeAddr, {
      // Alive while checking the cluster: a restart would not fix a missing CRD.
      "/healthz": () => answer(manager ? healthz(manager.status) : CHECKING_ALIVE),
      "/readyz": () => answer(manager ? readyz(manager.status) : CHECKING_NOT_READY),
    }, log);
    if (probes) endpoints.push(probes);
    const served = await serveMetrics({ addr: opts.metricsAddr, metrics, cluster, clock, log });
    if (served) endpoints.push(served);
    // The engines' configuration, served by every replica from its cache of the operator's
    // EnvoyFilters (a standby's is as warm as the leader's); nothing before they are listed.
    const stopXds = new AbortController();
    deps.shutdown.addEventListener("abort", () => stopXds.abort(), { once: true });
    // Loaded only with the engine: its gRPC server is node:http2, kept out of the start-up graph.
    const engineXds = opts.globalRedisSecret
      ? await (await import("../kube/engine_xds.ts")).serveEngineConfig({
        filters: () => {
          const cache = (manager ?? m).cache;
          return cache.isLive?.(RESOURCES.EnvoyFilter)
            ? cache.list(RESOURCES.EnvoyFilter)
            : undefined;
        },
        port: opts.globalEngineXdsPort,
        tls: xdsTlsFiles(opts),
        // An engine loaded a push: GlobalEnforced follows within a round trip, not the poller's
        // next look (up to a second later).
        onLoaded: () => enginePoller?.nudge(),
        log: log.child({ component: "engine-xds" }),
        metrics,
        clock,
        signal: stopXds.signal,
      })
      : undefined;
    if (engineXds) {
      const { hostname, port } = engineXds.server.address!;
      endpoints.push({
        addr: `${hostname}:${port}`,
        shutdown: () => (stopXds.abort(), engineXds.done),
      });
    }
    deps.onListening?.({
      probes: probes?.addr,
      metrics: served?.addr,
      ...(engineXds ? { engineXds: engineXds.server.address!.port } : {}),
    });
  } catch (err) {
    const flags = opts.globalRedisSecret
      ? "--probe-addr/--metrics-addr/--global-engine-xds-port"
      : "--probe-addr/--metrics-addr";
    // TLS files that cannot serve stop the operator: never a cleartext xDS server instead.
    if ((err as Error).name === "XdsTlsError") {
      log.error(`cannot serve the engines over TLS: ${(err as Error).message}`);
    } else log.error(`cannot listen: ${(err as Error).message}: choose other ${flags}`);
    await Promise.all(endpoints.map((e) => e.shutdown()));
    await m.stop("cannot listen");
    await running.done;
    live.close();
    return 1;
  }
  try {
    const first = await firstCheck;
    if (first.length > 0) {
      // Checking again, alive but not ready, as before any manager.
      await m.stop("cluster checks failed");
      await running.done;
    }
    const backoff = new Backoff(deps.preflightBackoff ?? PREFLIGHT_BACKOFF, random);
    if (!await waitUntilUsable(check, first, log, clock, backoff, deps.shutdown)) {
      log.info("stopped before the cluster was usable");
      return 0;
    }
    if (first.length === 0) m.release();
    else running = supervise(m = newManager(false));
    manager = m;
    return await runUntilShutdown(m, running, log, deps.shutdown);
  } finally {
    await Promise.all(endpoints.map((e) => e.shutdown()));
    live.close();
  }
}

/** A started manager: resolves when it has stopped, with what it failed with, if anything. */
interface Supervised {
  done: Promise<void>;
  crashed(): unknown;
}

function supervise(manager: Manager): Supervised {
  let crashed: unknown;
  const done = manager.start().catch((err) => {
    crashed = err;
  });
  return { done, crashed: () => crashed };
}

async function runUntilShutdown(
  manager: Manager,
  { done, crashed }: Supervised,
  log: Logger,
  shutdown: AbortSignal,
): Promise<number> {
  const stopRequested = new Promise<void>((resolve) => {
    if (shutdown.aborted) resolve();
    shutdown.addEventListener("abort", () => resolve(), { once: true });
  });
  await Promise.race([done, stopRequested]);
  if (!shutdown.aborted) {
    log.error("the manager stopped on its own", { error: crashed() });
    return 1;
  }
  await manager.stop("shutdown signal");
  await done;
  if (crashed()) {
    log.error("the manager failed while stopping", { error: crashed() });
    return 1;
  }
  return 0;
}
