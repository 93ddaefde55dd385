package main

import (
	"fmt"
	"sort"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Envoy's names for the filters the check looks at (the names Envoy registers them under).
const (
	hcmFilter       = "envoy.filters.network.http_connection_manager"
	routerFilter    = "envoy.filters.http.router"
	rateLimitFilter = "envoy.filters.http.local_ratelimit"
	globalFilter    = "envoy.filters.http.ratelimit"
)

// httpManager is one HTTP connection manager of a listener, unpacked so that it can be checked
// and changed, and packed back into its filter by repack.
type httpManager struct {
	where    string // "listener L, filter chain C"
	listener string
	filter   *listener.Filter
	hcm      *hcmv3.HttpConnectionManager
}

// routeConfig is a route configuration with where it came from: RDS (by name) or inline in an
// HTTP connection manager (the sidecar's inbound routes).
type routeConfig struct {
	key      string // "route configuration N" or "inline routes of listener L, filter chain C"
	listener string // the listener naming it or holding it inline ("" when no listener names it)
	rc       *route.RouteConfiguration
}

// flat is a proxy's configuration taken apart: listeners (deep copies whose HTTP connection
// managers hold no inline routes), their HTTP connection managers, and all route configurations.
type flat struct {
	listeners []*listener.Listener
	managers  []*httpManager
	routes    []*routeConfig
}

// flatten takes x apart without changing it. Inline route configurations move out of their HTTP
// connection managers so that routes are compared route by route and listeners without routes.
func flatten(x xds) (*flat, error) {
	f := &flat{}
	rdsOwner := map[string]string{}
	for _, l0 := range x.Listeners {
		l := proto.Clone(l0).(*listener.Listener)
		f.listeners = append(f.listeners, l)
		for ci, fc := range l.FilterChains {
			// Names repeat (a port's TLS and plaintext chains share one): the index tells them apart.
			chain := fmt.Sprintf("%d %q", ci, fc.Name)
			for _, flt := range fc.Filters {
				if flt.Name != hcmFilter {
					continue
				}
				h := &hcmv3.HttpConnectionManager{}
				if err := flt.GetTypedConfig().UnmarshalTo(h); err != nil {
					return nil, fmt.Errorf("listener %s: %v", l.Name, err)
				}
				m := &httpManager{
					where:    fmt.Sprintf("listener %s, filter chain %s", l.Name, chain),
					listener: l.Name,
					filter:   flt,
					hcm:      h,
				}
				if rc := h.GetRouteConfig(); rc != nil {
					f.routes = append(f.routes, &routeConfig{key: "inline routes of " + m.where, listener: l.Name, rc: rc})
					h.RouteSpecifier = nil
				}
				if rds := h.GetRds(); rds != nil {
					rdsOwner[rds.RouteConfigName] = l.Name
				}
				f.managers = append(f.managers, m)
				if err := m.repack(); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, rc := range x.Routes {
		f.routes = append(f.routes, &routeConfig{
			key:      "route configuration " + rc.Name,
			listener: rdsOwner[rc.Name],
			rc:       proto.Clone(rc).(*route.RouteConfiguration),
		})
	}
	sort.SliceStable(f.routes, func(i, j int) bool { return f.routes[i].key < f.routes[j].key })
	return f, nil
}

// repack writes the (possibly changed) HTTP connection manager back into its listener filter.
func (m *httpManager) repack() error {
	a, err := anypb.New(m.hcm)
	if err != nil {
		return fmt.Errorf("%s: %v", m.where, err)
	}
	m.filter.ConfigType = &listener.Filter_TypedConfig{TypedConfig: a}
	return nil
}

func (f *flat) listener(name string) *listener.Listener {
	for _, l := range f.listeners {
		if l.Name == name {
			return l
		}
	}
	return nil
}

func (f *flat) route(key string) *routeConfig {
	for _, r := range f.routes {
		if r.key == key {
			return r
		}
	}
	return nil
}

// action names a route's action as Envoy's route_components.proto spells the oneof.
func action(r *route.Route) string {
	switch r.Action.(type) {
	case *route.Route_Route:
		return "route"
	case *route.Route_Redirect:
		return "redirect"
	case *route.Route_DirectResponse:
		return "direct_response"
	case *route.Route_FilterAction:
		return "filter_action"
	case *route.Route_NonForwardingAction:
		return "non_forwarding_action"
	default:
		return "no action"
	}
}
