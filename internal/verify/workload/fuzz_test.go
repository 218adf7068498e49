package workload

import (
	"bytes"
	"sort"
	"testing"
)

// FuzzParseBody: no body read from a broker makes ParseBody panic; what
// it accepts starts with a well-formed id, and its fields encode back to
// a body that parses to the same id and fields.
func FuzzParseBody(f *testing.F) {
	f.Add(Body(ID("0badc0de", "ordered", 1, 17), 64, Field{"key", "k3"}, Field{"seq", "17"}))
	f.Add([]byte("0badc0de-queue-0-1"))
	f.Add([]byte("0badc0de-queue-0-1 =x"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, ok := ParseBody(body)
		if !ok {
			return
		}
		if !ValidID(p.ID) || !bytes.HasPrefix(body, []byte(p.ID)) {
			t.Fatalf("accepted %q with id %q", body, p.ID)
		}
		var fields []Field
		for k, v := range p.Fields {
			fields = append(fields, Field{k, v})
		}
		sort.Slice(fields, func(i, j int) bool { return fields[i].K < fields[j].K })
		again, ok := ParseBody(Body(p.ID, len(body), fields...))
		if !ok || again.ID != p.ID || len(again.Fields) != len(p.Fields) {
			t.Fatalf("%q: fields %v do not encode back (%+v, %v)", body, p.Fields, again, ok)
		}
		for k, v := range p.Fields {
			if again.Fields[k] != v {
				t.Fatalf("%q: field %s=%s came back as %q", body, k, v, again.Fields[k])
			}
		}
	})
}
