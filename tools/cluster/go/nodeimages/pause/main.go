// Command pause is the Pod sandbox of the real node: it holds the Pod's namespaces open until
// SIGINT or SIGTERM. As PID 1 of a Pod that shares its process namespace it also reaps the
// orphans the kernel hands it, which would otherwise stay zombies.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
