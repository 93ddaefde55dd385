/** Names, version and labels of the KEDA objects the operator installs (KEDA's own names). */
import { moduleObjectMeta } from "../labels.ts";
import provenance from "../../../data/upstream/keda/provenance.json" with { type: "json" };

/**
 * The KEDA version the operator installs and reports as `kedaVersion`: the release its CRDs are
 * generated from (tools/crdgen/go.mod, recorded in the CRDs' provenance), so images, labels and
 * CRDs move together. A static import of a small data file, no I/O.
 */
export const KEDA_VERSION: string = provenance.version;
/** Label carrying the installed version on the keda-operator Deployment. */
export const VERSION_LABEL = "app.kubernetes.io/version";

/** The three KEDA Deployments, by component. */
export const KEDA_DEPLOYMENTS = {
  operator: "keda-operator",
  metricServer: "keda-operator-metrics-apiserver",
  admissionWebhook: "keda-admission-webhooks",
} as const;

/**
 * The flag of KEDA's metrics server that names where it dials KEDA's operator (gRPC), by cluster
 * DNS name: the name the operator's cluster DNS lookups ask (cluster_dns.ts).
 */
export const METRICS_SERVICE_ADDRESS_FLAG = "--metrics-service-address=";

/** The cluster-scoped objects of KEDA's metrics API and admission webhooks, by name. */
export const KEDA_CLUSTER_OBJECTS = {
  apiService: "v1beta1.external.metrics.k8s.io",
  webhook: "keda-admission",
} as const;

/** The ServiceAccounts of the three components. */
export const KEDA_SERVICE_ACCOUNTS = {
  operator: "keda-operator",
  metricServer: "keda-metrics-server",
  admissionWebhook: "keda-webhook",
} as const;

/** Where an object goes and whose it is. */
export interface KedaTarget {
  /** Namespace of the served Scaler: the namespaced objects go there. */
  namespace: string;
  /** OWNER_LABEL value of the served Scaler. */
  owner: string;
}

/** Metadata of a KEDA object: name, namespace when namespaced, the managed, owner and KEDA labels. */
export function kedaMeta(target: KedaTarget, name: string, namespaced: boolean) {
  return moduleObjectMeta("keda", target, name, namespaced, {
    "app.kubernetes.io/name": name,
    "app.kubernetes.io/part-of": "keda-operator",
    [VERSION_LABEL]: KEDA_VERSION,
  });
}
