/** Command lines of etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok. */
import { join } from "node:path";
import type { Binaries } from "./build.ts";
import type { Pki } from "./pki.ts";
import type { ProcessSpec } from "../processes.ts";
import { kubeconfigPaths } from "./auth.ts";
import { SERVICE_CIDR } from "./services.ts";

/** Component names in start order. */
export const COMPONENTS = [
  "etcd",
  "kube-apiserver",
  "kube-controller-manager",
  "kube-scheduler",
  "kwok",
] as const;

/** One of {@link COMPONENTS}. */
export type ComponentName = typeof COMPONENTS[number];

/** Loopback ports used by one cluster. */
export interface Ports {
  etcdClient: number;
  etcdPeer: number;
  apiserver: number;
  controllerManager: number;
  scheduler: number;
  kwok: number;
}

/** Everything needed to derive the component command lines. */
export interface Layout {
  dir: string;
  etcdDataDir: string;
  ports: Ports;
  pki: Pki;
  bins: Binaries;
  /** Set when the cluster gets a real node: the API server's client certificate for kubelets. */
  realNode?: {
    kubeletClientCert: string;
    kubeletClientKey: string;
    /** The front proxy's client certificate, for aggregated API servers on the node. */
    proxyClientCert: string;
    proxyClientKey: string;
  };
}

/** A component's process spec plus its health endpoint. */
export interface ComponentSpec extends ProcessSpec {
  name: ComponentName;
  health: string;
}

const LOOP = "127.0.0.1";
const ALLOW_PATHS = "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics";

/** Path of the apiserver audit log of a cluster directory. */
export function auditLogPath(dir: string): string {
  return join(dir, "logs", "audit.log");
}

/** Path of the internal files (token file, audit policy, component kubeconfigs). */
export function internalDir(dir: string): string {
  return join(dir, "internal");
}

/**
 * API server flags of a cluster with a real node: ServiceAccount admission on (kubelet mounts
 * the token it adds), and calls to kubelets (logs, exec) at their InternalIP, with a client
 * certificate and the kubelet's serving certificate checked against the cluster CA. A namespace
 * can send all its Pods to the real node (PodNodeSelector and PodTolerationRestriction read its
 * `scheduler.alpha.kubernetes.io/node-selector` and `.../defaultTolerations` annotations), and
 * the API server calls APIServices and webhooks at their Pods' addresses (there is no kube-proxy
 * on the host for their Service addresses), as the front proxy with a client certificate that
 * aggregated API servers trust (their requestheader CA is the cluster CA).
 */
function realNodeApiserverFlags(
  r: NonNullable<Layout["realNode"]>,
  pki: Pki,
): string[] {
  return [
    `--kubelet-client-certificate=${r.kubeletClientCert}`,
    `--kubelet-client-key=${r.kubeletClientKey}`,
    `--kubelet-certificate-authority=${pki.caCert}`,
    "--kubelet-preferred-address-types=InternalIP",
    "--enable-admission-plugins=PodNodeSelector,PodTolerationRestriction",
    "--enable-aggregator-routing=true",
    `--proxy-client-cert-file=${r.proxyClientCert}`,
    `--proxy-client-key-file=${r.proxyClientKey}`,
  ];
}

