// Command podcheck is the test workload of the real node. At start it prints, one "key: value"
// line each, what the kubelet and the runtime gave it (user, capabilities, whether the root file
// system is writable, the projected ServiceAccount token's subject, what the API server answers
// to that token at KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT), so a test reads them with
// `kubectl logs`. Then it serves HTTP on PORT (default 8080): /ready answers 200 and logs the
// caller, so a test sees the kubelet's readiness probe; /fetch?url=URL resolves URL's host with the
// Pod's resolver (its /etc/resolv.conf: cluster DNS and search domains) and GETs URL from inside
// the Pod (https as an in-cluster client: trusting the mounted ca.crt, with the token), answering
// JSON {host, addrs, status, body, error}; /metric answers {"value": N} for an autoscaler's
// metrics-api trigger, N set with /metric?set=N (0 at start); /file?path=P answers the first
// 64 KiB of file P (a mounted ConfigMap, say); every other path answers "podcheck <host>". It
// answers the same on PROBE_PORT (default 8090) too, so that it can stand in for a controller
// whose probes ask that port (the Serverless module's).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

func capEff() string {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown: " + err.Error()
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func rootWritable() string {
	f, err := os.Create("/podcheck-write-test")
	if err != nil {
		return "no (" + err.Error() + ")"
	}
	f.Close()
	os.Remove(f.Name())
	return "yes"
}

// tokenSubject decodes the JWT's payload only: the API server, not this program, verifies it.
func tokenSubject() string {
	raw, err := os.ReadFile(saDir + "/token")
	if err != nil {
		return "missing (" + err.Error() + ")"
	}
	parts := strings.Split(strings.TrimSpace(string(raw)), ".")
	if len(parts) != 3 {
		return "not a JWT"
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "undecodable: " + err.Error()
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return "undecodable: " + err.Error()
	}
	return claims.Sub
}

func fileState(name string) string {
	info, err := os.Stat(saDir + "/" + name)
	if err != nil {
		return "missing"
	}
	return fmt.Sprintf("%d bytes", info.Size())
}

// apiStatus calls GET /api as the Pod's ServiceAccount, trusting only the mounted ca.crt.
func apiStatus() string {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" {
		return "no KUBERNETES_SERVICE_HOST"
	}
	token, err := os.ReadFile(saDir + "/token")
	if err != nil {
		return "no token"
	}
	ca, err := os.ReadFile(saDir + "/ca.crt")
	pool := x509.NewCertPool()
	if err != nil || !pool.AppendCertsFromPEM(ca) {
		return "no ca.crt"
	}
	client := &http.Client{
		Timeout:   3 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	req, _ := http.NewRequest("GET", "https://"+host+":"+port+"/api", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	res, err := client.Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	res.Body.Close()
	return res.Status
}

// fetchResult is what /fetch answers: what resolving and calling the URL gave, from inside the Pod.
type fetchResult struct {
	Host   string   `json:"host"`
	Addrs  []string `json:"addrs"`
	Status int      `json:"status"`
	Body   string   `json:"body"`
	Error  string   `json:"error,omitempty"`
}

func fetch(raw string) fetchResult {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return fetchResult{Error: fmt.Sprintf("bad url %q", raw)}
	}
	r := fetchResult{Host: u.Hostname()}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, r.Host)
	if err != nil {
		r.Error = "lookup: " + err.Error()
		return r
	}
	r.Addrs = addrs
	req, _ := http.NewRequest("GET", raw, nil)
	client := &http.Client{Timeout: 3 * time.Second}
	if u.Scheme == "https" {
		token, _ := os.ReadFile(saDir + "/token")
		ca, _ := os.ReadFile(saDir + "/ca.crt")
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	}
	res, err := client.Do(req)
	if err != nil {
		r.Error = "get: " + err.Error()
		return r
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	r.Status, r.Body = res.StatusCode, string(body)
	return r
}

func main() {
	host, _ := os.Hostname()
	fmt.Printf("uid: %d\ngid: %d\n", os.Getuid(), os.Getgid())
	fmt.Printf("capeff: %s\n", capEff())
	fmt.Printf("rootfs writable: %s\n", rootWritable())
	fmt.Printf("token subject: %s\n", tokenSubject())
	fmt.Printf("namespace file: %s\nca.crt: %s\n", fileState("namespace"), fileState("ca.crt"))
	fmt.Printf("api: %s\n", apiStatus())
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	http.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("readiness probe from %s\n", r.UserAgent())
		fmt.Fprintln(w, "ready")
	})
	http.HandleFunc("/fetch", func(w http.ResponseWriter, r *http.Request) {
		res := fetch(r.URL.Query().Get("url"))
		fmt.Printf("fetch %s: addrs %v status %d %s\n", r.URL.Query().Get("url"), res.Addrs, res.Status, res.Error)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(res)
	})
	// A number for a metrics-api autoscaler to read, {"value": N}; /metric?set=N changes it.
	var metric atomic.Int64
	http.HandleFunc("/metric", func(w http.ResponseWriter, r *http.Request) {
		if v := r.URL.Query().Get("set"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				http.Error(w, "set: not an integer", http.StatusBadRequest)
				return
			}
			metric.Store(n)
			fmt.Printf("metric set to %d\n", n)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"value\":%d}\n", metric.Load())
	})
	http.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Open(r.URL.Query().Get("path"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		defer f.Close()
		io.Copy(w, io.LimitReader(f, 64<<10))
	})
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("request %s from %s\n", r.URL.Path, r.RemoteAddr)
		fmt.Fprintf(w, "podcheck %s\n", host)
	})
	go func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		<-sigs
		os.Exit(0)
	}()
	probePort := os.Getenv("PROBE_PORT")
	if probePort == "" {
		probePort = "8090"
	}
	if probePort != port {
		go func() {
			if err := http.ListenAndServe(":"+probePort, nil); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}()
	}
	fmt.Printf("listening on :%s and :%s\n", port, probePort)
	if err := http.ListenAndServe(":"+port, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
