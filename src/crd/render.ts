/** CRDs as the YAML files of `crds/`: one document a file, keys sorted, so output is stable. */
import { stringify } from "yaml";
import { type CustomResourceDefinition, customResourceDefinitions } from "./definitions.ts";

/** One file of `crds/`: its name (`<plural>.<group>.yaml`) and its text. */
export interface CrdFile {
  name: string;
  text: string;
}

/** The first line of every generated file. */
export const GENERATED_HEADER = "# Generated from src/api/ by `deno task crds`. Do not edit.";

/** The file name of a CRD in `crds/`: `<plural>.<group>.yaml`. */
export function crdFileName(crd: CustomResourceDefinition): string {
  return `${crd.metadata.name}.yaml`;
}

/** Renders a CRD as one YAML document: keys sorted, no line folding, no anchors. */
export function crdYaml(crd: CustomResourceDefinition): string {
  const body = stringify(crd, { sortMapEntries: true, lineWidth: 0, aliasDuplicateObjects: false });
  return `${GENERATED_HEADER}\n${body}`;
}

/** The kustomization of `crds/`, which `deploy/` takes as a base: the CRDs are in one place. */
export const CRD_KUSTOMIZATION = "kustomization.yaml";

/** The text of `crds/kustomization.yaml`: every CRD file of `files`. */
export function crdKustomization(files: readonly CrdFile[]): string {
  return [
    GENERATED_HEADER,
    "apiVersion: kustomize.config.k8s.io/v1beta1",
    "kind: Kustomization",
    "resources:",
    ...files.map((f) => `  - ${f.name}`),
    "",
  ].join("\n");
}

/** The files `deno task crds` writes, sorted by name. */
export function renderCrdFiles(
  crds: readonly CustomResourceDefinition[] = customResourceDefinitions(),
): CrdFile[] {
  return crds.map((crd) => ({ name: crdFileName(crd), text: crdYaml(crd) }))
    .sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}
