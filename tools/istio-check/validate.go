package main

import (
	"google.golang.org/protobuf/proto"

	"platform-project.local/tools/istio-check/internal/xdsvalidate"
)

// validateAll runs go-control-plane's generated validation on m and on every message packed in an
// Any inside it (internal/xdsvalidate, which the proxy stand-in shares).
func validateAll(what string, m proto.Message, unknown map[string]bool) []string {
	return xdsvalidate.All(what, m, unknown)
}

// validateProxy validates every listener and route configuration one proxy received.
func validateProxy(x xds, unknown map[string]bool) []string {
	var errs []string
	for _, l := range x.Listeners {
		errs = append(errs, validateAll("listener "+l.Name, l, unknown)...)
	}
	for _, rc := range x.Routes {
		errs = append(errs, validateAll("route configuration "+rc.Name, rc, unknown)...)
	}
	return errs
}
