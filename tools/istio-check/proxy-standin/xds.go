package main

// One proxy's xDS state and how a response changes it, as Envoy's SotW gRPC mux does
// (source/extensions/config_subscription/grpc/grpc_mux_impl.cc, GrpcMuxImpl::onDiscoveryResponse):
// every resource is decoded and its field rules checked first, and one failure there rejects the
// whole response; then each type's subscriber builds what it got. A NACK keeps the last accepted
// version_info, carries the new nonce and an error_detail (code 13, Internal).

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"platform-project.local/tools/istio-check/internal/xdsvalidate"
)

// Type URLs of the four xDS types, and their short names.
const (
	typePrefix   = "type.googleapis.com/"
	ClusterType  = typePrefix + "envoy.config.cluster.v3.Cluster"
	EndpointType = typePrefix + "envoy.config.endpoint.v3.ClusterLoadAssignment"
	ListenerType = typePrefix + "envoy.config.listener.v3.Listener"
	RouteType    = typePrefix + "envoy.config.route.v3.RouteConfiguration"
)

var shortNames = map[string]string{ClusterType: "CDS", EndpointType: "EDS", ListenerType: "LDS", RouteType: "RDS"}

// grpcInternal is the code of Envoy's NACK (Grpc::Status::WellKnownGrpcStatus::Internal).
const grpcInternal = 13

// maxErrorDetail is Config::Utility::truncateGrpcStatusMessage's bound (4 KiB).
const maxErrorDetail = 4096

// maxHistory bounds each proxy's ACK/NACK history.
const maxHistory = 200

// Event is one response and what the stand-in answered.
type Event struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Version string    `json:"version"`
	Nonce   string    `json:"nonce"`
	Ack     bool      `json:"ack"`
	Error   string    `json:"error,omitempty"`
	// Resources are the names in the response.
	Resources []string `json:"resources"`
}

// typeState is one xDS type of one proxy.
type typeState struct {
	typeURL string
	// version is the last accepted version_info, nonce the last response's.
	version, nonce string
	// names are the subscribed resources (EDS, RDS); nil for the wildcard types.
	names []string
	// requested: a request of this type was sent on this stream or an earlier one.
	requested bool
	// accepted resources by name, as Envoy holds them.
	resources map[string]proto.Message
	acks      int
	nacks     int
	lastError string // the last response's rejection, "" when it was accepted
}

// Proxy is one stand-in proxy: its node and the config it holds.
type Proxy struct {
	Spec ProxySpec

	mu        sync.Mutex
	types     map[string]*typeState
	history   []Event
	unknown   map[string]bool
	connected bool
	connects  int
	connError string
	since     time.Time
}

func newProxy(spec ProxySpec) *Proxy {
	p := &Proxy{Spec: spec, types: map[string]*typeState{}, unknown: map[string]bool{}}
	for _, t := range []string{ClusterType, EndpointType, ListenerType, RouteType} {
		p.types[t] = &typeState{typeURL: t, resources: map[string]proto.Message{}}
	}
	return p
}

func (p *Proxy) request(ts *typeState) *discoveryv3.DiscoveryRequest {
	return &discoveryv3.DiscoveryRequest{
		TypeUrl:       ts.typeURL,
		VersionInfo:   ts.version,
		ResponseNonce: ts.nonce,
		ResourceNames: slices.Clone(ts.names),
	}
}

// streamStarted returns the first requests of a new stream: CDS on a fresh start (Envoy's
// initialisation asks for clusters first, then endpoints, then listeners, then routes); after a
// reconnect every type subscribed before, with its accepted version and no nonce
// (GrpcMuxImpl::onStreamEstablished).
func (p *Proxy) streamStarted() []*discoveryv3.DiscoveryRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.connected, p.connects, p.connError, p.since = true, p.connects+1, "", time.Now()
	var out []*discoveryv3.DiscoveryRequest
	for _, t := range []string{ClusterType, EndpointType, ListenerType, RouteType} {
		ts := p.types[t]
		ts.nonce = ""
		if t == ClusterType || ts.requested {
			ts.requested = true
			out = append(out, p.request(ts))
		}
	}
	return out
}

func (p *Proxy) streamEnded(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.connected = false
	if err != nil {
		p.connError = err.Error()
	}
}

