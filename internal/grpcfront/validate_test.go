package grpcfront

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/petrelmq/petrel/internal/message"
)

func TestValidMessageID(t *testing.T) {
	for _, ok := range []string{"0156F7E71C361B21BC024CCDBE00000000", "7F0000010001", "a-b_c.d", strings.Repeat("A", MaxMessageIDLen)} {
		if why := validMessageID(ok); why != "" {
			t.Errorf("%q refused: %s", ok, why)
		}
	}
	for _, bad := range []string{"", "a b", "a\x01b", "a\x02", "\xff", strings.Repeat("A", MaxMessageIDLen+1), "tab\t"} {
		if validMessageID(bad) == "" {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestValidTagsKeysAndProperties(t *testing.T) {
	if validTag("TagA") != "" || validTag("a|b") == "" || validTag("") == "" || validTag("a\x01") == "" {
		t.Error("tag rules")
	}
	if validKey("order-1") != "" || validKey("a b") == "" || validKey(" ") == "" {
		t.Error("key rules")
	}
	if validUserProperty("color", "blue") != "" || validUserProperty("", "x") == "" ||
		validUserProperty("TAGS", "x") == "" || validUserProperty("k", "v\x02") == "" {
		t.Error("property rules")
	}
}

// FuzzMessageID: an accepted id can be stored as the UNIQ_KEY property and
// read back unchanged.
func FuzzMessageID(f *testing.F) {
	f.Add("0156F7E71C361B21BC024CCDBE00000000")
	f.Add("")
	f.Add("a\x01b")
	f.Add("ü-id")
	f.Fuzz(func(t *testing.T, id string) {
		if validMessageID(id) != "" {
			return
		}
		if id == "" || len(id) > MaxMessageIDLen || !utf8.ValidString(id) || strings.ContainsAny(id, " \x00\x01\x02\t\n") {
			t.Fatalf("%q accepted", id)
		}
		props := message.EncodeProperties(map[string]string{message.PropertyUniqKey: id, "x": "y"})
		if got, ok := message.PropertyOf(props, message.PropertyUniqKey); !ok || got != id {
			t.Fatalf("%q stored as %q", id, got)
		}
	})
}
