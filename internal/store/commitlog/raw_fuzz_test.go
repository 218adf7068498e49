package commitlog

import (
	"testing"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/vfs"
)

// rawSeed is the start of a log of a few segments, blank paddings
// included, as a master ships it.
func rawSeed(tb testing.TB) []byte {
	l, err := Open(vfs.NewMem(), "log", Options{SegmentBytes: fuzzSegment})
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	for i := range 40 {
		if _, err := l.Append(testMsg("T", int32(i%3), string(make([]byte, 50+i*7)))); err != nil {
			tb.Fatal(err)
		}
	}
	var out []byte
	for pos := int64(0); pos < l.Written(); {
		b, err := l.ReadRaw(pos, fuzzSegment)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b...)
		pos += int64(len(b))
	}
	return out
}

// scanAll runs scanRaw over parts as consecutive raw appends from offset 0
// and returns the end of the whole records, or the error.
func scanAll(parts ...[]byte) (int64, error) {
	l := &Log{opts: Options{SegmentBytes: fuzzSegment, MaxRecordBytes: fuzzSegment - 8}}
	at := int64(0)
	for _, p := range parts {
		st, whole, err := l.scanRaw(at, p)
		if err != nil {
			return 0, err
		}
		if len(st.carry) > l.opts.MaxRecordBytes {
			panic("carry over MaxRecordBytes")
		}
		l.raw = st
		l.whole.Store(whole)
		at += int64(len(p))
		if whole > at {
			panic("whole past the bytes given")
		}
	}
	return l.whole.Load(), nil
}

// FuzzScanRaw feeds arbitrary bytes, cut in two anywhere, to the check of
// replicated bytes. It must not panic, must keep no more than a record
// carried, must find the same end of whole records whether the bytes come
// at once or in two parts, and what it accepts must tile [0, end) with
// records and blanks that end at segment ends.
func FuzzScanRaw(f *testing.F) {
	seed := rawSeed(f)
	f.Add(seed, uint16(0))
	f.Add(seed, uint16(100))
	f.Add(seed[:fuzzSegment+300], uint16(fuzzSegment-3))
	blank := make([]byte, 64)
	message.EncodeBlank(blank, 64)
	f.Add(blank, uint16(4))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		if len(data) > 3*fuzzSegment {
			data = data[:3*fuzzSegment]
		}
		c := int(cut) % (len(data) + 1)
		one, err1 := scanAll(data)
		two, err2 := scanAll(data[:c], data[c:])
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("at once: %d, %v; cut at %d: %d, %v", one, err1, c, two, err2)
		}
		if err1 != nil {
			return
		}
		if one != two {
			t.Fatalf("whole records end at %d at once, at %d cut at %d", one, two, c)
		}
		for pos := int64(0); pos < one; {
			n, err := message.Check(data[pos:])
			segEnd := pos - pos%fuzzSegment + fuzzSegment
			switch {
			case err == nil:
			case err == message.ErrBlank && pos+int64(n) == segEnd:
			default:
				t.Fatalf("accepted bytes at %d do not check: %v", pos, err)
			}
			pos += int64(n)
		}
	})
}
