/**
 * The peer of the control-plane benches: Kyma api-gateway's RateLimit controller, built from a
 * checkout of kyma-project/api-gateway with bench/peers/kyma-ratelimit/main.go (see its README),
 * and what it needs to act on the bench's cluster: its two CRDs, the namespace of its Lease, a
 * Ready APIGateway named `default` (no APIGateway controller runs, so the bench writes it), and a
 * ServiceAccount of its own with a token, so that the audit log tells its writes from the bench's.
 */
import { dirname, join } from "node:path";
import { RESOURCES } from "../../src/api/resources.ts";
import { isApiError } from "../../src/runtime/mod.ts";
import { type KubeObject, type ResourceType } from "../../src/api/object.ts";
import { freePort, isAlive } from "../../tools/processes.ts";
import { writeKubeconfig } from "../../tools/cluster/auth.ts";
import { internalDir } from "../../tools/cluster/components.ts";
import {
  type AdminKubectl,
  serviceAccountToken,
  serviceAccountUser,
} from "../../tools/cluster/operator_identity.ts";
import { scrapeMetrics } from "../../tools/operator/process.ts";
import { type BenchCluster, until } from "./env.ts";
import type { FirstReconcile } from "./operator.ts";

/** Environment variable naming the checkout (the `--peer=PATH` flag wins). */
export const PEER_ENV = "KYMA_API_GATEWAY_DIR";
/** The peer's RateLimit: the same shape as the operator's, in Kyma's API group. */
export const KYMA_RATELIMIT: ResourceType = {
  group: "gateway.kyma-project.io",
  version: "v1alpha1",
  kind: "RateLimit",
  plural: "ratelimits",
  namespaced: true,
};
const APIGATEWAY: ResourceType = {
  group: "operator.kyma-project.io",
  version: "v1alpha1",
  kind: "APIGateway",
  plural: "apigateways",
  namespaced: false,
};
/** Where the peer keeps its leader-election Lease (api-gateway's default). */
export const KYMA_NAMESPACE = "kyma-system";
/** The peer's own ServiceAccount, in KYMA_NAMESPACE. */
export const PEER_SERVICE_ACCOUNT = "bench-ratelimit-peer";
/** api-gateway's LeaderElectionID. */
const PEER_LEASE = "69358922.kyma-project.io";
const CRDS = [
  "gateway.kyma-project.io_ratelimits.yaml",
  "operator.kyma-project.io_apigateways.yaml",
];
const MAIN = join(import.meta.dirname ?? ".", "..", "peers", "kyma-ratelimit", "main.go");
const PACKAGE = "cmd/bench-ratelimit-peer";

/** The checkout to build the peer from: the flag, else the environment variable, else none. */
export function peerCheckout(flag: string | undefined): string | undefined {
  return flag ?? (Deno.env.get(PEER_ENV) || undefined);
}

async function run(cmd: string, args: string[], cwd: string): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")} failed in ${cwd}:\n${text}`);
  return text.trim();
}

/** The checkout's tag (`git describe`), or why it is not known. */
export async function peerVersion(checkout: string): Promise<string> {
  try {
    return await run("git", ["describe", "--tags", "--always"], checkout);
  } catch {
    return "unknown (not a git checkout)";
  }
}

/**
 * Copies the peer's `main.go` into the checkout (its reconciler is in an `internal/` package, so
 * it only builds there) and builds it with the checkout's go.mod; returns the binary's path.
 */
export async function buildPeer(checkout: string): Promise<string> {
  const ctl = join(checkout, "internal", "controller", "gateway", "ratelimit");
  if (!(await Deno.stat(ctl).catch(() => undefined))?.isDirectory) {
    throw new Error(`${checkout} is not a checkout of kyma-project/api-gateway (no ${ctl})`);
  }
  await Deno.mkdir(join(checkout, PACKAGE), { recursive: true });
  await Deno.copyFile(MAIN, join(checkout, PACKAGE, "main.go"));
  const binary = join(checkout, "bin", "bench-ratelimit-peer");
  await run("go", ["build", "-o", binary, `./${PACKAGE}`], checkout);
  return binary;
}

/**
 * Installs the peer's CRDs, its Lease namespace, its identity (`installPeerIdentity`, its
 * kubeconfig in the cluster directory's `internal/`) and a Ready APIGateway `default`.
 */
