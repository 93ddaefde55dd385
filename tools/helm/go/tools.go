//go:build tools

// Package tools pins the helm command built by tools/helm: it lints and renders the chart
// generated from src/cli/deploy.ts, and installs it in one end-to-end test.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
