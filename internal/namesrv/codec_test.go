package namesrv

import (
	"errors"
	"reflect"
	"strconv"
	"testing"
)

// javaBody is a registration body as a Java 4.9 broker writes it (fastjson:
// keys sorted, counter before timestamp).
const javaBody = `{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"timestamp":1700000000123},` +
	`"topicConfigTable":{"TopicTest":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4},` +
	`"%RETRY%g":{"attributes":{},"order":false,"perm":6,"readQueueNums":1,"topicFilterType":"SINGLE_TAG","topicName":"%RETRY%g","topicSysFlag":0,"writeQueueNums":1}}}}`

func javaExt(body []byte) map[string]string {
	return map[string]string{
		"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "DefaultCluster",
		"haServerAddr": "127.0.0.1:10912", "brokerId": "0", "compressed": "false",
		"bodyCrc32": strconv.FormatInt(bodyCRC(body), 10),
	}
}

func TestDecodeJavaRegistration(t *testing.T) {
	r, err := decodeReg(javaExt([]byte(javaBody)), []byte(javaBody))
	if err != nil {
		t.Fatal(err)
	}
	want := Registration{
		Broker:       BrokerID{Cluster: "DefaultCluster", Name: "broker-a", ID: 0},
		Addr:         "127.0.0.1:10911",
		HAServerAddr: "127.0.0.1:10912",
		Version:      DataVersion{Timestamp: 1700000000123, Counter: 3},
		Topics: map[string]TopicConfig{
			"TopicTest": {TopicName: "TopicTest", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"},
			"%RETRY%g":  {TopicName: "%RETRY%g", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: "SINGLE_TAG"},
		},
	}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("got %+v\nwant %+v", r, want)
	}
}

func TestDecodeRegistrationRejects(t *testing.T) {
	body := []byte(javaBody)
	cases := []struct {
		name string
		edit func(ext map[string]string) []byte
		want error
	}{
		{"crc mismatch", func(ext map[string]string) []byte { ext["bodyCrc32"] = "12345"; return body }, ErrBadRegistration},
		{"no broker name", func(ext map[string]string) []byte { delete(ext, "brokerName"); return body }, ErrBadRegistration},
		{"no address", func(ext map[string]string) []byte { ext["brokerAddr"] = ""; return body }, ErrBadRegistration},
		{"bad id", func(ext map[string]string) []byte { ext["brokerId"] = "-1"; return body }, ErrBadRegistration},
		{"compressed", func(ext map[string]string) []byte { ext["compressed"] = "true"; return body }, ErrUnsupported},
		{"bad json", func(ext map[string]string) []byte {
			ext["bodyCrc32"] = "0"
			return []byte(`{"topicConfigSerializeWrapper":`)
		}, ErrBadRegistration},
		{"negative queues", func(ext map[string]string) []byte {
			ext["bodyCrc32"] = "0"
			return []byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"readQueueNums":-1}}}}`)
		}, ErrBadRegistration},
		{"bad zlib", func(ext map[string]string) []byte { ext["bodyCrc32"] = "0"; ext[ExtZlib] = "true"; return body }, ErrBadRegistration},
		{"bad base version", func(ext map[string]string) []byte {
			ext["bodyCrc32"] = "0"
			ext[ExtDelta] = "true"
			ext[ExtBaseVersion] = "x"
			return []byte(`{}`)
		}, ErrBadRegistration},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ext := javaExt(body)
			b := c.edit(ext)
			if _, err := decodeReg(ext, b); !errors.Is(err, c.want) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
		})
	}
}

func TestDeltaAndZlibRoundTrip(t *testing.T) {
	v := DataVersion{Timestamp: 5, Counter: 9}
	changed := map[string]TopicConfig{"A": topic("A", 4, 6)}
	body := deflate(encodeDeltaBody(v, changed, []string{"B"}))
	ext := javaExt(body)
	ext[ExtDelta], ext[ExtZlib], ext[ExtBaseVersion] = "true", "true", DataVersion{Timestamp: 5, Counter: 8}.String()
	r, err := decodeReg(ext, body)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Delta || r.Version != v || r.BaseVersion.Counter != 8 || !reflect.DeepEqual(r.Topics, changed) || !reflect.DeepEqual(r.Removed, []string{"B"}) {
		t.Fatalf("decoded %+v", r)
	}
}

// FuzzDecodeRegistration feeds arbitrary bodies to the full and delta
// decoders: no panic, and whatever decodes re-encodes to the same value.
func FuzzDecodeRegistration(f *testing.F) {
	f.Add([]byte(javaBody), false)
	f.Add(encodeDeltaBody(DataVersion{Timestamp: 1, Counter: 2}, map[string]TopicConfig{"T": topic("T", 4, 6)}, []string{"U"}), true)
	f.Add([]byte(`{}`), true)
	f.Add([]byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"":{}}}}`), false)
	f.Fuzz(func(t *testing.T, body []byte, delta bool) {
		ext := javaExt(body)
		if delta {
			ext[ExtDelta] = "true"
			ext[ExtBaseVersion] = `{"timestamp":1,"counter":1}`
		}
		r, err := decodeReg(ext, body)
		if err != nil {
			if !errors.Is(err, ErrBadRegistration) {
				t.Fatalf("error of no class: %v", err)
			}
			return
		}
		for name, tc := range r.Topics {
			if name == "" || tc.TopicName != name || tc.ReadQueueNums < 0 || tc.WriteQueueNums < 0 {
				t.Fatalf("decoder let through %q: %+v", name, tc)
			}
		}
		var again []byte
		if delta {
			again = encodeDeltaBody(r.Version, r.Topics, r.Removed)
		} else {
			again = encodeRegisterBody(r.Topics, r.Version)
		}
		r2, err := decodeReg(javaExt(again), again)
		if delta {
			ext2 := javaExt(again)
			ext2[ExtDelta], ext2[ExtBaseVersion] = "true", ext[ExtBaseVersion]
			r2, err = decodeReg(ext2, again)
		}
		if err != nil {
			t.Fatalf("re-encoded body does not decode: %v\n%s", err, again)
		}
		if r.Removed == nil {
			r.Removed = []string{}
		}
		if !delta {
			r2.Removed = r.Removed
		}
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip\n got %+v\nwant %+v", r2, r)
		}
	})
}
