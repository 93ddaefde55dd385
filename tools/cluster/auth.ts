/** Static-token users, kubeconfig files and the audit policy of the local cluster. */
import { join } from "node:path";
import { stringify } from "yaml";

/** One static-token identity. */
export interface User {
  name: string;
  groups: string[];
  token: string;
}

/**
 * Static-token identities of the cluster: the admin plus one per control-plane client. The
 * operator is not one of them: it gets its ServiceAccount's token (operator_identity.ts).
 */
export interface Users {
  admin: User;
  controllerManager: User;
  scheduler: User;
  kwok: User;
}

function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Fresh random tokens for every identity (all in system:masters). */
export function newUsers(): Users {
  const u = (name: string): User => ({ name, groups: ["system:masters"], token: randomToken() });
  return {
    admin: u("admin"),
    controllerManager: u("system:kube-controller-manager"),
    scheduler: u("system:kube-scheduler"),
    kwok: u("kwok-controller"),
  };
}

/** Writes the `--token-auth-file` CSV (token,user,uid,"groups"). */
export async function writeTokenFile(path: string, users: Users): Promise<void> {
  const lines = Object.values(users).map((u) =>
    `${u.token},${u.name},${u.name},"${u.groups.join(",")}"`
  );
  await Deno.writeTextFile(path, lines.join("\n") + "\n", { mode: 0o600 });
}

/** Writes a kubeconfig (as JSON) for `user` against `server`, embedding the CA certificate. */
export async function writeKubeconfig(
  path: string,
  server: string,
  caPem: string,
  user: User,
): Promise<void> {
  const ctx = "local";
  const doc = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{
      name: ctx,
      cluster: { server, "certificate-authority-data": btoa(caPem) },
    }],
    users: [{ name: user.name, user: { token: user.token } }],
    contexts: [{ name: ctx, context: { cluster: ctx, user: user.name } }],
    "current-context": ctx,
  };
  // JSON, which is YAML too (kubectl reads it): an operator started with it needs no YAML parser,
  // as in a cluster, where it reads its service account instead (bench/RESULTS.md, memory).
  await Deno.writeTextFile(path, JSON.stringify(doc, null, 2) + "\n", { mode: 0o600 });
}

/** Write verbs recorded by the audit policy. */
export const WRITE_VERBS = ["create", "update", "patch", "delete", "deletecollection"];

/**
 * Writes an audit policy that logs only write verbs, at Metadata level, and the status writes of
 * RateLimits, Scalers and Serverless at Request level: their bodies show what a repeated status
 * write said (the fault suites' duplicates), and every state a module went through, however short
 * (a sampler can miss a Processing that lasts under a second).
 */
export async function writeAuditPolicy(path: string): Promise<void> {
  const policy = {
    apiVersion: "audit.k8s.io/v1",
    kind: "Policy",
    omitStages: ["RequestReceived"],
    rules: [
      {
        level: "Request",
        verbs: WRITE_VERBS,
        resources: [
          { group: "gateway.platform-project.io", resources: ["ratelimits/status"] },
          {
            group: "operator.platform-project.io",
            resources: ["scalers/status", "serverlesses/status"],
          },
        ],
      },
      { level: "Metadata", verbs: WRITE_VERBS },
      { level: "None" },
    ],
  };
  await Deno.writeTextFile(path, stringify(policy));
}

/** Paths of the kubeconfig files inside a cluster directory (the operator's included). */
export function kubeconfigPaths(dir: string): Record<keyof Users | "operator", string> {
  return {
    admin: join(dir, "kubeconfig"),
    operator: join(dir, "kubeconfig-operator"),
    controllerManager: join(dir, "internal", "kubeconfig-controller-manager"),
    scheduler: join(dir, "internal", "kubeconfig-scheduler"),
    kwok: join(dir, "internal", "kubeconfig-kwok"),
  };
}
