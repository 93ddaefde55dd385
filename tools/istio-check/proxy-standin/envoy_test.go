package main

import (
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	lrlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	xffv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/original_ip_detection/xff/v3"
	metadatav3 "github.com/envoyproxy/go-control-plane/envoy/type/metadata/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func bucket(max uint32, fill time.Duration) *typev3.TokenBucket {
	return &typev3.TokenBucket{
		MaxTokens: max, TokensPerFill: wrapperspb.UInt32(max), FillInterval: durationpb.New(fill),
	}
}

// lrl is a per-route LocalRateLimit as the operator renders it, changed by f.
func lrl(f func(*lrlv3.LocalRateLimit)) *lrlv3.LocalRateLimit {
	c := &lrlv3.LocalRateLimit{
		StatPrefix:  "http_local_rate_limiter",
		TokenBucket: bucket(10, 30*time.Second),
		Descriptors: []*ratelimitv3.LocalRateLimitDescriptor{{
			Entries:     []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "rule", Value: "0"}},
			TokenBucket: bucket(2, time.Minute),
		}},
		RateLimits: []*routev3.RateLimit{{Actions: []*routev3.RateLimit_Action{{
			ActionSpecifier: &routev3.RateLimit_Action_GenericKey_{
				GenericKey: &routev3.RateLimit_Action_GenericKey{DescriptorKey: "rule", DescriptorValue: "0"},
			},
		}}}},
		ResponseHeadersToAdd: []*corev3.HeaderValueOption{
			{Header: &corev3.HeaderValue{Key: "x-rate-limited", Value: "true"}},
		},
	}
	if f != nil {
		f(c)
	}
	return c
}

