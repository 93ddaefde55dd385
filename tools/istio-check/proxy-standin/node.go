package main

// The xDS node a proxy stand-in presents to istiod: the id and metadata pilot-agent puts into
// Envoy's bootstrap for a Pod (istio.io/istio pkg/bootstrap/config.go GetNodeMetaData, from the
// sidecar injection template's environment), and what Envoy adds (user agent, build version).
// docs/proxy-standin.md says which fields istiod reads and what for.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// Defaults of a proxy's metadata: istiod's own cluster id and mesh id when it runs with its
// defaults, the Istio version of the pinned module's release line and the Envoy it ships.
const (
	DefaultClusterID    = "Kubernetes"
	DefaultMeshID       = "cluster.local"
	DefaultIstioVersion = "1.31.0"
	DefaultEnvoyVersion = "1.38.0"
	DefaultDomainSuffix = "svc.cluster.local"
)

// PodPort is one container port, as the injector writes ISTIO_META_POD_PORTS.
type PodPort struct {
	Name          string `json:"name,omitempty"`
	ContainerPort int    `json:"containerPort"`
	Protocol      string `json:"protocol,omitempty"`
}

// ProxySpec is one Pod's proxy: who it is to istiod.
type ProxySpec struct {
	// Type is "sidecar" (`proxy sidecar`) or "router" (a gateway, `proxy router`).
	Type string `json:"type"`
	// Pod and Namespace: the node id is `TYPE~IP~POD.NAMESPACE~NAMESPACE.svc.cluster.local`.
	Pod       string `json:"pod"`
	Namespace string `json:"namespace"`
	// IP is the Pod's IP (INSTANCE_IPS and the node id's second part).
	IP string `json:"ip"`
	// Labels are the Pod's labels (LABELS); istiod prefers the Pod's own once it sees it.
	Labels         map[string]string `json:"labels,omitempty"`
	ServiceAccount string            `json:"serviceAccount,omitempty"`
	// WorkloadName and Owner as the injector sets them (the Deployment and its URL).
	WorkloadName string `json:"workloadName,omitempty"`
	Owner        string `json:"owner,omitempty"`
	ClusterID    string `json:"clusterId,omitempty"`
	MeshID       string `json:"meshId,omitempty"`
	NodeName     string `json:"nodeName,omitempty"`
	// IstioVersion is ISTIO_VERSION (pilot-agent's own version); EnvoyVersion the build version
	// Envoy reports (major.minor.patch), which also picks the older Envoy's rules (envoy.go).
	IstioVersion     string    `json:"istioVersion,omitempty"`
	EnvoyVersion     string    `json:"envoyVersion,omitempty"`
	InterceptionMode string    `json:"interceptionMode,omitempty"`
	PodPorts         []PodPort `json:"podPorts,omitempty"`
	// Meta adds or overrides metadata keys (what ISTIO_META_* variables would add).
	Meta map[string]string `json:"meta,omitempty"`
}

// Key names a proxy in the stand-in's endpoint: `POD.NAMESPACE`, istiod's proxy id.
func (s ProxySpec) Key() string { return s.Pod + "." + s.Namespace }

func (s ProxySpec) withDefaults() ProxySpec {
	def := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	def(&s.ServiceAccount, "default")
	def(&s.WorkloadName, s.Pod)
	def(&s.ClusterID, DefaultClusterID)
	def(&s.MeshID, DefaultMeshID)
	def(&s.IstioVersion, DefaultIstioVersion)
	def(&s.EnvoyVersion, DefaultEnvoyVersion)
	def(&s.InterceptionMode, "REDIRECT")
	return s
}

func (s ProxySpec) validate() error {
	if s.Type != "sidecar" && s.Type != "router" {
		return fmt.Errorf("proxy %s: type %q is neither sidecar nor router", s.Key(), s.Type)
	}
	if s.Pod == "" || s.Namespace == "" {
		return errors.New("a proxy needs pod and namespace")
	}
	if _, err := netip.ParseAddr(s.IP); err != nil {
		return fmt.Errorf("proxy %s: ip %q: %v", s.Key(), s.IP, err)
	}
	if _, err := semver(s.withDefaults().EnvoyVersion); err != nil {
		return fmt.Errorf("proxy %s: envoyVersion: %v", s.Key(), err)
	}
	return nil
}

// NodeID is pilot-agent's service node: `TYPE~IP~POD.NAMESPACE~NAMESPACE.svc.cluster.local`.
func (s ProxySpec) NodeID() string {
	return strings.Join([]string{s.Type, s.IP, s.Key(), s.Namespace + "." + DefaultDomainSuffix}, "~")
}

func semver(v string) (*typev3.SemanticVersion, error) {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%q is not major.minor.patch", v)
	}
	var n [3]uint32
	for i, p := range parts {
		x, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%q is not major.minor.patch", v)
		}
		n[i] = uint32(x)
	}
	return &typev3.SemanticVersion{MajorNumber: n[0], MinorNumber: n[1], Patch: n[2]}, nil
}

// Metadata is the node metadata pilot-agent sends for the Pod, as the JSON object Envoy carries
// (pkg/model.NodeMetadata's field names).
func (s ProxySpec) Metadata() map[string]any {
	s = s.withDefaults()
	labels := map[string]any{}
	for k, v := range s.Labels {
		labels[k] = v
	}
	m := map[string]any{
		"NAME":              s.Pod,
		"NAMESPACE":         s.Namespace,
		"INSTANCE_IPS":      s.IP,
		"LABELS":            labels,
		"SERVICE_ACCOUNT":   s.ServiceAccount,
		"WORKLOAD_NAME":     s.WorkloadName,
		"CLUSTER_ID":        s.ClusterID,
		"MESH_ID":           s.MeshID,
		"ISTIO_VERSION":     s.IstioVersion,
		"INTERCEPTION_MODE": s.InterceptionMode,
		// pilot-agent's defaults. PROXY_CONFIG is left out: istiod then uses the mesh's default
		// proxy config, which is what pilot-agent would send for a Pod without an override.
		"ENVOY_STATUS_PORT":     15021,
		"ENVOY_PROMETHEUS_PORT": 15090,
	}
	if s.Owner != "" {
		m["OWNER"] = s.Owner
	}
	if s.NodeName != "" {
		m["NODE_NAME"] = s.NodeName
	}
	if len(s.PodPorts) > 0 {
		b, _ := json.Marshal(s.PodPorts)
		m["POD_PORTS"] = string(b)
	}
	for k, v := range s.Meta {
		m[k] = v
	}
	return m
}

// Node is the xDS node of the proxy's first request.
func (s ProxySpec) Node() (*corev3.Node, error) {
	s = s.withDefaults()
	meta, err := structpb.NewStruct(s.Metadata())
	if err != nil {
		return nil, err
	}
	v, err := semver(s.EnvoyVersion)
	if err != nil {
		return nil, err
	}
	app := s.Labels["app"]
	if app == "" {
		app = s.WorkloadName
	}
	return &corev3.Node{
		Id:            s.NodeID(),
		Cluster:       app + "." + s.Namespace,
		Metadata:      meta,
		UserAgentName: "envoy",
		UserAgentVersionType: &corev3.Node_UserAgentBuildVersion{
			UserAgentBuildVersion: &corev3.BuildVersion{Version: v},
		},
		ClientFeatures: []string{"envoy.lb.does_not_support_overprovisioning"},
	}, nil
}
