/** The fake node and the simulated mesh (namespaces, EnvoyFilter CRD, ingress gateway). */
import { stringify } from "yaml";
import { envoyFilterCrd } from "../../src/crd/istio.ts";
import { crdNames, istioCrdsYaml } from "./istio_crds.ts";

/** Name of the single kwok-managed node. */
export const NODE_NAME = "kwok-node-0";

/** Namespaces created by `up` besides `default`. */
export const MESH_NAMESPACES = ["platform-system", "mesh-system"];

/** Namespace and name of the simulated ingress gateway Deployment. */
export const GATEWAY = { namespace: "mesh-system", name: "mesh-ingressgateway" } as const;

type Manifest = Record<string, unknown>;

/** A kwok node's capacity. */
export interface KwokCapacity {
  cpu: string;
  memory: string;
  pods: string;
}

/**
 * A fake node (no taints) as in kwok's docs, by default with 32 CPUs, 256Gi and 110 pods; `labels`
 * are added to kwok's own.
 */
export function kwokNode(
  name = NODE_NAME,
  capacity: KwokCapacity = { cpu: "32", memory: "256Gi", pods: "110" },
  labels: Record<string, string> = {},
): Manifest {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      annotations: { "node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake" },
      labels: {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/role": "agent",
        "node-role.kubernetes.io/agent": "",
        type: "kwok",
        ...labels,
      },
    },
    status: { allocatable: capacity, capacity },
  };
}

/**
 * The mesh's config root namespace: an EnvoyFilter there reaches every namespace. The operators
 * this project runs against the local mesh are told so (`--mesh-root-namespace`).
 */
export const MESH_ROOT_NAMESPACE = "mesh-system";

/**
 * The ingress gateway Deployment; kwok marks its Pod Ready. Its proxy runs as a router
 * (`proxy router`), as Istio's gateway injection template starts it: that is how the operator
 * knows a gateway.
 */
export function gatewayManifest(): Manifest {
  const labels = { app: GATEWAY.name, istio: "ingressgateway" };
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: GATEWAY.name, namespace: GATEWAY.namespace, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: GATEWAY.name } },
      template: {
        metadata: { labels },
        spec: {
          containers: [{
            name: "istio-proxy",
            image: "docker.io/istio/proxyv2:1.30.3",
            args: ["proxy", "router"],
            ports: [{ containerPort: 8080, name: "http2" }, { containerPort: 8443, name: "https" }],
          }],
        },
      },
    },
  };
}

/** Namespace manifests for {@link MESH_NAMESPACES}. */
export function namespaceManifests(): Manifest[] {
  return MESH_NAMESPACES.map((name) => ({
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name },
  }));
}

/** Serialises manifests as one multi-document YAML stream. */
export function toYaml(docs: Manifest[]): string {
  return docs.map((d) => stringify(d)).join("---\n");
}

/** Runs kubectl with the admin kubeconfig; throws on failure, returns stdout. */
export type MustKubectl = (args: string[], opts?: { stdin?: string }) => Promise<string>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Which Istio CRDs the cluster gets: `stand-in`, the reduced EnvoyFilter CRD of src/crd/istio.ts
 * (no istiod runs); `istio`, Istio's own 15 CRDs from data/upstream/istio (istiod runs).
 */
export type IstioCrds = "stand-in" | "istio";

/**
 * Applies Istio's own CRDs (server-side: some are larger than client-side apply's annotation
 * limit) and waits until each is Established; returns their names.
 */
export async function installIstioCrds(k: MustKubectl): Promise<string[]> {
  const text = await istioCrdsYaml();
  const names = crdNames(text);
  await k(["apply", "--server-side", "--force-conflicts", "-f", "-"], { stdin: text });
  await k([
    "wait",
    "--for=condition=Established",
    ...names.map((n) => `crd/${n}`),
    "--timeout=60s",
  ]);
  return names;
}

/**
 * Creates the node and waits until it is Ready and untainted, then installs the namespaces,
 * the Istio CRDs (`crds`: the stand-in EnvoyFilter CRD, or Istio's own) and the ingress gateway,
 * and waits for the gateway rollout.
 */
export async function installMesh(
  k: MustKubectl,
  log: (msg: string) => void,
  crds: IstioCrds = "stand-in",
): Promise<void> {
  await k(["apply", "-f", "-"], {
    stdin: toYaml([
      kwokNode(),
      ...namespaceManifests(),
      ...(crds === "stand-in" ? [envoyFilterCrd()] : []),
    ]),
  });
  if (crds === "istio") {
    const t0 = performance.now();
    const names = await installIstioCrds(k);
    log(
      `Istio's ${names.length} CRDs established in ${
        ((performance.now() - t0) / 1000).toFixed(1)
      }s`,
    );
  }
  log(`waiting for node ${NODE_NAME} to be Ready`);
  await k(["wait", "--for=condition=Ready", `node/${NODE_NAME}`, "--timeout=90s"]);
  const deadline = Date.now() + 90_000;
  for (;;) {
    const taints = await k(["get", "node", NODE_NAME, "-o", "jsonpath={.spec.taints}"]);
    if (taints.trim() === "" || taints.trim() === "[]") break;
    if (Date.now() > deadline) throw new Error(`node ${NODE_NAME} still tainted: ${taints}`);
    await sleep(250);
  }
  await k([
    "wait",
    "--for=condition=Established",
    "crd/envoyfilters.networking.istio.io",
    "--timeout=60s",
  ]);
  await k(["apply", "-f", "-"], { stdin: toYaml([gatewayManifest()]) });
  log(`waiting for ${GATEWAY.namespace}/${GATEWAY.name} rollout`);
  await k([
    "rollout",
    "status",
    "-n",
    GATEWAY.namespace,
    `deployment/${GATEWAY.name}`,
    "--timeout=120s",
  ]);
}
