/**
 * The flags of `mod.ts run`, as data: each has its environment variables, default and help, so
 * `--help`, the README and the compiled binary's `--allow-env` list all come from this table.
 */
import type { ModuleImages } from "../api/images.ts";
import { DEFAULT_IMAGES } from "../reconcile/images.ts";
export { DEFAULT_IMAGES };
import {
  DEFAULT_CONCURRENCY,
  DEFAULT_LEASE_NAME,
  DEFAULT_NAMESPACE,
  LOG_FORMATS,
  LOG_LEVELS,
  type LogFormat,
  type LogLevel,
  MAX_CONCURRENCY,
  parseLogFormat,
  parseLogLevel,
} from "../runtime/mod.ts";
import { CONTROLLER_NAMES, type ControllerName } from "../controllers/registry.ts";
import { ISTIO_ROOT_NAMESPACE } from "../api/mesh.ts";
import { ENGINE_XDS, GLOBAL_ENGINE_SERVICE } from "../api/global_engine.ts";
import { DEFAULT_ENGINE_IMAGE, isImageReference } from "../api/images.ts";
import { canonicalQuantity, compareQuantities, parseQuantity } from "../api/quantity.ts";
import {
  DEFAULT_ENGINE_REPLICAS,
  DEFAULT_ENGINE_RESOURCES,
  type EngineResources,
  MAX_ENGINE_REPLICAS,
} from "../reconcile/engine/sizing.ts";
import { parseFlags } from "./flags.ts";
import { type ServiceRef, serviceRefText } from "../kube/istiod_endpoints.ts";
import { commandUsage } from "./usage.ts";
import { parseListenAddr } from "./run_http.ts";
import { DNS_LABEL, DNS_SUBDOMAIN, followsRule } from "../api/names.ts";

function parseNamespace(flag: string, value: string): string {
  if (followsRule(value, DNS_LABEL)) return value;
  throw new Error(`invalid --${flag} ${JSON.stringify(value)}: use a namespace name (a DNS label)`);
}

/**
 * A Lease's name: a DNS-1123 subdomain as Kubernetes checks it (apimachinery's
 * IsDNS1123Subdomain): dot-separated labels of lower case alphanumerics and '-', each starting and
 * ending alphanumeric, at most 253 characters in all.
 */
function parseLeaseName(flag: string, value: string): string {
  if (followsRule(value, DNS_SUBDOMAIN)) return value;
  throw new Error(
    `invalid --${flag} ${
      JSON.stringify(value)
    }: use a Lease name (a DNS subdomain: lower case letters, digits, '-' and '.', at most 253 characters, starting and ending with a letter or digit)`,
  );
}

/**
 * A value that must not be empty; `use` says what to give instead. (Values are quoted as JSON in
 * messages, so a control character cannot break the one line of an error.)
 */
function parseRequired(flag: string, value: string, use: string): string {
  if (value !== "") return value;
  throw new Error(`invalid --${flag} "": use ${use}`);
}

/** An image reference (`isImageReference`); `example` is one, shown when the value is not. */
function parseImage(flag: string, value: string, example: string): string {
  if (isImageReference(value)) return value;
  throw new Error(
    `invalid --${flag} ${
      JSON.stringify(value)
    }: use an image reference, [registry/]name[:tag][@digest] (e.g. ${example})`,
  );
}

/** True for an IPv6 address as written between the brackets of a URL's host. */
function isIpv6(text: string): boolean {
  if (!/^[0-9a-fA-F:.]+$/.test(text)) return false;
  try {
    new URL(`http://[${text}]/`);
    return true;
  } catch {
    return false;
  }
}

