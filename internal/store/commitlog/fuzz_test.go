package commitlog

import (
	"errors"
	"testing"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/vfs"
)

const fuzzSegment = 4096

// FuzzRecover feeds arbitrary bytes to the recovery scan as the content of
// the first segment. Recovery must not panic, must keep only whole records
// that tile the log from its start, and the log must accept and keep a new
// record after the cut.
func FuzzRecover(f *testing.F) {
	var seed []byte
	for i, body := range []string{"a", "hello", ""} {
		m := testMsg("T", int32(i), body)
		m.PhysicalOffset = int64(len(seed))
		seed = append(seed, m.Encode()...)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)-3])
	f.Add(append(append([]byte{}, seed...), 0xDA, 0xA3, 0x20, 0xA7))
	blank := make([]byte, 64)
	message.EncodeBlank(blank, 64)
	f.Add(blank)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzSegment {
			data = data[:fuzzSegment]
		}
		fsys := vfs.NewMem()
		if err := fsys.MkdirAll("log"); err != nil {
			t.Fatal(err)
		}
		seg, err := fsys.Create("log/" + SegmentName(0))
		if err != nil {
			t.Fatal(err)
		}
		seg.WriteAt(data, 0)
		seg.Sync()
		seg.Close()
		fsys.SyncDir("log")
		opts := Options{SegmentBytes: fuzzSegment, RecoverFrom: -1}
		l, err := Open(fsys, "log", opts)
		if err != nil {
			return // a clean refusal is fine
		}
		end := l.Written()
		if end > int64(len(data)) && end != fuzzSegment {
			t.Fatalf("recovered end %d beyond the %d bytes given", end, len(data))
		}
		// What is kept tiles [0, end) with whole records (and maybe a final
		// blank filling the segment).
		buf := make([]byte, end)
		if end > 0 {
			if err := l.ReadAt(buf, 0); err != nil {
				t.Fatal(err)
			}
		}
		for p := 0; p < len(buf); {
			n, err := message.Check(buf[p:])
			if errors.Is(err, message.ErrBlank) && p+n == fuzzSegment {
				break
			}
			if err != nil {
				t.Fatalf("kept bytes at %d are not a record: %v", p, err)
			}
			p += n
		}
		m := testMsg("T", 0, "after")
		if _, err := l.Append(m); err != nil {
			t.Fatalf("append after recovery: %v", err)
		}
		after := l.Written()
		l.Close()
		l2, err := Open(fsys, "log", opts)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer l2.Close()
		if l2.Written() != after {
			t.Fatalf("reopened end %d, want %d", l2.Written(), after)
		}
		r, err := l2.ReadRecord(m.PhysicalOffset, int32(m.EncodedLen()), nil)
		if err != nil || string(r.Body()) != "after" {
			t.Fatalf("record appended after recovery: %v", err)
		}
	})
}
