// Command coredns is CoreDNS (github.com/coredns/coredns, the version go.mod pins) with only the
// plugins the real node's cluster DNS runs: kubernetes answers cluster.local from the API server;
// cache, errors, log, health, ready, loop and reload as in a cluster's default Corefile. No
// forward: nothing is asked outside the cluster. CoreDNS orders plugins by
// core/dnsserver.Directives, whatever this file imports; a plugin not imported here is unknown,
// and a Corefile naming it fails to start.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() {
	coremain.Run()
}
