package rmq

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting"
)

func TestFieldsNameTheFirstBadField(t *testing.T) {
	c := remoting.NewRequest(CodePullMessage, map[string]string{"queueId": "x1", "queueOffset": "99999999999999999999"}, nil)
	f := fields{c: c}
	if got := f.i32("queueId"); got != 0 {
		t.Fatalf("queueId = %d, want 0 when malformed", got)
	}
	f.i64("queueOffset")
	f.need("topic")
	var fe *FieldError
	if err := f.result(); !errors.As(err, &fe) || fe.Field != "queueId" {
		t.Fatalf("result = %v, want a FieldError naming queueId", err)
	}
	if msg := fe.Error(); !strings.Contains(msg, "queueId") || !strings.Contains(msg, "32-bit") {
		t.Fatalf("remark %q does not name the field and its type", msg)
	}
	g := fields{c: c}
	g.need("topic")
	if err := g.result(); err == nil || !strings.Contains(err.Error(), "topic is missing") {
		t.Fatalf("missing topic: %v", err)
	}
	h := fields{c: remoting.NewRequest(CodePullMessage, map[string]string{"queueId": "7"}, nil)}
	if got := h.needI32("queueId"); got != 7 || h.result() != nil {
		t.Fatalf("queueId = %d, %v", got, h.result())
	}
}

// TestParseDecimalIsParseInt: the fast path answers as strconv.ParseInt.
func TestParseDecimalIsParseInt(t *testing.T) {
	for _, v := range []string{"0", "-0", "7", "-7", "007", "+7", "-", "", "1_000", " 1", "1 ", "0x10", "1e3", "١",
		"2147483647", "2147483648", "-2147483648", "-2147483649", "999999999999999999", "-999999999999999999",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "1733046000000123456"} {
		checkParseDecimal(t, v)
	}
}

func checkParseDecimal(t *testing.T, v string) {
	t.Helper()
	for _, bits := range []int{32, 64} {
		want, err := strconv.ParseInt(v, 10, bits)
		got, ok := parseDecimal(v, bits)
		if ok != (err == nil) || ok && got != want {
			t.Fatalf("parseDecimal(%q, %d) = %d, %v; ParseInt: %d, %v", v, bits, got, ok, want, err)
		}
	}
}
