// Command istio-check runs Istio's own config generation, EnvoyFilter patching included, on the
// EnvoyFilters the operator renders, and checks what a sidecar and a gateway proxy would receive.
//
//	istio-check DIR      DIR/cases.json lists the cases, each an EnvoyFilter file (JSON or YAML) in DIR
//	istio-check -version prints the istio.io/istio module version it was built with
//
// For every case it generates listeners and routes twice, without and with the EnvoyFilter, for
// a sidecar and a gateway proxy that both carry the filter's workload labels in its namespace.
// The proxy the case targets must get the local rate limit HTTP filter right before the router in
// the intended listener and the per-route config on every forwarding route, and nothing else may
// change; the other proxy must not change at all. Every generated listener and route
// configuration must pass go-control-plane's validation. Exit status 1 when any case fails.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	"istio.io/istio/pilot/pkg/config/kube/crd"
	"istio.io/istio/pkg/config"
	"istio.io/istio/pkg/config/schema/collections"
	"istio.io/istio/pkg/log"
)

// The proxy version the fake proxies announce: the Istio release the pinned module builds.
const istioProxyVersion = "1.31.0"

const istioModule = "istio.io/istio"

// caseSpec is one entry of cases.json, written by render.ts.
type caseSpec struct {
	Name   string `json:"name"`   // where the RateLimit came from
	File   string `json:"file"`   // the EnvoyFilter (JSON or YAML), relative to DIR
	Target string `json:"target"` // "sidecar", "gateway" or "both": the proxies the limit is meant for
	// The HTTP filters the EnvoyFilter inserts, in order, right before the router (default: the
	// local rate limit filter alone).
	Filters []string `json:"filters"`
}

func main() {
	version := flag.Bool("version", false, "print the "+istioModule+" module version and exit")
	flag.Parse()
	if *version {
		fmt.Println(istioVersion())
		return
	}
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: istio-check DIR (DIR/cases.json) | istio-check -version")
		os.Exit(2)
	}
	quiet()
	cases, engine, err := readCases(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "istio-check:", err)
		os.Exit(2)
	}
	fmt.Printf("istio-check: %s %s, %d cases\n", istioModule, istioVersion(), len(cases))
	failed := 0
	baselines := map[string]map[string]xds{}
	for _, c := range cases {
		if !runCase(flag.Arg(0), c, engine, baselines) {
			failed++
		}
	}
	if failed > 0 {
		fmt.Printf("istio-check: %d of %d cases FAILED\n", failed, len(cases))
		os.Exit(1)
	}
	fmt.Printf("istio-check: all %d cases passed\n", len(cases))
}

// quiet keeps Istio's own logging to errors, on stderr, apart from the report on stdout: they
// show a patch Istio could not convert, but also, now and then, a "sync failed" from an informer
// still starting when a fake environment is torn down, which is harmless.
func quiet() {
	o := log.DefaultOptions()
	o.OutputPaths = []string{"stderr"}
	o.ErrorOutputPaths = []string{"stderr"}
	o.SetDefaultOutputLevel(log.OverrideScopeName, log.ErrorLevel)
	_ = log.Configure(o)
}

func istioVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == istioModule {
				return d.Version
			}
		}
	}
	return "(unknown)"
}

