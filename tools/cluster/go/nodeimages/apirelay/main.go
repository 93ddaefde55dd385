// Command apirelay gives the API server an address on the real node's Pod network, as a cluster's
// API server has one on its nodes' network: it accepts TCP connections on LISTEN (the bridge's
// host address and a port), on the bridge DEVICE only (SO_BINDTODEVICE: nothing arriving on
// another interface reaches it), and copies each, bytes only (TLS passes through), to TARGET, the
// API server on loopback, which keeps listening there alone. The `kubernetes` Service's
// EndpointSlice names LISTEN, so kube-proxy sends the Service's traffic here.
//
//	apirelay LISTEN DEVICE TARGET
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func relay(in net.Conn, target string) {
	defer in.Close()
	out, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		fmt.Fprintf(os.Stderr, "relay from %s: %v\n", in.RemoteAddr(), err)
		return
	}
	defer out.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		if c, ok := dst.(*net.TCPConn); ok {
			c.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	<-done
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: apirelay LISTEN DEVICE TARGET")
		os.Exit(2)
	}
	listen, device, target := os.Args[1], os.Args[2], os.Args[3]
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptString(int(fd), syscall.SOL_SOCKET, syscall.SO_BINDTODEVICE, device)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	l, err := lc.Listen(context.Background(), "tcp", listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		<-sigs
		os.Exit(0)
	}()
	fmt.Printf("relaying %s (device %s) to %s\n", listen, device, target)
	for {
		c, err := l.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		go relay(c, target)
	}
}