export async function preparePeer(env: BenchCluster, checkout: string): Promise<PeerAccess> {
  const bases = join(checkout, "config", "crd", "bases");
  const yaml = (await Promise.all(CRDS.map((f) => Deno.readTextFile(join(bases, f))))).join(
    "\n---\n",
  );
  await env.kubectl(["apply", "--server-side", "--force-conflicts", "-f", "-"], yaml);
  await env.kubectl([
    "wait",
    "--for=condition=Established",
    "--timeout=60s",
    "crd/ratelimits.gateway.kyma-project.io",
    "crd/apigateways.operator.kyma-project.io",
  ]);
  await env.namespace(KYMA_NAMESPACE);
  const access = await installPeerIdentity(
    (args, o) => env.kubectl(args, o?.stdin),
    env.handle.server,
    await Deno.readTextFile(env.handle.caCert),
    join(internalDir(env.handle.dir), "kubeconfig-peer"),
  );
  const gw: KubeObject = {
    apiVersion: "operator.kyma-project.io/v1alpha1",
    kind: "APIGateway",
    metadata: { name: "default" },
    spec: {},
  };
  try {
    await env.api.create(APIGATEWAY, gw);
  } catch (e) {
    if (!isApiError(e, 409)) throw e;
  }
  await env.api.applyStatus(APIGATEWAY, { ...gw, status: { state: "Ready" } }, {
    fieldManager: "bench",
    force: true,
  });
  return access;
}

/** Whom the peer acts as: its user, as the API server audits it, and a kubeconfig with its token. */
export interface PeerAccess {
  readonly user: string;
  readonly kubeconfig: string;
}

/**
 * The peer's ServiceAccount and its binding to the built-in `cluster-admin` ClusterRole. Not least
 * privilege (api-gateway's own RBAC is not installed): the point is a user of its own in the audit
 * log, apart from the bench's admin client, which creates the objects the peer reconciles.
 */
export function peerIdentityObjects(): KubeObject[] {
  const name = PEER_SERVICE_ACCOUNT;
  return [
    {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name, namespace: KYMA_NAMESPACE },
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: "cluster-admin",
      },
      subjects: [{ kind: "ServiceAccount", name, namespace: KYMA_NAMESPACE }],
    },
  ];
}

/**
 * Applies `peerIdentityObjects` with the admin's `k` (KYMA_NAMESPACE must exist), asks the
 * TokenRequest API for a token of the ServiceAccount and writes it into a kubeconfig at `path`
 * for `server`; returns the peer's user and that kubeconfig.
 */
export async function installPeerIdentity(
  k: AdminKubectl,
  server: string,
  caPem: string,
  path: string,
): Promise<PeerAccess> {
  await k(["apply", "-f", "-"], {
    stdin: peerIdentityObjects().map((o) => JSON.stringify(o)).join("\n"),
  });
  const token = await serviceAccountToken(k, KYMA_NAMESPACE, PEER_SERVICE_ACCOUNT);
  const user = serviceAccountUser(KYMA_NAMESPACE, PEER_SERVICE_ACCOUNT);
  await writeKubeconfig(path, server, caPem, { name: user, groups: [], token });
  return { user, kubeconfig: path };
}

/** One running peer. */
export class PeerProcess {
  readonly startedAt = Date.now();
  private constructor(
    readonly identity: string,
    readonly logPath: string,
    readonly metricsAddr: string,
    readonly probeAddr: string,
    readonly child: Deno.ChildProcess,
    readonly logsDone: Promise<void>,
  ) {}

