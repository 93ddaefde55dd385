//go:build tools

// Package tools pins Prometheus's two commands built by tools/prometheus: prometheus (the e2e
// test's server) and promtool (checks and unit-tests deploy/'s alert rules).
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
