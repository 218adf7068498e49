package timer

import (
	"bytes"
	"log/slog"
	"path"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/vfs"
)

func sampleCheckpoint() ckptState {
	return ckptState{
		slots: 60, per: 16, applied: 77, cursor: 1_740_830_405, end: 100, pending: 12,
		hasSnap: true, snapEnd: 64, snapCursor: 1_740_830_401, lateHead: 99, lateGen: 3,
		slotRun:  runState{present: true, chain: 1_740_830_404, head: 97, rollBelow: 50, progAt: 1_740_830_404_123, progRef: 40},
		lateRuns: []runState{{present: true, chain: 1, head: 95, progAt: 12, progRef: 3}, {present: true, chain: 2, head: 98, progAt: -5, progRef: 7}},
		segs:     []segState{{start: 48, maxRound: 1_740_830_460, maxLate: 2}, {start: 64}, {start: 96, maxLate: 3}},
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	st := sampleCheckpoint()
	b := st.encode()
	if want := 118 + 37*2 + 4 + 16*3 + 4; len(b) != want {
		t.Fatalf("checkpoint of %d bytes, doc.go says %d", len(b), want)
	}
	got, err := decodeCheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.encode(), b) {
		t.Fatalf("round trip changed the state: %+v", got)
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0x10
		if _, err := decodeCheckpoint(c); err == nil {
			t.Fatalf("flipping a bit of byte %d went unnoticed", i)
		}
	}
}

func TestRecordLayout(t *testing.T) {
	r := record{prev: 0x0102030405060708, at: 1_740_830_400_123, off: 4096, key: 0xfeed, size: 300, chain: 1_740_830_400, kind: kindCancel | kindLate}
	b := make([]byte, recordSize)
	r.put(b)
	if b[7] != 0x08 || b[40] != 0x82 || b[35] != 44 || b[36] != 0x67 {
		t.Fatalf("record bytes %x do not follow doc.go", b)
	}
	got, err := decodeRecord(b)
	if err != nil || got != r {
		t.Fatalf("decode = %+v, %v; want %+v", got, err, r)
	}
	if _, err := decodeRecord(make([]byte, recordSize)); err == nil {
		t.Fatal("an all-zero record decoded")
	}
}

func FuzzDecodeRecord(f *testing.F) {
	b := make([]byte, recordSize)
	(&record{prev: 3, at: 99, key: 5, chain: 7, kind: kindAdd}).put(b)
	f.Add(b)
	f.Add(make([]byte, recordSize))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := decodeRecord(in)
		if err != nil {
			return
		}
		out := make([]byte, recordSize)
		r.put(out)
		if !bytes.Equal(out, in[:recordSize]) {
			t.Fatalf("re-encoding %x gave %x", in[:recordSize], out)
		}
	})
}

func FuzzDecodeCheckpoint(f *testing.F) {
	st := sampleCheckpoint()
	f.Add(st.encode())
	st.segs = nil
	st.slotRun, st.lateRuns = runState{}, nil
	f.Add(st.encode())
	f.Add([]byte(checkpointMagic))
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := decodeCheckpoint(in)
		if err != nil {
			return
		}
		if !bytes.Equal(c.encode(), in) {
			t.Fatalf("re-encoding changed the bytes")
		}
	})
}

func FuzzDecodeWheel(f *testing.F) {
	heads := []uint64{0, 5, 0, 9}
	f.Add(encodeWheel(heads, 1000, 10))
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := decodeWheel(in, 4, 1000, 10)
		if err != nil {
			return
		}
		if !bytes.Equal(encodeWheel(h, 1000, 10), in) {
			t.Fatalf("re-encoding changed the bytes")
		}
	})
}

// FuzzOpenCorrupted damages one byte of a small store's files and opens it:
// Open and firing must fail cleanly or work, never panic or hang.
func FuzzOpenCorrupted(f *testing.F) {
	f.Add(uint8(0), uint16(0), uint8(1))
	f.Add(uint8(1), uint16(30), uint8(0x80))
	f.Add(uint8(2), uint16(100), uint8(0xff))
	f.Add(uint8(3), uint16(7), uint8(4))
	f.Fuzz(func(t *testing.T, file uint8, at uint16, xor uint8) {
		fsys := vfs.NewMem()
		clk := clock.NewManual(t0)
		opts := Options{Clock: clk, Span: 10 * time.Second, MaxDelay: time.Minute, EntriesPerFile: 8, SnapshotEvery: 10,
			Fire: func([]Entry) error { return nil }, Logger: slog.New(slog.DiscardHandler)}
		s, err := Open(fsys, "/t", opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range int64(30) {
			if err := s.Add(Entry{DeliverAt: ms(t0) + i*1700, Key: uint64(i + 1)}, i); err != nil {
				t.Fatal(err)
			}
		}
		_ = s.Cancel(3, ms(t0)+2*1700, 30)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		names, _ := fsys.ReadDir("/t")
		name := path.Join("/t", names[int(file)%len(names)])
		fh, err := fsys.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		size, _ := fh.Size()
		if size > 0 {
			b := make([]byte, 1)
			off := int64(at) % size
			_, _ = fh.ReadAt(b, off)
			b[0] ^= xor
			_, _ = fh.WriteAt(b, off)
		}
		_ = fh.Close()
		s, err = Open(fsys, "/t", opts)
		if err != nil {
			return
		}
		_ = s.Start()
		clk.Advance(2 * time.Minute)
		s.settle()
		_ = s.Close()
	})
}
