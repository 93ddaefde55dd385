package main

// The stand-in's HTTP endpoint (loopback): what each proxy holds, for tests to read.
//
//	GET    /healthz                 ok
//	GET    /proxies                 every proxy: connection and, per xDS type, versions, nonces, counts, last error
//	GET    /proxies/POD.NAMESPACE   one proxy, with its accepted config (?config=false leaves it out) and history
//	POST   /proxies                 start proxies: a ProxySpec or {"proxies": [...]}
//	DELETE /proxies/POD.NAMESPACE   stop one

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/emptypb"
)

// TypeView is one xDS type of one proxy.
type TypeView struct {
	// Version is the last accepted version_info; Nonce the last response's nonce.
	Version string `json:"version"`
	Nonce   string `json:"nonce"`
	// Acked: the last response was accepted.
	Acked bool `json:"acked"`
	Acks  int  `json:"acks"`
	Nacks int  `json:"nacks"`
	// LastError is the last response's rejection ("" when it was accepted).
	LastError string `json:"lastError,omitempty"`
	// Subscribed names (EDS, RDS) and the names of the resources held.
	Subscribed []string `json:"subscribed,omitempty"`
	Resources  []string `json:"resources"`
}

// ConfigView is the config a proxy holds, as protobuf JSON (field names as in the protos, like
// Envoy's /config_dump). An Any of a type no linked package knows shows only its "@type".
type ConfigView struct {
	Listeners []json.RawMessage `json:"listeners"`
	Routes    []json.RawMessage `json:"routes"`
	Clusters  []json.RawMessage `json:"clusters"`
	Endpoints []json.RawMessage `json:"endpoints"`
}

// ProxyView is one proxy.
type ProxyView struct {
	Key             string              `json:"key"`
	ID              string              `json:"id"`
	Type            string              `json:"type"`
	Connected       bool                `json:"connected"`
	Connects        int                 `json:"connects"`
	Since           *time.Time          `json:"since,omitempty"`
	ConnectionError string              `json:"connectionError,omitempty"`
	XDS             map[string]TypeView `json:"xds"`
	UnknownTypes    []string            `json:"unknownTypes,omitempty"`
	Config          *ConfigView         `json:"config,omitempty"`
	History         []Event             `json:"history,omitempty"`
}

// lenient resolves type URLs no linked package knows to Empty, so that a config holding one can
// still be shown.
type lenient struct{}

func (lenient) FindMessageByName(n protoreflect.FullName) (protoreflect.MessageType, error) {
	return protoregistry.GlobalTypes.FindMessageByName(n)
}

func (lenient) FindMessageByURL(url string) (protoreflect.MessageType, error) {
	if t, err := protoregistry.GlobalTypes.FindMessageByURL(url); err == nil {
		return t, nil
	}
	return (&emptypb.Empty{}).ProtoReflect().Type(), nil
}

func (lenient) FindExtensionByName(n protoreflect.FullName) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByName(n)
}

func (lenient) FindExtensionByNumber(m protoreflect.FullName, n protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByNumber(m, n)
}

var dumpJSON = protojson.MarshalOptions{UseProtoNames: true, Resolver: lenient{}}

func jsonList(resources map[string]proto.Message) []json.RawMessage {
	names := make([]string, 0, len(resources))
	for n := range resources {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]json.RawMessage, 0, len(names))
	for _, n := range names {
		b, err := dumpJSON.Marshal(resources[n])
		if err != nil {
			b, _ = json.Marshal(map[string]string{"name": n, "error": err.Error()})
		}
		out = append(out, b)
	}
	return out
}

// View is a copy of what the proxy holds.
func (p *Proxy) View(config, history bool) ProxyView {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := ProxyView{
		Key: p.Spec.Key(), ID: p.Spec.NodeID(), Type: p.Spec.Type, Connected: p.connected,
		Connects: p.connects, ConnectionError: p.connError, XDS: map[string]TypeView{},
	}
	if !p.since.IsZero() {
		t := p.since
		v.Since = &t
	}
	for t, ts := range p.types {
		names := make([]string, 0, len(ts.resources))
		for n := range ts.resources {
			names = append(names, n)
		}
		sort.Strings(names)
		v.XDS[shortNames[t]] = TypeView{
			Version: ts.version, Nonce: ts.nonce, Acked: ts.nonce != "" && ts.lastError == "",
			Acks: ts.acks, Nacks: ts.nacks, LastError: ts.lastError,
			Subscribed: slices.Clone(ts.names), Resources: names,
		}
	}
	for u := range p.unknown {
		v.UnknownTypes = append(v.UnknownTypes, u)
	}
	sort.Strings(v.UnknownTypes)
	if config {
		v.Config = &ConfigView{
			Listeners: jsonList(p.types[ListenerType].resources),
			Routes:    jsonList(p.types[RouteType].resources),
			Clusters:  jsonList(p.types[ClusterType].resources),
			Endpoints: jsonList(p.types[EndpointType].resources),
		}
	}
	if history {
		v.History = slices.Clone(p.history)
	}
	return v
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

func (s *server) get(key string) *Proxy {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.proxies[key]; ok {
		return r.p
	}
	return nil
}

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /proxies", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		keys := slices.Clone(s.order)
		s.mu.Unlock()
		out := []ProxyView{}
		for _, k := range keys {
			if p := s.get(k); p != nil {
				out = append(out, p.View(false, false))
			}
		}
		writeJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("GET /proxies/{key}", func(w http.ResponseWriter, r *http.Request) {
		p := s.get(r.PathValue("key"))
		if p == nil {
			writeError(w, http.StatusNotFound, "no proxy "+r.PathValue("key"))
			return
		}
		writeJSON(w, http.StatusOK, p.View(r.URL.Query().Get("config") != "false", true))
	})
	mux.HandleFunc("POST /proxies", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		var list ProxyList
		if strings.Contains(string(body), `"proxies"`) {
			err = json.Unmarshal(body, &list)
		} else {
			var one ProxySpec
			err = json.Unmarshal(body, &one)
			list.Proxies = []ProxySpec{one}
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		for _, spec := range list.Proxies {
			if err := s.add(spec); err != nil {
				writeError(w, http.StatusBadRequest, err.Error())
				return
			}
		}
		writeJSON(w, http.StatusCreated, map[string]int{"added": len(list.Proxies)})
	})
	mux.HandleFunc("DELETE /proxies/{key}", func(w http.ResponseWriter, r *http.Request) {
		if !s.remove(r.PathValue("key")) {
			writeError(w, http.StatusNotFound, "no proxy "+r.PathValue("key"))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}