func truncate(s string) string {
	if len(s) > maxErrorDetail {
		return s[:maxErrorDetail]
	}
	return s
}

// onResponse applies a response and returns the requests Envoy would send next: the ACK or NACK,
// then a request for endpoints or routes when the clusters or listeners it holds now name others,
// and the first listener request once clusters and endpoints are in.
func (p *Proxy) onResponse(resp *discoveryv3.DiscoveryResponse) []*discoveryv3.DiscoveryRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	ts := p.types[resp.GetTypeUrl()]
	if ts == nil || !ts.requested {
		// "Ignoring the message for type URL {} as it has no current subscribers."
		return nil
	}
	names, err := p.apply(ts, resp)
	ts.nonce = resp.GetNonce()
	ev := Event{
		Time: time.Now(), Type: shortNames[ts.typeURL], Version: resp.GetVersionInfo(),
		Nonce: resp.GetNonce(), Ack: err == nil, Resources: names,
	}
	req := &discoveryv3.DiscoveryRequest{TypeUrl: ts.typeURL, ResponseNonce: resp.GetNonce()}
	if err == nil {
		ts.version = resp.GetVersionInfo()
		ts.acks++
		ts.lastError = ""
	} else {
		msg := truncate(err.Error())
		req.ErrorDetail = &statuspb.Status{Code: grpcInternal, Message: msg}
		ts.nacks++
		ts.lastError = msg
		ev.Error = msg
	}
	req.VersionInfo = ts.version
	req.ResourceNames = slices.Clone(ts.names)
	p.history = append(p.history, ev)
	if len(p.history) > maxHistory {
		p.history = p.history[len(p.history)-maxHistory:]
	}
	out := []*discoveryv3.DiscoveryRequest{req}
	lds := p.types[ListenerType]
	switch ts.typeURL {
	case ClusterType:
		eds := p.types[EndpointType]
		if n := p.edsNames(); !slices.Equal(n, eds.names) && (eds.requested || len(n) > 0) {
			eds.names, eds.requested = n, true
			p.prune(eds)
			out = append(out, p.request(eds))
		}
		if !lds.requested && !eds.requested {
			lds.requested = true
			out = append(out, p.request(lds))
		}
	case EndpointType:
		if !lds.requested {
			lds.requested = true
			out = append(out, p.request(lds))
		}
	case ListenerType:
		rds := p.types[RouteType]
		if n := p.rdsNames(); !slices.Equal(n, rds.names) && (rds.requested || len(n) > 0) {
			rds.names, rds.requested = n, true
			p.prune(rds)
			out = append(out, p.request(rds))
		}
	}
	return out
}

// prune drops accepted resources no longer subscribed (Envoy removes the subscription and what it
// held).
func (p *Proxy) prune(ts *typeState) {
	for name := range ts.resources {
		if !slices.Contains(ts.names, name) {
			delete(ts.resources, name)
		}
	}
}