func entries(kv ...string) []*ratelimitv3.RateLimitDescriptor_Entry {
	var out []*ratelimitv3.RateLimitDescriptor_Entry
	for i := 0; i < len(kv); i += 2 {
		out = append(out, &ratelimitv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

// expect checks err against want: "" means no error, else a part of the message.
func expect(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("want no error, got %v", err)
	case want != "" && err == nil:
		t.Fatalf("want an error with %q, got none", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("want an error with %q, got %v", want, err)
	}
}

// The local rate limit filter's FilterConfig and LocalRateLimiterImpl constructors.
func TestLocalRateLimitChecks(t *testing.T) {
	cases := []struct {
		name     string
		cfg      *lrlv3.LocalRateLimit
		perRoute bool
		want     string
	}{
		{name: "the operator's shape", cfg: lrl(nil), perRoute: true},
		{name: "listener-level config without a bucket", cfg: &lrlv3.LocalRateLimit{StatPrefix: "x"}},
		{
			name: "per-route config without a bucket", perRoute: true,
			cfg:  lrl(func(c *lrlv3.LocalRateLimit) { c.TokenBucket = nil }),
			want: "local rate limit token bucket must be set for per filter configs",
		},
		{
			name: "a :-prefixed response header",
			cfg: lrl(func(c *lrlv3.LocalRateLimit) {
				c.ResponseHeadersToAdd[0].Header.Key = ":status"
			}),
			want: ":-prefixed or host headers may not be modified",
		},
		{
			name: "host among the headers added when not enforced",
			cfg: lrl(func(c *lrlv3.LocalRateLimit) {
				c.RequestHeadersToAddWhenNotEnforced = []*corev3.HeaderValueOption{
					{Header: &corev3.HeaderValue{Key: "Host", Value: "x"}},
				}
			}),
			want: ":-prefixed or host headers may not be modified",
		},
		{
			name: "append and append_action both set",
			cfg: lrl(func(c *lrlv3.LocalRateLimit) {
				c.ResponseHeadersToAdd[0].Append = wrapperspb.Bool(true)
				c.ResponseHeadersToAdd[0].AppendAction = corev3.HeaderValueOption_OVERWRITE_IF_EXISTS
			}),
			want: "Both append and append_action are set and it's not allowed",
		},
		{
			name: "append alone",
			cfg: lrl(func(c *lrlv3.LocalRateLimit) {
				c.ResponseHeadersToAdd[0].Append = wrapperspb.Bool(false)
			}),
		},
		{
			name: "a rate_limits entry with a stage",
			cfg:  lrl(func(c *lrlv3.LocalRateLimit) { c.RateLimits[0].Stage = wrapperspb.UInt32(1) }),
			want: "'stage' field and 'disable_key' field are not supported",
		},
		{
			name: "a rate_limits entry with a disable_key",
			cfg:  lrl(func(c *lrlv3.LocalRateLimit) { c.RateLimits[0].DisableKey = "off" }),
			want: "'stage' field and 'disable_key' field are not supported",
		},
		{
			name: "a rate_limits entry with a limit override",
			cfg: lrl(func(c *lrlv3.LocalRateLimit) {
				c.RateLimits[0].Limit = &routev3.RateLimit_Override{
					OverrideSpecifier: &routev3.RateLimit_Override_DynamicMetadata_{
						DynamicMetadata: &routev3.RateLimit_Override_DynamicMetadata{
							MetadataKey: &metadatav3.MetadataKey{Key: "k", Path: []*metadatav3.MetadataKey_PathSegment{
								{Segment: &metadatav3.MetadataKey_PathSegment_Key{Key: "limit"}},
							}},
						},
					},
				}
			}),
			want: "'limit' field is not supported",
		},
		{
			name: "hits_addend with a format and a number",
			cfg: lrl(func(c *lrlv3.LocalRateLimit) {
				c.RateLimits[0].HitsAddend = &routev3.RateLimit_HitsAddend{
					Number: wrapperspb.UInt64(1), Format: "%BYTES_RECEIVED%",
				}
			}),
			want: "hits_addend must contain either a format or a number",
		},
		{
			name: "hits_addend with neither",
			cfg: lrl(func(c *lrlv3.LocalRateLimit) {
				c.RateLimits[0].HitsAddend = &routev3.RateLimit_HitsAddend{}
			}),
			want: "hits_addend must contain either a format or a number",
		},
		{
			name: "hits_addend format with two substitutions",
			cfg: lrl(func(c *lrlv3.LocalRateLimit) {
				c.RateLimits[0].HitsAddend = &routev3.RateLimit_HitsAddend{Format: "%BYTES_RECEIVED%%BYTES_SENT%"}
			}),
			want: "hits_addend format must contain exactly one substitution",
		},
		{
			name: "local cluster rate limit per connection",
			cfg: lrl(func(c *lrlv3.LocalRateLimit) {
				c.LocalClusterRateLimit = &ratelimitv3.LocalClusterRateLimit{}
				c.LocalRateLimitPerDownstreamConnection = true
			}),
			want: "local_cluster_rate_limit is set and local_rate_limit_per_downstream_connection is set to true",
		},
		{
			name: "local cluster rate limit without a local cluster",
			cfg: lrl(func(c *lrlv3.LocalRateLimit) {
				c.LocalClusterRateLimit = &ratelimitv3.LocalClusterRateLimit{}
			}),
			want: "local_cluster_rate_limit is set but no local cluster name is present",
		},
		{
			name: "default bucket filled every 49 ms",
			cfg:  lrl(func(c *lrlv3.LocalRateLimit) { c.TokenBucket = bucket(1, 49*time.Millisecond) }),
			want: "local rate limit token bucket fill timer must be >= 50ms",
		},
		{
			name: "default bucket filled every 50 ms",
			cfg:  lrl(func(c *lrlv3.LocalRateLimit) { c.TokenBucket = bucket(1, 50*time.Millisecond) }),
		},
		{
			name: "an empty default bucket filled every 10 ms (always denies)",
			cfg: lrl(func(c *lrlv3.LocalRateLimit) {
				c.TokenBucket = &typev3.TokenBucket{FillInterval: durationpb.New(10 * time.Millisecond)}
			}),
		},
		{
			name: "a descriptor bucket filled every 10 ms",
			cfg: lrl(func(c *lrlv3.LocalRateLimit) {
				c.Descriptors[0].TokenBucket = bucket(1, 10*time.Millisecond)
			}),
			want: "local rate limit descriptor token bucket fill timer must be >= 50ms",
		},
		{
			name: "a descriptor interval not a multiple of the default's (Envoy 1.34 dropped the rule)",
			cfg: lrl(func(c *lrlv3.LocalRateLimit) {
				c.Descriptors[0].TokenBucket = bucket(1, 7*time.Second)
			}),
		},
		{
			name: "the same descriptor twice",
			cfg: lrl(func(c *lrlv3.LocalRateLimit) {
				c.Descriptors = append(c.Descriptors, &ratelimitv3.LocalRateLimitDescriptor{
					Entries: entries("rule", "0"), TokenBucket: bucket(5, time.Minute),
				})
			}),
			want: "duplicate descriptor in the local rate descriptor: rule=0",
		},
		{
			name: "the same wildcard descriptor twice",
			cfg: lrl(func(c *lrlv3.LocalRateLimit) {
				for range 2 {
					c.Descriptors = append(c.Descriptors, &ratelimitv3.LocalRateLimitDescriptor{
						Entries: entries("rule", "1", "client", ""), TokenBucket: bucket(5, time.Minute),
					})
				}
			}),
			want: "duplicate descriptor in the local rate descriptor: rule=1, client=",
		},
		{
			name: "descriptors that differ in a value, or in order",
			cfg: lrl(func(c *lrlv3.LocalRateLimit) {
				c.Descriptors = append(c.Descriptors,
					&ratelimitv3.LocalRateLimitDescriptor{Entries: entries("rule", "1"), TokenBucket: bucket(5, time.Minute)},
					&ratelimitv3.LocalRateLimitDescriptor{Entries: entries("a", "1", "b", "2"), TokenBucket: bucket(5, time.Minute)},
					&ratelimitv3.LocalRateLimitDescriptor{Entries: entries("b", "2", "a", "1"), TokenBucket: bucket(5, time.Minute)},
				)
			}),
		},
		{
			// Envoy builds a descriptor no bucket matches and charges the default bucket: no check.
			name: "a rate_limits entry whose descriptor no bucket matches",
			cfg: lrl(func(c *lrlv3.LocalRateLimit) {
				c.RateLimits[0].Actions[0].GetGenericKey().DescriptorValue = "nobody"
			}),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.cfg.ValidateAll(); err != nil {
				t.Fatalf("the case must pass the field rules, to test the constructor: %v", err)
			}
			expect(t, checkLocalRateLimit(c.cfg, c.perRoute), c.want)
		})
	}
}

func newHTTPFilter(t *testing.T, name string, m proto.Message) *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{Name: name, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(t, m)}}
}

