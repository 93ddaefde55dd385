/** Shared setup of the wire tests: a fake server and a LiveCluster pointed at it. */
import { RESOURCES } from "../../src/api/resources.ts";
import type { Connection } from "../../src/kube/config.ts";
import { bearerToken } from "../../src/kube/credentials.ts";
import { LiveCluster, type LiveClusterOptions } from "../../src/kube/live_cluster.ts";
import { type FakeServer, type Handler, startServer } from "./fake_server.ts";

/** A Connection to `server` with a fixed token. */
export function connectionTo(server: string, extra: Partial<Connection> = {}): Connection {
  return {
    server,
    caCerts: [],
    skipTLSVerify: false,
    credentials: bearerToken("test-token"),
    source: "test",
    warnings: [],
    ...extra,
  };
}

/**
 * Writes a kubeconfig for `server` (token auth; `cluster` adds fields such as
 * `certificate-authority-data`) into a new temporary folder; returns its path.
 */
export async function kubeconfigFor(
  server: string,
  cluster: Record<string, string> = {},
): Promise<string> {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(
    `${dir}/kubeconfig`,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster: { server, ...cluster } }],
      users: [{ name: "u", user: { token: "t" } }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
      "current-context": "x",
    }),
  );
  return `${dir}/kubeconfig`;
}

/** Runs `fn` with a fake server and a LiveCluster on it, closing both after. */
export async function withCluster(
  handler: Handler,
  fn: (cluster: LiveCluster, server: FakeServer) => Promise<void>,
  opts: LiveClusterOptions = {},
): Promise<void> {
  const server = await startServer(handler);
  const cluster = new LiveCluster(connectionTo(server.url), opts);
  try {
    await fn(cluster, server);
  } finally {
    cluster.close();
    await server.close();
  }
}

/** Types used across the tests. */
export const { RateLimit, Deployment, Namespace, Pod, Serverless, Lease } = RESOURCES;
