/**
 * Where the API server is and how to talk to it, loaded with client-node's KubeConfig: an explicit
 * kubeconfig (flag or KUBECONFIG), else the in-cluster service account, else ~/.kube/config.
 */
import { KubeConfig } from "@kubernetes/client-node";
import {
  basicAuth,
  bearerToken,
  type Credentials,
  kubeConfigAuthenticators,
  noCredentials,
  TokenFile,
  withHeaders,
} from "./credentials.ts";

/** The service account mount of a Pod. */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** Everything needed to reach and authenticate to one API server. */
export interface Connection {
  /** Base URL without a trailing slash, e.g. `https://10.96.0.1:443`. */
  server: string;
  /** Extra trusted CAs (PEM). */
  caCerts: string[];
  /** Client certificate and key (PEM), for certificate authentication. */
  clientCert?: string;
  clientKey?: string;
  /** The kubeconfig asks to skip TLS verification (see `warnings`). */
  skipTLSVerify: boolean;
  proxyUrl?: string;
  /** The context's default namespace, or the service account's namespace in a cluster. */
  namespace?: string;
  credentials: Credentials;
  /** Where it came from, for logs: `kubeconfig /path (context x)` or `in-cluster service account`. */
  source: string;
  /** Things the user should know (settings Deno cannot honour); the caller logs them. */
  warnings: string[];
}

/** How to find the configuration. */
export interface ConnectionOptions {
  /** Kubeconfig path, or several joined with `:` (as KUBECONFIG); wins over everything else. */
  kubeconfig?: string;
  /** Context to use instead of the kubeconfig's current-context. */
  context?: string;
  /** Prefix of the service account mount, for tests; "" in a real Pod. */
  inClusterRoot?: string;
  /** Home directory holding `.kube/config`; defaults to $HOME. */
  home?: string;
}