func routerFilter(t *testing.T) *hcmv3.HttpFilter {
	return newHTTPFilter(t, "envoy.filters.http.router", &routerv3.Router{})
}

func lrlFilter(t *testing.T, c *lrlv3.LocalRateLimit) *hcmv3.HttpFilter {
	return newHTTPFilter(t, "envoy.filters.http.local_ratelimit", c)
}

func faultFilter(t *testing.T) *hcmv3.HttpFilter {
	return newHTTPFilter(t, "envoy.filters.http.fault", &faultv3.HTTPFault{})
}

func unknownFilter(t *testing.T, optional bool) *hcmv3.HttpFilter {
	st, err := structpb.NewStruct(map[string]any{"a": 1})
	if err != nil {
		t.Fatal(err)
	}
	f := newHTTPFilter(t, "example.unknown", st)
	f.IsOptional = optional
	return f
}

// FilterChainHelper::processFilter, and the factories it runs.
func TestHTTPFilterChainChecks(t *testing.T) {
	lrlListener := &lrlv3.LocalRateLimit{StatPrefix: "http_local_rate_limiter"}
	cases := []struct {
		name    string
		filters func(t *testing.T) []*hcmv3.HttpFilter
		want    string
	}{
		{
			name: "local rate limit right before the router",
			filters: func(t *testing.T) []*hcmv3.HttpFilter {
				return []*hcmv3.HttpFilter{faultFilter(t), lrlFilter(t, lrlListener), routerFilter(t)}
			},
		},
		{
			name: "the router before the local rate limit",
			filters: func(t *testing.T) []*hcmv3.HttpFilter {
				return []*hcmv3.HttpFilter{routerFilter(t), lrlFilter(t, lrlListener)}
			},
			want: "Error: terminal filter named envoy.filters.http.router of type envoy.filters.http.router must be the last filter in a http filter chain.",
		},
		{
			name: "no router at all",
			filters: func(t *testing.T) []*hcmv3.HttpFilter {
				return []*hcmv3.HttpFilter{faultFilter(t), lrlFilter(t, lrlListener)}
			},
			want: "Error: non-terminal filter named envoy.filters.http.local_ratelimit of type envoy.filters.http.local_ratelimit is the last filter in a http filter chain.",
		},
		{
			name: "the last filter disabled",
			filters: func(t *testing.T) []*hcmv3.HttpFilter {
				r := routerFilter(t)
				r.Disabled = true
				return []*hcmv3.HttpFilter{r}
			},
			want: "Error: the last (terminal) filter (envoy.filters.http.router) in the chain cannot be disabled by default.",
		},
		{
			name: "a filter of a type no factory registers",
			filters: func(t *testing.T) []*hcmv3.HttpFilter {
				return []*hcmv3.HttpFilter{unknownFilter(t, false), routerFilter(t)}
			},
			want: "Didn't find a registered implementation for 'example.unknown' with type URL: 'google.protobuf.Struct'",
		},
		{
			name: "an optional filter of a type no factory registers",
			filters: func(t *testing.T) []*hcmv3.HttpFilter {
				return []*hcmv3.HttpFilter{unknownFilter(t, true), routerFilter(t)}
			},
		},
		{
			name: "a local rate limit filter whose constructor throws",
			filters: func(t *testing.T) []*hcmv3.HttpFilter {
				c := &lrlv3.LocalRateLimit{StatPrefix: "x", TokenBucket: bucket(1, 20*time.Millisecond)}
				return []*hcmv3.HttpFilter{lrlFilter(t, c), routerFilter(t)}
			},
			want: "local rate limit token bucket fill timer must be >= 50ms",
		},
		{
			name: "a local rate limit config that breaks a field rule",
			filters: func(t *testing.T) []*hcmv3.HttpFilter {
				c := &lrlv3.LocalRateLimit{StatPrefix: "x", TokenBucket: &typev3.TokenBucket{MaxTokens: 1}}
				return []*hcmv3.HttpFilter{lrlFilter(t, c), routerFilter(t)}
			},
			want: "Proto constraint validation failed (envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit: invalid LocalRateLimit.TokenBucket",
		},
		{
			name: "a config discovered later (ECDS) applied without warming, without a default",
			filters: func(t *testing.T) []*hcmv3.HttpFilter {
				return []*hcmv3.HttpFilter{{
					Name: "wasm",
					ConfigType: &hcmv3.HttpFilter_ConfigDiscovery{ConfigDiscovery: &corev3.ExtensionConfigSource{
						ConfigSource:                     &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}},
						ApplyDefaultConfigWithoutWarming: true,
						TypeUrls:                         []string{"type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm"},
					}},
				}, routerFilter(t)}
			},
			want: "Error: filter config wasm applied without warming but has no default config.",
		},
		{
			name: "a config discovered later (ECDS) of a type no factory registers",
			filters: func(t *testing.T) []*hcmv3.HttpFilter {
				return []*hcmv3.HttpFilter{{
					Name: "wasm",
					ConfigType: &hcmv3.HttpFilter_ConfigDiscovery{ConfigDiscovery: &corev3.ExtensionConfigSource{
						ConfigSource: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}},
						TypeUrls:     []string{"type.googleapis.com/example.Unknown"},
					}},
				}, routerFilter(t)}
			},
			want: "Error: no factory found for a required type URL example.Unknown.",
		},
		{
			// Envoy builds both; nothing in processFilters compares names.
			name: "two filters with the same name",
			filters: func(t *testing.T) []*hcmv3.HttpFilter {
				return []*hcmv3.HttpFilter{lrlFilter(t, lrlListener), lrlFilter(t, lrlListener), routerFilter(t)}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expect(t, checkHTTPFilters(c.filters(t), "http"), c.want)
		})
	}
}

