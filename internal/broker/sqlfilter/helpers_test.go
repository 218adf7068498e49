package sqlfilter

import (
	"strings"
	"testing"
)

// props parses "k=v;k=v" into a lookup function; "" has no properties.
func props(spec string) func(string) (string, bool) {
	m := parseProps(spec)
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func parseProps(spec string) map[string]string {
	m := map[string]string{}
	if spec == "" {
		return m
	}
	for _, kv := range strings.Split(spec, ";") {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// outcome evaluates e with RocketMQ's four outcomes: T, F, N (null) or E
// (evaluation error).
func outcome(e *Expr, prop func(string) (string, bool)) string {
	v := e.root.eval(prop)
	switch {
	case v.k == kErr:
		return "E"
	case v.k == kNull:
		return "N"
	case v.k == kBool && v.b:
		return "T"
	case v.k == kBool:
		return "F"
	}
	return "?"
}

func mustCompile(t testing.TB, s string) *Expr {
	t.Helper()
	e, err := Compile(s)
	if err != nil {
		t.Fatalf("Compile(%q): %v", s, err)
	}
	return e
}
