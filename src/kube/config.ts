/**
 * Where the API server is and how to talk to it: an explicit kubeconfig (flag or KUBECONFIG), else
 * the in-cluster service account, else ~/.kube/config. Kubeconfig files are read by ./kubeconfig.ts;
 * client-node is loaded only for exec and auth-provider users (see kubeConfigAuthenticators).
 */
import {
  basicAuth,
  bearerToken,
  type Credentials,
  kubeConfigAuthenticators,
  noCredentials,
  TokenFile,
  withHeaders,
} from "./credentials.ts";
import {
  type Kubeconfig,
  KubeconfigError,
  type KubeconfigSelection,
  readKubeconfigFiles,
  selectContext,
} from "./kubeconfig.ts";
import { readSmallFileSync } from "./bounded_read.ts";

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
  /** Accept an `http://` API server (`--allow-insecure-http`); refused otherwise. */
  allowInsecureHttp?: boolean;
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
    if (path) return readSmallFileSync(path);
  } catch (err) {
    throw new ConfigError(
      `cannot read the ${what}${path ? ` ${path}` : ""}: ${(err as Error).message}`,
    );
  }
  return undefined;
}

function loadKubeconfigFiles(paths: string[]): Kubeconfig {
  for (const path of paths) {
    if (!exists(path)) {
      throw new ConfigError(`kubeconfig ${path} does not exist: set --kubeconfig or KUBECONFIG`);
    }
  }
  try {
    return readKubeconfigFiles(paths);
  } catch (err) {
    if (err instanceof KubeconfigError) throw new ConfigError(err.message);
    throw err;
  }
}

/** The selected context as a one-context kubeconfig, for client-node's authenticators. */
function singleContextConfig(sel: KubeconfigSelection): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: sel.clusterName, cluster: { server: sel.cluster?.server } }],
    users: [{ name: sel.userName, user: sel.user }],
    contexts: [{
      name: sel.contextName,
      context: { cluster: sel.clusterName, user: sel.userName },
    }],
    "current-context": sel.contextName,
  };
}

function credentialsOf(sel: KubeconfigSelection): Credentials {
  const user = sel.user;
  if (!user) return noCredentials;
  const provider = user["auth-provider"];
  const tokenFile = user.tokenFile ?? user["token-file"];
  let creds: Credentials = noCredentials;
  if (provider?.config?.tokenFile) creds = new TokenFile(provider.config.tokenFile);
  else if (user.exec || provider) creds = kubeConfigAuthenticators(singleContextConfig(sel));
  else if (user.token) creds = bearerToken(user.token);
  else if (typeof tokenFile === "string" && tokenFile) creds = new TokenFile(tokenFile);
  else if (user.username) creds = basicAuth(user.username, user.password ?? "");
  // client-node's authenticators already add impersonation.
  if (user.as && !(user.exec || provider)) {
    creds = withHeaders(creds, { "impersonate-user": user.as });
  }
  return creds;
}

/** The Connection of a kubeconfig's selected context. */
export function connectionFromSelection(sel: KubeconfigSelection, source: string): Connection {
  const cluster = sel.cluster;
  if (!cluster) throw new ConfigError(`${source}: the current context has no cluster`);
  if (!cluster.server) {
    throw new ConfigError(`${source}: cluster ${sel.clusterName} has no server`);
  }
  const skipTLSVerify = cluster["insecure-skip-tls-verify"] === true;
  const user = sel.user;
  const warnings: string[] = [];
  if (skipTLSVerify) {
    const host = new URL(cluster.server).hostname;
    warnings.push(
      `the kubeconfig sets insecure-skip-tls-verify; Deno verifies certificates per process: ` +
        `run with --unsafely-ignore-certificate-errors=${host}, or give the cluster's CA`,
    );
  }
  if (cluster["tls-server-name"]) {
    warnings.push(
      `tls-server-name ${
        cluster["tls-server-name"]
      } is ignored: Deno's HTTP client cannot override SNI`,
    );
  }
  const ca = readPem(
    cluster["certificate-authority"],
    cluster["certificate-authority-data"],
    "certificate authority",
  );
  return {
    server: cluster.server.replace(/\/+$/, ""),
    caCerts: ca ? [ca] : [],
    clientCert: readPem(
      user?.["client-certificate"],
      user?.["client-certificate-data"],
      "client certificate",
    ),
    clientKey: readPem(user?.["client-key"], user?.["client-key-data"], "client key"),
    skipTLSVerify,
    proxyUrl: cluster["proxy-url"],
    namespace: sel.context.namespace,
    credentials: credentialsOf(sel),
    source,
    warnings,
  };
}

