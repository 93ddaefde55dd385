package main

// The checks Envoy makes when it builds a listener or a route configuration that no field rule of
// the API (protoc-gen-validate, go-control-plane's ValidateAll) expresses: the constructors of the
// HTTP connection manager, of its HTTP filter chain, of the local rate limit filter and of the
// per-route filter configs. Each check names its place in Envoy's source; docs/proxy-standin.md
// lists them. Envoy throws at the first failure, so each function returns the first error.

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	lrlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"platform-project.local/tools/istio-check/internal/xdsvalidate"
)

// Message full names the checks refer to.
const (
	hcmType         = "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
	localRateLimit  = "envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit"
	routerType      = "envoy.extensions.filters.http.router.v3.Router"
	upstreamCodec   = "envoy.extensions.filters.http.upstream_codec.v3.UpstreamCodec"
	filterConfig    = "envoy.config.route.v3.FilterConfig"
	typedStruct     = "xds.type.v3.TypedStruct"
	udpaTypedStruct = "udpa.type.v1.TypedStruct"
)

// minFillIntervalMs is the token bucket floor of LocalRateLimiterImpl's constructor.
const minFillIntervalMs = 50

// Factory kinds: Envoy keeps one factory registry per kind and looks a config's type up in it.
type factoryKind int

const (
	httpFilter factoryKind = iota
	networkFilter
	listenerFilter
)

// istioProxyExtensions are the filter configs istio/proxy registers on top of Envoy's whose Go
// types no module linked here defines (istiod sends them by type URL only).
var istioProxyExtensions = map[string]factoryKind{
	"stats.PluginConfig":                                 httpFilter,
	"io.istio.http.peer_metadata.Config":                 httpFilter,
	"io.istio.http.metadata_exchange.Config":             httpFilter,
	"envoy.tcp.metadataexchange.config.MetadataExchange": networkFilter,
}

// Package prefixes of each factory kind's config messages: a linked type under one of them is a
// registered factory, as istio/proxy builds Envoy's HTTP, network and listener filters and
// Istio's own (istio.io/api's envoy/config/filter/...).
var kindPrefixes = map[factoryKind][]string{
	httpFilter: {
		"envoy.extensions.filters.http.", "envoy.config.filter.http.",
		"istio.envoy.config.filter.http.", "envoy.extensions.http.",
	},
	networkFilter: {
		"envoy.extensions.filters.network.", "envoy.config.filter.network.",
		"istio.envoy.config.filter.network.",
	},
	listenerFilter: {"envoy.extensions.filters.listener."},
}

// Factory names (for error messages), by config type, of the filters istiod emits or that matter
// for terminal filters; others are named by their config type.
var factoryNames = map[string]string{
	hcmType:        "envoy.filters.network.http_connection_manager",
	localRateLimit: "envoy.filters.http.local_ratelimit",
	routerType:     "envoy.filters.http.router",
	upstreamCodec:  "envoy.filters.http.upstream_codec",
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy":             "envoy.filters.network.tcp_proxy",
	"envoy.extensions.filters.network.direct_response.v3.Config":         "envoy.filters.network.direct_response",
	"envoy.extensions.filters.network.echo.v3.Echo":                      "envoy.filters.network.echo",
	"envoy.extensions.filters.network.redis_proxy.v3.RedisProxy":         "envoy.filters.network.redis_proxy",
	"envoy.extensions.filters.network.thrift_proxy.v3.ThriftProxy":       "envoy.filters.network.thrift_proxy",
	"envoy.extensions.filters.network.dubbo_proxy.v3.DubboProxy":         "envoy.filters.network.dubbo_proxy",
	"envoy.extensions.filters.network.generic_proxy.v3.GenericProxy":     "envoy.filters.network.generic_proxy",
	"envoy.extensions.filters.network.zookeeper_proxy.v3.ZooKeeperProxy": "envoy.filters.network.zookeeper_proxy",
}