/** A configuration that cannot be used; the message says what to fix. */
export class ConfigError extends Error {
  /** `message` names the file or setting and what to do. */
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

function readPem(
  path: string | undefined,
  data: string | undefined,
  what: string,
): string | undefined {
  try {
    if (data) return new TextDecoder().decode(Uint8Array.from(atob(data), (c) => c.charCodeAt(0)));
    if (path) return Deno.readTextFileSync(path);
  } catch (err) {
    throw new ConfigError(
      `cannot read the ${what}${path ? ` ${path}` : ""}: ${(err as Error).message}`,
    );
  }
  return undefined;
}

/** Merges like kubectl does for KUBECONFIG lists: the first file to name an entry wins. */
function mergeFirstWins(into: KubeConfig, from: KubeConfig): void {
  from.getClusters().forEach((c) => into.getCluster(c.name) || into.addCluster(c));
  from.getUsers().forEach((u) => into.getUser(u.name) || into.addUser(u));
  from.getContexts().forEach((c) => into.getContextObject(c.name) || into.addContext(c));
  if (!into.getCurrentContext() && from.getCurrentContext()) {
    into.setCurrentContext(from.getCurrentContext());
  }
}

function loadKubeConfigFiles(paths: string[]): KubeConfig {
  const kc = new KubeConfig();
  paths.forEach((path, i) => {
    if (!exists(path)) {
      throw new ConfigError(`kubeconfig ${path} does not exist: set --kubeconfig or KUBECONFIG`);
    }
    const one = i === 0 ? kc : new KubeConfig();
    try {
      one.loadFromFile(path);
    } catch (err) {
      throw new ConfigError(`kubeconfig ${path} cannot be read: ${(err as Error).message}`);
    }
    if (one !== kc) mergeFirstWins(kc, one);
  });
  return kc;
}

function credentialsOf(kc: KubeConfig): Credentials {
  const user = kc.getCurrentUser();
  if (!user) return noCredentials;
  const provider = user.authProvider as
    | { name?: string; config?: { tokenFile?: string } }
    | undefined;
  let creds: Credentials = noCredentials;
  if (provider?.config?.tokenFile) creds = new TokenFile(provider.config.tokenFile);
  else if (user.exec || provider) creds = kubeConfigAuthenticators(kc);
  else if (user.token) creds = bearerToken(user.token);
  else if (user.username) creds = basicAuth(user.username, user.password ?? "");
  // kubeConfigAuthenticators already adds impersonation.
  if (user.impersonateUser && !(user.exec || provider)) {
    creds = withHeaders(creds, { "impersonate-user": user.impersonateUser });
  }
  return creds;
}

/** The Connection of a loaded KubeConfig's current context. */
export function connectionFromKubeConfig(kc: KubeConfig, source: string): Connection {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new ConfigError(`${source}: the current context has no cluster`);
  const user = kc.getCurrentUser();
  const warnings: string[] = [];
  if (cluster.skipTLSVerify) {
    const host = new URL(cluster.server).hostname;
    warnings.push(
      `the kubeconfig sets insecure-skip-tls-verify; Deno verifies certificates per process: ` +
        `run with --unsafely-ignore-certificate-errors=${host}, or give the cluster's CA`,
    );
  }
  if (cluster.tlsServerName) {
    warnings.push(
      `tls-server-name ${cluster.tlsServerName} is ignored: Deno's HTTP client cannot override SNI`,
    );
  }
  const ca = readPem(cluster.caFile, cluster.caData, "certificate authority");
  const contextName = kc.getCurrentContext();
  const context = kc.getContextObject(contextName);
  return {
    server: cluster.server.replace(/\/+$/, ""),
    caCerts: ca ? [ca] : [],
    clientCert: readPem(user?.certFile, user?.certData, "client certificate"),
    clientKey: readPem(user?.keyFile, user?.keyData, "client key"),
    skipTLSVerify: cluster.skipTLSVerify,
    proxyUrl: cluster.proxyUrl,
    namespace: context?.namespace,
    credentials: credentialsOf(kc),
    source,
    warnings,
  };
}

/** Loads the in-cluster configuration (service account token, CA, KUBERNETES_SERVICE_HOST/PORT). */
export function inClusterConnection(root = ""): Connection {
  const host = Deno.env.get("KUBERNETES_SERVICE_HOST");
  const port = Deno.env.get("KUBERNETES_SERVICE_PORT");
  if (!host || !port) {
    throw new ConfigError(
      "not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set",
    );
  }
  const kc = new KubeConfig();
  kc.loadFromCluster(root);
  const conn = connectionFromKubeConfig(kc, "in-cluster service account");
  const namespaceFile = `${root}${SERVICE_ACCOUNT_DIR}/namespace`;
  if (exists(namespaceFile)) conn.namespace = Deno.readTextFileSync(namespaceFile).trim();
  return conn;
}

/**
 * Finds and loads the configuration: `kubeconfig` if given, else the in-cluster service account when
 * running in a Pod, else ~/.kube/config. Throws ConfigError with what to do when none is usable.
 */
export function loadConnection(opts: ConnectionOptions = {}): Connection {
  const root = opts.inClusterRoot ?? "";
  let kc: KubeConfig;
  let source: string;
  if (opts.kubeconfig) {
    const paths = opts.kubeconfig.split(":").filter((p) => p);
    kc = loadKubeConfigFiles(paths);
    source = `kubeconfig ${paths.join(":")}`;
  } else if (
    Deno.env.get("KUBERNETES_SERVICE_HOST") && exists(`${root}${SERVICE_ACCOUNT_DIR}/token`)
  ) {
    if (opts.context) {
      throw new ConfigError(
        "--context needs a kubeconfig; in a cluster the service account is used",
      );
    }
    return inClusterConnection(root);
  } else {
    const home = opts.home ?? Deno.env.get("HOME");
    const path = home ? `${home}/.kube/config` : undefined;
    if (!path || !exists(path)) {
      throw new ConfigError(
        "no Kubernetes configuration found: set --kubeconfig or KUBECONFIG, or run in a cluster with a service account",
      );
    }
    kc = loadKubeConfigFiles([path]);
    source = `kubeconfig ${path}`;
  }
  if (opts.context) {
    if (!kc.getContextObject(opts.context)) {
      const known = kc.getContexts().map((c) => c.name).join(", ") || "none";
      throw new ConfigError(`context ${opts.context} is not in ${source} (contexts: ${known})`);
    }
    kc.setCurrentContext(opts.context);
  }
  if (!kc.getCurrentContext() || !kc.getContextObject(kc.getCurrentContext())) {
    throw new ConfigError(`${source} has no current-context: pass --context`);
  }
  return connectionFromKubeConfig(kc, `${source} (context ${kc.getCurrentContext()})`);
}