  /**
   * Deletes the peer's Lease (it does not release it on exit, and a new replica would wait out
   * the old one's term), then spawns it with leader election on, as api-gateway runs, acting as
   * `access` (`preparePeer`).
   */
  static async start(
    env: BenchCluster,
    binary: string,
    access: PeerAccess,
    identity: string,
    logDir: string,
  ): Promise<PeerProcess> {
    try {
      await env.api.delete(RESOURCES.Lease, KYMA_NAMESPACE, PEER_LEASE);
    } catch (e) {
      if (!isApiError(e, 404)) throw e;
    }
    await Deno.mkdir(logDir, { recursive: true });
    const logPath = join(logDir, `peer-${identity}.log`);
    const metricsAddr = `127.0.0.1:${freePort()}`;
    const probeAddr = `127.0.0.1:${freePort()}`;
    const child = new Deno.Command(binary, {
      args: [
        `--kubeconfig=${access.kubeconfig}`,
        `--metrics-bind-address=${metricsAddr}`,
        `--health-probe-bind-address=${probeAddr}`,
        "--leader-elect=true",
      ],
      cwd: dirname(binary),
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const file = await Deno.open(logPath, { create: true, write: true, truncate: true });
    let queue = Promise.resolve();
    const pump = async (s: ReadableStream<Uint8Array>) => {
      for await (const chunk of s) {
        queue = queue.then(async () => {
          let off = 0;
          while (off < chunk.length) off += await file.write(chunk.subarray(off));
        });
      }
    };
    const logsDone = Promise.all([pump(child.stdout), pump(child.stderr)]).then(() => queue)
      .catch(() => {}).finally(() => file.close());
    return new PeerProcess(identity, logPath, metricsAddr, probeAddr, child, logsDone);
  }

  /** The OS process id. */
  get pid(): number {
    return this.child.pid;
  }

  /** True while it runs. */
  get running(): boolean {
    return isAlive(this.child.pid);
  }

  /** Waits until `/readyz` answers 200 and its leader-election Lease names it. */
  async waitReady(env: BenchCluster, timeoutMs = 120_000): Promise<void> {
    await until(
      `peer ${this.identity} /readyz`,
      async () => {
        if (!this.running) throw new Error(`peer exited early; see ${this.logPath}`);
        const res = await fetch(`http://${this.probeAddr}/readyz`, {
          signal: AbortSignal.timeout(2000),
        });
        await res.body?.cancel();
        return res.ok;
      },
      timeoutMs,
      100,
    );
    await until(
      `peer ${this.identity} leading`,
      async () => {
        const lease = await env.api.get(RESOURCES.Lease, KYMA_NAMESPACE, PEER_LEASE);
        return (lease?.spec as { holderIdentity?: string } | undefined)?.holderIdentity !==
          undefined;
      },
      timeoutMs,
      200,
    );
  }

  /** Its controller-runtime `/metrics` text, or undefined when it does not answer. */
  metrics(): Promise<string | undefined> {
    return scrapeMetrics(this.metricsAddr);
  }

  /**
   * Its first reconcile from its log (zap JSON; main.go sets `ts` to epoch milliseconds), in ms
   * from spawn: begun at its first "Starting reconciliation", done at the first "Reconciliation
   * finished" after it. The controller logs that once its EnvoyFilter is written, before its
   * status update; its cached client starts the Pod and EnvoyFilter informers within this first
   * reconcile and waits for their lists, so the two differ by those lists.
   */
  async firstReconcile(): Promise<FirstReconcile | undefined> {
    const text = await Deno.readTextFile(this.logPath).catch(() => "");
    return peerFirstReconcile(text, this.startedAt);
  }

  /** SIGTERM, then SIGKILL after `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    try {
      this.child.kill("SIGTERM");
    } catch {
      // Gone already.
    }
    const timer = setTimeout(() => {
      try {
        this.child.kill("SIGKILL");
      } catch {
        // Gone already.
      }
    }, graceMs);
    try {
      await this.child.status;
      await this.logsDone;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The peer's first reconcile in its log `text` (see `PeerProcess.firstReconcile`), ms from `startedAt`. */
export function peerFirstReconcile(text: string, startedAt: number): FirstReconcile | undefined {
  let begunMs: number | undefined;
  for (const line of text.split("\n")) {
    if (!line.startsWith("{")) continue;
    let l: { ts?: number; msg?: string };
    try {
      l = JSON.parse(line);
    } catch {
      continue; // Not a log line of its own.
    }
    if (typeof l.ts !== "number") continue;
    if (begunMs === undefined && l.msg === "Starting reconciliation") {
      begunMs = l.ts - startedAt;
    } else if (begunMs !== undefined && l.msg === "Reconciliation finished") {
      return { begunMs, doneMs: l.ts - startedAt };
    }
  }
  return begunMs === undefined ? undefined : { begunMs };
}