func hcm(t *testing.T, f func(*hcmv3.HttpConnectionManager)) *hcmv3.HttpConnectionManager {
	h := &hcmv3.HttpConnectionManager{
		StatPrefix: "inbound_0.0.0.0_8080",
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			RouteConfigName: "8080",
			ConfigSource:    &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{routerFilter(t)},
	}
	if f != nil {
		f(h)
	}
	return h
}

// HttpConnectionManagerConfig's constructor.
func TestHTTPConnectionManagerChecks(t *testing.T) {
	xff := &corev3.TypedExtensionConfig{Name: "xff", TypedConfig: mustAny(t, &xffv3.XffConfig{})}
	cases := []struct {
		name string
		h    *hcmv3.HttpConnectionManager
		quic bool
		want string
	}{
		{name: "Istio's shape", h: hcm(t, nil)},
		{
			name: "max_response_headers_kb",
			h: hcm(t, func(h *hcmv3.HttpConnectionManager) {
				h.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{MaxResponseHeadersKb: wrapperspb.UInt32(60)}
			}),
			want: "Error: max_response_headers_kb cannot be set on http_connection_manager.",
		},
		{
			name: "both host port strippings",
			h: hcm(t, func(h *hcmv3.HttpConnectionManager) {
				h.StripMatchingHostPort = true
				h.StripPortMode = &hcmv3.HttpConnectionManager_StripAnyHostPort{StripAnyHostPort: true}
			}),
			want: "Error: Only one of `strip_matching_host_port` or `strip_any_host_port` can be set.",
		},
		{
			name: "IP detection extensions with use_remote_address",
			h: hcm(t, func(h *hcmv3.HttpConnectionManager) {
				h.OriginalIpDetectionExtensions = []*corev3.TypedExtensionConfig{xff}
				h.UseRemoteAddress = wrapperspb.Bool(true)
			}),
			want: "Original IP detection extensions and use_remote_address may not be mixed",
		},
		{
			name: "IP detection extensions with trusted hops",
			h: hcm(t, func(h *hcmv3.HttpConnectionManager) {
				h.OriginalIpDetectionExtensions = []*corev3.TypedExtensionConfig{xff}
				h.XffNumTrustedHops = 1
			}),
			want: "Original IP detection extensions and xff_num_trusted_hops may not be mixed",
		},
		{
			name: "access log options with flush on new request",
			h: hcm(t, func(h *hcmv3.HttpConnectionManager) {
				h.AccessLogOptions = &hcmv3.HttpConnectionManager_HcmAccessLogOptions{}
				h.FlushAccessLogOnNewRequest = true
			}),
			want: "Only one of flush_access_log_on_new_request or access_log_options can be specified.",
		},
		{
			name: "access log options with a flush interval",
			h: hcm(t, func(h *hcmv3.HttpConnectionManager) {
				h.AccessLogOptions = &hcmv3.HttpConnectionManager_HcmAccessLogOptions{}
				h.AccessLogFlushInterval = durationpb.New(time.Second)
			}),
			want: "Only one of access_log_flush_interval or access_log_options can be specified.",
		},
		{
			name: "HTTP/3 on a TCP listener",
			h: hcm(t, func(h *hcmv3.HttpConnectionManager) {
				h.CodecType = hcmv3.HttpConnectionManager_HTTP3
			}),
			want: "HTTP/3 codec configured on non-QUIC listener.",
		},
		{
			name: "HTTP/1 or 2 on a QUIC listener", quic: true, h: hcm(t, nil),
			want: "Non-HTTP/3 codec configured on QUIC listener.",
		},
		{
			name: "two upgrade configs of one name",
			h: hcm(t, func(h *hcmv3.HttpConnectionManager) {
				h.UpgradeConfigs = []*hcmv3.HttpConnectionManager_UpgradeConfig{
					{UpgradeType: "websocket"}, {UpgradeType: "WebSocket"},
				}
			}),
			want: "Error: multiple upgrade configs with the same name: 'WebSocket'",
		},
		{
			name: "an upgrade's filters without the router last",
			h: hcm(t, func(h *hcmv3.HttpConnectionManager) {
				h.UpgradeConfigs = []*hcmv3.HttpConnectionManager_UpgradeConfig{
					{UpgradeType: "websocket", Filters: []*hcmv3.HttpFilter{routerFilter(t), faultFilter(t)}},
				}
			}),
			want: "must be the last filter in a http upgrade filter chain.",
		},
		{
			name: "an inline route configuration whose per-route config throws",
			h: hcm(t, func(h *hcmv3.HttpConnectionManager) {
				h.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: routeConfig(t,
					map[string]*anypb.Any{"envoy.filters.http.local_ratelimit": mustAny(t, lrl(func(c *lrlv3.LocalRateLimit) { c.TokenBucket = nil }))})}
			}),
			want: "local rate limit token bucket must be set for per filter configs",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.h.ValidateAll(); err != nil {
				t.Fatalf("the case must pass the field rules, to test the constructor: %v", err)
			}
			expect(t, checkHCM(c.h, c.quic), c.want)
		})
	}
}