/** True for a DNS name (labels of letters, digits and '-') or an IPv4 address. */
function isHostName(text: string): boolean {
  const labels = text.split(".");
  if (labels.every((l) => /^\d+$/.test(l))) {
    return labels.length === 4 && labels.every((l) => l.length <= 3 && Number(l) <= 255);
  }
  return text.length <= 253 &&
    labels.every((l) => /^[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?$/.test(l));
}

/** `host:port` to dial: a DNS name, an IPv4 address or a bracketed IPv6 one; the port 1 to 65535. */
function parseHostPort(flag: string, value: string): string {
  const m = /^(?:\[([^\]]*)\]|([^:[\]]*)):(\d{1,5})$/.exec(value);
  const port = Number(m?.[3]);
  const hostOk = m?.[1] !== undefined ? isIpv6(m[1]) : m?.[2] !== undefined && isHostName(m[2]);
  if (m && hostOk && port >= 1 && port <= 65535) return value;
  throw new Error(
    `invalid --${flag} ${
      JSON.stringify(value)
    }: use host:port with a port from 1 to 65535 (an IPv6 host in brackets, e.g. [fd00::1]:18001)`,
  );
}

/** Everything `run` is configured with. */
export interface RunOptions {
  kubeconfig?: string;
  context?: string;
  allowInsecureHttp: boolean;
  leaseNamespace: string;
  leaseName: string;
  leaderElect: boolean;
  metricsAddr: string;
  probeAddr: string;
  logLevel: LogLevel;
  logFormat: LogFormat;
  images: ModuleImages;
  controllers: ControllerName[];
  /** RateLimit reconciles at once (the module controllers reconcile one object at a time). */
  concurrency: number;
  /** The mesh's config root namespace (Istio's `meshConfig.rootNamespace`). */
  meshRootNamespace: string;
  /** Base URLs of istiod's monitoring port, one per replica; none: istiod is not asked. */
  istiodUrls: string[];
  /** istiod's Services, whose EndpointSlices give its replicas (exclusive with `istiodUrls`). */
  istiodServices: ServiceRef[];
  /** The token (audience istio-ca) the operator shows istiod. */
  istiodTokenFile: string;
  /**
   * Where the operator looks up the names KEDA's Pods dial (the Scaler's cluster DNS check):
   * `auto`, its Pod's resolver when it runs in a Pod, else nowhere; `off`; or a DNS server.
   */
  clusterDns: ClusterDnsSetting;
  identity?: string;
  /** The Redis Secret of the global rate limit engine; undefined: the engine is not deployed. */
  globalRedisSecret?: { namespace: string; name: string };
  /** The port this replica serves the engines' configuration on (xDS); 0: any free port. */
  globalEngineXdsPort: number;
  /** What the engines dial for their configuration; undefined: the operator's xDS Service. */
  globalEngineXdsUrl?: string;
  /** The xDS server's TLS files; undefined: cleartext (then no `globalEngineXdsTlsSecret`). */
  globalEngineXdsTls?: { certFile?: string; keyFile?: string; clientCaFile?: string };
  /** The engines' Secret for TLS to the xDS server (its CA, their client certificate). */
  globalEngineXdsTlsSecret?: { namespace: string; name: string };
  /** The name the engines check the operator's certificate for; undefined: the host they dial. */
  globalEngineXdsTlsServerName?: string;
  /** The engine's image. */
  globalEngineImage: string;
  /** How many engine Pods run. */
  globalEngineReplicas: number;
  /** Each engine container's requests and limits. */
  globalEngineResources: EngineResources;
}

/** The `--cluster-dns` setting: where the operator asks cluster DNS, if anywhere. */
export type ClusterDnsSetting =
  | { kind: "auto" }
  | { kind: "off" }
  | { kind: "server"; ipAddr: string; port: number };

function parseClusterDns(flag: string, value: string): ClusterDnsSetting {
  if (value === "auto" || value === "off") return { kind: value };
  const m = /^(\d{1,3}(?:\.\d{1,3}){3})(?::(\d{1,5}))?$/.exec(value);
  const port = m?.[2] === undefined ? 53 : Number(m[2]);
  if (m && m[1].split(".").every((b) => Number(b) <= 255) && port >= 1 && port <= 65535) {
    return { kind: "server", ipAddr: m[1], port };
  }
  throw new Error(
    `invalid --${flag} "${value}": use auto, off, or a DNS server's IPv4 address[:port] (e.g. 10.96.0.10)`,
  );
}

