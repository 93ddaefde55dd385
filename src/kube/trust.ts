/**
 * The cluster's CA alone, as client-go trusts it. `Deno.createHttpClient({ caCerts })` adds its CAs
 * to the process's root store and has no option to replace it (deno ext/tls/lib.rs
 * create_client_config). Deno builds that store once a process, when the first TLS client or
 * connection asks for it (cli/factory.rs CliRootCertStoreProvider; cli/rt/run.rs for a compiled
 * binary), from DENO_TLS_CA_STORE ("mozilla", the default: the public roots; "system": the OS
 * store, which honours SSL_CERT_FILE and SSL_CERT_DIR), DENO_CERT and NODE_EXTRA_CA_CERTS
 * (cli/lib/args.rs get_root_cert_store). So a publicly trusted certificate for the API server's
 * name would be accepted. An empty DENO_TLS_CA_STORE names no store, and without the other two the
 * store Deno builds is empty: each client then trusts exactly the CAs it was given.
 */
import { ConfigError, type Connection } from "./config.ts";

/** The variables Deno builds its root store from; the operator may read and set them. */
export const ROOT_STORE_VARIABLES = ["DENO_TLS_CA_STORE", "DENO_CERT", "NODE_EXTRA_CA_CERTS"];

/**
 * Runs `create`, which must make the process's first TLS client, so that the root store Deno builds
 * for it is empty when `conn` has a CA: only that CA is trusted, for the rest of the process.
 * Without a CA, Deno's roots are the trust (as client-go's system roots are). The variables are
 * restored after, so an exec credential plugin still sees the environment it was given. Throws
 * ConfigError when the variables cannot be set.
 */
export function trustingOnlyItsCa<T>(conn: Connection, create: () => T): T {
  if (conn.caCerts.length === 0) return create();
  const saved = ROOT_STORE_VARIABLES.map((name) => [name, Deno.env.get(name)] as const);
  try {
    Deno.env.set("DENO_TLS_CA_STORE", "");
    // Under --ignore-env a variable missing from --allow-env is silently not set.
    if (Deno.env.get("DENO_TLS_CA_STORE") !== "") {
      throw new ConfigError(
        `cannot limit trust to the cluster's CA: allow the variables ${
          ROOT_STORE_VARIABLES.join(", ")
        } (--allow-env)`,
      );
    }
    Deno.env.delete("DENO_CERT");
    Deno.env.delete("NODE_EXTRA_CA_CERTS");
    return create();
  } finally {
    for (const [name, value] of saved) {
      if (value === undefined) Deno.env.delete(name);
      else Deno.env.set(name, value);
    }
  }
}
