package auth

import (
	"strings"
	"testing"
)

// pairFields is a Fields of ext fields in a given order, duplicates
// allowed.
type pairFields []extPair

func (f pairFields) Ext(k string) string {
	v := ""
	for _, p := range f {
		if p.key == k {
			v = p.value
		}
	}
	return v
}

func (f pairFields) EachExt(fn func(k, v string)) {
	for _, p := range f {
		fn(p.key, p.value)
	}
}

// BenchmarkVerifyRemoting: checking one signed 1 KiB send whose fields
// come in one order every time, as a connection's decoded requests do
// (the Go client's SEND_MESSAGE_V2 header).
func BenchmarkVerifyRemoting(b *testing.B) {
	f := pairFields{{key: "a", value: "PID_bench"}, {key: "b", value: "BenchmarkTopic"}, {key: "c", value: "TBW102"},
		{key: "d", value: "4"}, {key: "e", value: "3"}, {key: "f", value: "0"}, {key: "g", value: "1764762000000"},
		{key: "h", value: "0"}, {key: "i", value: "UNIQ_KEY\x01AC1100020000000000000001\x02WAIT\x01true\x02"},
		{key: "j", value: "0"}, {key: "k", value: "false"}, {key: "l", value: "false"}, {key: "m", value: "false"},
		{key: "AccessKey", value: "root"}}
	body := []byte(strings.Repeat("x", 1024))
	sig := SignRemoting("s3cret-s3cret", f, body)
	f = append(f, extPair{key: "Signature", value: sig})
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if !verifyRemoting("s3cret-s3cret", sig, f, body) {
			b.Fatal("signature refused")
		}
	}
}