func routeConfig(t *testing.T, perFilter map[string]*anypb.Any) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{
		Name: "inbound|http|8000",
		VirtualHosts: []*routev3.VirtualHost{{
			Name: "inbound|http|8000", Domains: []string{"*"},
			Routes: []*routev3.Route{{
				Name:                 "default",
				Match:                &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action:               &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "inbound|8080||"}}},
				TypedPerFilterConfig: perFilter,
			}},
		}},
	}
}

// PerFilterConfigs' constructor (each per-route config's factory and its route-specific config)
// and RateLimitPolicyEntryImpl's.
func TestRouteConfigurationChecks(t *testing.T) {
	unknown := mustAny(t, &structpb.Struct{})
	wrap := func(fc *routev3.FilterConfig) *anypb.Any { return mustAny(t, fc) }
	const name = "envoy.filters.http.local_ratelimit"
	cases := []struct {
		name      string
		perFilter map[string]*anypb.Any
		rc        func(*routev3.RouteConfiguration)
		want      string
	}{
		{name: "the operator's per-route config", perFilter: map[string]*anypb.Any{name: mustAny(t, lrl(nil))}},
		{
			name:      "a per-route local rate limit without a bucket",
			perFilter: map[string]*anypb.Any{name: mustAny(t, lrl(func(c *lrlv3.LocalRateLimit) { c.TokenBucket = nil }))},
			want:      "local rate limit token bucket must be set for per filter configs",
		},
		{
			name: "a per-route local rate limit whose limiter throws, in a virtual host",
			rc: func(rc *routev3.RouteConfiguration) {
				rc.VirtualHosts[0].TypedPerFilterConfig = map[string]*anypb.Any{name: mustAny(t, lrl(func(c *lrlv3.LocalRateLimit) {
					c.Descriptors = append(c.Descriptors, c.Descriptors[0])
				}))}
			},
			want: "duplicate descriptor in the local rate descriptor: rule=0",
		},
		{
			name:      "a per-route config of a type no factory registers",
			perFilter: map[string]*anypb.Any{"example": unknown},
			want:      "Didn't find a registered implementation for 'example' with type URL: 'google.protobuf.Struct'",
		},
		{
			name:      "the same, optional",
			perFilter: map[string]*anypb.Any{"example": wrap(&routev3.FilterConfig{Config: unknown, IsOptional: true})},
		},
		{
			name:      "a FilterConfig without config",
			perFilter: map[string]*anypb.Any{name: wrap(&routev3.FilterConfig{})},
			want:      "Empty route/virtual host per filter configuration for envoy.filters.http.local_ratelimit filter",
		},
		{
			name:      "a FilterConfig that disables the filter",
			perFilter: map[string]*anypb.Any{name: wrap(&routev3.FilterConfig{Disabled: true})},
		},
		{
			name: "a rate limit action of an extension no factory registers",
			rc: func(rc *routev3.RouteConfiguration) {
				rc.VirtualHosts[0].Routes[0].GetRoute().RateLimits = []*routev3.RateLimit{{Actions: []*routev3.RateLimit_Action{{
					ActionSpecifier: &routev3.RateLimit_Action_Extension{Extension: &corev3.TypedExtensionConfig{Name: "x", TypedConfig: unknown}},
				}}}}
			},
			want: "Rate limit descriptor extension not found: x",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc := routeConfig(t, c.perFilter)
			if c.rc != nil {
				c.rc(rc)
			}
			if err := rc.ValidateAll(); err != nil {
				t.Fatalf("the case must pass the field rules, to test the constructor: %v", err)
			}
			expect(t, checkRouteConfiguration(rc), c.want)
		})
	}
}