// terminal says which filters' factories are terminal (isTerminalFilterByProto): the router and
// upstream codec among HTTP filters; among network filters the ones that end a chain.
var terminal = map[string]bool{
	routerType:    true,
	upstreamCodec: true,
	hcmType:       true,
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy":         true,
	"envoy.extensions.filters.network.direct_response.v3.Config":     true,
	"envoy.extensions.filters.network.echo.v3.Echo":                  true,
	"envoy.extensions.filters.network.redis_proxy.v3.RedisProxy":     true,
	"envoy.extensions.filters.network.thrift_proxy.v3.ThriftProxy":   true,
	"envoy.extensions.filters.network.dubbo_proxy.v3.DubboProxy":     true,
	"envoy.extensions.filters.network.generic_proxy.v3.GenericProxy": true,
}

func factoryName(typeName string) string {
	if n, ok := factoryNames[typeName]; ok {
		return n
	}
	return typeName
}

// registered says whether Envoy (istio/proxy's build) has a factory of the kind for a config of
// this type (Registry::FactoryRegistry<...>::getFactoryByType).
func registered(kind factoryKind, typeName string) bool {
	if k, ok := istioProxyExtensions[typeName]; ok {
		return k == kind
	}
	if _, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(typeName)); err != nil {
		return false
	}
	for _, p := range kindPrefixes[kind] {
		if strings.HasPrefix(typeName, p) {
			return true
		}
	}
	return false
}

// readTypedStruct reads an xds.type.v3.TypedStruct or udpa.type.v1.TypedStruct (the same two
// fields: 1 type_url, 2 value) from an Any's bytes, without linking either type.
func readTypedStruct(b []byte) (string, *structpb.Struct, error) {
	var typeURL string
	value := &structpb.Struct{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", nil, protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return "", nil, protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return "", nil, protowire.ParseError(n)
		}
		b = b[n:]
		switch num {
		case 1:
			typeURL = string(v)
		case 2:
			if err := proto.Unmarshal(v, value); err != nil {
				return "", nil, err
			}
		}
	}
	return typeURL, value, nil
}

func isTypedStruct(a *anypb.Any) bool {
	t := xdsvalidate.TypeName(a.GetTypeUrl())
	return t == typedStruct || t == udpaTypedStruct
}

// factoryType is Config::Utility::getFactoryType (source/common/config/utility.h): the type the
// factory is looked up by, the one inside a TypedStruct when the Any holds one.
func factoryType(a *anypb.Any) string {
	if isTypedStruct(a) {
		if inner, _, err := readTypedStruct(a.GetValue()); err == nil {
			return xdsvalidate.TypeName(inner)
		}
	}
	return xdsvalidate.TypeName(a.GetTypeUrl())
}

// translate is Config::Utility::translateOpaqueConfig then MessageUtil::validate: the config as
// its message, its field rules checked (an Any's content is only checked here, when a factory
// reads it). A TypedStruct's value is read as JSON; unknown fields are allowed, as Envoy's
// dynamic validation visitor only warns about them. A registered type no linked module defines
// (istio/proxy's own) gives no message and no error.
func translate(a *anypb.Any) (proto.Message, error) {
	var msg proto.Message
	if isTypedStruct(a) {
		inner, value, err := readTypedStruct(a.GetValue())
		if err != nil {
			return nil, fmt.Errorf("Unable to unpack as %s: %v", xdsvalidate.TypeName(a.GetTypeUrl()), err)
		}
		mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(xdsvalidate.TypeName(inner)))
		if err != nil {
			return nil, nil
		}
		msg = mt.New().Interface()
		js, err := protojson.Marshal(value)
		if err != nil {
			return nil, err
		}
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(js, msg); err != nil {
			return nil, fmt.Errorf("Unable to parse JSON as proto (%v)", err)
		}
	} else {
		m, err := a.UnmarshalNew()
		if err != nil {
			if errors.Is(err, protoregistry.NotFound) {
				return nil, nil
			}
			return nil, fmt.Errorf("Unable to unpack as %s: %v", xdsvalidate.TypeName(a.GetTypeUrl()), err)
		}
		msg = m
	}
	for _, e := range xdsvalidate.All(string(msg.ProtoReflect().Descriptor().FullName()), msg, nil) {
		return nil, fmt.Errorf("Proto constraint validation failed (%s)", e)
	}
	return msg, nil
}

