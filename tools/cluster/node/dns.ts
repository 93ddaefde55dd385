/**
 * Cluster DNS on the real node, deployed as a cluster deploys it: CoreDNS (tools/coredns, built
 * here with only the plugins it needs) as the Deployment `coredns` in kube-system behind the
 * `kube-dns` Service at {@link CLUSTER_DNS_IP} (the kubelet's `clusterDNS`), with its own
 * ServiceAccount and a ClusterRole for what its kubernetes plugin watches (Services,
 * EndpointSlices, Namespaces). It answers `cluster.local` and the reverse zones and nothing else:
 * there is no `forward`, so no name is ever asked outside the cluster (other names get SERVFAIL).
 * Its image is one file, the binary (oci.ts), like the node's other images; it runs as 65532 on
 * port 1053 (the Service maps 53 to it), read-only, without capabilities.
 */
import { realNodePlacement } from "./layout.ts";
import { CLUSTER_DNS_IP } from "../services.ts";

/** The CoreDNS image reference of a CoreDNS version (`v1.15.0` gives `...coredns:1.15.0`). */
export function corednsImage(version: string): string {
  return `localhost/platform-project/coredns:${version.replace(/^v/, "")}`;
}

/** The Corefile: cluster.local from the API server, cached; health, readiness, loop detection. */
export const COREFILE = `.:1053 {
    errors
    health :8080
    ready :8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    cache 30
    loop
    reload
    log
}
`;

const LABELS = { "k8s-app": "kube-dns" };

/** The objects of cluster DNS, as one `kubectl apply` List. */
export function clusterDnsManifests(image: string): string {
  const meta = (name: string, namespaced = true) => ({
    name,
    ...(namespaced ? { namespace: "kube-system" } : {}),
    labels: LABELS,
  });
  const items = [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: meta("coredns") },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: meta("system:coredns", false),
      rules: [
        { apiGroups: [""], resources: ["services", "namespaces"], verbs: ["list", "watch"] },
        {
          apiGroups: ["discovery.k8s.io"],
          resources: ["endpointslices"],
          verbs: ["list", "watch"],
        },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: meta("system:coredns", false),
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: "system:coredns",
      },
      subjects: [{ kind: "ServiceAccount", name: "coredns", namespace: "kube-system" }],
    },
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: meta("coredns"),
      data: { Corefile: COREFILE },
    },
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: meta("coredns"),
      spec: {
        replicas: 2,
        selector: { matchLabels: LABELS },
        strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } },
        template: {
          metadata: { labels: LABELS },
          spec: {
            ...realNodePlacement(),
            serviceAccountName: "coredns",
            priorityClassName: "system-cluster-critical",
            // Its own answers come from the API server, never from itself.
            dnsPolicy: "Default",
            securityContext: {
              runAsUser: 65532,
              runAsGroup: 65532,
              runAsNonRoot: true,
              seccompProfile: { type: "RuntimeDefault" },
            },
            containers: [{
              name: "coredns",
              image,
              imagePullPolicy: "Never",
              args: ["-conf", "/etc/coredns/Corefile"],
              ports: [
                { name: "dns", containerPort: 1053, protocol: "UDP" },
                { name: "dns-tcp", containerPort: 1053, protocol: "TCP" },
              ],
              resources: {
                requests: { cpu: "50m", memory: "32Mi" },
                limits: { memory: "128Mi" },
              },
              livenessProbe: {
                httpGet: { path: "/health", port: 8080 },
                periodSeconds: 10,
                failureThreshold: 5,
              },
              readinessProbe: { httpGet: { path: "/ready", port: 8181 }, periodSeconds: 1 },
              securityContext: {
                readOnlyRootFilesystem: true,
                allowPrivilegeEscalation: false,
                capabilities: { drop: ["ALL"] },
              },
              volumeMounts: [{ name: "config", mountPath: "/etc/coredns", readOnly: true }],
            }],
            volumes: [{
              name: "config",
              configMap: { name: "coredns", items: [{ key: "Corefile", path: "Corefile" }] },
            }],
          },
        },
      },
    },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        ...meta("kube-dns"),
        labels: { ...LABELS, "kubernetes.io/name": "CoreDNS" },
      },
      spec: {
        selector: LABELS,
        clusterIP: CLUSTER_DNS_IP,
        ports: [
          { name: "dns", port: 53, targetPort: 1053, protocol: "UDP" },
          { name: "dns-tcp", port: 53, targetPort: 1053, protocol: "TCP" },
        ],
      },
    },
  ];
  return JSON.stringify({ apiVersion: "v1", kind: "List", items });
}
