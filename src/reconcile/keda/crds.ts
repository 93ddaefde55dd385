/**
 * KEDA's CRDs in its own group `keda.sh` (v1alpha1), so users' existing ScaledObjects keep working.
 * The schemas keep spec and status open (`x-kubernetes-preserve-unknown-fields`): KEDA's admission
 * webhooks validate the content.
 */
import type { KubeObject } from "../../api/object.ts";
import { kedaMeta, type KedaTarget } from "./names.ts";

interface CrdNames {
  kind: string;
  plural: string;
  shortNames: string[];
  scope: "Namespaced" | "Cluster";
}

/** The kinds KEDA defines. */
export const KEDA_CRDS: readonly CrdNames[] = [
  { kind: "ScaledObject", plural: "scaledobjects", shortNames: ["so"], scope: "Namespaced" },
  { kind: "ScaledJob", plural: "scaledjobs", shortNames: ["sj"], scope: "Namespaced" },
  {
    kind: "TriggerAuthentication",
    plural: "triggerauthentications",
    shortNames: ["ta", "triggerauth"],
    scope: "Namespaced",
  },
  {
    kind: "ClusterTriggerAuthentication",
    plural: "clustertriggerauthentications",
    shortNames: ["cta", "clustertriggerauth"],
    scope: "Cluster",
  },
];

function crd(target: KedaTarget, n: CrdNames): KubeObject {
  const open = { type: "object", "x-kubernetes-preserve-unknown-fields": true };
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: kedaMeta(target, `${n.plural}.keda.sh`, false),
    spec: {
      group: "keda.sh",
      names: {
        kind: n.kind,
        listKind: `${n.kind}List`,
        plural: n.plural,
        singular: n.kind.toLowerCase(),
        shortNames: n.shortNames,
      },
      scope: n.scope,
      versions: [{
        name: "v1alpha1",
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            description: `${n.kind} of KEDA.`,
            type: "object",
            properties: { spec: open, status: open },
          },
        },
      }],
    },
  };
}

/** KEDA's CRDs. */
export function kedaCrds(target: KedaTarget): KubeObject[] {
  return KEDA_CRDS.map((n) => crd(target, n));
}
