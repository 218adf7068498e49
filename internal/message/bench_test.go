package message

import (
	"strings"
	"testing"
)

var benchSizes = []struct {
	name string
	body int
}{{"100B", 100}, {"1KiB", 1024}, {"4KiB", 4096}}

// benchMessage is a typical send: IPv4 hosts, tags, keys and a unique key.
func benchMessage(bodyLen int) *Message {
	return sample(strings.Repeat("x", bodyLen),
		"KEYS\x01order-1234\x02TAGS\x01TagA\x02UNIQ_KEY\x017F00000100002A9F0000000000000000\x02WAIT\x01true\x02",
		hostV4, hostV4b)
}

func BenchmarkEncodeTo(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			m := benchMessage(s.body)
			buf := make([]byte, m.EncodedLen())
			b.ReportAllocs()
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				m.EncodeTo(buf) // BodyCRC is zero, so each call computes the CRC
			}
		})
	}
}

func BenchmarkCheck(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			rec := benchMessage(s.body).Encode()
			b.ReportAllocs()
			b.SetBytes(int64(len(rec)))
			for b.Loop() {
				if _, err := Check(rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
