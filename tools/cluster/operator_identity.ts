/**
 * The operator's identity on the local cluster is the one it has when deployed: deploy/'s
 * ServiceAccount, bound by deploy/rbac.yaml's roles exactly as `kubectl apply -k deploy/` binds
 * them, and a token for it from the TokenRequest API. No test runs the operator as an admin: a
 * permission missing from deploy/rbac.yaml fails the tests that need it. Its ServiceAccount token
 * and user name helpers also serve the bench's peer, which is given a ServiceAccount of its own.
 */
import { join } from "node:path";
import { parseAllDocuments } from "yaml";

/** Namespace of the operator's ServiceAccount in deploy/. */
export const OPERATOR_NAMESPACE = "platform-system";
/** Name of the operator's ServiceAccount in deploy/. */
export const OPERATOR_SERVICE_ACCOUNT = "platform-operator";

/** The user a token of ServiceAccount `namespace/name` is authenticated (and audited) as. */
export function serviceAccountUser(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/** The user name the API server authenticates the operator's token as (and audits it as). */
export const OPERATOR_USER = serviceAccountUser(OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT);
/** Lifetime asked of the TokenRequest API: longer than any test or bench run. */
const TOKEN_DURATION = "720h";

const DEPLOY_DIR = join(import.meta.dirname ?? ".", "..", "..", "deploy");

/** deploy/'s ServiceAccount and RBAC manifests (all controllers'), as one YAML stream (read from the repository). */
export async function operatorRbacYaml(deployDir = DEPLOY_DIR): Promise<string> {
  // The base's and every controller's component's (deploy/ installs all three).
  const files = [
    "base/serviceaccount.yaml",
    "base/rbac.yaml",
    "ratelimit/rbac.yaml",
    "scaler/rbac.yaml",
    "serverless/rbac.yaml",
  ];
  const texts = await Promise.all(files.map((f) => Deno.readTextFile(join(deployDir, f))));
  for (const [i, text] of texts.entries()) {
    for (const doc of parseAllDocuments(text)) {
      const ns = doc.getIn(["metadata", "namespace"]);
      if (ns !== undefined && ns !== OPERATOR_NAMESPACE) {
        throw new Error(`deploy/${files[i]}: namespace ${ns}, expected ${OPERATOR_NAMESPACE}`);
      }
    }
  }
  return texts.map((t) => t.trim()).join("\n---\n") + "\n";
}

/** Runs kubectl as the admin; throws on failure, returns stdout. */
export type AdminKubectl = (args: string[], opts?: { stdin?: string }) => Promise<string>;

/**
 * Applies deploy/'s ServiceAccount and roles (the namespace must exist) and returns a token of
 * that ServiceAccount from the TokenRequest API.
 */
export async function installOperatorIdentity(
  k: AdminKubectl,
  deployDir?: string,
): Promise<string> {
  await k(["apply", "-f", "-"], { stdin: await operatorRbacYaml(deployDir) });
  return await serviceAccountToken(k, OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT);
}

/**
 * A token of ServiceAccount `namespace/name` (which must exist) from the TokenRequest API
 * (`kubectl create token`), valid longer than any test or bench run.
 */
export async function serviceAccountToken(
  k: AdminKubectl,
  namespace: string,
  name: string,
): Promise<string> {
  const token = (await k([
    "create",
    "token",
    name,
    "-n",
    namespace,
    `--duration=${TOKEN_DURATION}`,
  ])).trim();
  if (!/^[\w-]+\.[\w-]+\.[\w-]+$/.test(token)) {
    throw new Error(`kubectl create token gave no token: ${token.slice(0, 80)}`);
  }
  return token;
}
