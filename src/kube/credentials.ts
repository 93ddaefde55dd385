/** How requests prove who the operator is: bearer tokens (static or from a file), basic auth, or client-node's authenticators. */
import { readSmallFile } from "./bounded_read.ts";

/** A source of authentication headers. */
export interface Credentials {
  /** The headers of the next request. */
  headers(): Promise<Record<string, string>>;
  /** Forgets cached credentials after a 401; true when asking again may give different ones. */
  invalidate(): boolean;
}

/** No authentication headers (client certificates, or an open test server). */
export const noCredentials: Credentials = {
  headers: () => Promise.resolve({}),
  invalidate: () => false,
};

/** A fixed bearer token from the kubeconfig. */
export function bearerToken(token: string): Credentials {
  const headers = { authorization: `Bearer ${token.trim()}` };
  return { headers: () => Promise.resolve({ ...headers }), invalidate: () => false };
}

/** Basic authentication from the kubeconfig's username and password. */
export function basicAuth(username: string, password: string): Credentials {
  const encoded = btoa(String.fromCharCode(...new TextEncoder().encode(`${username}:${password}`)));
  const headers = { authorization: `Basic ${encoded}` };
  return { headers: () => Promise.resolve({ ...headers }), invalidate: () => false };
}

/**
 * A bearer token read from a file and read again whenever the file changes: the kubelet rotates
 * projected service account tokens in place, so a token read once at startup expires.
 */
export class TokenFile implements Credentials {
  #token = "";
  #stamp = "";

  /** `path` is the token file, e.g. /var/run/secrets/kubernetes.io/serviceaccount/token. */
  constructor(readonly path: string) {}

  /** The Authorization header with the file's current token. */
  async headers(): Promise<Record<string, string>> {
    // A stat per request is cheap next to the round trip, and it notices a rotation at once.
    const info = await Deno.stat(this.path);
    const stamp = `${info.mtime?.getTime() ?? 0}:${info.size}:${info.ino ?? 0}`;
    if (stamp !== this.#stamp || !this.#token) {
      this.#token = (await readSmallFile(this.path)).trim();
      this.#stamp = stamp;
    }
    return this.#token ? { authorization: `Bearer ${this.#token}` } : {};
  }

  /** Drops the cached token so the next request reads the file again. */
  invalidate(): boolean {
    this.#stamp = "";
    return true;
  }
}

/**
 * Headers from client-node's own authenticators (exec plugins, OIDC and other auth providers), for
 * `config`: a one-context kubeconfig (the parsed YAML) naming the user. Only the Authorization and
 * impersonation headers are taken; TLS stays with the Deno client. client-node is loaded here with
 * a dynamic import, only for such users: importing it costs ~85 MB and ~0.4 s of start-up.
 */
export function kubeConfigAuthenticators(config: Record<string, unknown>): Credentials {
  const loaded = import("@kubernetes/client-node").then(({ KubeConfig }) => {
    const kc = new KubeConfig();
    kc.loadFromString(JSON.stringify(config));
    return kc;
  });
  // A bad config or a failed import surfaces on the first request, not as an unhandled rejection.
  loaded.catch(() => {});
  return {
    async headers() {
      const kc = await loaded;
      const opts: { headers?: Record<string, string> } = { headers: {} };
      await kc.applyToHTTPSOptions(opts);
      const out: Record<string, string> = {};
      for (const [key, value] of Object.entries(opts.headers ?? {})) {
        const name = key.toLowerCase();
        if (name === "authorization" || name.startsWith("impersonate-")) out[name] = String(value);
      }
      return out;
    },
    invalidate: () => true,
  };
}

/** Adds fixed headers (impersonation) to another credential source. */
export function withHeaders(base: Credentials, extra: Record<string, string>): Credentials {
  return {
    headers: async () => ({ ...(await base.headers()), ...extra }),
    invalidate: () => base.invalidate(),
  };
}
