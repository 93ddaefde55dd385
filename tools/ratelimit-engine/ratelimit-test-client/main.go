// Command ratelimit-test-client is a test harness: it asks a rate limit service the question
// Envoy's envoy.filters.http.ratelimit asks (envoy.service.ratelimit.v3.RateLimitService/
// ShouldRateLimit over plaintext gRPC) and prints the answers as JSON. It is not a proxy and
// sends no traffic but these calls. See docs/global-engine.md.
//
// One call, descriptors as arguments (each `key=value[,key=value...]` is one descriptor):
//
//	ratelimit-test-client -addr 127.0.0.1:8081 -domain demo.api client=alice
//
// A stream of calls, one JSON object a line on stdin, one answer a line on stdout, in order:
//
//	{"addr":"127.0.0.1:8081","request":{"domain":"demo.api","descriptors":[{"entries":[{"key":"client","value":"alice"}]}]}}
//
// `request` is a RateLimitRequest in protobuf's JSON form. Each answer is
// {"response": RateLimitResponse in JSON form, "ms": milliseconds} or
// {"error": {"code": gRPC code name, "message": ...}, "ms": ...}. A line that cannot be read
// gets {"error": {"code": "InvalidArgument", ...}}. One gRPC connection per address is kept.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// call is one line of the stream mode's input.
type call struct {
	Addr    string          `json:"addr"`
	Request json.RawMessage `json:"request"`
	// TimeoutMs bounds the call (default: -timeout).
	TimeoutMs int `json:"timeoutMs,omitempty"`
}

// callError is the error half of an answer.
type callError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// answer is one line of output.
type answer struct {
	Response json.RawMessage `json:"response,omitempty"`
	Error    *callError      `json:"error,omitempty"`
	Ms       float64         `json:"ms"`
}

// clients keeps one connection per address.
type clients map[string]rlsv3.RateLimitServiceClient

func (c clients) get(addr string) (rlsv3.RateLimitServiceClient, error) {
	if cl, ok := c[addr]; ok {
		return cl, nil
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	cl := rlsv3.NewRateLimitServiceClient(conn)
	c[addr] = cl
	return cl, nil
}

var jsonOut = protojson.MarshalOptions{EmitUnpopulated: true}

func (c clients) ask(addr string, req *rlsv3.RateLimitRequest, timeout time.Duration) answer {
	start := time.Now()
	ms := func() float64 { return float64(time.Since(start).Microseconds()) / 1000 }
	cl, err := c.get(addr)
	if err != nil {
		return answer{Error: &callError{Code: "InvalidArgument", Message: err.Error()}, Ms: ms()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := cl.ShouldRateLimit(ctx, req)
	if err != nil {
		s := status.Convert(err)
		return answer{Error: &callError{Code: s.Code().String(), Message: s.Message()}, Ms: ms()}
	}
	b, err := jsonOut.Marshal(resp)
	if err != nil {
		return answer{Error: &callError{Code: "Internal", Message: err.Error()}, Ms: ms()}
	}
	return answer{Response: b, Ms: ms()}
}

// descriptorOf reads `key=value[,key=value...]`.
func descriptorOf(arg string) (*commonv3.RateLimitDescriptor, error) {
	d := &commonv3.RateLimitDescriptor{}
	for _, kv := range strings.Split(arg, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("descriptor entry %q is not key=value", kv)
		}
		d.Entries = append(d.Entries, &commonv3.RateLimitDescriptor_Entry{Key: k, Value: v})
	}
	return d, nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "the rate limit service's gRPC address")
	domain := flag.String("domain", "", "the domain (one call from the arguments)")
	hits := flag.Uint("hits", 0, "hits_addend (0: the service counts 1)")
	timeout := flag.Duration("timeout", 5*time.Second, "deadline of each call")
	flag.Parse()
	out := json.NewEncoder(os.Stdout)
	c := clients{}

	if flag.NArg() > 0 {
		req := &rlsv3.RateLimitRequest{Domain: *domain, HitsAddend: uint32(*hits)}
		for _, a := range flag.Args() {
			d, err := descriptorOf(a)
			if err != nil {
				fmt.Fprintln(os.Stderr, "error:", err)
				os.Exit(2)
			}
			req.Descriptors = append(req.Descriptors, d)
		}
		a := c.ask(*addr, req, *timeout)
		_ = out.Encode(a)
		if a.Error != nil {
			os.Exit(1)
		}
		return
	}

	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	for in.Scan() {
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		var cl call
		req := &rlsv3.RateLimitRequest{}
		err := json.Unmarshal([]byte(line), &cl)
		if err == nil {
			err = protojson.Unmarshal(cl.Request, req)
		}
		if err != nil {
			_ = out.Encode(answer{Error: &callError{Code: "InvalidArgument", Message: err.Error()}})
			continue
		}
		t := *timeout
		if cl.TimeoutMs > 0 {
			t = time.Duration(cl.TimeoutMs) * time.Millisecond
		}
		_ = out.Encode(c.ask(cl.Addr, req, t))
	}
}
