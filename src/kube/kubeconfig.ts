/**
 * Reads kubeconfig files: parses each with `yaml`, merges a KUBECONFIG-style list as kubectl does
 * (the first file to name a cluster, user or context wins; the first current-context wins) and
 * picks one context. File references are made absolute against the directory of the file that
 * defines them, as kubectl does. No I/O beyond reading the listed files.
 */
import { readSmallFileSync } from "./bounded_read.ts";

/** A `clusters[].cluster` entry, with `certificate-authority` made absolute. */
export interface KubeconfigCluster {
  server?: string;
  "certificate-authority"?: string;
  "certificate-authority-data"?: string;
  "insecure-skip-tls-verify"?: boolean;
  "tls-server-name"?: string;
  "proxy-url"?: string;
  [key: string]: unknown;
}

/** A `users[].user` entry, with `client-certificate`, `client-key` and `tokenFile` made absolute. */
export interface KubeconfigUser {
  token?: string;
  tokenFile?: string;
  "client-certificate"?: string;
  "client-certificate-data"?: string;
  "client-key"?: string;
  "client-key-data"?: string;
  username?: string;
  password?: string;
  as?: string;
  exec?: Record<string, unknown>;
  "auth-provider"?: { name?: string; config?: Record<string, string> };
  [key: string]: unknown;
}

/** A `contexts[].context` entry. */
export interface KubeconfigContext {
  cluster?: string;
  user?: string;
  namespace?: string;
}

/** The merged files: entries by name, first file wins. */
export interface Kubeconfig {
  clusters: Map<string, KubeconfigCluster>;
  users: Map<string, KubeconfigUser>;
  contexts: Map<string, KubeconfigContext>;
  currentContext?: string;
}

/** One context with what it names; `cluster` and `user` are undefined when not defined. */
export interface KubeconfigSelection {
  contextName: string;
  context: KubeconfigContext;
  clusterName?: string;
  cluster?: KubeconfigCluster;
  userName?: string;
  user?: KubeconfigUser;
}

/** A kubeconfig file that cannot be read or parsed; the message names the file. */
export class KubeconfigError extends Error {
  /** `message` names the file and what is wrong. */
  constructor(message: string) {
    super(message);
    this.name = "KubeconfigError";
  }
}

/**
 * A kubeconfig file is YAML but no YAML parser is loaded: import `kubeconfig_yaml.ts` (the CLI does
 * when it meets one) and read it again. JSON kubeconfigs (a subset of YAML) need no parser.
 */
export class YamlNotLoaded extends Error {
  /** `path`: the file that is YAML. */
  constructor(readonly path: string) {
    super(`kubeconfig ${path} is YAML: import src/kube/kubeconfig_yaml.ts to read it`);
    this.name = "YamlNotLoaded";
  }
}

/**
 * The YAML parser, once registered. Not imported here: the operator in a cluster reads no
 * kubeconfig, and loading the parser (with Node's compatibility layer) costs it about 15 MB.
 */
let parseYaml: ((text: string) => unknown) | undefined;

/** Registers the YAML parser kubeconfig files are read with (kubeconfig_yaml.ts does). */
export function useYamlParser(parse: (text: string) => unknown): void {
  parseYaml = parse;
}

/** A file's document: JSON when it is JSON, else YAML (throws YamlNotLoaded without a parser). */
function parseDocument(text: string, path: string): unknown {
  const start = text.trimStart();
  if (start === "") return null;
  if (start.startsWith("{") && !parseYaml) return JSON.parse(text);
  if (!parseYaml) throw new YamlNotLoaded(path);
  return parseYaml(text);
}

type Named = { name?: unknown; [key: string]: unknown };

const CLUSTER_PATHS = ["certificate-authority"];
const USER_PATHS = ["client-certificate", "client-key", "tokenFile", "token-file"];

// POSIX paths, as kubectl resolves them on Linux and macOS. Not node:path: loading Node's
// compatibility layer for three functions cost the operator about 5 MB of memory.
function isAbsolute(path: string): boolean {
  return path.startsWith("/");
}

/** `path` made absolute against `dir` (itself absolute or relative to the working directory), `.` and `..` resolved. */
function resolve(dir: string, path = ""): string {
  const joined = isAbsolute(path)
    ? path
    : `${isAbsolute(dir) ? dir : `${Deno.cwd()}/${dir}`}/${path}`;
  const parts: string[] = [];
  for (const part of joined.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") parts.pop();
    else parts.push(part);
  }
  return `/${parts.join("/")}`;
}

