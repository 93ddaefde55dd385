package main

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

// validateAll runs go-control-plane's generated validation (protoc-gen-validate: ValidateAll,
// which reports every violation, else Validate) on m and, because that validation stops at
// google.protobuf.Any fields, on every message packed in an Any inside it, recursively: the HTTP
// connection manager inside a listener, the local rate limit config inside an HTTP filter or a
// route's typed_per_filter_config. Type URLs no linked package registers are returned in unknown.
func validateAll(what string, m proto.Message, unknown map[string]bool) []string {
	var errs []string
	switch v := m.(type) {
	case interface{ ValidateAll() error }:
		if err := v.ValidateAll(); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", what, err))
		}
	case interface{ Validate() error }:
		if err := v.Validate(); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", what, err))
		}
	}
	eachAny(m.ProtoReflect(), func(a *anypb.Any) {
		inner, err := a.UnmarshalNew()
		if err != nil {
			unknown[a.TypeUrl] = true
			return
		}
		name := a.TypeUrl[strings.LastIndex(a.TypeUrl, "/")+1:]
		errs = append(errs, validateAll(what+" > "+name, inner, unknown)...)
	})
	return errs
}

// eachAny calls f for every Any reachable from m without passing through another Any.
func eachAny(m protoreflect.Message, f func(*anypb.Any)) {
	visit := func(v protoreflect.Message) {
		if a, ok := v.Interface().(*anypb.Any); ok {
			f(a)
			return
		}
		eachAny(v, f)
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					visit(mv.Message())
					return true
				})
			}
		case fd.IsList():
			if fd.Message() != nil {
				for i := 0; i < v.List().Len(); i++ {
					visit(v.List().Get(i).Message())
				}
			}
		case fd.Message() != nil:
			visit(v.Message())
		}
		return true
	})
}

// validateProxy validates every listener and route configuration one proxy received.
func validateProxy(x xds, unknown map[string]bool) []string {
	var errs []string
	for _, l := range x.Listeners {
		errs = append(errs, validateAll("listener "+l.Name, l, unknown)...)
	}
	for _, rc := range x.Routes {
		errs = append(errs, validateAll("route configuration "+rc.Name, rc, unknown)...)
	}
	return errs
}