/** Builds the command line of every component, in start order. */
export function componentSpecs(l: Layout): ComponentSpec[] {
  const { ports: p, pki, bins, dir } = l;
  const log = (n: string) => join(dir, "logs", `${n}.log`);
  const kc = kubeconfigPaths(dir);
  const etcdUrl = `http://${LOOP}:${p.etcdClient}`;
  const peerUrl = `http://${LOOP}:${p.etcdPeer}`;
  const tls = [`--tls-cert-file=${pki.servingCert}`, `--tls-private-key-file=${pki.servingKey}`];
  const delegated = (k: string) => [
    `--kubeconfig=${k}`,
    `--authentication-kubeconfig=${k}`,
    `--authorization-kubeconfig=${k}`,
    "--leader-elect=false",
    `--bind-address=${LOOP}`,
    ALLOW_PATHS,
    ...tls,
  ];
  return [
    {
      name: "etcd",
      bin: bins.etcd,
      log: log("etcd"),
      health: `${etcdUrl}/readyz`,
      args: [
        "--name=etcd0",
        `--data-dir=${l.etcdDataDir}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=etcd0=${peerUrl}`,
        "--unsafe-no-fsync",
        "--log-level=warn",
      ],
    },
    {
      name: "kube-apiserver",
      bin: bins.kubeApiserver,
      log: log("kube-apiserver"),
      health: `https://${LOOP}:${p.apiserver}/readyz`,
      args: [
        `--etcd-servers=${etcdUrl}`,
        `--bind-address=${LOOP}`,
        `--advertise-address=${LOOP}`,
        `--secure-port=${p.apiserver}`,
        "--endpoint-reconciler-type=none",
        `--cert-dir=${join(dir, "pki")}`,
        ...tls,
        `--client-ca-file=${pki.caCert}`,
        // Front-proxy settings only so delegated authn in KCM/scheduler finds a CA bundle.
        `--requestheader-client-ca-file=${pki.caCert}`,
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        `--token-auth-file=${join(internalDir(dir), "tokens.csv")}`,
        "--authorization-mode=Node,RBAC",
        "--allow-privileged=true",
        `--service-cluster-ip-range=${SERVICE_CIDR}`,
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        `--service-account-key-file=${pki.saPub}`,
        `--service-account-signing-key-file=${pki.saKey}`,
        ...(l.realNode ? realNodeApiserverFlags(l.realNode, pki) : [
          // As in envtest: kwok Pods need no ServiceAccount, nor to wait for one.
          "--disable-admission-plugins=ServiceAccount",
        ]),
        `--audit-policy-file=${join(internalDir(dir), "audit-policy.yaml")}`,
        `--audit-log-path=${auditLogPath(dir)}`,
        "--audit-log-format=json",
        "--audit-log-mode=blocking",
        // Graceful stop in ~2 s even with open watches (default waits up to 60 s).
        "--shutdown-send-retry-after=true",
      ],
    },
    {
      name: "kube-controller-manager",
      bin: bins.kubeControllerManager,
      log: log("kube-controller-manager"),
      health: `https://${LOOP}:${p.controllerManager}/healthz`,
      args: [
        ...delegated(kc.controllerManager),
        `--secure-port=${p.controllerManager}`,
        "--controllers=*",
        `--service-account-private-key-file=${pki.saKey}`,
        `--root-ca-file=${pki.caCert}`,
        "--node-monitor-period=5s",
        "--kube-api-qps=200",
        "--kube-api-burst=400",
      ],
    },
    {
      name: "kube-scheduler",
      bin: bins.kubeScheduler,
      log: log("kube-scheduler"),
      health: `https://${LOOP}:${p.scheduler}/readyz`,
      args: [
        ...delegated(kc.scheduler),
        `--secure-port=${p.scheduler}`,
        "--kube-api-qps=200",
        "--kube-api-burst=400",
      ],
    },
    {
      name: "kwok",
      bin: bins.kwok,
      log: log("kwok"),
      health: `http://${LOOP}:${p.kwok}/readyz`,
      env: { HOME: internalDir(dir) },
      args: [
        `--kubeconfig=${kc.kwok}`,
        `--config=${bins.kwokStages}`,
        ...(l.realNode
          ? [
            // Only the fake node: the real one has a kubelet. Its address is a local one, as
            // the API server dials nodes' InternalIP (for logs) once a real node exists.
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            "--node-ip=127.0.0.1",
          ]
          : ["--manage-all-nodes=true", "--node-ip=10.244.255.1"]),
        "--cidr=10.244.0.0/16",
        "--node-lease-duration-seconds=40",
        `--server-address=${LOOP}:${p.kwok}`,
      ],
    },
  ];
}
