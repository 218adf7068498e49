package rmq

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestQuoteNumberKeys(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{0:"127.0.0.1:10911"}`, `{"0":"127.0.0.1:10911"}`},
		{`{"brokerAddrs":{0:"a",1 : "b"},"n":[1,2,{-3:4}]}`, `{"brokerAddrs":{"0":"a","1" : "b"},"n":[1,2,{"-3":4}]}`},
		{`{"s":"{0:x}, 1:y"}`, `{"s":"{0:x}, 1:y"}`},
		{`{"s":"a\"{0:1}"}`, `{"s":"a\"{0:1}"}`},
		{`[1, 2, 3]`, `[1, 2, 3]`},
		{`{"a":1,"b":-2}`, `{"a":1,"b":-2}`},
		{``, ``},
	} {
		if got := string(quoteNumberKeys([]byte(c.in))); got != c.want {
			t.Errorf("quoteNumberKeys(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

// Apache RocketMQ 5.5's name server writes its cluster info with bare
// broker id keys; Petrel's CLI reads it.
func TestDecodeClusterInfoBodyFromApache(t *testing.T) {
	body := []byte(`{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:19911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}`)
	ci, err := DecodeClusterInfoBody(body)
	if err != nil {
		t.Fatal(err)
	}
	if got := ci.BrokerAddrTable["broker-a"].BrokerAddrs[0]; got != "127.0.0.1:19911" {
		t.Fatalf("broker-a's master address = %q, want 127.0.0.1:19911 (%+v)", got, ci)
	}
}

// FuzzQuoteNumberKeys: valid JSON is returned unchanged; the result is
// bounded by the input and quoting it again changes nothing.
func FuzzQuoteNumberKeys(f *testing.F) {
	f.Add([]byte(`{0:"127.0.0.1:10911",1:"127.0.0.1:10921"}`))
	f.Add([]byte(`{"s":"a\"{0:1}","n":[1,{-2:3}]}`))
	f.Add([]byte(`[1,2,3]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out := quoteNumberKeys(body)
		if len(out) > 2*len(body)+2 {
			t.Fatalf("%d bytes out of %d", len(out), len(body))
		}
		if json.Valid(body) && !bytes.Equal(out, body) {
			t.Fatalf("valid JSON %q changed to %q", body, out)
		}
		if again := quoteNumberKeys(out); !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q then %q", out, again)
		}
	})
}
