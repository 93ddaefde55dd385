package main

import (
	"fmt"
	"slices"
	"strings"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	lrl "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"
	grl "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

// outcome is what the check found for one proxy: failures, and counts for the summary line.
type outcome struct {
	errs      []string
	managers  int // HTTP connection managers that got the filter
	forwards  int // forwarding routes that got the per-route config
	untouched int // non-forwarding routes seen in the intended route configurations
	// The global filter's stage and the cluster it asks (when the case has the global filter).
	globalStage   uint32
	globalCluster string
}

// has says whether the expected HTTP filters include name.
func has(filters []string, name string) bool {
	return slices.Contains(filters, name)
}

func (o *outcome) fail(format string, args ...any) {
	o.errs = append(o.errs, fmt.Sprintf(format, args...))
}

// intendedListener says whether the EnvoyFilter's context means this listener: the sidecar's
// inbound listener (SIDECAR_INBOUND), or any listener of the gateway (GATEWAY).
func intendedListener(kind, name string) bool {
	return kind == gateway || name == "virtualInbound"
}

// checkProxy compares what Istio generated for one proxy with and without the EnvoyFilter.
// `intended` says whether the EnvoyFilter is meant for this proxy; `filters` are the HTTP filters
// it inserts, in order, right before the router (the local one, the global one or both). The
// patched configuration is changed in place to undo the expected patches; whatever is left must
// equal the baseline. `clusters` are the proxy's: the global filter's cluster must be one.
func checkProxy(kind string, intended bool, filters []string, base, patched *flat, clusters []*cluster.Cluster) *outcome {
	o := &outcome{}
	for _, m := range patched.managers {
		if intended && intendedListener(kind, m.listener) {
			checkFilterChain(o, m, filters, clusters)
		} else if slices.ContainsFunc(m.hcm.HttpFilters, func(f *hcmv3.HttpFilter) bool { return f.Name == rateLimitFilter }) {
			o.fail("%s: has the local rate limit filter, which the EnvoyFilter is not meant for", m.where)
		} else if slices.ContainsFunc(m.hcm.HttpFilters, func(f *hcmv3.HttpFilter) bool { return f.Name == globalFilter }) {
			o.fail("%s: has the global rate limit filter, which the EnvoyFilter is not meant for", m.where)
		}
	}
	for _, r := range patched.routes {
		if intended && r.listener != "" && intendedListener(kind, r.listener) {
			checkRoutes(o, r, base.route(r.key), filters)
		}
	}
	if intended && o.managers == 0 {
		o.fail("no HTTP connection manager of the intended listener got the local rate limit filter")
	}
	if intended && o.forwards == 0 {
		o.fail("no forwarding route of the intended listener got the per-route configuration")
	}
	compareListeners(o, base, patched)
	compareRoutes(o, base, patched)
	return o
}

// checkFilterChain: exactly one of each expected filter, in the expected order, right before the
// router (which Envoy requires last): the local rate limit filter, inert on its own (the routes
// turn it on), then the global one, asking a cluster the proxy has over transport API V3. Then
// they are removed for the comparison.
func checkFilterChain(o *outcome, m *httpManager, filters []string, clusters []*cluster.Cluster) {
	names := make([]string, len(m.hcm.HttpFilters))
	for i, f := range m.hcm.HttpFilters {
		names[i] = f.Name
	}
	last := len(names) - 1
	for k, want := range filters {
		at := slices.Index(names, want)
		what := "the local rate limit filter"
		if want == globalFilter {
			what = "the global rate limit filter"
		}
		switch {
		case at < 0:
			o.fail("%s: no %s; HTTP filters: %s", m.where, strings.TrimPrefix(what, "the "), strings.Join(names, ", "))
			return
		case slices.Index(names[at+1:], want) >= 0:
			o.fail("%s: %s appears more than once: %s", m.where, what, strings.Join(names, ", "))
		case last < 0 || names[last] != routerFilter || at != last-len(filters)+k:
			if k == len(filters)-1 {
				o.fail("%s: %s is not right before the router: %s", m.where, what, strings.Join(names, ", "))
			} else {
				o.fail("%s: %s is not right before %s: %s", m.where, what, filters[k+1], strings.Join(names, ", "))
			}
		}
	}
	for _, f := range m.hcm.HttpFilters {
		switch f.Name {
		case rateLimitFilter:
			cfg := &lrl.LocalRateLimit{}
			if err := f.GetTypedConfig().UnmarshalTo(cfg); err != nil {
				o.fail("%s: local rate limit filter config: %v", m.where, err)
			} else if enabled(cfg.FilterEnabled) {
				o.fail("%s: the listener-level local rate limit filter is enabled; only routes should turn it on", m.where)
			}
		case globalFilter:
			cfg := &grl.RateLimit{}
			if err := f.GetTypedConfig().UnmarshalTo(cfg); err != nil {
				o.fail("%s: global rate limit filter config: %v", m.where, err)
				continue
			}
			name := cfg.GetRateLimitService().GetGrpcService().GetEnvoyGrpc().GetClusterName()
			if !slices.ContainsFunc(clusters, func(c *cluster.Cluster) bool { return c.Name == name }) {
				o.fail("%s: the global rate limit filter asks cluster %q, which the proxy does not have", m.where, name)
			}
			if v := cfg.GetRateLimitService().GetTransportApiVersion(); v != corev3.ApiVersion_V3 {
				o.fail("%s: the global rate limit filter speaks transport API %s, not V3", m.where, v)
			}
			if cfg.Domain == "" || cfg.Stage == 0 {
				o.fail("%s: the global rate limit filter has domain %q and stage %d (local entries are stage 0)", m.where, cfg.Domain, cfg.Stage)
			}
			o.globalStage, o.globalCluster = cfg.Stage, name
			takeBodyMapper(o, m)
		}
	}
	m.hcm.HttpFilters = slices.DeleteFunc(m.hcm.HttpFilters, func(f *hcmv3.HttpFilter) bool {
		return has(filters, f.Name)
	})
	if err := m.repack(); err != nil {
		o.fail("%v", err)
	}
	o.managers++
}

// rateLimitedBody is the body of a local rate limit refusal, which the EnvoyFilter's local reply
// mapper gives a global refusal too.
const rateLimitedBody = "local_rate_limited"

// takeBodyMapper: the connection manager's local reply config ends with the mapper that gives
// every rate-limited local reply (response flag RL) the body of a local refusal; it is removed for
// the comparison (with the config, when nothing else is left in it).
func takeBodyMapper(o *outcome, m *httpManager) {
	cfg := m.hcm.GetLocalReplyConfig()
	ms := cfg.GetMappers()
	if len(ms) == 0 {
		o.fail("%s: no local reply mapper gives a global refusal the body %q", m.where, rateLimitedBody)
		return
	}
	last := ms[len(ms)-1]
	flags := last.GetFilter().GetResponseFlagFilter().GetFlags()
	if len(flags) != 1 || flags[0] != "RL" || last.GetBody().GetInlineString() != rateLimitedBody ||
		last.GetStatusCode() != nil || last.GetHeadersToAdd() != nil || last.GetBodyFormatOverride() != nil {
		o.fail("%s: the last local reply mapper is not {response flag RL: body %q}: %v", m.where, rateLimitedBody, last)
		return
	}
	cfg.Mappers = ms[:len(ms)-1]
	if len(cfg.Mappers) == 0 && cfg.BodyFormat == nil {
		m.hcm.LocalReplyConfig = nil
	}
}

// enabled: a RuntimeFractionalPercent whose default is above 0% (unset means disabled).
func enabled(p *corev3.RuntimeFractionalPercent) bool {
	return p.GetDefaultValue().GetNumerator() > 0
}

// all: a RuntimeFractionalPercent whose default is 100%.
func all(p *corev3.RuntimeFractionalPercent) bool {
	d := p.GetDefaultValue()
	return d.GetDenominator() == typev3.FractionalPercent_HUNDRED && d.GetNumerator() == 100
}

// shadowHeader is the request header a RateLimit in shadow mode adds to what it would reject.
const shadowHeader = "x-ratelimit-would-reject"

// shadow: a per-route config in shadow mode (a RateLimit's enforce: false): enforced for no
// request, and marking each it would reject with shadowHeader, so the workload can tell.
func shadow(cfg *lrl.LocalRateLimit) bool {
	d := cfg.FilterEnforced.GetDefaultValue()
	hs := cfg.RequestHeadersToAddWhenNotEnforced
	return cfg.FilterEnforced != nil && d.GetNumerator() == 0 && len(hs) == 1 &&
		hs[0].GetHeader().GetKey() == shadowHeader && hs[0].GetHeader().GetValue() == "true"
}

// checkRoutes: every route that forwards without the EnvoyFilter (action `route` in the baseline)
// still forwards and carries what the filters read. With the local filter: the same per-route
// LocalRateLimit, enabled and enforced for every request (or, in shadow mode, enforced for none
// and marking what it would reject), with one descriptor per stage-0 `rate_limits` entry. With the
// global filter: `rate_limits` entries at the global filter's stage, and none without it. Always:
// the operator's route digest in the route's metadata (beside Istio's own entry). The entries and
// the digest are the same on every such route. Those additions are undone; other routes are left as
// they are, so the comparison with the baseline shows any change to them.
func checkRoutes(o *outcome, r *routeConfig, base *routeConfig, filters []string) {
	local, global := has(filters, rateLimitFilter), has(filters, globalFilter)
	var first *route.Route
	for _, vh := range r.rc.VirtualHosts {
		for i, rt := range vh.Routes {
			where := fmt.Sprintf("%s, virtual host %q, route %d %q", r.key, vh.Name, i, rt.Name)
			was := baseRoute(base, vh.Name, i)
			if was == nil || was.GetRoute() == nil {
				o.untouched++
				continue
			}
			if rt.GetRoute() == nil {
				o.fail("%s: forwarded without the EnvoyFilter, action is now %s", where, action(rt))
				continue
			}
			var stage0, staged []*route.RateLimit
			for _, e := range rt.GetRoute().RateLimits {
				if e.GetStage().GetValue() == 0 {
					stage0 = append(stage0, e)
				} else {
					staged = append(staged, e)
				}
			}
			raw := rt.TypedPerFilterConfig[rateLimitFilter]
			switch {
			case local && raw == nil:
				o.fail("%s: forwards (action route) but carries no %s config", where, rateLimitFilter)
				continue
			case !local && raw != nil:
				o.fail("%s: carries a %s config, but the EnvoyFilter has no local filter", where, rateLimitFilter)
			case !local && len(stage0) > 0:
				o.fail("%s: %d stage-0 rate_limits entries, but the EnvoyFilter has no local filter", where, len(stage0))
			}
			if local {
				cfg := &lrl.LocalRateLimit{}
				if err := raw.UnmarshalTo(cfg); err != nil {
					o.fail("%s: per-route config: %v", where, err)
					continue
				}
				switch {
				case !all(cfg.FilterEnabled) || (!all(cfg.FilterEnforced) && !shadow(cfg)):
					o.fail("%s: per-route config does not enable and enforce the limit for every request", where)
				case cfg.TokenBucket == nil:
					o.fail("%s: per-route config has no default token bucket", where)
				case len(cfg.Descriptors) != len(stage0):
					o.fail("%s: %d descriptors but %d rate_limits entries", where, len(cfg.Descriptors), len(stage0))
				}
			}
			switch {
			case global && len(staged) == 0:
				o.fail("%s: forwards (action route) but carries no global rate_limits entry", where)
			case !global && len(staged) > 0:
				o.fail("%s: %d rate_limits entries past stage 0, but the EnvoyFilter has no global filter", where, len(staged))
			}
			for _, e := range staged {
				if e.GetStage().GetValue() != o.globalStage {
					o.fail("%s: a global rate_limits entry at stage %d, the global filter reads stage %d", where, e.GetStage().GetValue(), o.globalStage)
				}
			}
			digest := routeDigest(rt)
			if digest == "" {
				o.fail("%s: forwards (action route) but its metadata has no %s digest", where, routeMetadataKey)
			}
			if first == nil {
				first = rt
			} else {
				if want := routeDigest(first); digest != want {
					o.fail("%s: route digest %q differs from route %q's %q", where, digest, first.Name, want)
				}
				if d := cmp.Diff(first.TypedPerFilterConfig[rateLimitFilter], raw, protocmp.Transform()); d != "" {
					o.fail("%s: per-route config differs from route %q's:\n%s", where, first.Name, indent(d))
				}
				if d := cmp.Diff(first.GetRoute().RateLimits, rt.GetRoute().RateLimits, protocmp.Transform()); d != "" {
					o.fail("%s: rate_limits differ from route %q's:\n%s", where, first.Name, indent(d))
				}
			}
			rt = proto.Clone(rt).(*route.Route)
			delete(rt.TypedPerFilterConfig, rateLimitFilter)
			rt.GetRoute().RateLimits = nil
			if m := rt.GetMetadata(); m != nil {
				delete(m.FilterMetadata, routeMetadataKey)
				// Istio's own entry stays; a route that had no metadata has none again.
				if was.GetMetadata() == nil && len(m.FilterMetadata) == 0 && len(m.TypedFilterMetadata) == 0 {
					rt.Metadata = nil
				}
			}
			vh.Routes[i] = rt
			o.forwards++
		}
	}
}

// routeMetadataKey is the operator's entry in a route's metadata (src/api/envoy.ts
// ROUTE_METADATA_KEY): {digest}, which identifies the route config its EnvoyFilter merges.
const routeMetadataKey = "platform-project.io/ratelimit"

// routeDigest is the digest in the operator's entry of rt's metadata, or "".
func routeDigest(rt *route.Route) string {
	return rt.GetMetadata().GetFilterMetadata()[routeMetadataKey].GetFields()["digest"].GetStringValue()
}

// baseRoute is route i of the virtual host named vh in the baseline, if there is one.
func baseRoute(base *routeConfig, vh string, i int) *route.Route {
	if base == nil {
		return nil
	}
	for _, v := range base.rc.VirtualHosts {
		if v.Name == vh && i < len(v.Routes) {
			return v.Routes[i]
		}
	}
	return nil
}

func compareListeners(o *outcome, base, patched *flat) {
	for _, l := range patched.listeners {
		b := base.listener(l.Name)
		if b == nil {
			o.fail("listener %s: added by the EnvoyFilter", l.Name)
		} else if d := cmp.Diff(b, l, protocmp.Transform()); d != "" {
			o.fail("listener %s: changed by the EnvoyFilter beyond the local rate limit filter:\n%s", l.Name, indent(d))
		}
	}
	for _, b := range base.listeners {
		if patched.listener(b.Name) == nil {
			o.fail("listener %s: removed by the EnvoyFilter", b.Name)
		}
	}
}

// compareRoutes reports, route by route, what differs from the baseline after checkRoutes undid
// the expected additions: a redirect that became a forwarding route shows up here.
func compareRoutes(o *outcome, base, patched *flat) {
	for _, r := range patched.routes {
		b := base.route(r.key)
		if b == nil {
			o.fail("%s: added by the EnvoyFilter", r.key)
			continue
		}
		for _, vh := range r.rc.VirtualHosts {
			i := slices.IndexFunc(b.rc.VirtualHosts, func(x *route.VirtualHost) bool { return x.Name == vh.Name })
			if i < 0 {
				o.fail("%s, virtual host %q: added by the EnvoyFilter", r.key, vh.Name)
				continue
			}
			bv := b.rc.VirtualHosts[i]
			for j, rt := range vh.Routes {
				if j >= len(bv.Routes) {
					o.fail("%s, virtual host %q, route %d %q: added by the EnvoyFilter", r.key, vh.Name, j, rt.Name)
				} else if d := cmp.Diff(bv.Routes[j], rt, protocmp.Transform()); d != "" {
					o.fail("%s, virtual host %q, route %d %q (action %s, was %s): changed by the EnvoyFilter:\n%s",
						r.key, vh.Name, j, rt.Name, action(rt), action(bv.Routes[j]), indent(d))
				}
			}
			if len(vh.Routes) < len(bv.Routes) {
				o.fail("%s, virtual host %q: routes removed by the EnvoyFilter", r.key, vh.Name)
			}
		}
		// What is left besides the routes: virtual hosts' and the configuration's own fields.
		if d := cmp.Diff(b.rc, r.rc, protocmp.Transform(), protocmp.IgnoreFields(&route.VirtualHost{}, "routes")); d != "" {
			o.fail("%s: changed by the EnvoyFilter outside its routes:\n%s", r.key, indent(d))
		}
	}
	for _, b := range base.routes {
		if patched.route(b.key) == nil {
			o.fail("%s: removed by the EnvoyFilter", b.key)
		}
	}
}

func indent(s string) string {
	return "      " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n      ")
}