/** One flag: `--name`, its variables (first set wins), default and help. */
export interface OperatorFlag {
  name: string;
  /** Variables read when the flag is absent, in order; `PLATFORM_OPERATOR_<FLAG>` is always first. */
  env: string[];
  help: string;
  default?: string;
  boolean?: boolean;
  /** Stores the parsed value; throws a message naming the allowed values. */
  set(opts: RunOptions, value: string): void;
}

/** `PLATFORM_OPERATOR_LEASE_NAMESPACE` for `lease-namespace`. */
export function envName(flag: string): string {
  return `PLATFORM_OPERATOR_${flag.toUpperCase().replaceAll("-", "_")}`;
}

function parseBool(flag: string, value: string): boolean {
  if (/^(true|1|yes)$/i.test(value)) return true;
  if (/^(false|0|no)$/i.test(value)) return false;
  throw new Error(`invalid --${flag} "${value}": use true or false`);
}

function parseAddr(flag: string, value: string): string {
  const m = /^(?:[^:\s]*|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(value);
  if (value === "0" || (m && Number(m[1]) <= 65535)) return value;
  throw new Error(
    `invalid --${flag} ${
      JSON.stringify(value)
    }: use [host]:port with a port from 0 to 65535 (e.g. :8080), or 0 to turn it off`,
  );
}

/** Hosts that listen on every address: a port there is taken on every other host too. */
const WILDCARD_HOSTS: readonly string[] = ["0.0.0.0", "::"];

/**
 * Why --metrics-addr and --probe-addr cannot both listen (the same port, not 0, on the same host
 * or where either is a wildcard), or "".
 */
function sharedListenPort(o: RunOptions): string {
  if (o.metricsAddr === "0" || o.probeAddr === "0") return "";
  const [m, p] = [parseListenAddr(o.metricsAddr), parseListenAddr(o.probeAddr)];
  const [mh, ph] = [m.hostname.toLowerCase(), p.hostname.toLowerCase()];
  const overlap = mh === ph || WILDCARD_HOSTS.includes(mh) || WILDCARD_HOSTS.includes(ph);
  if (m.port === 0 || m.port !== p.port || !overlap) return "";
  return `--metrics-addr "${o.metricsAddr}" and --probe-addr "${o.probeAddr}" both listen on port ${m.port}: give them different ports, or 0 to turn one off`;
}

function parsePort(flag: string, value: string): number {
  const n = Number(value);
  if (/^\d{1,5}$/.test(value) && n <= 65535) return n;
  throw new Error(`invalid --${flag} "${value}": use a port number from 0 to 65535`);
}

/** A count from 1 to `max`, written in at most `digits` digits. */
function parseCount(flag: string, value: string, max: number, digits: number): number {
  const n = Number(value);
  if (new RegExp(`^\\d{1,${digits}}$`).test(value) && n >= 1 && n <= max) return n;
  throw new Error(`invalid --${flag} "${value}": use a number from 1 to ${max}`);
}

/** `cpu=100m,memory=64Mi` as a resource list: cpu and memory only, each a Kubernetes quantity. */
function parseResourceList(flag: string, value: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of value.split(",").map((s) => s.trim()).filter((s) => s)) {
    const [name, q, ...rest] = part.split("=");
    const canonical = q === undefined || rest.length > 0 ? undefined : canonicalQuantity(q);
    if ((name !== "cpu" && name !== "memory") || !canonical || name in out) {
      throw new Error(
        `invalid --${flag} "${value}": use cpu=QUANTITY,memory=QUANTITY (e.g. cpu=100m,memory=64Mi), each at most once`,
      );
    }
    if (parseQuantity(q)!.n < 0n) {
      throw new Error(
        `invalid --${flag} "${value}": ${name}=${q} is negative; use quantities of 0 or more`,
      );
    }
    out[name] = canonical;
  }
  return out;
}

/** `cpu=100m,memory=64Mi` for a resource list (the flags' defaults). */
function resourceListText(list: Readonly<Record<string, string>>): string {
  return Object.entries(list).map(([k, v]) => `${k}=${v}`).join(",");
}