// createNetworkFilterFactoryListImpl: factories by type and the terminal filter last.
func TestListenerChecks(t *testing.T) {
	hcmF := &listenerv3.Filter{Name: "envoy.filters.network.http_connection_manager",
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, hcm(t, nil))}}
	tcp := &listenerv3.Filter{Name: "envoy.filters.network.tcp_proxy",
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, &tcpv3.TcpProxy{
			StatPrefix: "x", ClusterSpecifier: &tcpv3.TcpProxy_Cluster{Cluster: "c"}})}}
	unknown := &listenerv3.Filter{Name: "example",
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, &structpb.Struct{})}}
	badHCM := &listenerv3.Filter{Name: "envoy.filters.network.http_connection_manager",
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, hcm(t, func(h *hcmv3.HttpConnectionManager) {
			h.HttpFilters = []*hcmv3.HttpFilter{routerFilter(t), lrlFilter(t, &lrlv3.LocalRateLimit{StatPrefix: "x"})}
		}))}}
	listener := func(filters ...*listenerv3.Filter) *listenerv3.Listener {
		return &listenerv3.Listener{Name: "virtualInbound", FilterChains: []*listenerv3.FilterChain{{Filters: filters}}}
	}
	cases := []struct {
		name string
		l    *listenerv3.Listener
		want string
	}{
		{name: "a connection manager", l: listener(hcmF)},
		{name: "a TCP proxy", l: listener(tcp)},
		{
			name: "the connection manager before another filter",
			l:    listener(hcmF, tcp),
			want: "Error: terminal filter named envoy.filters.network.http_connection_manager of type envoy.filters.network.http_connection_manager must be the last filter in a network filter chain.",
		},
		{
			name: "a network filter of a type no factory registers",
			l:    listener(unknown, hcmF),
			want: "Didn't find a registered implementation for 'example' with type URL: 'google.protobuf.Struct'",
		},
		{
			name: "a connection manager whose HTTP filters are out of order",
			l:    listener(badHCM),
			want: "must be the last filter in a http filter chain.",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expect(t, checkListener(c.l), c.want)
		})
	}
}

