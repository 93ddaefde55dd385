// Command proxy-standin is a test harness: it stands in for the Envoy proxies of Pods. Each proxy
// connects to istiod over ADS (plaintext gRPC, state of the world, as pilot-agent's Envoy does)
// with the node id and metadata pilot-agent sends, asks for clusters, endpoints, listeners and
// routes in Envoy's order, and accepts or rejects each response as Envoy does: go-control-plane's
// field rules on every resource and every config packed in an Any, plus the checks Envoy's
// constructors make (envoy.go). A rejected response leaves the proxy with its last accepted
// config. A loopback HTTP endpoint shows, per proxy, the config it holds and its ACK/NACK history.
// It never serves traffic: it is not a proxy. See docs/proxy-standin.md.
//
//	proxy-standin -xds 127.0.0.1:15010 -proxies proxies.json [-listen 127.0.0.1:0]
//
// The first line on stdout is `{"listen":"127.0.0.1:PORT"}`.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	// Every Envoy and Istio config type istiod sends, so that Anys can be read and checked.
	_ "istio.io/istio/pkg/config/xds"
)

// ProxyList is the -proxies file and the body of POST /proxies.
type ProxyList struct {
	Proxies []ProxySpec `json:"proxies"`
}

func main() {
	xdsAddr := flag.String("xds", "127.0.0.1:15010", "istiod's plaintext xDS address")
	listen := flag.String("listen", "127.0.0.1:0", "address of the HTTP endpoint (loopback only)")
	file := flag.String("proxies", "", `JSON file {"proxies": [...]} of proxies to start ("-": stdin)`)
	perConn := flag.Int("proxies-per-connection", 100, "ADS streams sharing one gRPC connection")
	flag.Parse()

	var list ProxyList
	if *file != "" {
		var b []byte
		var err error
		if *file == "-" {
			b, err = io.ReadAll(os.Stdin)
		} else {
			b, err = os.ReadFile(*file)
		}
		if err == nil {
			err = json.Unmarshal(b, &list)
		}
		if err != nil {
			fail("reading %s: %v", *file, err)
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fail("%v", err)
	}
	if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		fail("-listen %s is not a loopback address", *listen)
	}
	s := newServer(*xdsAddr, *perConn)
	for _, spec := range list.Proxies {
		if err := s.add(spec); err != nil {
			fail("%v", err)
		}
	}
	out, _ := json.Marshal(map[string]string{"listen": ln.Addr().String()})
	fmt.Println(string(out))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hs := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = hs.Close()
	}()
	if err := hs.Serve(ln); err != nil && err != http.ErrServerClosed {
		fail("%v", err)
	}
	s.stopAll()
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "proxy-standin: "+format+"\n", args...)
	os.Exit(2)
}

// server runs the proxies of one process.
type server struct {
	addr    string
	perConn int

	mu      sync.Mutex
	proxies map[string]*running
	order   []string
	conns   []*grpc.ClientConn
	used    []int
}

type running struct {
	p      *Proxy
	cancel context.CancelFunc
	done   chan struct{}
	conn   int
}

func newServer(addr string, perConn int) *server {
	if perConn < 1 {
		perConn = 1
	}
	return &server{addr: addr, perConn: perConn, proxies: map[string]*running{}}
}

// conn picks a gRPC connection with room for one more stream (s.mu held).
func (s *server) conn() (int, error) {
	for i, n := range s.used {
		if n < s.perConn {
			s.used[i]++
			return i, nil
		}
	}
	c, err := grpc.NewClient(s.addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)))
	if err != nil {
		return 0, err
	}
	s.conns = append(s.conns, c)
	s.used = append(s.used, 1)
	return len(s.conns) - 1, nil
}

func (s *server) add(spec ProxySpec) error {
	if err := spec.validate(); err != nil {
		return err
	}
	node, err := spec.Node()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := spec.Key()
	if _, ok := s.proxies[key]; ok {
		return fmt.Errorf("proxy %s already runs", key)
	}
	i, err := s.conn()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{p: newProxy(spec), cancel: cancel, done: make(chan struct{}), conn: i}
	s.proxies[key] = r
	s.order = append(s.order, key)
	client := discoveryv3.NewAggregatedDiscoveryServiceClient(s.conns[i])
	go func() {
		defer close(r.done)
		run(ctx, r.p, func(ctx context.Context) (stream, error) {
			return client.StreamAggregatedResources(ctx)
		}, node)
	}()
	return nil
}

func (s *server) remove(key string) bool {
	s.mu.Lock()
	r, ok := s.proxies[key]
	if ok {
		delete(s.proxies, key)
		for i, k := range s.order {
			if k == key {
				s.order = append(s.order[:i], s.order[i+1:]...)
				break
			}
		}
		s.used[r.conn]--
	}
	s.mu.Unlock()
	if ok {
		r.cancel()
		<-r.done
	}
	return ok
}

func (s *server) stopAll() {
	s.mu.Lock()
	keys := append([]string(nil), s.order...)
	s.mu.Unlock()
	for _, k := range keys {
		s.remove(k)
	}
	for _, c := range s.conns {
		_ = c.Close()
	}
}

// stream is the part of the ADS client stream a proxy uses.
type stream interface {
	Send(*discoveryv3.DiscoveryRequest) error
	Recv() (*discoveryv3.DiscoveryResponse, error)
}

// run keeps one proxy connected: a stream, and when it ends another after a backoff (0.1 s doubling
// to 10 s, with jitter; back to 0.1 s after a stream that lasted a minute), as Envoy's
// JitteredExponentialBackOffStrategy does for its xDS stream.
func run(ctx context.Context, p *Proxy, open func(context.Context) (stream, error), node *corev3.Node) {
	const first, most = 100 * time.Millisecond, 10 * time.Second
	backoff := first
	for ctx.Err() == nil {
		start := time.Now()
		err := session(ctx, p, open, node)
		p.streamEnded(err)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			backoff = first
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		backoff = min(2*backoff, most)
	}
}

// session is one ADS stream: the node on its first request only (Istio's bootstrap sets
// set_node_on_first_message_only), then each response answered before the next is read.
func session(ctx context.Context, p *Proxy, open func(context.Context) (stream, error), node *corev3.Node) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := open(sctx)
	if err != nil {
		return err
	}
	first := true
	send := func(reqs []*discoveryv3.DiscoveryRequest) error {
		for _, r := range reqs {
			if first {
				r.Node = node
				first = false
			}
			if err := st.Send(r); err != nil {
				return err
			}
		}
		return nil
	}
	if err := send(p.streamStarted()); err != nil {
		return err
	}
	for {
		resp, err := st.Recv()
		if err != nil {
			return err
		}
		if err := send(p.onResponse(resp)); err != nil {
			return err
		}
	}
}