/** Why the engine's requests exceed its limits (the API server would refuse its Pods), or "". */
function requestsOverLimits(r: EngineResources): string {
  for (const [name, request] of Object.entries(r.requests)) {
    const limit = r.limits[name];
    if (limit === undefined) continue;
    const [a, b] = [parseQuantity(request), parseQuantity(limit)];
    if (a && b && compareQuantities(a, b) > 0) {
      return `--global-engine-requests ${name}=${request} is over --global-engine-limits ${name}=${limit}`;
    }
  }
  return "";
}

function parseUrls(flag: string, value: string): string[] {
  const urls = value.split(",").map((s) => s.trim()).filter((s) => s);
  for (const u of urls) {
    let url: URL | undefined;
    try {
      url = new URL(u);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || url.search !== "") {
      throw new Error(
        `invalid --${flag} "${u}": use http(s)://host:port of istiod's monitoring port`,
      );
    }
  }
  return urls;
}

function parseServices(flag: string, value: string): ServiceRef[] {
  const dns = (s: string | undefined) => followsRule(s ?? "", DNS_LABEL);
  const refs = value.split(",").map((s) => s.trim()).filter((s) => s).map((s) => {
    const [namespace, name, ...rest] = s.split("/");
    if (rest.length > 0 || !dns(namespace) || !dns(name)) {
      throw new Error(
        `invalid --${flag} "${s}": use namespace/name of istiod's Service, e.g. istio-system/istiod`,
      );
    }
    return { namespace, name };
  });
  return refs.filter((r, i) =>
    refs.findIndex((x) => serviceRefText(x) === serviceRefText(r)) === i
  );
}

function parseSecretRef(
  flag: string,
  value: string,
  what = "the Redis Secret",
  example = "redis",
): { namespace: string; name: string } {
  const [namespace, name, ...rest] = value.split("/");
  if (
    rest.length > 0 || !followsRule(namespace ?? "", DNS_LABEL) ||
    !followsRule(name ?? "", DNS_SUBDOMAIN)
  ) {
    throw new Error(
      `invalid --${flag} "${value}": use namespace/name of ${what}, e.g. ${GLOBAL_ENGINE_SERVICE.namespace}/${example}`,
    );
  }
  if (namespace !== GLOBAL_ENGINE_SERVICE.namespace) {
    throw new Error(
      `invalid --${flag} "${value}": the Secret must be in namespace ${GLOBAL_ENGINE_SERVICE.namespace}, where the engine's Pods read its passwords and certificates`,
    );
  }
  return { namespace, name };
}

function parseControllers(value: string): ControllerName[] {
  const names = value.split(",").map((s) => s.trim()).filter((s) => s);
  const bad = names.filter((n) => !(CONTROLLER_NAMES as readonly string[]).includes(n));
  if (bad.length > 0 || names.length === 0) {
    throw new Error(
      `invalid --controllers "${value}": use a comma-separated list of ${
        CONTROLLER_NAMES.join(", ")
      }`,
    );
  }
  return CONTROLLER_NAMES.filter((n) => names.includes(n));
}

const flag = (
  name: string,
  help: string,
  set: OperatorFlag["set"],
  extra: Partial<Pick<OperatorFlag, "default" | "boolean">> & { env?: string[] } = {},
): OperatorFlag => ({ name, help, set, ...extra, env: [envName(name), ...(extra.env ?? [])] });

const image = (name: string, key: keyof ModuleImages, env: string, what: string) =>
  flag(name, `image of ${what}`, (o, v) => {
    o.images = { ...o.images, [key]: parseImage(name, v, DEFAULT_IMAGES[key]) };
  }, { env: [env], default: DEFAULT_IMAGES[key] });