function dirname(path: string): string {
  const i = path.lastIndexOf("/");
  return i <= 0 ? "/" : path.slice(0, i);
}

function absolute<T extends Record<string, unknown>>(entry: T, keys: string[], dir: string): T {
  const out: Record<string, unknown> = { ...entry };
  for (const key of keys) {
    const value = out[key];
    if (typeof value === "string" && value && !isAbsolute(value)) out[key] = resolve(dir, value);
  }
  return out as T;
}

function entries(doc: Record<string, unknown>, list: string, field: string, path: string): Named[] {
  const value = doc[list];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new KubeconfigError(`kubeconfig ${path}: ${list} is not a list`);
  return value.map((item, i) => {
    const entry = item as Named | null;
    if (!entry || typeof entry.name !== "string" || !entry.name) {
      throw new KubeconfigError(`kubeconfig ${path}: ${list}[${i}].name is missing`);
    }
    const body = entry[field];
    if (body !== undefined && body !== null && typeof body !== "object") {
      throw new KubeconfigError(`kubeconfig ${path}: ${list}[${i}].${field} is not a map`);
    }
    return entry;
  });
}

/** Parses one file's text; `path` is used for relative references and messages. */
export function parseKubeconfig(text: string, path: string): Kubeconfig {
  let doc: unknown;
  try {
    doc = parseDocument(text, path);
  } catch (err) {
    if (err instanceof YamlNotLoaded) throw err;
    throw new KubeconfigError(`kubeconfig ${path} cannot be read: ${(err as Error).message}`);
  }
  if (doc === null || doc === undefined) doc = {};
  if (typeof doc !== "object" || Array.isArray(doc)) {
    throw new KubeconfigError(`kubeconfig ${path} cannot be read: it is not a YAML map`);
  }
  const d = doc as Record<string, unknown>;
  const dir = dirname(resolve(path));
  const config: Kubeconfig = { clusters: new Map(), users: new Map(), contexts: new Map() };
  // Within one file a repeated name is an error for kubectl; the first one is kept here.
  for (const e of entries(d, "clusters", "cluster", path)) {
    const body = (e.cluster ?? {}) as KubeconfigCluster;
    if (!config.clusters.has(e.name as string)) {
      config.clusters.set(e.name as string, absolute(body, CLUSTER_PATHS, dir));
    }
  }
  for (const e of entries(d, "users", "user", path)) {
    const body = (e.user ?? {}) as KubeconfigUser;
    if (!config.users.has(e.name as string)) {
      config.users.set(e.name as string, absolute(body, USER_PATHS, dir));
    }
  }
  for (const e of entries(d, "contexts", "context", path)) {
    const body = (e.context ?? {}) as KubeconfigContext;
    if (!config.contexts.has(e.name as string)) config.contexts.set(e.name as string, body);
  }
  const current = d["current-context"];
  if (typeof current === "string" && current) config.currentContext = current;
  return config;
}

/** Merges like kubectl does for KUBECONFIG lists: the first file to name an entry wins. */
export function mergeKubeconfigs(configs: readonly Kubeconfig[]): Kubeconfig {
  const merged: Kubeconfig = { clusters: new Map(), users: new Map(), contexts: new Map() };
  for (const c of configs) {
    for (const [name, v] of c.clusters) {
      if (!merged.clusters.has(name)) merged.clusters.set(name, v);
    }
    for (const [name, v] of c.users) if (!merged.users.has(name)) merged.users.set(name, v);
    for (const [name, v] of c.contexts) {
      if (!merged.contexts.has(name)) merged.contexts.set(name, v);
    }
    merged.currentContext ??= c.currentContext;
  }
  return merged;
}

/** Reads and merges the files of a KUBECONFIG-style list (already split on `:`). */
export function readKubeconfigFiles(paths: readonly string[]): Kubeconfig {
  return mergeKubeconfigs(paths.map((path) => {
    let text: string;
    try {
      text = readSmallFileSync(path);
    } catch (err) {
      throw new KubeconfigError(`kubeconfig ${path} cannot be read: ${(err as Error).message}`);
    }
    return parseKubeconfig(text, path);
  }));
}

/** The context `name` and the cluster and user it names, or undefined when there is no such context. */
export function selectContext(config: Kubeconfig, name: string): KubeconfigSelection | undefined {
  const context = config.contexts.get(name);
  if (!context) return undefined;
  return {
    contextName: name,
    context,
    clusterName: context.cluster,
    cluster: context.cluster === undefined ? undefined : config.clusters.get(context.cluster),
    userName: context.user,
    user: context.user === undefined ? undefined : config.users.get(context.user),
  };
}
