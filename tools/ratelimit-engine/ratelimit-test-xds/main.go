// Command ratelimit-test-xds is a test harness: a minimal xDS management server (go-control-plane's
// state-of-the-world server over plaintext gRPC on loopback) that serves the rate limit engine's
// configuration, one RateLimitConfig resource per domain, to engines started with
// CONFIG_TYPE=GRPC_XDS_SOTW. It stands in for what the operator would serve; it is used to
// measure how fast an edit reaches a running engine. See docs/global-engine.md.
//
//	ratelimit-test-xds [-listen 127.0.0.1:0]
//
// stdin, one JSON object a line: {"version": "v2", "configs": [RateLimitConfig in protobuf's JSON
// form, ...]} replaces the snapshot that every engine (every node id) is served.
// stdout, one JSON event a line: {"event":"listen","addr":...} first; then {"event":"set",
// "version":...} for each snapshot taken, {"event":"response","stream":N,"version":...} for each
// response sent, and {"event":"ack"|"nack","stream":N,"node":...,"version":...,"error":...} for
// each request an engine sends after a response (its ACK or NACK), {"event":"open"|"closed",
// "stream":N} for streams; {"event":"error","message":...} for a line it cannot use. Each event
// has "at", the Unix time in milliseconds.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	rlsconfv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
)

// everyNode serves one snapshot to every node id.
type everyNode struct{}

func (everyNode) ID(*corev3.Node) string { return "all" }

// snapshotLine is one line of stdin.
type snapshotLine struct {
	Version string            `json:"version"`
	Configs []json.RawMessage `json:"configs"`
}

// events writes JSON lines to stdout, one at a time.
type events struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (e *events) emit(fields map[string]any) {
	fields["at"] = time.Now().UnixMilli()
	e.mu.Lock()
	defer e.mu.Unlock()
	_ = e.enc.Encode(fields)
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "the gRPC address to serve (loopback)")
	flag.Parse()
	ev := &events{enc: json.NewEncoder(os.Stdout)}
	ctx := context.Background()
	snapshots := cachev3.NewSnapshotCache(false, everyNode{}, nil)

	var mu sync.Mutex
	nodes := map[int64]string{}
	callbacks := serverv3.CallbackFuncs{
		StreamOpenFunc: func(_ context.Context, id int64, _ string) error {
			ev.emit(map[string]any{"event": "open", "stream": id})
			return nil
		},
		StreamClosedFunc: func(id int64, _ *corev3.Node) {
			ev.emit(map[string]any{"event": "closed", "stream": id})
		},
		StreamRequestFunc: func(id int64, req *discoveryv3.DiscoveryRequest) error {
			mu.Lock()
			if req.Node != nil && req.Node.Id != "" {
				nodes[id] = req.Node.Id
			}
			node := nodes[id]
			mu.Unlock()
			if req.ResponseNonce == "" {
				ev.emit(map[string]any{"event": "request", "stream": id, "node": node})
				return nil
			}
			if req.ErrorDetail != nil {
				ev.emit(map[string]any{"event": "nack", "stream": id, "node": node,
					"version": req.VersionInfo, "error": req.ErrorDetail.Message})
				return nil
			}
			ev.emit(map[string]any{"event": "ack", "stream": id, "node": node, "version": req.VersionInfo})
			return nil
		},
		StreamResponseFunc: func(_ context.Context, id int64, _ *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
			ev.emit(map[string]any{"event": "response", "stream": id, "version": resp.VersionInfo})
		},
	}
	srv := serverv3.NewServer(ctx, snapshots, callbacks)
	g := grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(g, srv)

	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	ev.emit(map[string]any{"event": "listen", "addr": lis.Addr().String()})
	go func() {
		if err := g.Serve(lis); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
	}()

	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	for in.Scan() {
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		if err := set(ctx, snapshots, line); err != nil {
			ev.emit(map[string]any{"event": "error", "message": err.Error()})
			continue
		}
		var l snapshotLine
		_ = json.Unmarshal([]byte(line), &l)
		ev.emit(map[string]any{"event": "set", "version": l.Version})
	}
	// stdin closed: keep serving until killed.
	select {}
}

// set reads one stdin line and makes it the snapshot every node is served.
func set(ctx context.Context, snapshots cachev3.SnapshotCache, line string) error {
	var l snapshotLine
	if err := json.Unmarshal([]byte(line), &l); err != nil {
		return err
	}
	if l.Version == "" {
		return fmt.Errorf("no version")
	}
	res := make([]types.Resource, 0, len(l.Configs))
	for _, raw := range l.Configs {
		c := &rlsconfv3.RateLimitConfig{}
		if err := protojson.Unmarshal(raw, c); err != nil {
			return err
		}
		res = append(res, c)
	}
	snap, err := cachev3.NewSnapshot(l.Version, map[resourcev3.Type][]types.Resource{
		resourcev3.RateLimitConfigType: res,
	})
	if err != nil {
		return err
	}
	return snapshots.SetSnapshot(ctx, "all", snap)
}
