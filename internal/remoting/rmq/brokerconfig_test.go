package rmq

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting"
)

// TestDecodePropertiesReadsWhatJavaWrites: the bodies mqadmin's
// updateBrokerConfig (MixAll.properties2String) and hand-written
// properties files hold.
func TestDecodePropertiesReadsWhatJavaWrites(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       []Property
	}{
		{"mqadmin", "autoCreateTopicEnable=false\n", []Property{{"autoCreateTopicEnable", "false"}}},
		{"crlf and blanks", "  a = 1\r\nb:2\r\n\r\nc 3\n", []Property{{"a", "1"}, {"b", "2"}, {"c", "3"}}},
		{"comments", "# note\n! other\na=1\n", []Property{{"a", "1"}}},
		{"value keeps inner blanks", "messageDelayLevel=1s 5s 10s\n", []Property{{"messageDelayLevel", "1s 5s 10s"}}},
		{"escapes", `k\=ey=a\tb\u0041\\` + "\n", []Property{{"k=ey", "a\tbA\\"}}},
		{"continuation", "a=1,\\\n    2\n", []Property{{"a", "1,2"}}},
		{"last value wins", "a=1\nb=2\na=3\n", []Property{{"a", "3"}, {"b", "2"}}},
		{"empty value", "a=\n", []Property{{"a", ""}}},
		{"no final newline", "a=1", []Property{{"a", "1"}}},
		{"empty", "", nil},
	} {
		got, err := DecodeProperties([]byte(c.body))
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %q decoded as %q, %v; want %q", c.name, c.body, got, err, c.want)
		}
	}
}

func TestDecodePropertiesRefusesWhatItCannotRead(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"=1\n", "has no key"},
		{`a=\u00zz` + "\n", "four hex digits"},
		{`a=\u00`, "four hex digits"},
		{"a=\xff\n", "not UTF-8"},
		{strings.Repeat("k", 300) + "=1\n", "limit of 256 bytes"},
		{"a=" + strings.Repeat("v", 17<<10) + "\n", "limit of 16384 bytes"},
		{strings.Repeat("x=1\n", 70_000), "over the limit of 262144"},
		{manyKeys(1025), "more than 1024 keys"},
	} {
		_, err := DecodeProperties([]byte(c.body))
		var be *BodyError
		if !errors.As(err, &be) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want a *BodyError saying %q", clip(c.body), err, c.want)
		}
	}
	if _, err := DecodeProperties([]byte(manyKeys(1024))); err != nil {
		t.Fatalf("1024 keys: %v", err)
	}
}

func manyKeys(n int) string {
	var sb strings.Builder
	for i := range n {
		sb.WriteString("k" + itoa(i) + "=v\n")
	}
	return sb.String()
}

func TestPropertiesRoundTripOddKeysAndValues(t *testing.T) {
	props := []Property{{"brokerName", "broker-a"}, {"a=b", "x:y"}, {" lead", " blank"}, {"#hash", "!bang"}, {"nl", "one\ntwo\\"}, {"uni", "é€"}}
	got, err := DecodeProperties(EncodeProperties(props))
	if err != nil || !reflect.DeepEqual(got, props) {
		t.Fatalf("round trip of %q: %q, %v", props, got, err)
	}
	if s := string(EncodeProperties([]Property{{"listenPort", "10911"}})); s != "listenPort=10911\n" {
		t.Fatalf("plain property written as %q", s)
	}
}

func TestWritePermHeaders(t *testing.T) {
	req := EncodeWipeWritePerm(WritePermRequest{BrokerName: "broker-a"})
	if req.Code != 205 || req.Ext("brokerName") != "broker-a" {
		t.Fatalf("205 request: code %d ext %q", req.Code, req.Ext("brokerName"))
	}
	h, err := DecodeWritePermRequest(req)
	if err != nil || h.BrokerName != "broker-a" {
		t.Fatalf("decode: %+v %v", h, err)
	}
	resp := EncodeWritePermResponse(req, 7)
	if resp.Ext("wipeTopicCount") != "7" {
		t.Fatalf("205 answer ext %q", resp.Ext("wipeTopicCount"))
	}
	if n, err := DecodeWritePermResponse(resp, true); n != 7 || err != nil {
		t.Fatalf("205 answer decoded %d %v", n, err)
	}
	add := EncodeWritePermResponse(EncodeAddWritePerm(h), 3)
	if add.Ext("addTopicCount") != "3" || add.Ext("wipeTopicCount") != "" {
		t.Fatalf("327 answer ext %q", add.Ext("addTopicCount"))
	}
	if _, err := DecodeWritePermRequest(remoting.NewRequest(CodeWipeWritePermOfBroker, nil, nil)); err == nil || !strings.Contains(err.Error(), "brokerName is missing") {
		t.Fatalf("missing brokerName: %v", err)
	}
	if _, err := DecodeWritePermRequest(EncodeAddWritePerm(WritePermRequest{BrokerName: strings.Repeat("b", 256)})); err == nil {
		t.Fatal("a 256-byte broker name was accepted")
	}
}

func TestGetBrokerConfigResponseCarriesTheVersion(t *testing.T) {
	resp := EncodeGetBrokerConfigResponse(EncodeGetBrokerConfig(), []Property{{"brokerName", "b"}}, DataVersion{Timestamp: 5, Counter: 2})
	if v := resp.Ext("version"); !strings.Contains(v, `"counter":2`) || !strings.Contains(v, `"timestamp":5`) {
		t.Fatalf("version ext %q", v)
	}
	if string(resp.Body) != "brokerName=b\n" {
		t.Fatalf("body %q", resp.Body)
	}
}

// FuzzDecodeProperties: no panic; a refusal is a *BodyError; what
// decodes re-encodes to a body that decodes the same; a key never
// holds a line break unescaped on the wire.
func FuzzDecodeProperties(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		props, err := DecodeProperties(body)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		enc := EncodeProperties(props)
		again, err := DecodeProperties(enc)
		if err != nil || !reflect.DeepEqual(again, props) {
			t.Fatalf("re-encoding %q as %q decoded %q, %v", props, enc, again, err)
		}
		if strings.Count(string(enc), "\n") != len(props) {
			t.Fatalf("%d properties encoded on %d lines: %q", len(props), strings.Count(string(enc), "\n"), enc)
		}
	})
}

// FuzzDecodeWritePermRequest covers 205 and 327: no panic, refusals are
// *FieldErrors, an accepted name round-trips and is at most 255 bytes.
func FuzzDecodeWritePermRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, name string, present, add bool) {
		ext := map[string]string{}
		if present {
			ext["brokerName"] = name
		}
		code := CodeWipeWritePermOfBroker
		if add {
			code = CodeAddWritePermOfBroker
		}
		h, err := DecodeWritePermRequest(remoting.NewRequest(code, ext, nil))
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if h.BrokerName != name || len(name) > 255 || name == "" {
			t.Fatalf("accepted %q as %q", name, h.BrokerName)
		}
		enc := EncodeWipeWritePerm(h)
		if add {
			enc = EncodeAddWritePerm(h)
		}
		if again, err := DecodeWritePermRequest(enc); err != nil || again != h {
			t.Fatalf("round trip %+v became %+v %v", h, again, err)
		}
		n, err := DecodeWritePermResponse(EncodeWritePermResponse(enc, len(name)), !add)
		if err != nil || int(n) != len(name) {
			t.Fatalf("answer count %d %v, want %d", n, err, len(name))
		}
	})
}
