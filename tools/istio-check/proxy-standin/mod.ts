/**
 * Runs the proxy stand-in (a test harness, docs/proxy-standin.md): one process of xDS clients,
 * each standing in for a Pod's Envoy against istiod, and reads what each holds.
 *
 * @example
 * ```ts
 * const standin = await startProxyStandin(istiod.xds, [proxyOfPod(pod)]);
 * try {
 *   const view = await standin.proxy("httpbin-0.demo");
 *   view.xds.LDS.acked;
 * } finally {
 *   await standin.stop();
 * }
 * ```
 *
 * @module
 */
import { ensureProxyStandin } from "../build.ts";

/** One Pod's proxy, as the stand-in presents it to istiod (proxy-standin/node.go ProxySpec). */
export interface ProxySpec {
  /** `sidecar`, or `router` for a gateway. */
  type: "sidecar" | "router";
  pod: string;
  namespace: string;
  ip: string;
  labels?: Record<string, string>;
  serviceAccount?: string;
  workloadName?: string;
  owner?: string;
  clusterId?: string;
  meshId?: string;
  nodeName?: string;
  /** ISTIO_VERSION, pilot-agent's version (default 1.31.0): what istiod knows of the proxy. */
  istioVersion?: string;
  /**
   * The Envoy build version, major.minor.patch (default 1.38.0); give the Envoy of `istioVersion`'s
   * release. Before 1.34 the proxy also refuses what that Envoy refused (docs/proxy-standin.md, "An
   * older Envoy").
   */
  envoyVersion?: string;
  interceptionMode?: "REDIRECT" | "TPROXY" | "NONE";
  podPorts?: { name?: string; containerPort: number; protocol?: string }[];
  /** Further metadata keys (what ISTIO_META_* variables would add). */
  meta?: Record<string, string>;
}

/** The xDS types, by their short names. */
export type XdsType = "CDS" | "EDS" | "LDS" | "RDS";

/** One xDS type of one proxy (proxy-standin/http.go TypeView). */
export interface TypeView {
  /** The last accepted version_info, and the last response's nonce. */
  version: string;
  nonce: string;
  /** The last response was accepted. */
  acked: boolean;
  acks: number;
  nacks: number;
  /** The last response's rejection, absent when it was accepted. */
  lastError?: string;
  subscribed?: string[];
  /** Names of the resources held. */
  resources: string[];
}

/** One response and the answer (ACK, or NACK with its error). */
export interface XdsEvent {
  time: string;
  type: XdsType;
  version: string;
  nonce: string;
  ack: boolean;
  error?: string;
  resources: string[] | null;
}

/** A JSON object (a resource as protobuf JSON). */
export type JsonObject = Record<string, unknown>;

/** The config a proxy holds, as protobuf JSON with the protos' field names. */
export interface ConfigView {
  listeners: JsonObject[];
  routes: JsonObject[];
  clusters: JsonObject[];
  endpoints: JsonObject[];
}

/** One proxy (proxy-standin/http.go ProxyView). */
export interface ProxyView {
  /** `POD.NAMESPACE`, istiod's proxy id. */
  key: string;
  /** The xDS node id, `TYPE~IP~POD.NAMESPACE~NAMESPACE.svc.cluster.local`. */
  id: string;
  type: string;
  connected: boolean;
  connects: number;
  since?: string;
  connectionError?: string;
  xds: Record<XdsType, TypeView>;
  unknownTypes?: string[];
  /** Only from {@link ProxyStandin.proxy}. */
  config?: ConfigView;
  history?: XdsEvent[];
}

/** A running stand-in process. */
export interface ProxyStandin {
  /** Its HTTP endpoint, `http://127.0.0.1:PORT`. */
  url: string;
  pid: number;
  /** Every proxy, without config or history. */
  proxies(): Promise<ProxyView[]>;
  /** One proxy with its config and history. */
  proxy(key: string): Promise<ProxyView>;
  /** Starts more proxies in this process. */
  add(specs: ProxySpec[]): Promise<void>;
  /** Stops one proxy (its stream ends). */
  remove(key: string): Promise<void>;
  /** Stops the process (SIGTERM) and waits for it; returns what it wrote to stderr. */
  stop(): Promise<string>;
}

