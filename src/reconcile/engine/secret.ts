/**
 * The platform team's Redis Secret (`--global-redis-secret`), read: which Redis the global rate
 * limit engine counts in, and how it reaches it (docs/operations.md, "The global rate limit
 * engine"). Only the non-secret parts are read into the engine's Deployment as they are (the
 * address, the type, the user name, whether TLS is on); passwords reach the engine's Pods by
 * `secretKeyRef` and certificates by a Secret volume, so the operator writes no secret anywhere.
 * A Secret that does not say one complete thing is refused as a whole, with every problem named.
 */
import type { KubeObject } from "../../api/object.ts";

/** The keys of the Redis Secret. */
export const REDIS_SECRET_KEYS = {
  /** Required: `host:port`; for Sentinel `<master name>,<sentinel host:port>,...`; for Cluster `<host:port>,...`. */
  address: "address",
  /** `single` (default), `sentinel` or `cluster`. */
  type: "type",
  /** The Redis ACL user (default `default`); only with a password. */
  username: "username",
  /** The password of `username`. */
  password: "password",
  /** The Sentinels' own password (type `sentinel` only). */
  sentinelPassword: "sentinelPassword",
  /** `"true"` to speak TLS to Redis (default `"false"`). */
  tls: "tls",
  /** The CA (PEM) to check Redis's certificate with; without it, the image's roots. */
  caCert: "ca.crt",
  /** The engine's client certificate (PEM), with `tls.key`, where Redis asks for one. */
  clientCert: "tls.crt",
  /** The client certificate's key (PEM). */
  clientKey: "tls.key",
} as const;

/** The kinds of Redis the engine reaches (envoyproxy/ratelimit `REDIS_TYPE`). */
export const REDIS_TYPES = ["single", "sentinel", "cluster"] as const;
/** A kind of Redis. */
export type RedisType = typeof REDIS_TYPES[number];

/** The user the engine names when the Secret names none (Redis's own default user). */
export const DEFAULT_REDIS_USER = "default";

/** What a valid Secret says: literal parts, and which secret keys are there. */
export interface RedisConnection {
  address: string;
  type: RedisType;
  /** The user `REDIS_AUTH` names; meaningful only with `password`. */
  username: string;
  /** The Secret has a password (read by the Pods, never by the operator's output). */
  password: boolean;
  sentinelPassword: boolean;
  tls: boolean;
  /** The Secret has `ca.crt`. */
  caCert: boolean;
  /** The Secret has `tls.crt` and `tls.key`. */
  clientCert: boolean;
}

/** The Secret read: a connection, or every reason it is refused. */
export type RedisSecretReading =
  | { ok: true; connection: RedisConnection }
  | { ok: false; problems: string[] };

/** Marks a value that is not base64 of UTF-8 text. */
export const NOT_TEXT = Symbol("not text");

/** One value of a Secret's `data` (base64), as text; undefined when absent or empty. */
export function secretValue(
  secret: KubeObject,
  key: string,
): string | undefined | typeof NOT_TEXT {
  const data = secret.data;
  if (typeof data !== "object" || data === null) return undefined;
  const raw = (data as Record<string, unknown>)[key];
  if (typeof raw !== "string" || raw === "") return undefined;
  try {
    const bytes = Uint8Array.from(atob(raw), (c) => c.charCodeAt(0));
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return text === "" ? undefined : text;
  } catch {
    return NOT_TEXT;
  }
}

const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):(\d{1,5})$/;

function isHostPort(text: string): boolean {
  const m = HOST_PORT.exec(text);
  if (!m) return false;
  const port = Number(m[3]);
  return port >= 1 && port <= 65535;
}

/** What is wrong with `address` for `type`; undefined when it is right. */
function addressProblem(address: string, type: RedisType): string | undefined {
  const parts = address.split(",").map((p) => p.trim());
  const bad = (what: string) =>
    `${REDIS_SECRET_KEYS.address} "${address}" is not ${what} (type ${type})`;
  if (type === "single") {
    return parts.length === 1 && isHostPort(parts[0]) ? undefined : bad("one host:port");
  }
  if (type === "sentinel") {
    const [master, ...sentinels] = parts;
    const ok = /^[^\s:,]+$/.test(master ?? "") && sentinels.length > 0 &&
      sentinels.every(isHostPort);
    return ok ? undefined : bad("<master name>,<sentinel host:port>[,...]");
  }
  return parts.length > 0 && parts.every(isHostPort) ? undefined : bad("<host:port>[,...]");
}

