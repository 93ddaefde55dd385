package main

import (
	"slices"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
)

func response(t *testing.T, typeURL, version, nonce string, msgs ...proto.Message) *discoveryv3.DiscoveryResponse {
	r := &discoveryv3.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: version, Nonce: nonce}
	for _, m := range msgs {
		r.Resources = append(r.Resources, mustAny(t, m))
	}
	return r
}

func edsCluster(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{EdsConfig: &corev3.ConfigSource{
			ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
		}},
	}
}

func httpListener(t *testing.T, name, routes string, filters ...*hcmv3.HttpFilter) *listenerv3.Listener {
	h := hcm(t, func(h *hcmv3.HttpConnectionManager) {
		h.GetRds().RouteConfigName = routes
		if filters != nil {
			h.HttpFilters = filters
		}
	})
	return &listenerv3.Listener{Name: name, FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
		Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, h)},
	}}}}}
}

// kyma2380 is the route of Kyma api-gateway#2380: a rate limit entry with no actions.
func kyma2380(t *testing.T, name string) *routev3.RouteConfiguration {
	rc := routeConfig(t, nil)
	rc.Name = name
	rc.VirtualHosts[0].Routes[0].GetRoute().RateLimits = []*routev3.RateLimit{{Actions: []*routev3.RateLimit_Action{}}}
	return rc
}

func one(t *testing.T, reqs []*discoveryv3.DiscoveryRequest, i int, typeURL, version, nonce string, names ...string) {
	t.Helper()
	if len(reqs) <= i {
		t.Fatalf("want a request #%d (%s), got %d requests", i, shortNames[typeURL], len(reqs))
	}
	r := reqs[i]
	if r.GetTypeUrl() != typeURL || r.GetVersionInfo() != version || r.GetResponseNonce() != nonce ||
		!slices.Equal(r.GetResourceNames(), names) {
		t.Fatalf("request #%d: want %s version %q nonce %q names %v, got %s version %q nonce %q names %v",
			i, shortNames[typeURL], version, nonce, names, shortNames[r.GetTypeUrl()], r.GetVersionInfo(),
			r.GetResponseNonce(), r.GetResourceNames())
	}
}

// connected is a proxy that has acknowledged one cluster, its endpoints, a listener and its routes.
func connected(t *testing.T) *Proxy {
	p := newProxy(ProxySpec{Type: "sidecar", Pod: "web-0", Namespace: "demo", IP: "10.244.0.2"})
	reqs := p.streamStarted()
	if len(reqs) != 1 {
		t.Fatalf("a fresh proxy asks for clusters only, got %d requests", len(reqs))
	}
	one(t, reqs, 0, ClusterType, "", "")
	reqs = p.onResponse(response(t, ClusterType, "v1", "c1", edsCluster("outbound|80||web")))
	one(t, reqs, 0, ClusterType, "v1", "c1")
	one(t, reqs, 1, EndpointType, "", "", "outbound|80||web")
	if len(reqs) != 2 {
		t.Fatalf("no listeners before endpoints, got %d requests", len(reqs))
	}
	reqs = p.onResponse(response(t, EndpointType, "v1", "e1", &endpointv3.ClusterLoadAssignment{ClusterName: "outbound|80||web"}))
	one(t, reqs, 0, EndpointType, "v1", "e1", "outbound|80||web")
	one(t, reqs, 1, ListenerType, "", "")
	reqs = p.onResponse(response(t, ListenerType, "v1", "l1", httpListener(t, "0.0.0.0_80", "80")))
	one(t, reqs, 0, ListenerType, "v1", "l1")
	one(t, reqs, 1, RouteType, "", "", "80")
	rc := routeConfig(t, nil)
	rc.Name = "80"
	reqs = p.onResponse(response(t, RouteType, "v1", "r1", rc))
	one(t, reqs, 0, RouteType, "v1", "r1", "80")
	if len(reqs) != 1 {
		t.Fatalf("want the route ACK only, got %d requests", len(reqs))
	}
	return p
}

// Envoy's order: clusters, then their endpoints, then listeners, then their routes; each ACK
// carries the response's version and nonce.
func TestRequestsInEnvoysOrder(t *testing.T) {
	p := connected(t)
	v := p.View(true, true)
	for _, k := range []string{"CDS", "EDS", "LDS", "RDS"} {
		if x := v.XDS[k]; !x.Acked || x.Version != "v1" || x.Acks != 1 || len(x.Resources) != 1 {
			t.Fatalf("%s: %+v", k, x)
		}
	}
	if len(v.History) != 4 || len(v.Config.Routes) != 1 {
		t.Fatalf("history %d, routes %d", len(v.History), len(v.Config.Routes))
	}
}