/** Reads a Kubernetes Pod (as `kubectl get pod -o json` gives it) into its proxy's spec. */
export function proxyOfPod(pod: {
  metadata: {
    name: string;
    namespace: string;
    labels?: Record<string, string>;
    ownerReferences?: { kind: string; name: string }[];
  };
  spec: {
    serviceAccountName?: string;
    nodeName?: string;
    containers: {
      name: string;
      args?: string[];
      ports?: { name?: string; containerPort: number; protocol?: string }[];
    }[];
  };
  status: { podIP?: string };
}): ProxySpec {
  const { name, namespace } = pod.metadata;
  if (!pod.status.podIP) throw new Error(`pod ${namespace}/${name} has no IP yet`);
  const proxy = pod.spec.containers.find((c) => c.name === "istio-proxy");
  const labels = { ...pod.metadata.labels ?? {} };
  delete labels["pod-template-hash"];
  // The injector's ISTIO_META_WORKLOAD_NAME: the Deployment (the ReplicaSet without its hash).
  const rs = pod.metadata.ownerReferences?.find((o) => o.kind === "ReplicaSet");
  const hash = pod.metadata.labels?.["pod-template-hash"];
  const workload = rs && hash && rs.name.endsWith(`-${hash}`)
    ? rs.name.slice(0, -hash.length - 1)
    : rs?.name ?? name;
  const ports = pod.spec.containers.flatMap((c) => c.ports ?? []);
  return {
    type: proxy?.args?.includes("router") ? "router" : "sidecar",
    pod: name,
    namespace,
    ip: pod.status.podIP,
    labels,
    serviceAccount: pod.spec.serviceAccountName,
    workloadName: workload,
    owner: rs
      ? `kubernetes://apis/apps/v1/namespaces/${namespace}/deployments/${workload}`
      : undefined,
    nodeName: pod.spec.nodeName,
    podPorts: ports.length > 0 ? ports : undefined,
  };
}

async function answer(res: Response, what: string): Promise<unknown> {
  const text = await res.text();
  if (!res.ok) throw new Error(`proxy-standin ${what}: ${res.status} ${text}`);
  return text === "" ? undefined : JSON.parse(text);
}

/**
 * Builds the stand-in if needed and starts one process with `proxies`, their ADS streams to
 * `xds` (istiod's plaintext gRPC address, host:port). Resolves once its endpoint listens.
 */
export async function startProxyStandin(
  xds: string,
  proxies: ProxySpec[],
  log: (msg: string) => void = () => {},
): Promise<ProxyStandin> {
  const bin = await ensureProxyStandin(log);
  const dir = await Deno.makeTempDir({ prefix: "proxy-standin-" });
  const file = `${dir}/proxies.json`;
  await Deno.writeTextFile(file, JSON.stringify({ proxies }));
  const child = new Deno.Command(bin, {
    args: ["-xds", xds, "-proxies", file],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  const errDone = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (s) => void (stderr += s) }),
  );
  // The first line on stdout names the endpoint; the rest is drained.
  const out = child.stdout.pipeThrough(new TextDecoderStream());
  const reader = out.getReader();
  let first = "";
  while (!first.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) break;
    first += value;
  }
  reader.releaseLock();
  const outDone = out.pipeTo(new WritableStream());
  const cleanup = async () => {
    await Promise.all([errDone, outDone]);
    await Deno.remove(dir, { recursive: true });
  };
  if (!first.includes("\n")) {
    await child.status;
    await cleanup();
    throw new Error(`proxy-standin did not start: ${stderr}`);
  }
  const listen = (JSON.parse(first.slice(0, first.indexOf("\n"))) as { listen: string }).listen;
  const url = `http://${listen}`;
  return {
    url,
    pid: child.pid,
    proxies: async () => await answer(await fetch(`${url}/proxies`), "proxies") as ProxyView[],
    proxy: async (key) =>
      await answer(await fetch(`${url}/proxies/${encodeURIComponent(key)}`), key) as ProxyView,
    add: async (specs) => {
      const res = await fetch(`${url}/proxies`, {
        method: "POST",
        body: JSON.stringify({ proxies: specs }),
      });
      await answer(res, "add");
    },
    remove: async (key) => {
      const res = await fetch(`${url}/proxies/${encodeURIComponent(key)}`, { method: "DELETE" });
      await answer(res, `remove ${key}`);
    },
    stop: async () => {
      try {
        child.kill("SIGTERM");
      } catch {
        // already exited
      }
      await child.status;
      await cleanup();
      return stderr;
    },
  };
}