func missingFactory(name string, a *anypb.Any) error {
	return fmt.Errorf("Didn't find a registered implementation for '%s' with type URL: '%s'",
		name, factoryType(a))
}

// checkListener builds what a listener holds: its listener filters and each filter chain's network
// filters (ProdListenerComponentFactory::createListenerFilterFactoryListImpl and
// ::createNetworkFilterFactoryListImpl, source/common/listener_manager/listener_manager_impl.cc).
func checkListener(l *listenerv3.Listener) error {
	for _, f := range l.GetListenerFilters() {
		if f.GetConfigDiscovery() != nil {
			continue
		}
		if !registered(listenerFilter, factoryType(f.GetTypedConfig())) {
			return missingFactory(f.GetName(), f.GetTypedConfig())
		}
		if _, err := translate(f.GetTypedConfig()); err != nil {
			return err
		}
	}
	quic := l.GetUdpListenerConfig().GetQuicOptions() != nil
	chains := l.GetFilterChains()
	if d := l.GetDefaultFilterChain(); d != nil {
		chains = append(append([]*listenerv3.FilterChain{}, chains...), d)
	}
	for _, fc := range chains {
		if err := checkNetworkFilters(fc.GetFilters(), quic); err != nil {
			return err
		}
	}
	return nil
}

// checkNetworkFilters is createNetworkFilterFactoryListImpl: each filter's factory found by type
// (Config::Utility::getAndCheckFactory), its config translated and built (the HTTP connection
// manager's constructor among them), and a terminal filter last and only last
// (Config::Utility::validateTerminalFilters, source/common/config/utility.h).
func checkNetworkFilters(filters []*listenerv3.Filter, quic bool) error {
	for i, f := range filters {
		if f.GetConfigDiscovery() != nil {
			continue
		}
		a := f.GetTypedConfig()
		t := factoryType(a)
		if !registered(networkFilter, t) {
			return missingFactory(f.GetName(), a)
		}
		msg, err := translate(a)
		if err != nil {
			return err
		}
		if h, ok := msg.(*hcmv3.HttpConnectionManager); ok {
			if err := checkHCM(h, quic); err != nil {
				return err
			}
		}
		if err := validateTerminal(f.GetName(), t, "network", i == len(filters)-1); err != nil {
			return err
		}
	}
	return nil
}

// validateTerminal is Config::Utility::validateTerminalFilters (source/common/config/utility.h).
func validateTerminal(name, typeName, chainType string, last bool) error {
	isTerminal := terminal[typeName]
	if isTerminal && !last {
		return fmt.Errorf("Error: terminal filter named %s of type %s must be the last filter in a %s filter chain.",
			name, factoryName(typeName), chainType)
	}
	if !isTerminal && last {
		return fmt.Errorf("Error: non-terminal filter named %s of type %s is the last filter in a %s filter chain.",
			name, factoryName(typeName), chainType)
	}
	return nil
}