// Kyma api-gateway#2380's shape, `rate_limits: [{actions: []}]`, breaks a field rule of the route
// configuration: the whole response is refused, the NACK keeps the accepted version and carries
// the new nonce and the error, and the proxy keeps its routes.
func TestEmptyActionsAreRejected(t *testing.T) {
	p := connected(t)
	before := p.View(true, false).Config.Routes[0]
	reqs := p.onResponse(response(t, RouteType, "v2", "r2", kyma2380(t, "80")))
	one(t, reqs, 0, RouteType, "v1", "r2", "80")
	d := reqs[0].GetErrorDetail()
	if d.GetCode() != grpcInternal || !strings.Contains(d.GetMessage(), "Proto constraint validation failed") ||
		!strings.Contains(d.GetMessage(), "RateLimit.Actions: value must contain at least 1 item(s)") {
		t.Fatalf("error detail: %v", d)
	}
	v := p.View(true, true)
	if string(v.Config.Routes[0]) != string(before) {
		t.Fatalf("the routes changed:\n%s\n%s", before, v.Config.Routes[0])
	}
	rds := v.XDS["RDS"]
	if rds.Acked || rds.Version != "v1" || rds.Nonce != "r2" || rds.Nacks != 1 || rds.LastError != d.GetMessage() {
		t.Fatalf("RDS: %+v", rds)
	}
	if last := v.History[len(v.History)-1]; last.Ack || last.Version != "v2" || last.Error == "" {
		t.Fatalf("history: %+v", last)
	}
	// A good response afterwards is accepted, and the error cleared.
	rc := routeConfig(t, nil)
	rc.Name = "80"
	reqs = p.onResponse(response(t, RouteType, "v3", "r3", rc))
	one(t, reqs, 0, RouteType, "v3", "r3", "80")
	if reqs[0].GetErrorDetail() != nil || p.View(false, false).XDS["RDS"].LastError != "" {
		t.Fatalf("the ACK after the NACK: %v", reqs[0].GetErrorDetail())
	}
}

// The same entry inside a listener (a sidecar's inbound routes are inline) fails that listener
// only: the others are applied, it keeps its previous version, and one not sent is removed.
func TestListenersAreBuiltOneByOne(t *testing.T) {
	p := connected(t)
	reqs := p.onResponse(response(t, ListenerType, "v2", "l2",
		httpListener(t, "0.0.0.0_80", "80", routerFilter(t), faultFilter(t)),
		httpListener(t, "0.0.0.0_81", "81")))
	one(t, reqs, 0, ListenerType, "v1", "l2")
	want := "Error adding/updating listener(s) 0.0.0.0_80: Error: terminal filter named envoy.filters.http.router"
	if !strings.HasPrefix(reqs[0].GetErrorDetail().GetMessage(), want) {
		t.Fatalf("error detail: %q", reqs[0].GetErrorDetail().GetMessage())
	}
	// The new listener names routes 81: a route request follows the NACK.
	one(t, reqs, 1, RouteType, "v1", "r1", "80", "81")
	v := p.View(true, false)
	if !slices.Equal(v.XDS["LDS"].Resources, []string{"0.0.0.0_80", "0.0.0.0_81"}) {
		t.Fatalf("listeners held: %v", v.XDS["LDS"].Resources)
	}
	if !strings.Contains(string(v.Config.Listeners[0]), `"name":"envoy.filters.http.router"`) ||
		strings.Contains(string(v.Config.Listeners[0]), "envoy.filters.http.fault") {
		t.Fatalf("0.0.0.0_80 is not its previous version: %s", v.Config.Listeners[0])
	}
	// Listeners a response leaves out are removed (state of the world).
	reqs = p.onResponse(response(t, ListenerType, "v3", "l3", httpListener(t, "0.0.0.0_81", "81")))
	one(t, reqs, 0, ListenerType, "v3", "l3")
	one(t, reqs, 1, RouteType, "v1", "r1", "81")
	if got := p.View(false, false).XDS["LDS"].Resources; !slices.Equal(got, []string{"0.0.0.0_81"}) {
		t.Fatalf("listeners held: %v", got)
	}
}

