package message

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// TestRecallHandle: a handle carries its due time plus one, decodes with or
// without padding, and bad handles are refused.
func TestRecallHandle(t *testing.T) {
	h := EncodeRecallHandle("orders", "broker-a", 1700000000000, "AC1100010000")
	raw, err := base64.URLEncoding.DecodeString(h)
	if err != nil || string(raw) != "v1 orders broker-a 1700000000001 AC1100010000" {
		t.Fatalf("handle %q = %q, %v", h, raw, err)
	}
	want := RecallHandle{Topic: "orders", BrokerName: "broker-a", Timestamp: "1700000000001", At: 1700000000001, UniqID: "AC1100010000"}
	for _, s := range []string{h, strings.TrimRight(h, "=")} {
		if got, err := DecodeRecallHandle(s); err != nil || got != want {
			t.Fatalf("DecodeRecallHandle(%q) = %+v, %v; want %+v", s, got, err, want)
		}
	}
	enc := func(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) }
	for _, bad := range []string{"", "!!!", enc("v2 a b 1 c"), enc("v1 a b 1"), strings.Repeat("A", MaxRecallHandle+4)} {
		if _, err := DecodeRecallHandle(bad); !errors.Is(err, ErrRecallHandle) {
			t.Errorf("DecodeRecallHandle(%q) err = %v, want ErrRecallHandle", bad, err)
		}
	}
	if got, err := DecodeRecallHandle(enc("v1 a b soon c")); err != nil || got.At != -1 {
		t.Errorf("a non-numeric timestamp: %+v, %v; want At -1", got, err)
	}
}

// FuzzRecallHandle: any input decodes or is refused without panicking, and
// what decodes encodes back to the same fields.
func FuzzRecallHandle(f *testing.F) {
	f.Add(EncodeRecallHandle("orders", "broker-a", 1700000000000, "AC1100010000"))
	f.Add("djEgYSBiIDEgYw")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := DecodeRecallHandle(s)
		if err != nil {
			return
		}
		if h.At < 1 || strings.Contains(h.Topic+h.BrokerName+h.UniqID, " ") {
			return
		}
		again, err := DecodeRecallHandle(EncodeRecallHandle(h.Topic, h.BrokerName, h.At-1, h.UniqID))
		if err != nil || again.Topic != h.Topic || again.BrokerName != h.BrokerName || again.At != h.At || again.UniqID != h.UniqID {
			t.Fatalf("re-encoding %+v gave %+v, %v", h, again, err)
		}
	})
}