// checkHCM is HttpConnectionManagerConfig's constructor
// (source/extensions/filters/network/http_connection_manager/config.cc), in its order.
func checkHCM(h *hcmv3.HttpConnectionManager, quic bool) error {
	if h.GetCommonHttpProtocolOptions().GetMaxResponseHeadersKb() != nil {
		return errors.New("Error: max_response_headers_kb cannot be set on http_connection_manager.")
	}
	if h.GetStripAnyHostPort() && h.GetStripMatchingHostPort() {
		return errors.New("Error: Only one of `strip_matching_host_port` or `strip_any_host_port` can be set.")
	}
	if len(h.GetOriginalIpDetectionExtensions()) > 0 {
		if h.GetUseRemoteAddress().GetValue() {
			return errors.New("Original IP detection extensions and use_remote_address may not be mixed")
		}
		if h.GetXffNumTrustedHops() > 0 {
			return errors.New("Original IP detection extensions and xff_num_trusted_hops may not be mixed")
		}
	}
	if rc := h.GetRouteConfig(); rc != nil {
		// RouteConfigProviderManager::createStaticRouteConfigProvider builds the inline routes.
		if err := checkRouteConfiguration(rc); err != nil {
			return err
		}
	}
	if h.GetAccessLogOptions() != nil {
		if h.GetFlushAccessLogOnNewRequest() {
			return errors.New("Only one of flush_access_log_on_new_request or access_log_options can be specified.")
		}
		if h.GetAccessLogFlushInterval() != nil {
			return errors.New("Only one of access_log_flush_interval or access_log_options can be specified.")
		}
	}
	http3 := h.GetCodecType() == hcmv3.HttpConnectionManager_HTTP3
	if http3 && !quic {
		return errors.New("HTTP/3 codec configured on non-QUIC listener.")
	}
	if !http3 && quic {
		return errors.New("Non-HTTP/3 codec configured on QUIC listener.")
	}
	if err := checkHTTPFilters(h.GetHttpFilters(), "http"); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, u := range h.GetUpgradeConfigs() {
		name := strings.ToLower(u.GetUpgradeType())
		if seen[name] {
			return fmt.Errorf("Error: multiple upgrade configs with the same name: '%s'", u.GetUpgradeType())
		}
		seen[name] = true
		if len(u.GetFilters()) > 0 {
			if err := checkHTTPFilters(u.GetFilters(), "http upgrade"); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkHTTPFilters is FilterChainHelper::processFilters and ::processFilter
// (source/common/http/filter_chain_helper.h).
func checkHTTPFilters(filters []*hcmv3.HttpFilter, chainType string) error {
	for i, f := range filters {
		last := i == len(filters)-1
		if last && f.GetDisabled() {
			return fmt.Errorf("Error: the last (terminal) filter (%s) in the chain cannot be disabled by default.", f.GetName())
		}
		if cd := f.GetConfigDiscovery(); cd != nil {
			// processDynamicFilterConfig: the config comes later over ECDS.
			if cd.GetApplyDefaultConfigWithoutWarming() && cd.GetDefaultConfig() == nil {
				return fmt.Errorf("Error: filter config %s applied without warming but has no default config.", f.GetName())
			}
			for _, u := range cd.GetTypeUrls() {
				if !registered(httpFilter, xdsvalidate.TypeName(u)) {
					return fmt.Errorf("Error: no factory found for a required type URL %s.", xdsvalidate.TypeName(u))
				}
			}
			continue
		}
		a := f.GetTypedConfig()
		t := factoryType(a)
		if !registered(httpFilter, t) {
			if f.GetIsOptional() {
				continue // "Didn't find a registered factory for the optional http filter"
			}
			return missingFactory(f.GetName(), a)
		}
		msg, err := translate(a)
		if err != nil {
			return err
		}
		if lrl, ok := msg.(*lrlv3.LocalRateLimit); ok {
			// LocalRateLimitFilterConfig::createFilterFactoryFromProtoTyped builds a FilterConfig.
			if err := checkLocalRateLimit(lrl, false); err != nil {
				return err
			}
		}
		if err := validateTerminal(f.GetName(), t, chainType, last); err != nil {
			return err
		}
	}
	return nil
}

// checkHeadersToAdd is HeaderParser::configure (source/common/router/header_parser.cc):
// HeadersToAddEntry's constructor and parseHttpHeaderFormatter.
func checkHeadersToAdd(headers []*corev3.HeaderValueOption) error {
	for _, h := range headers {
		if h.GetAppend() != nil && h.GetAppendAction() != corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD {
			return errors.New("Both append and append_action are set and it's not allowed")
		}
		// Http::HeaderUtility::isModifiableHeader
		key := h.GetHeader().GetKey()
		if strings.HasPrefix(key, ":") || strings.EqualFold(key, "host") {
			return errors.New(":-prefixed or host headers may not be modified")
		}
	}
	return nil
}

// checkLocalRateLimit is the local rate limit filter's FilterConfig constructor
// (source/extensions/filters/http/local_ratelimit/local_ratelimit.cc, filter_config.cc in newer
// trees), with the RateLimitConfig it builds from rate_limits
// (source/extensions/filters/common/ratelimit_config/ratelimit_config.cc) and the
// LocalRateLimiterImpl constructor
// (source/extensions/filters/common/local_ratelimit/local_ratelimit_impl.cc). perRoute is true for
// a typed_per_filter_config (LocalRateLimitFilterConfig::createRouteSpecificFilterConfigTyped).
func checkLocalRateLimit(c *lrlv3.LocalRateLimit, perRoute bool) error {
	// Member initialisers: the header parsers.
	if err := checkHeadersToAdd(c.GetResponseHeadersToAdd()); err != nil {
		return err
	}
	if err := checkHeadersToAdd(c.GetRequestHeadersToAddWhenNotEnforced()); err != nil {
		return err
	}
	if perRoute && c.GetTokenBucket() == nil {
		return errors.New("local rate limit token bucket must be set for per filter configs")
	}
	for _, rl := range c.GetRateLimits() {
		if err := checkRateLimitPolicy(rl); err != nil {
			return err
		}
	}
	if c.GetLocalClusterRateLimit() != nil {
		if c.GetLocalRateLimitPerDownstreamConnection() {
			return errors.New("local_cluster_rate_limit is set and local_rate_limit_per_downstream_connection is set to true")
		}
		// Istio's bootstrap names no cluster_manager.local_cluster_name.
		return errors.New("local_cluster_rate_limit is set but no local cluster name is present")
	}
	return checkLimiter(c)
}

// checkRateLimitPolicy is RateLimitPolicy's constructor in ratelimit_config.cc (no_limit true, as
// the local rate limit filter builds it).
func checkRateLimitPolicy(rl *routev3.RateLimit) error {
	if ha := rl.GetHitsAddend(); ha != nil {
		switch {
		case ha.GetFormat() != "" && ha.GetNumber() != nil:
			return errors.New("hits_addend must contain either a format or a number")
		case ha.GetFormat() != "":
			if n := strings.Count(ha.GetFormat(), "%") / 2; n != 1 {
				return errors.New("hits_addend format must contain exactly one substitution")
			}
		case ha.GetNumber() == nil:
			return errors.New("hits_addend must contain either a format or a number")
		}
	}
	if rl.GetStage() != nil || rl.GetDisableKey() != "" {
		return errors.New("'stage' field and 'disable_key' field are not supported")
	}
	if rl.GetLimit() != nil {
		return errors.New("'limit' field is not supported")
	}
	return nil
}

// descriptorString is RateLimit::LocalDescriptor::toString: `key=value, key=value`.
func descriptorString(entries []*ratelimitv3.RateLimitDescriptor_Entry) string {
	parts := make([]string, len(entries))
	for i, e := range entries {
		parts[i] = e.GetKey() + "=" + e.GetValue()
	}
	return strings.Join(parts, ", ")
}

// checkLimiter is LocalRateLimiterImpl's constructor: the default bucket's and each descriptor's
// fill interval at least 50 ms (unless the bucket holds no token, then it always denies), and no
// descriptor twice (static and wildcard ones, DynamicDescriptorMap::addDescriptor, alike).
func checkLimiter(c *lrlv3.LocalRateLimit) error {
	tb := c.GetTokenBucket()
	if ms := tb.GetFillInterval().AsDuration().Milliseconds(); tb.GetFillInterval() != nil && ms > 0 &&
		tb.GetMaxTokens() != 0 && ms < minFillIntervalMs {
		return errors.New("local rate limit token bucket fill timer must be >= 50ms")
	}
	seen := map[string]bool{}
	for _, d := range c.GetDescriptors() {
		dtb := d.GetTokenBucket()
		if dtb.GetMaxTokens() != 0 && dtb.GetFillInterval().AsDuration().Milliseconds() < minFillIntervalMs {
			return errors.New("local rate limit descriptor token bucket fill timer must be >= 50ms")
		}
		key := descriptorString(d.GetEntries())
		keyed := fmt.Sprintf("%q", entryPairs(d.GetEntries()))
		if seen[keyed] {
			return fmt.Errorf("duplicate descriptor in the local rate descriptor: %s", key)
		}
		seen[keyed] = true
	}
	return nil
}

func entryPairs(entries []*ratelimitv3.RateLimitDescriptor_Entry) []string {
	out := make([]string, 0, 2*len(entries))
	for _, e := range entries {
		out = append(out, e.GetKey(), e.GetValue())
	}
	return out
}

// checkRouteConfiguration builds what a route configuration holds that a constructor checks: the
// per-filter configs of each virtual host, route and weighted cluster, and each rate limit policy
// entry of the routes and virtual hosts (ConfigImpl, VirtualHostImpl, RouteEntryImplBase in
// source/common/router/config_impl.cc; RateLimitPolicyEntryImpl in router_ratelimit.cc).
func checkRouteConfiguration(rc *routev3.RouteConfiguration) error {
	if err := checkPerFilterConfigs(rc.GetTypedPerFilterConfig()); err != nil {
		return err
	}
	for _, vh := range rc.GetVirtualHosts() {
		if err := checkPerFilterConfigs(vh.GetTypedPerFilterConfig()); err != nil {
			return err
		}
		if err := checkRouteRateLimits(vh.GetRateLimits()); err != nil {
			return err
		}
		for _, r := range vh.GetRoutes() {
			if err := checkPerFilterConfigs(r.GetTypedPerFilterConfig()); err != nil {
				return err
			}
			if err := checkRouteRateLimits(r.GetRoute().GetRateLimits()); err != nil {
				return err
			}
			for _, wc := range r.GetRoute().GetWeightedClusters().GetClusters() {
				if err := checkPerFilterConfigs(wc.GetTypedPerFilterConfig()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkRouteRateLimits is RateLimitPolicyEntryImpl's constructor (router_ratelimit.cc): an
// extension action needs a registered descriptor producer. An entry with no actions never gets
// here: the field rule `actions: min_items 1` refuses the route configuration first.
func checkRouteRateLimits(rls []*routev3.RateLimit) error {
	for _, rl := range rls {
		for _, a := range rl.GetActions() {
			if ext := a.GetExtension(); ext != nil {
				t := factoryType(ext.GetTypedConfig())
				if _, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(t)); err != nil ||
					!strings.HasPrefix(t, "envoy.extensions.rate_limit_descriptors.") {
					return fmt.Errorf("Rate limit descriptor extension not found: %s", ext.GetName())
				}
			}
		}
	}
	return nil
}

// checkPerFilterConfigs is PerFilterConfigs' constructor and ::createRouteSpecificFilterConfig
// (source/common/router/per_filter_config.cc): each config's HTTP filter factory found by type
// (a missing one is an error unless wrapped in an optional FilterConfig), the config translated
// and built by the factory (the local rate limit's per-route FilterConfig among them).
func checkPerFilterConfigs(configs map[string]*anypb.Any) error {
	names := make([]string, 0, len(configs))
	for n := range configs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		a := configs[name]
		optional := false
		if xdsvalidate.TypeName(a.GetTypeUrl()) == filterConfig {
			fc := &routev3.FilterConfig{}
			if err := a.UnmarshalTo(fc); err != nil {
				return err
			}
			if err := xdsvalidate.Message(fc); err != nil {
				return fmt.Errorf("Proto constraint validation failed (%v)", err)
			}
			if fc.GetDisabled() {
				continue
			}
			if fc.GetConfig() == nil {
				return fmt.Errorf("Empty route/virtual host per filter configuration for %s filter", name)
			}
			if fc.GetConfig().GetTypeUrl() == "" {
				continue
			}
			a, optional = fc.GetConfig(), fc.GetIsOptional()
		}
		if !registered(httpFilter, factoryType(a)) {
			if optional {
				continue
			}
			return missingFactory(name, a)
		}
		msg, err := translate(a)
		if err != nil {
			return err
		}
		if lrl, ok := msg.(*lrlv3.LocalRateLimit); ok {
			if err := checkLocalRateLimit(lrl, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// Rules of an older Envoy. The checks above follow the newest Envoy (see docs/proxy-standin.md),
// and go-control-plane's field rules are the newest API's. A proxy whose build version
// (ProxySpec.EnvoyVersion) is older than 1.34 also applies the two rules 1.34 dropped, both met by
// what the operator renders for per-client buckets or uneven intervals:
//
//   - the field rule `min_len: 1` on a descriptor entry's value
//     (api/envoy/extensions/common/ratelimit/v3/ratelimit.proto, RateLimitDescriptor.Entry; 1.34
//     made an empty value the wildcard of dynamic descriptors, envoyproxy/envoy#36623);
//   - in LocalRateLimiterImpl's constructor
//     (source/extensions/filters/common/local_ratelimit/local_ratelimit_impl.cc), a descriptor's
//     fill_interval a multiple of the token bucket's: "local rate descriptor limit is not a
//     multiple of token bucket fill timer" (gone with the fill timer, envoyproxy/envoy#38197).
//
// No other difference between Envoy versions is modelled.

// dynamicDescriptorsMinor is the first Envoy minor version without those two rules.
const dynamicDescriptorsMinor = 34

// eachLocalRateLimit calls f for every local rate limit config packed in an Any inside m, with the
// path of Any type names that leads to it (`virtualInbound > HttpConnectionManager > LocalRateLimit`).
func eachLocalRateLimit(what string, m proto.Message, f func(string, *lrlv3.LocalRateLimit)) {
	if c, ok := m.(*lrlv3.LocalRateLimit); ok {
		f(what, c)
	}
	xdsvalidate.EachAny(m.ProtoReflect(), func(a *anypb.Any) {
		if inner, err := a.UnmarshalNew(); err == nil {
			eachLocalRateLimit(what+" > "+xdsvalidate.TypeName(a.GetTypeUrl()), inner, f)
		}
	})
}

// olderFieldRules are the findings of the field rule an Envoy of minor version minor has and the
// linked API no longer has, worded as go-control-plane's generated validation words them.
func olderFieldRules(what string, m proto.Message, minor uint32) []string {
	if minor >= dynamicDescriptorsMinor {
		return nil
	}
	var errs []string
	eachLocalRateLimit(what, m, func(at string, c *lrlv3.LocalRateLimit) {
		for i, d := range c.GetDescriptors() {
			for j, e := range d.GetEntries() {
				if e.GetValue() == "" {
					errs = append(errs, fmt.Sprintf("%s: invalid LocalRateLimit.Descriptors[%d]: embedded message "+
						"failed validation | caused by: invalid LocalRateLimitDescriptor.Entries[%d]: embedded message "+
						"failed validation | caused by: invalid RateLimitDescriptor_Entry.Value: value length must be "+
						"at least 1 runes", at, i, j))
				}
			}
		}
	})
	return errs
}

// olderConstructorRule is the check LocalRateLimiterImpl's constructor made before 1.34 that it no
// longer makes; nil from a newer Envoy, or when every config passes.
func olderConstructorRule(m proto.Message, minor uint32) error {
	if minor >= dynamicDescriptorsMinor {
		return nil
	}
	var err error
	eachLocalRateLimit("", m, func(_ string, c *lrlv3.LocalRateLimit) {
		base := c.GetTokenBucket().GetFillInterval().AsDuration()
		if err != nil || c.GetTokenBucket().GetFillInterval() == nil || base <= 0 {
			return
		}
		for _, d := range c.GetDescriptors() {
			if d.GetTokenBucket().GetFillInterval().AsDuration()%base != 0 {
				err = errors.New("local rate descriptor limit is not a multiple of token bucket fill timer")
				return
			}
		}
	})
	return err
}
