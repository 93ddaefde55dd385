package main

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/pkg/networking/core"
	"istio.io/istio/pkg/test"
)

// Proxy kinds: every case is generated for one of each, both carrying the EnvoyFilter's
// workload labels in its namespace, so only the patch context decides which one it applies to.
const (
	sidecar = "sidecar"
	gateway = "gateway"
	// both: a filter for a selector over gateway and sidecar Pods, meant for each.
	both = "both"
)

// The addresses of the two proxies. The sidecar's is the workload endpoint of the ServiceEntry,
// so Istio builds it an inbound HTTP filter chain.
const (
	sidecarIP = "10.0.0.1"
	gatewayIP = "10.0.0.2"
)

// Route names of the VirtualServices below: one route of each action Envoy knows for HTTP.
const (
	routeForward  = "forward"
	routeRedirect = "redirect"
	routeDirect   = "direct-response"
)

// engineIP is the address of the global rate limit engine's one endpoint.
const engineIP = "10.0.0.9"

// world is what istiod would know besides the EnvoyFilter: a workload (ServiceEntry with one
// endpoint carrying the labels), a Gateway selecting the same labels, and VirtualServices with a
// redirect, a direct response and a forwarding route, bound to the gateway and to the mesh (the
// sidecar's outbound routes); and the global rate limit engine's Service (a ServiceEntry of its
// host and gRPC port, from cases.json), whose outbound cluster the global filter names. Listeners,
// routes and clusters generated for it are the inputs of the check.
var world = template.Must(template.New("world").Parse(`
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: workload, namespace: {{.NS}}}
spec:
  hosts: [workload.{{.NS}}.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 8000, name: http, protocol: HTTP, targetPort: 8080}]
  endpoints: [{address: ` + sidecarIP + `, labels: {{.Labels}}}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: {{.NS}}}
spec:
  selector: {{.Labels}}
  servers: [{port: {number: 8080, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: gateway-routes, namespace: {{.NS}}}
spec:
  hosts: ["*"]
  gateways: [ingress]
  http: {{.HTTP}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: mesh-routes, namespace: {{.NS}}}
spec:
  hosts: [workload.{{.NS}}.svc.cluster.local]
  gateways: [mesh]
  http: {{.HTTP}}
{{if .EngineHost}}---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ratelimit-engine, namespace: {{.EngineNS}}}
spec:
  hosts: [{{.EngineHost}}]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: {{.EnginePort}}, name: grpc, protocol: GRPC}]
  endpoints: [{address: ` + engineIP + `}]
{{end}}`))

const httpRoutes = `
  - name: ` + routeRedirect + `
    match: [{uri: {prefix: /old}}]
    redirect: {uri: /new}
  - name: ` + routeDirect + `
    match: [{uri: {prefix: /maintenance}}]
    directResponse: {status: 503, body: {string: "down for maintenance"}}
  - name: ` + routeForward + `
    route: [{destination: {host: workload.{{.NS}}.svc.cluster.local, port: {number: 8000}}}]`

// xds is what one proxy receives: its listeners (LDS), the route configurations they name (RDS)
// and its clusters (CDS).
type xds struct {
	Listeners []*listener.Listener
	Routes    []*route.RouteConfiguration
	Clusters  []*cluster.Cluster
}

// engineSpec is the global rate limit engine's Service as cases.json gives it (render.ts, from
// src/api/global_engine.ts): its host (name.namespace.svc.cluster.local) and gRPC port.
type engineSpec struct {
	Host string `json:"host"`
	Port int    `json:"port"`
}

// worldConfig renders the world for the namespace and labels of the EnvoyFilter under test.
func worldConfig(ns string, labels map[string]string, engine engineSpec) (string, error) {
	flow := "{"
	for i, k := range slices.Sorted(maps.Keys(labels)) {
		if i > 0 {
			flow += ", "
		}
		flow += fmt.Sprintf("%q: %q", k, labels[k])
	}
	flow += "}"
	var http bytes.Buffer
	if err := template.Must(template.New("http").Parse(httpRoutes)).Execute(&http, map[string]string{"NS": ns}); err != nil {
		return "", err
	}
	var out bytes.Buffer
	engineNS := ""
	if parts := strings.Split(engine.Host, "."); len(parts) > 1 {
		engineNS = parts[1]
	}
	err := world.Execute(&out, map[string]any{
		"NS": ns, "Labels": flow, "HTTP": http.String(),
		"EngineHost": engine.Host, "EngineNS": engineNS, "EnginePort": engine.Port,
	})
	return out.String(), err
}

// generate runs Istio's config generation (the code istiod's LDS and RDS generators call, with
// EnvoyFilter patching inside) for a sidecar and a gateway proxy, in a fresh fake environment with
// `config` as its Istio configuration. Any failure Istio reports through the Failer is returned.
func generate(config string, ns string, labels map[string]string) (map[string]xds, error) {
	out := map[string]xds{}
	err := test.Wrap(func(t test.Failer) {
		cg := core.NewConfigGenTest(t, core.TestOptions{ConfigString: config})
		for _, kind := range []string{sidecar, gateway} {
			p := &model.Proxy{
				Type:            model.SidecarProxy,
				ID:              fmt.Sprintf("%s.%s", kind, ns),
				IPAddresses:     []string{sidecarIP},
				ConfigNamespace: ns,
				Labels:          maps.Clone(labels),
				Metadata: &model.NodeMetadata{
					Labels:       maps.Clone(labels),
					Namespace:    ns,
					IstioVersion: istioProxyVersion,
				},
			}
			if kind == gateway {
				p.Type = model.Router
				p.IPAddresses = []string{gatewayIP}
			}
			p = cg.SetupProxy(p)
			ls := cg.Listeners(p)
			out[kind] = xds{Listeners: ls, Routes: cg.RoutesFromListeners(p, ls), Clusters: cg.Clusters(p)}
		}
	})
	return out, err
}
