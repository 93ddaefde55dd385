//go:build tools

// Package tools pins KEDA's three commands built by tools/keda.
package tools

import (
	_ "github.com/kedacore/keda/v2/cmd/adapter"
	_ "github.com/kedacore/keda/v2/cmd/operator"
	_ "github.com/kedacore/keda/v2/cmd/webhooks"
)
