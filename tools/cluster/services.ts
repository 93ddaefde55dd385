/** The cluster's Service addresses: the range and the two Services every cluster has. */

/** The Service range the API server allocates ClusterIPs from (`--service-cluster-ip-range`). */
export const SERVICE_CIDR = "10.96.0.0/16";
/** The `kubernetes` Service's ClusterIP: the first address of the Service range. */
export const KUBERNETES_SERVICE_IP = "10.96.0.1";
/** The `kube-dns` Service's ClusterIP, the real node kubelet's `clusterDNS`. */
export const CLUSTER_DNS_IP = "10.96.0.10";