func readCases(dir string) ([]caseSpec, engineSpec, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		return nil, engineSpec{}, err
	}
	var doc struct {
		Cases  []caseSpec `json:"cases"`
		Engine engineSpec `json:"engine"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, engineSpec{}, fmt.Errorf("cases.json: %v", err)
	}
	if len(doc.Cases) == 0 {
		return nil, engineSpec{}, fmt.Errorf("cases.json lists no cases")
	}
	for i, c := range doc.Cases {
		if c.Target != sidecar && c.Target != gateway && c.Target != both {
			return nil, engineSpec{}, fmt.Errorf("case %s: target %q is neither %s, %s nor %s", c.Name, c.Target, sidecar, gateway, both)
		}
		if len(c.Filters) == 0 {
			doc.Cases[i].Filters = []string{rateLimitFilter}
		}
		for _, f := range doc.Cases[i].Filters {
			if f != rateLimitFilter && f != globalFilter {
				return nil, engineSpec{}, fmt.Errorf("case %s: filter %q is neither %s nor %s", c.Name, f, rateLimitFilter, globalFilter)
			}
		}
	}
	return doc.Cases, doc.Engine, nil
}

// runCase checks one case and prints one line for it, followed by its failures.
func runCase(dir string, c caseSpec, engine engineSpec, baselines map[string]map[string]xds) bool {
	errs, summary := checkCase(dir, c, engine, baselines)
	if len(errs) == 0 {
		fmt.Printf("ok   %s -> %s: %s\n", c.Name, c.Target, summary)
		return true
	}
	fmt.Printf("FAIL %s -> %s\n", c.Name, c.Target)
	for _, e := range errs {
		fmt.Printf("  - %s\n", e)
	}
	return false
}

func checkCase(dir string, c caseSpec, engine engineSpec, baselines map[string]map[string]xds) ([]string, string) {
	text, err := os.ReadFile(filepath.Join(dir, c.File))
	if err != nil {
		return []string{err.Error()}, ""
	}
	// Istio's own parsing and validation of the EnvoyFilter (what its admission webhook runs).
	cfgs, _, err := crd.ParseInputs(string(text))
	if err != nil {
		return []string{"Istio rejects the EnvoyFilter: " + err.Error()}, ""
	}
	if len(cfgs) != 1 {
		return []string{fmt.Sprintf("%s holds %d Istio configs, want one EnvoyFilter", c.File, len(cfgs))}, ""
	}
	ef, ok := cfgs[0].Spec.(*networking.EnvoyFilter)
	if !ok {
		return []string{fmt.Sprintf("%s is a %s, not an EnvoyFilter", c.File, cfgs[0].GroupVersionKind.Kind)}, ""
	}
	if warns := warnings(cfgs[0]); len(warns) > 0 {
		return []string{"Istio warns about the EnvoyFilter: " + strings.Join(warns, "; ")}, ""
	}
	ns, labels := cfgs[0].Namespace, ef.GetWorkloadSelector().GetLabels()
	world, err := worldConfig(ns, labels, engine)
	if err != nil {
		return []string{err.Error()}, ""
	}
	key := world
	base, ok := baselines[key]
	if !ok {
		if base, err = generate(world, ns, labels); err != nil {
			return []string{"generating the baseline: " + err.Error()}, ""
		}
		baselines[key] = base
	}
	patched, err := generate(world+"\n---\n"+string(text), ns, labels)
	if err != nil {
		return []string{"generating with the EnvoyFilter: " + err.Error()}, ""
	}
	var errs []string
	var parts []string
	unknown := map[string]bool{}
	for _, kind := range []string{sidecar, gateway} {
		for _, e := range validateProxy(base[kind], unknown) {
			errs = append(errs, fmt.Sprintf("%s proxy, without the EnvoyFilter: Validate: %s", kind, e))
		}
		for _, e := range validateProxy(patched[kind], unknown) {
			errs = append(errs, fmt.Sprintf("%s proxy: Validate: %s", kind, e))
		}
		fb, err1 := flatten(base[kind])
		fp, err2 := flatten(patched[kind])
		if err1 != nil || err2 != nil {
			errs = append(errs, fmt.Sprintf("%s proxy: %v %v", kind, err1, err2))
			continue
		}
		meant := kind == c.Target || c.Target == both
		o := checkProxy(kind, meant, c.Filters, fb, fp, patched[kind].Clusters)
		for _, e := range o.errs {
			errs = append(errs, fmt.Sprintf("%s proxy: %s", kind, e))
		}
		n := len(patched[kind].Listeners) + len(patched[kind].Routes)
		if meant {
			global := ""
			if o.globalCluster != "" {
				global = fmt.Sprintf(", the global filter asking cluster %s (present), its entries at stage %d", o.globalCluster, o.globalStage)
			}
			parts = append(parts, fmt.Sprintf("%s proxy: %s before the router in %d HTTP connection managers, "+
				"per-route config on %d forwarding routes, %d other routes and the rest unchanged, %d listeners and route configurations valid%s",
				kind, strings.Join(c.Filters, " then "), o.managers, o.forwards, o.untouched, n, global))
		} else {
			parts = append(parts, fmt.Sprintf("%s proxy: unchanged, %d listeners and route configurations valid", kind, n))
		}
	}
	if len(unknown) > 0 {
		urls := slices.Sorted(maps.Keys(unknown))
		parts = append(parts, "not validated (type not linked): "+strings.Join(urls, ", "))
	}
	return dedupe(errs), strings.Join(parts, "; ")
}

// dedupe keeps the first of identical failures and says how many there were: the same finding
// often comes from each of a listener's filter chains.
func dedupe(errs []string) []string {
	count := map[string]int{}
	var out []string
	for _, e := range errs {
		if count[e]++; count[e] == 1 {
			out = append(out, e)
		}
	}
	for i, e := range out {
		if n := count[e]; n > 1 {
			out[i] = fmt.Sprintf("(%d times) %s", n, e)
		}
	}
	return out
}

// genericWarning is what Istio's validation says of every EnvoyFilter since 1.31.
const genericWarning = "EnvoyFilter exposes internal implementation details"

// warnings are Istio's validation warnings (what kubectl would print on apply) but the generic one.
func warnings(cfg config.Config) []string {
	warn, _ := collections.EnvoyFilter.ValidateConfig(cfg)
	if warn == nil {
		return nil
	}
	all := []error{warn}
	if m, ok := warn.(interface{ WrappedErrors() []error }); ok {
		all = m.WrappedErrors()
	}
	var out []string
	for _, w := range all {
		if !strings.Contains(w.Error(), genericWarning) {
			out = append(out, w.Error())
		}
	}
	return out
}
