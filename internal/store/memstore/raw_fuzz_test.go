package memstore

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
)

// FuzzAppendRaw feeds arbitrary bytes, cut in two anywhere, to the twin's
// AppendRaw. It must not panic, must end with the same whole records
// whether the bytes come at once or in two appends, and must keep nothing
// of a refused append.
func FuzzAppendRaw(f *testing.F) {
	src := New(store.Config{Dir: "/x"})
	for i := range 5 {
		m := &message.Message{Topic: "T", QueueID: int32(i % 2), Body: []byte("body of the record"), BornHost: netip.MustParseAddrPort("10.0.0.1:1")}
		if err := src.Put(m); err != nil {
			f.Fatal(err)
		}
	}
	seed, err := src.ReadRaw(0, 1<<20)
	if err != nil {
		f.Fatal(err)
	}
	src.Close()
	f.Add(seed, uint16(0))
	f.Add(seed, uint16(30))
	f.Add(seed[:len(seed)-5], uint16(200))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		if len(data) > 1<<16 {
			data = data[:1<<16]
		}
		c := int(cut) % (len(data) + 1)
		run := func(parts ...[]byte) (int64, int64, error) {
			s := New(store.Config{Dir: "/x"})
			defer s.Close()
			at := int64(0)
			for _, p := range parts {
				before := s.Written()
				if err := s.AppendRaw(at, p); err != nil {
					if s.Written() != before {
						t.Fatalf("a refused append moved the end from %d to %d", before, s.Written())
					}
					return 0, 0, err
				}
				at += int64(len(p))
			}
			if s.Durable() > s.Written() || s.Written() != int64(len(data)) {
				t.Fatalf("durable %d written %d for %d bytes", s.Durable(), s.Written(), len(data))
			}
			return s.Durable(), s.Written(), nil
		}
		d1, _, err1 := run(data)
		d2, _, err2 := run(data[:c], data[c:])
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("at once: %v; cut at %d: %v", err1, c, err2)
		}
		if err1 == nil && d1 != d2 {
			t.Fatalf("whole records end at %d at once, %d cut at %d", d1, d2, c)
		}
		if err1 != nil && !errors.Is(err1, store.ErrBadRaw) && !errors.Is(err1, store.ErrSegmentMismatch) {
			t.Fatalf("refused with %v", err1)
		}
	})
}
