/**
 * The CRDs the operator installed before it installed upstream's (up to commit d872401): short
 * stand-ins whose spec and status accept anything. Written out here, as that version rendered them
 * for a Scaler and a Serverless `platform-system/default`, to show the upgrade from them.
 */
import type { KubeObject } from "../../src/api/object.ts";

const OWNER = "platform-system.default";
const open = { type: "object", "x-kubernetes-preserve-unknown-fields": true };

function version(name: string, description: string) {
  return {
    name,
    served: true,
    storage: true,
    subresources: { status: {} },
    schema: {
      openAPIV3Schema: { description, type: "object", properties: { spec: open, status: open } },
    },
  };
}

const KEDA_KINDS = [
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

/** The four KEDA stand-ins and the Function stand-in, with the labels that version put on them. */
export function standInCrds(): KubeObject[] {
  const keda = KEDA_KINDS.map((n): KubeObject => {
    const name = `${n.plural}.keda.sh`;
    return {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: {
        name,
        labels: {
          "app.kubernetes.io/managed-by": "platform-operator",
          "operator.platform-project.io/module": "keda",
          "operator.platform-project.io/owner": OWNER,
          "app.kubernetes.io/name": name,
          "app.kubernetes.io/part-of": "keda-operator",
          "app.kubernetes.io/version": "2.20.1",
        },
      },
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
        versions: [version("v1alpha1", `${n.kind} of KEDA.`)],
      },
    };
  });
  const fn: KubeObject = {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: {
      name: "functions.serverless.platform-project.io",
      labels: {
        "app.kubernetes.io/managed-by": "platform-operator",
        "operator.platform-project.io/module": "serverless",
        "operator.platform-project.io/owner": OWNER,
        "app.kubernetes.io/part-of": "serverless",
      },
    },
    spec: {
      group: "serverless.platform-project.io",
      names: {
        kind: "Function",
        listKind: "FunctionList",
        plural: "functions",
        singular: "function",
      },
      scope: "Namespaced",
      versions: [version("v1alpha2", "A Function of the Serverless module.")],
    },
  };
  return [...keda, fn];
}