/** The `source` of a connection made from a Pod's service account (the operator runs in a Pod). */
export const IN_CLUSTER_SOURCE = "in-cluster service account";

/** Loads the in-cluster configuration (service account token, CA, KUBERNETES_SERVICE_HOST/PORT). */
export function inClusterConnection(root = ""): Connection {
  const host = Deno.env.get("KUBERNETES_SERVICE_HOST");
  const port = Deno.env.get("KUBERNETES_SERVICE_PORT");
  if (!host || !port) {
    throw new ConfigError(
      "not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set",
    );
  }
  // Ports 80, 8080 and 8001 mean plain HTTP in client-node's in-cluster rule (client-go always
  // uses HTTPS); loadConnection refuses it unless allowed, which is clearer than a TLS error.
  const scheme = ["80", "8080", "8001"].includes(port) ? "http" : "https";
  const sa = `${root}${SERVICE_ACCOUNT_DIR}`;
  const ca = readPem(`${sa}/ca.crt`, undefined, "certificate authority");
  const conn: Connection = {
    // Only an IPv6 address has colons (host names and IPv4 addresses cannot).
    server: `${scheme}://${host.includes(":") ? `[${host}]` : host}:${port}`,
    caCerts: ca ? [ca] : [],
    skipTLSVerify: false,
    credentials: new TokenFile(`${sa}/token`),
    source: IN_CLUSTER_SOURCE,
    warnings: [],
  };
  const namespaceFile = `${root}${SERVICE_ACCOUNT_DIR}/namespace`;
  if (exists(namespaceFile)) conn.namespace = readSmallFileSync(namespaceFile).trim();
  return conn;
}

/**
 * Refuses a plain-HTTP server unless `allowed`: the credentials and every object would cross the
 * network readable and alterable by anyone on the path. Allowed, it stays as a warning.
 */
function checkScheme(conn: Connection, allowed: boolean): Connection {
  if (new URL(conn.server).protocol !== "http:") return conn;
  if (!allowed) {
    throw new ConfigError(
      `${conn.source}: the API server ${conn.server} is plain HTTP, so its credentials and every ` +
        `object would cross the network unencrypted: use an https:// server, or run with ` +
        `--allow-insecure-http (PLATFORM_OPERATOR_ALLOW_INSECURE_HTTP=true) to accept it`,
    );
  }
  conn.warnings.push(
    `the API server ${conn.server} is plain HTTP (allowed by --allow-insecure-http): ` +
      `credentials and objects cross the network unencrypted`,
  );
  return conn;
}

/**
 * Finds and loads the configuration: `kubeconfig` if given, else the in-cluster service account when
 * running in a Pod, else ~/.kube/config. Throws ConfigError with what to do when none is usable,
 * and for a plain-HTTP server unless `opts.allowInsecureHttp`.
 */
export function loadConnection(opts: ConnectionOptions = {}): Connection {
  return checkScheme(findConnection(opts), opts.allowInsecureHttp === true);
}

function findConnection(opts: ConnectionOptions): Connection {
  const root = opts.inClusterRoot ?? "";
  let kc: Kubeconfig;
  let source: string;
  if (opts.kubeconfig) {
    const paths = opts.kubeconfig.split(":").filter((p) => p);
    kc = loadKubeconfigFiles(paths);
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
    kc = loadKubeconfigFiles([path]);
    source = `kubeconfig ${path}`;
  }
  const name = opts.context ?? kc.currentContext;
  const selected = name === undefined ? undefined : selectContext(kc, name);
  if (opts.context && !selected) {
    const known = [...kc.contexts.keys()].join(", ") || "none";
    throw new ConfigError(`context ${opts.context} is not in ${source} (contexts: ${known})`);
  }
  if (!selected) throw new ConfigError(`${source} has no current-context: pass --context`);
  return connectionFromSelection(selected, `${source} (context ${selected.contextName})`);
}
