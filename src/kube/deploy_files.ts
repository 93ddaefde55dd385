/**
 * The generated files of `deploy/`: the RBAC from src/kube/rbac.ts, and copies of `crds/` (kustomize
 * may not read files outside `deploy/`, so `kubectl apply -k deploy/` needs them inside).
 */
import { renderCrdFiles } from "../crd/render.ts";
import { stringify } from "yaml";
import { DEFAULT_RBAC_NAMES, GENERATED_BY_DEPLOY, type RbacNames, rbacObjects } from "./rbac.ts";

/** One generated file: its path under deploy/ and its text. */
export interface DeployFile {
  path: string;
  text: string;
}

/** deploy/crds/kustomization.yaml: lists the CRD copies. */
function crdKustomization(names: readonly string[]): string {
  return [
    GENERATED_BY_DEPLOY,
    "apiVersion: kustomize.config.k8s.io/v1beta1",
    "kind: Kustomization",
    "resources:",
    ...names.map((n) => `  - ${n}`),
    "",
  ].join("\n");
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
  const crds = renderCrdFiles();
  return [
    { path: "rbac.yaml", text: rbacYaml() },
    { path: "crds/kustomization.yaml", text: crdKustomization(crds.map((c) => c.name)) },
    ...crds.map((c) => ({ path: `crds/${c.name}`, text: c.text })),
  ].sort((a, b) => a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
}
