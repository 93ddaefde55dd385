// The programs of the images tools/cluster makes for its real node (no registry is reachable):
// pause, the Pod sandbox, and podcheck, a workload that reports what the kubelet gave it; and
// apirelay, a program of the node itself (not an image): the API server's address on the bridge.
module cluster.local/tools/nodeimages

go 1.24.0