// A TypedStruct is read as the type it names: its config goes through the same constructor.
func TestTypedStructConfigIsBuilt(t *testing.T) {
	value, err := structpb.NewStruct(map[string]any{
		"stat_prefix":  "x",
		"token_bucket": map[string]any{"max_tokens": 1, "fill_interval": "0.020s"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// xds.type.v3.TypedStruct: 1 type_url, 2 value.
	vb, err := proto.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	b = appendBytesField(b, 1, []byte("type.googleapis.com/"+localRateLimit))
	b = appendBytesField(b, 2, vb)
	f := &hcmv3.HttpFilter{Name: "lrl", ConfigType: &hcmv3.HttpFilter_TypedConfig{
		TypedConfig: &anypb.Any{TypeUrl: "type.googleapis.com/xds.type.v3.TypedStruct", Value: b},
	}}
	expect(t, checkHTTPFilters([]*hcmv3.HttpFilter{f, routerFilter(t)}, "http"),
		"local rate limit token bucket fill timer must be >= 50ms")
}

func appendBytesField(b []byte, num int, v []byte) []byte {
	b = append(b, byte(num<<3|2))
	n := len(v)
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	b = append(b, byte(n))
	return append(b, v...)
}

// An Envoy before 1.34 (the proxy's build version) keeps the two rules 1.34 dropped: a descriptor
// entry without a value (the wildcard of a per-client bucket) breaks a field rule, and a
// descriptor interval that is not a multiple of the token bucket's fails the limiter. 1.34 and
// later take both; the operator's shape passes everywhere.
func TestOlderEnvoyRules(t *testing.T) {
	wildcard := lrl(func(c *lrlv3.LocalRateLimit) {
		c.Descriptors[0].Entries = entries("rule", "0", "client", "")
		c.MaxDynamicDescriptors = wrapperspb.UInt32(20)
	})
	uneven := lrl(func(c *lrlv3.LocalRateLimit) { c.Descriptors[0].TokenBucket = bucket(2, 45*time.Second) })
	const field = "invalid LocalRateLimit.Descriptors[0]: embedded message failed validation | caused by: " +
		"invalid LocalRateLimitDescriptor.Entries[1]: embedded message failed validation | caused by: " +
		"invalid RateLimitDescriptor_Entry.Value: value length must be at least 1 runes"
	const multiple = "local rate descriptor limit is not a multiple of token bucket fill timer"
	perRoute := func(c *lrlv3.LocalRateLimit) proto.Message {
		return routeConfig(t, map[string]*anypb.Any{"envoy.filters.http.local_ratelimit": mustAny(t, c)})
	}
	inListener := func(c *lrlv3.LocalRateLimit) proto.Message {
		return httpListener(t, "virtualInbound", "80", lrlFilter(t, c), routerFilter(t))
	}
	cases := []struct {
		name, envoy string
		resource    proto.Message
		want        string
	}{
		{name: "a wildcard entry in a route's config on Envoy 1.33", envoy: "1.33.8", resource: perRoute(wildcard),
			want: "Proto constraint validation failed (inbound|http|8000 > " + localRateLimit + ": " + field + ")"},
		{name: "a wildcard entry in a listener's filter on Envoy 1.33", envoy: "1.33.8", resource: inListener(wildcard),
			want: "virtualInbound > " + hcmType + " > " + localRateLimit + ": " + field},
		{name: "a wildcard entry on Envoy 1.34", envoy: "1.34.0", resource: perRoute(wildcard)},
		{name: "a wildcard entry on the default Envoy", resource: inListener(wildcard)},
		{name: "an uneven descriptor interval on Envoy 1.33", envoy: "1.33.8", resource: perRoute(uneven), want: multiple},
		{name: "an uneven descriptor interval in a listener on Envoy 1.32", envoy: "1.32.0", resource: inListener(uneven),
			want: multiple},
		{name: "an uneven descriptor interval on Envoy 1.34", envoy: "1.34.6", resource: perRoute(uneven)},
		{name: "the operator's shape on Envoy 1.33", envoy: "1.33.8", resource: perRoute(lrl(nil))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newProxy(ProxySpec{Type: "sidecar", Pod: "web-0", Namespace: "demo", IP: "10.244.0.2", EnvoyVersion: tc.envoy})
			expect(t, p.build(tc.resource), tc.want)
		})
	}
}
