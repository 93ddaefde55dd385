//go:build tools

// Package tools pins the etcd server command built by tools/cluster.
package tools

import _ "go.etcd.io/etcd/server/v3"
