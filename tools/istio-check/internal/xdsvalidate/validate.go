// Package xdsvalidate runs go-control-plane's generated field rules (protoc-gen-validate) on xDS
// messages, including the messages packed in google.protobuf.Any fields, which the generated code
// does not follow. istio-check (validate.go) and the proxy stand-in both use it.
package xdsvalidate

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

// Message runs m's generated validation and nothing else: ValidateAll (every violation) when the
// type has it, else Validate. Nested messages are checked, messages packed in an Any are not.
func Message(m proto.Message) error {
	switch v := m.(type) {
	case interface{ ValidateAll() error }:
		return v.ValidateAll()
	case interface{ Validate() error }:
		return v.Validate()
	}
	return nil
}

// All runs Message on m and, recursively, on every message packed in an Any inside it: the HTTP
// connection manager inside a listener, the local rate limit config inside an HTTP filter or a
// route's typed_per_filter_config. Each finding is prefixed with what, then the path of Any type
// names (`listener x > HttpConnectionManager > LocalRateLimit: ...`). Type URLs no linked package
// registers are added to unknown (when it is not nil) and not looked into.
func All(what string, m proto.Message, unknown map[string]bool) []string {
	var errs []string
	if err := Message(m); err != nil {
		errs = append(errs, fmt.Sprintf("%s: %v", what, err))
	}
	EachAny(m.ProtoReflect(), func(a *anypb.Any) {
		inner, err := a.UnmarshalNew()
		if err != nil {
			if unknown != nil {
				unknown[a.TypeUrl] = true
			}
			return
		}
		errs = append(errs, All(what+" > "+TypeName(a.TypeUrl), inner, unknown)...)
	})
	return errs
}

// TypeName is the last path segment of a type URL: the message's full name.
func TypeName(typeURL string) string {
	return typeURL[strings.LastIndex(typeURL, "/")+1:]
}

// EachAny calls f for every Any reachable from m without passing through another Any.
func EachAny(m protoreflect.Message, f func(*anypb.Any)) {
	visit := func(v protoreflect.Message) {
		if a, ok := v.Interface().(*anypb.Any); ok {
			f(a)
			return
		}
		EachAny(v, f)
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