/** The xDS server's TLS file flags: where the operator's Pod has them mounted. */
function xdsTlsFileFlags(): OperatorFlag[] {
  const file = (
    name: string,
    key: "certFile" | "keyFile" | "clientCaFile",
    help: string,
  ) =>
    flag(name, help, (o, v) => {
      if (v !== "") o.globalEngineXdsTls = { ...o.globalEngineXdsTls, [key]: v };
    }, { default: "" });
  return [
    file(
      "global-engine-xds-tls-cert-file",
      "certFile",
      "the certificate (PEM) the operator serves the engines' configuration with over TLS, e.g. tls.crt of a kubernetes.io/tls Secret mounted under /etc/platform-operator (the files are read again when they change); with --global-engine-xds-tls-key-file and --global-engine-xds-tls-secret; empty: cleartext",
    ),
    file(
      "global-engine-xds-tls-key-file",
      "keyFile",
      "the key (PEM) of --global-engine-xds-tls-cert-file",
    ),
    file(
      "global-engine-xds-client-ca-file",
      "clientCaFile",
      "the CA (PEM) of the engines' client certificates: set, the xDS server accepts only connections with a certificate it signed (mutual TLS); empty: any client that completes TLS",
    ),
  ];
}

/** Why the xDS TLS flags do not go together, or "". */
function xdsTlsProblem(o: RunOptions): string {
  const t = o.globalEngineXdsTls;
  const any = t !== undefined || o.globalEngineXdsTlsSecret !== undefined ||
    o.globalEngineXdsTlsServerName !== undefined;
  if (!any) return "";
  if (!o.globalRedisSecret) {
    return "--global-engine-xds-tls-* configure TLS between the global rate limit engine and the operator: they need --global-redis-secret";
  }
  if (!t?.certFile || !t.keyFile) {
    const given = t?.certFile
      ? "--global-engine-xds-tls-cert-file"
      : t?.keyFile
      ? "--global-engine-xds-tls-key-file"
      : t?.clientCaFile
      ? "--global-engine-xds-client-ca-file"
      : o.globalEngineXdsTlsSecret
      ? "--global-engine-xds-tls-secret"
      : "--global-engine-xds-tls-server-name";
    return `${given} needs --global-engine-xds-tls-cert-file and --global-engine-xds-tls-key-file: the operator's xDS server would otherwise serve the engines in cleartext`;
  }
  if (!o.globalEngineXdsTlsSecret) {
    return "--global-engine-xds-tls-cert-file needs --global-engine-xds-tls-secret: the Secret whose ca.crt the engines check the operator's certificate with";
  }
  return "";
}

/** Where the token the operator shows istiod is mounted, unless --istiod-token-file says. */
const ISTIOD_TOKEN_FILE = "/etc/platform-operator/istiod/token";