/** True when `text` holds a PEM block of `what` (a certificate, or a private key of any kind). */
export function looksPem(text: string, what: "CERTIFICATE" | "PRIVATE KEY"): boolean {
  return new RegExp(`-----BEGIN [A-Z ]*${what}-----`).test(text);
}

/**
 * Reads the Redis Secret. Refused (every problem named, no value quoted but the address and the
 * type, which are not secret): no `address`; an address that is not of its type's form; an
 * unknown `type`; a user name with a colon (the engine splits `REDIS_AUTH` at the first one) or
 * without a password; `sentinelPassword` for another type than `sentinel`; `tls` other than
 * `true` or `false`; a certificate without `tls: "true"`; half a client certificate; a value that
 * is not UTF-8 or not PEM where PEM is wanted.
 */
export function readRedisSecret(secret: KubeObject): RedisSecretReading {
  const k = REDIS_SECRET_KEYS;
  const problems: string[] = [];
  const get = (key: string) => {
    const v = secretValue(secret, key);
    if (v !== NOT_TEXT) return v;
    problems.push(`${key} is not UTF-8 text`);
    return undefined;
  };
  const address = get(k.address)?.trim();
  const typeText = get(k.type)?.trim() ?? "single";
  const username = get(k.username);
  const password = get(k.password) !== undefined;
  const sentinelPassword = get(k.sentinelPassword) !== undefined;
  const tlsText = get(k.tls)?.trim() ?? "false";
  const ca = get(k.caCert);
  const cert = get(k.clientCert);
  const key = get(k.clientKey);

  const type = (REDIS_TYPES as readonly string[]).includes(typeText)
    ? typeText as RedisType
    : undefined;
  if (!type) {
    problems.push(`${k.type} "${typeText}" is not one of ${REDIS_TYPES.join(", ")}`);
  }
  if (address === undefined) problems.push(`${k.address} is missing: Redis's host:port`);
  else if (type) {
    const p = addressProblem(address, type);
    if (p) problems.push(p);
  }
  if (username !== undefined) {
    if (username.includes(":")) {
      problems.push(`${k.username} contains ":" (the engine splits user:password at the first)`);
    }
    if (/\s/.test(username)) problems.push(`${k.username} contains white space`);
    if (!password) problems.push(`${k.username} is given without ${k.password}`);
  }
  if (sentinelPassword && type !== undefined && type !== "sentinel") {
    problems.push(`${k.sentinelPassword} is given for type ${type} (only for sentinel)`);
  }
  if (tlsText !== "true" && tlsText !== "false") {
    problems.push(`${k.tls} "${tlsText}" is not "true" or "false"`);
  }
  const tls = tlsText === "true";
  const certs = [[k.caCert, ca], [k.clientCert, cert], [k.clientKey, key]] as const;
  const given = certs.filter(([, v]) => v !== undefined).map(([name]) => name);
  if (given.length > 0 && !tls) {
    problems.push(`${given.join(", ")} given without ${k.tls}: "true"`);
  }
  if ((cert === undefined) !== (key === undefined)) {
    problems.push(
      `half a client certificate: ${cert === undefined ? k.clientKey : k.clientCert} without ${
        cert === undefined ? k.clientCert : k.clientKey
      }`,
    );
  }
  if (ca !== undefined && !looksPem(ca, "CERTIFICATE")) problems.push(`${k.caCert} is not PEM`);
  if (cert !== undefined && !looksPem(cert, "CERTIFICATE")) {
    problems.push(`${k.clientCert} is not PEM`);
  }
  if (key !== undefined && !looksPem(key, "PRIVATE KEY")) {
    problems.push(`${k.clientKey} is not a PEM private key`);
  }
  if (problems.length > 0 || !type || address === undefined) return { ok: false, problems };
  return {
    ok: true,
    connection: {
      address,
      type,
      username: username ?? DEFAULT_REDIS_USER,
      password,
      sentinelPassword,
      tls,
      caCert: ca !== undefined,
      clientCert: cert !== undefined,
    },
  };
}
