/**
 * The generated files of `deploy/`: the RBAC from src/kube/rbac.ts. The CRDs are not copied:
 * `deploy/kustomization.yaml` takes `crds/` (with its own kustomization) as a base.
 */
import { stringify } from "yaml";
import { DEFAULT_RBAC_NAMES, GENERATED_BY_DEPLOY, type RbacNames, rbacObjects } from "./rbac.ts";

/** One generated file: its path under deploy/ and its text. */
export interface DeployFile {
  path: string;
  text: string;
}

/**
 * deploy/rbac.yaml: the RBAC objects as one multi-document YAML file. (Here, not in rbac.ts, which
 * the operator loads: it never renders YAML.)
 */
export function rbacYaml(names: RbacNames = DEFAULT_RBAC_NAMES): string {
  const docs = rbacObjects(names).map((o) =>
    stringify(o, { lineWidth: 0, aliasDuplicateObjects: false })
  );
  return `${GENERATED_BY_DEPLOY}\n${docs.join("---\n")}`;
}

/** Every generated file of deploy/, sorted by path. */
export function deployFiles(): DeployFile[] {
  return [{ path: "rbac.yaml", text: rbacYaml() }];
}