/** Every flag of `run`, in `--help` order. */
export const RUN_FLAGS: readonly OperatorFlag[] = [
  flag(
    "kubeconfig",
    "kubeconfig file (or a KUBECONFIG-style list); default: in-cluster, then ~/.kube/config",
    (o, v) => {
      o.kubeconfig = v;
    },
    { env: ["KUBECONFIG"] },
  ),
  flag("context", "kubeconfig context to use instead of the current one", (o, v) => {
    o.context = parseRequired(
      "context",
      v,
      "a context of the kubeconfig, not empty (default: its current-context)",
    );
  }),
  flag(
    "allow-insecure-http",
    "accept an http:// API server: its credentials and objects cross the network unencrypted",
    (o, v) => {
      o.allowInsecureHttp = parseBool("allow-insecure-http", v);
    },
    { default: "false", boolean: true },
  ),
  flag(
    "leader-elect",
    "elect one active replica with a Lease; false runs as the only replica",
    (o, v) => {
      o.leaderElect = parseBool("leader-elect", v);
    },
    { default: "true", boolean: true },
  ),
  flag(
    "lease-namespace",
    "namespace of the leader election Lease and of the module claim Leases",
    (o, v) => {
      o.leaseNamespace = parseNamespace("lease-namespace", v);
    },
    { default: DEFAULT_NAMESPACE },
  ),
  flag("lease-name", "name of the leader election Lease", (o, v) => {
    o.leaseName = parseLeaseName("lease-name", v);
  }, { default: DEFAULT_LEASE_NAME }),
  flag(
    "identity",
    "this replica's name in the Lease and in Events; default: POD_NAME, else the hostname",
    (o, v) => {
      o.identity = parseRequired(
        "identity",
        v,
        "this replica's name in the Lease, not empty (default: POD_NAME, else the hostname)",
      );
    },
    { env: ["POD_NAME"] },
  ),
  flag("metrics-addr", "address of /metrics (Prometheus); 0 turns it off", (o, v) => {
    o.metricsAddr = parseAddr("metrics-addr", v);
  }, { default: ":8080" }),
  flag("probe-addr", "address of /healthz and /readyz; 0 turns it off", (o, v) => {
    o.probeAddr = parseAddr("probe-addr", v);
  }, { default: ":8081" }),
  flag("log-level", `log level: ${LOG_LEVELS.join(", ")}`, (o, v) => {
    o.logLevel = parseLogLevel(v);
  }, { default: "info" }),
  flag("log-format", `log format: ${LOG_FORMATS.join(", ")}`, (o, v) => {
    o.logFormat = parseLogFormat(v);
  }, { default: "json" }),
  flag(
    "controllers",
    `controllers to run, comma-separated: ${CONTROLLER_NAMES.join(",")}`,
    (o, v) => {
      o.controllers = parseControllers(v);
    },
    { default: CONTROLLER_NAMES.join(",") },
  ),
  flag(
    "concurrency",
    `RateLimits reconciled at once, 1 to ${MAX_CONCURRENCY} (never one RateLimit twice at once; Serverless and Scaler objects go one at a time): each reconcile waits on the API server for its two writes, so more in flight converge faster until the API server is the bottleneck`,
    (o, v) => {
      o.concurrency = parseCount("concurrency", v, MAX_CONCURRENCY, 2);
    },
    { default: String(DEFAULT_CONCURRENCY) },
  ),
  flag(
    "mesh-root-namespace",
    "the mesh's config root namespace (Istio's meshConfig.rootNamespace): its EnvoyFilters reach every namespace, so a RateLimit there may limit only the ingress gateway",
    (o, v) => {
      o.meshRootNamespace = parseNamespace("mesh-root-namespace", v);
    },
    { default: ISTIO_ROOT_NAMESPACE },
  ),
  flag(
    "istiod-url",
    "istiod's monitoring port (15014), one URL per istiod replica, comma-separated, e.g. http://istiod.istio-system.svc:15014; the operator asks each what the proxies of the selected Pods accepted (the Accepted condition); empty: it does not ask",
    (o, v) => {
      o.istiodUrls = parseUrls("istiod-url", v);
    },
    { default: "" },
  ),
  flag(
    "istiod-service",
    "istiod's Service, namespace/name (e.g. istio-system/istiod; comma-separated for several revisions): the operator watches its EndpointSlices and asks every ready replica on the port named http-monitoring (else 15014), following replicas as they come and go; needs list and watch of endpointslices in that namespace (deploy/istiod); not with --istiod-url; empty: not used",
    (o, v) => {
      o.istiodServices = parseServices("istiod-service", v);
    },
    { default: "" },
  ),
  flag(
    "istiod-token-file",
    "the token the operator shows istiod (a projected service account token with audience istio-ca), read again when it changes",
    (o, v) => {
      o.istiodTokenFile = parseRequired(
        "istiod-token-file",
        v,
        `the path of istiod's token file (default ${ISTIOD_TOKEN_FILE})`,
      );
    },
    { default: ISTIOD_TOKEN_FILE },
  ),
  flag(
    "cluster-dns",
    "where the operator looks up the name KEDA's metrics server dials to reach KEDA's operator (a Scaler is not Ready while it does not resolve): auto, its Pod's resolver when it runs in a Pod and nowhere otherwise; off; or a DNS server's address[:port] (e.g. the kube-dns Service's 10.96.0.10 for an operator run outside the cluster that can reach it)",
    (o, v) => {
      o.clusterDns = parseClusterDns("cluster-dns", v);
    },
    { default: "auto" },
  ),
  flag(
    "global-redis-secret",
    `the Redis Secret of the global rate limit engine, namespace/name (the namespace must be ${GLOBAL_ENGINE_SERVICE.namespace}; keys: docs/operations.md); the operator then deploys and keeps the engine there; empty: no engine`,
    (o, v) => {
      if (v !== "") o.globalRedisSecret = parseSecretRef("global-redis-secret", v);
    },
    { default: "" },
  ),
  flag(
    "global-engine-xds-port",
    "the port on which each operator replica serves the engines their configuration (xDS); 0: any free port",
    (o, v) => {
      o.globalEngineXdsPort = parsePort("global-engine-xds-port", v);
    },
    { default: String(ENGINE_XDS.port) },
  ),
  flag(
    "global-engine-xds-url",
    `host:port the engines dial for their configuration; empty: the operator's Service, ${ENGINE_XDS.serviceName}.<namespace>.svc:${ENGINE_XDS.port} (set it when the cluster's DNS domain or the way to the operator differs)`,
    (o, v) => {
      if (v !== "") o.globalEngineXdsUrl = parseHostPort("global-engine-xds-url", v);
    },
    { default: "" },
  ),
  ...xdsTlsFileFlags(),
  flag(
    "global-engine-xds-tls-secret",
    `the engines' Secret for TLS to the operator's xDS server, namespace/name in ${GLOBAL_ENGINE_SERVICE.namespace} (a kubernetes.io/tls Secret, e.g. cert-manager's: ca.crt, the CA that signed the operator's xDS certificate; tls.crt and tls.key, the engines' client certificate, required with --global-engine-xds-client-ca-file); required with --global-engine-xds-tls-cert-file`,
    (o, v) => {
      if (v !== "") {
        o.globalEngineXdsTlsSecret = parseSecretRef(
          "global-engine-xds-tls-secret",
          v,
          "the engines' xDS TLS Secret",
          "engine-xds-tls",
        );
      }
    },
    { default: "" },
  ),
  flag(
    "global-engine-xds-tls-server-name",
    "the name the engines require in the operator's xDS certificate (CONFIG_GRPC_XDS_SERVER_TLS_SAN); empty: the host they dial (--global-engine-xds-url)",
    (o, v) => {
      if (v === "") return;
      if (!/^[A-Za-z0-9]([-A-Za-z0-9.:]*[A-Za-z0-9])?$/.test(v)) {
        throw new Error(
          `invalid --global-engine-xds-tls-server-name "${v}": use a DNS name or an IP address`,
        );
      }
      o.globalEngineXdsTlsServerName = v;
    },
    { default: "" },
  ),
  flag("global-engine-image", "image of the global rate limit engine", (o, v) => {
    o.globalEngineImage = parseImage("global-engine-image", v, DEFAULT_ENGINE_IMAGE);
  }, { default: DEFAULT_ENGINE_IMAGE }),
  flag(
    "global-engine-replicas",
    `engine Pods to run, 1 to ${MAX_ENGINE_REPLICAS} (they share Redis's counters; two keep one serving through a restart)`,
    (o, v) => {
      o.globalEngineReplicas = parseCount("global-engine-replicas", v, MAX_ENGINE_REPLICAS, 3);
    },
    { default: String(DEFAULT_ENGINE_REPLICAS) },
  ),
  flag(
    "global-engine-requests",
    "each engine's resource requests, cpu=QUANTITY,memory=QUANTITY (empty: none)",
    (o, v) => {
      o.globalEngineResources = {
        limits: o.globalEngineResources?.limits ?? {},
        requests: parseResourceList("global-engine-requests", v),
      };
    },
    { default: resourceListText(DEFAULT_ENGINE_RESOURCES.requests) },
  ),
  flag(
    "global-engine-limits",
    "each engine's resource limits, cpu=QUANTITY,memory=QUANTITY (empty: none)",
    (o, v) => {
      o.globalEngineResources = {
        requests: o.globalEngineResources?.requests ?? {},
        limits: parseResourceList("global-engine-limits", v),
      };
    },
    { default: resourceListText(DEFAULT_ENGINE_RESOURCES.limits) },
  ),
  image(
    "serverless-image",
    "serverlessController",
    "IMAGE_SERVERLESS_CONTROLLER",
    "the Serverless controller",
  ),
  image("keda-operator-image", "kedaOperator", "IMAGE_KEDA_OPERATOR", "the KEDA operator"),
  image(
    "keda-metrics-server-image",
    "kedaMetricsServer",
    "IMAGE_KEDA_METRICS_APISERVER",
    "the KEDA metrics API server",
  ),
  image(
    "keda-webhook-image",
    "kedaAdmissionWebhooks",
    "IMAGE_KEDA_ADMISSION_WEBHOOKS",
    "the KEDA admission webhooks",
  ),
];

