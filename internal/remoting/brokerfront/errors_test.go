package brokerfront

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/logtest"
	"github.com/petrelmq/petrel/internal/remoting"
)

// TestErrorRemarkHasNoInternalCause: the remark is the broker's sentence
// for the client; the cause (a path, a Go error chain) goes to the log only.
func TestErrorRemarkHasNoInternalCause(t *testing.T) {
	var logs logtest.Buffer
	f := &Front{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	req := remoting.NewRequest(rmq.CodeSendMessage, nil, nil)
	cause := fmt.Errorf("commitlog: preallocate /var/lib/petrel/commitlog/00000000001073741824: %w", errors.New("no space left on device"))
	for _, tc := range []struct {
		err        error
		code       int16
		remark     string
		logLevel   string
		notInReply string
	}{
		{&broker.Error{Kind: broker.KindServiceUnavailable, Msg: "the disk is full; free space or add a broker", Err: cause},
			rmq.RespServiceNotAvailable, "the disk is full; free space or add a broker", "WARN", "/var/lib"},
		{&broker.Error{Kind: broker.KindSystemError, Msg: "the message could not be stored; retry", Err: cause},
			rmq.RespSystemError, "the message could not be stored; retry", "WARN", "commitlog:"},
		{&broker.Error{Kind: broker.KindTopicNotExist, Msg: `topic "T" does not exist`},
			rmq.RespTopicNotExist, `topic "T" does not exist`, "DEBUG", "broker:"},
		{fmt.Errorf("store: read %s: %w", "/var/lib/petrel/x", errors.New("EIO")),
			rmq.RespSystemError, "request code 10 failed inside the broker; retry, and report it if it persists", "WARN", "/var/lib"},
	} {
		resp := f.errorResponse(req, tc.err)
		if resp.Code != tc.code || resp.Remark != tc.remark {
			t.Errorf("%v: code %d remark %q, want %d %q", tc.err, resp.Code, resp.Remark, tc.code, tc.remark)
		}
		if strings.Contains(resp.Remark, tc.notInReply) {
			t.Errorf("remark %q carries the internal %q", resp.Remark, tc.notInReply)
		}
		if !strings.Contains(logs.String(), "level="+tc.logLevel) || !strings.Contains(logs.String(), tc.err.Error()[:12]) {
			t.Errorf("the cause %q is not logged at %s:\n%s", tc.err, tc.logLevel, logs.String())
		}
	}
}

func TestPropertiesProblem(t *testing.T) {
	for props, want := range map[string]string{
		"":                                 "",
		"TAGS\x01A":                        "",
		"TAGS\x01A\x02KEYS\x01\x02":        "",
		"TAGS\x01A\x02k\x01x\x02TAGS\x01B": `property "TAGS" appears twice`,
		"k\x01v\x02orphan\x02":             `hold "orphan" without a name`,
		"k\x01a\x01b":                      `value of property "k" contains 0x01`,
		"\x01v":                            `value "v" without a name`,
	} {
		got := propertiesProblem(props)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("propertiesProblem(%q) = %q, want %q", props, got, want)
		}
	}
	// Past smallProps names the duplicate check uses a map; same answer.
	var b strings.Builder
	for i := range 3 * smallProps {
		fmt.Fprintf(&b, "k%d\x01v\x02", i)
	}
	if got := propertiesProblem(b.String()); got != "" {
		t.Fatalf("%d distinct properties: %q", 3*smallProps, got)
	}
	b.WriteString("k40\x01again\x02")
	if got := propertiesProblem(b.String()); !strings.Contains(got, `"k40" appears twice`) {
		t.Fatalf("a duplicate past %d properties: %q", smallProps, got)
	}
	if n := testing.AllocsPerRun(100, func() { propertiesProblem("TAGS\x01A\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01AC11\x02WAIT\x01true\x02") }); n != 0 {
		t.Fatalf("propertiesProblem allocates %v times for a typical send", n)
	}
}