// edsNames are the EDS service names of the accepted EDS clusters.
func (p *Proxy) edsNames() []string {
	var out []string
	for _, m := range p.types[ClusterType].resources {
		c := m.(*clusterv3.Cluster)
		if c.GetType() != clusterv3.Cluster_EDS {
			continue
		}
		name := c.GetEdsClusterConfig().GetServiceName()
		if name == "" {
			name = c.GetName()
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// rdsNames are the route configurations the accepted listeners' connection managers ask for.
func (p *Proxy) rdsNames() []string {
	var out []string
	for _, m := range p.types[ListenerType].resources {
		l := m.(*listenerv3.Listener)
		chains := l.GetFilterChains()
		if d := l.GetDefaultFilterChain(); d != nil {
			chains = append(append([]*listenerv3.FilterChain{}, chains...), d)
		}
		for _, fc := range chains {
			for _, f := range fc.GetFilters() {
				h := &hcmv3.HttpConnectionManager{}
				if f.GetTypedConfig().MessageIs(h) && f.GetTypedConfig().UnmarshalTo(h) == nil {
					if n := h.GetRds().GetRouteConfigName(); n != "" {
						out = append(out, n)
					}
				}
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

type decoded struct {
	name string
	msg  proto.Message
}

func newOf(typeURL string) proto.Message {
	switch typeURL {
	case ClusterType:
		return &clusterv3.Cluster{}
	case EndpointType:
		return &endpointv3.ClusterLoadAssignment{}
	case ListenerType:
		return &listenerv3.Listener{}
	default:
		return &routev3.RouteConfiguration{}
	}
}

func nameOf(m proto.Message) string {
	switch r := m.(type) {
	case *clusterv3.Cluster:
		return r.GetName()
	case *endpointv3.ClusterLoadAssignment:
		return r.GetClusterName()
	case *listenerv3.Listener:
		return r.GetName()
	case *routev3.RouteConfiguration:
		return r.GetName()
	}
	return ""
}

// decode is the decoding step: the type URL must be the response's, the bytes a message of it,
// and its field rules hold (OpaqueResourceDecoderImpl::decodeResource, MessageUtil::validate).
func decode(resp *discoveryv3.DiscoveryResponse) ([]decoded, error) {
	out := make([]decoded, 0, len(resp.GetResources()))
	for _, a := range resp.GetResources() {
		if a.GetTypeUrl() != resp.GetTypeUrl() {
			return nil, fmt.Errorf("%s does not match the message-wide type URL %s in DiscoveryResponse",
				a.GetTypeUrl(), resp.GetTypeUrl())
		}
		m := newOf(resp.GetTypeUrl())
		if err := proto.Unmarshal(a.GetValue(), m); err != nil {
			return nil, fmt.Errorf("Unable to unpack as %s: %v", xdsvalidate.TypeName(a.GetTypeUrl()), err)
		}
		if err := xdsvalidate.Message(m); err != nil {
			return nil, fmt.Errorf("Proto constraint validation failed (%v)", err)
		}
		out = append(out, decoded{name: nameOf(m), msg: m})
	}
	return out, nil
}

// build is what Envoy's subscriber does with one decoded resource: every config packed in an Any
// is translated (its field rules checked, an older Envoy's too) and the constructors run.
func (p *Proxy) build(m proto.Message) error {
	minor := p.envoyMinor()
	errs := append(xdsvalidate.All(nameOf(m), m, p.unknown), olderFieldRules(nameOf(m), m, minor)...)
	if len(errs) > 0 {
		return fmt.Errorf("Proto constraint validation failed (%s)", errs[0])
	}
	var err error
	switch r := m.(type) {
	case *listenerv3.Listener:
		err = checkListener(r)
	case *routev3.RouteConfiguration:
		err = checkRouteConfiguration(r)
	}
	if err != nil {
		return err
	}
	return olderConstructorRule(m, minor)
}

// envoyMinor is the minor version of the Envoy the proxy says it is (validated when it was added).
func (p *Proxy) envoyMinor() uint32 {
	v, err := semver(p.Spec.withDefaults().EnvoyVersion)
	if err != nil {
		return 0
	}
	return v.GetMinorNumber()
}

// apply changes the held config as Envoy would and says why it rejects the response, if it does.
// It returns the names in the response.
func (p *Proxy) apply(ts *typeState, resp *discoveryv3.DiscoveryResponse) ([]string, error) {
	res, err := decode(resp)
	names := make([]string, len(res))
	for i, r := range res {
		names[i] = r.name
	}
	if err != nil {
		return names, err
	}
	switch ts.typeURL {
	case ListenerType, ClusterType:
		// LdsApiImpl::onConfigUpdate and CdsApiHelper::onConfigUpdate: each resource on its own; a
		// failed one keeps its previous version, the others are applied, those not sent are removed.
		next := make(map[string]proto.Message, len(res))
		var failed strings.Builder
		for _, r := range res {
			if err := p.build(r.msg); err != nil {
				fmt.Fprintf(&failed, "%s: %s\n", r.name, err)
				if old, ok := ts.resources[r.name]; ok {
					next[r.name] = old
				}
				continue
			}
			next[r.name] = r.msg
		}
		ts.resources = next
		if failed.Len() > 0 {
			what := "listener(s)"
			if ts.typeURL == ClusterType {
				what = "cluster(s)"
			}
			return names, fmt.Errorf("Error adding/updating %s %s", what, failed.String())
		}
	default:
		// RDS and EDS: one subscription a resource, updated in turn until one throws.
		for _, r := range res {
			if !slices.Contains(ts.names, r.name) {
				continue
			}
			if err := p.build(r.msg); err != nil {
				return names, err
			}
			ts.resources[r.name] = r.msg
		}
	}
	return names, nil
}