/** Every environment variable the flags read. */
export function flagEnvNames(): string[] {
  return RUN_FLAGS.flatMap((f) => f.env);
}

/** The `--help` text of `run`. */
export function runHelp(): string {
  const rows = RUN_FLAGS.map((f) => {
    const name = f.boolean ? `--${f.name}[=BOOL]` : `--${f.name}=VALUE`;
    const dflt = f.default ? ` (default ${f.default})` : "";
    return `  ${name}\n      ${f.help}${dflt}\n      env: ${f.env.join(", ")}`;
  });
  return [
    commandUsage("run", "[flags]", "start"),
    "",
    "Runs the operator against the cluster of the current kubeconfig, or in-cluster. A flag wins",
    "over its environment variables; the first variable set wins over the later ones.",
    "",
    "Flags:",
    ...rows,
    "  -h, --help\n      show this help",
  ].join("\n");
}

/** What parsing gave: options, a request for help, or an error message. */
export type ParsedRun = { kind: "options"; options: RunOptions } | { kind: "help" } | {
  kind: "error";
  message: string;
};

/**
 * Parses `args` and the environment (`env(name)`) into RunOptions. Flags win over variables,
 * variables over defaults.
 */
export function parseRunFlags(
  args: string[],
  env: (name: string) => string | undefined,
): ParsedRun {
  // `--leader-elect` alone means true, `--no-leader-elect` false (as in Go's flag package and kubebuilder).
  const booleans = RUN_FLAGS.filter((f) => f.boolean).map((f) => f.name);
  const normalized = args.map((arg) => {
    const name = arg.replace(/^--(no-)?/, "");
    if (!booleans.includes(name) || !arg.startsWith("--")) return arg;
    return arg.startsWith("--no-") ? `--${name}=false` : `--${name}=true`;
  });
  let parsed;
  try {
    parsed = parseFlags(
      normalized,
      Object.fromEntries(RUN_FLAGS.map((f) => [f.name, { type: "string" } as const])),
    );
  } catch (err) {
    return { kind: "error", message: (err as Error).message };
  }
  if (parsed.help) return { kind: "help" };
  const values = parsed.values;
  const opts = {
    images: { ...DEFAULT_IMAGES },
  } as RunOptions;
  try {
    for (const f of RUN_FLAGS) {
      const fromFlag = values[f.name];
      const fromEnv = f.env.map((name) => env(name)).find((v) => v !== undefined && v !== "");
      const value = typeof fromFlag === "string" ? fromFlag : fromEnv ?? f.default;
      if (value !== undefined) f.set(opts, value);
    }
  } catch (err) {
    return { kind: "error", message: (err as Error).message };
  }
  const shared = sharedListenPort(opts);
  if (shared) return { kind: "error", message: shared };
  const overLimits = requestsOverLimits(opts.globalEngineResources);
  if (overLimits) return { kind: "error", message: overLimits };
  const tls = xdsTlsProblem(opts);
  if (tls) return { kind: "error", message: tls };
  if (opts.istiodUrls.length > 0 && opts.istiodServices.length > 0) {
    return {
      kind: "error",
      message:
        "--istiod-url and --istiod-service are exclusive: give fixed URLs, or the Service whose replicas the operator finds itself",
    };
  }
  return { kind: "options", options: opts };
}