// A field rule broken by one listener refuses the whole response: nothing is applied.
func TestFieldRulesRefuseTheWholeResponse(t *testing.T) {
	p := connected(t)
	bad := &listenerv3.Listener{Name: "bad", FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{Name: ""}}}}}
	reqs := p.onResponse(response(t, ListenerType, "v2", "l2", httpListener(t, "0.0.0.0_82", "82"), bad))
	one(t, reqs, 0, ListenerType, "v1", "l2")
	if !strings.Contains(reqs[0].GetErrorDetail().GetMessage(), "Proto constraint validation failed") {
		t.Fatalf("error detail: %v", reqs[0].GetErrorDetail())
	}
	if got := p.View(false, false).XDS["LDS"].Resources; !slices.Equal(got, []string{"0.0.0.0_80"}) {
		t.Fatalf("listeners held: %v", got)
	}
	// A resource of another type than the response's is refused too.
	r := response(t, ListenerType, "v3", "l3")
	r.Resources = append(r.Resources, mustAny(t, edsCluster("x")))
	reqs = p.onResponse(r)
	if !strings.Contains(reqs[0].GetErrorDetail().GetMessage(), "does not match the message-wide type URL") {
		t.Fatalf("error detail: %v", reqs[0].GetErrorDetail())
	}
}

// After a reconnect every subscribed type is asked for again with its accepted version and no
// nonce; the node goes on the first request only (session).
func TestReconnectAsksForEverySubscription(t *testing.T) {
	p := connected(t)
	p.streamEnded(nil)
	reqs := p.streamStarted()
	one(t, reqs, 0, ClusterType, "v1", "")
	one(t, reqs, 1, EndpointType, "v1", "", "outbound|80||web")
	one(t, reqs, 2, ListenerType, "v1", "")
	one(t, reqs, 3, RouteType, "v1", "", "80")
	if v := p.View(false, false); !v.Connected || v.Connects != 2 {
		t.Fatalf("%+v", v)
	}
	// A response of a type never asked for is ignored, as Envoy's mux does.
	p2 := newProxy(ProxySpec{Type: "sidecar", Pod: "a", Namespace: "b", IP: "10.0.0.1"})
	p2.streamStarted()
	if out := p2.onResponse(response(t, ListenerType, "v1", "x")); out != nil {
		t.Fatalf("want no request, got %v", out)
	}
}

// The node is pilot-agent's: id, namespace, labels, addresses and versions.
func TestNode(t *testing.T) {
	spec := ProxySpec{
		Type: "router", Pod: "gw-0", Namespace: "mesh-system", IP: "10.244.0.9",
		Labels: map[string]string{"app": "mesh-ingressgateway"}, IstioVersion: "1.29.1", EnvoyVersion: "1.37.2",
	}
	if err := spec.validate(); err != nil {
		t.Fatal(err)
	}
	n, err := spec.Node()
	if err != nil {
		t.Fatal(err)
	}
	if n.GetId() != "router~10.244.0.9~gw-0.mesh-system~mesh-system.svc.cluster.local" {
		t.Fatalf("id %q", n.GetId())
	}
	m := n.GetMetadata().AsMap()
	if m["NAMESPACE"] != "mesh-system" || m["INSTANCE_IPS"] != "10.244.0.9" || m["ISTIO_VERSION"] != "1.29.1" ||
		m["CLUSTER_ID"] != DefaultClusterID || m["LABELS"].(map[string]any)["app"] != "mesh-ingressgateway" {
		t.Fatalf("metadata %v", m)
	}
	if v := n.GetUserAgentBuildVersion().GetVersion(); v.GetMajorNumber() != 1 || v.GetMinorNumber() != 37 || v.GetPatch() != 2 {
		t.Fatalf("build version %v", v)
	}
	for _, bad := range []ProxySpec{
		{Type: "waypoint", Pod: "a", Namespace: "b", IP: "10.0.0.1"},
		{Type: "sidecar", Pod: "a", Namespace: "b", IP: "not-an-ip"},
		{Type: "sidecar", Pod: "a", Namespace: "b", IP: "10.0.0.1", EnvoyVersion: "1.38"},
	} {
		if bad.validate() == nil {
			t.Fatalf("%+v accepted", bad)
		}
	}
}
