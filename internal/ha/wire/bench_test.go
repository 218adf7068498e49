package wire

import (
	"bytes"
	"testing"
)

// benchResp is a full data response: 1 MiB of log bytes.
var benchResp = FetchResp{Epoch: 3, EpochStart: 1 << 32, HW: 1<<32 + 10, LEO: 1<<33 + 100, LogStart: 1 << 31,
	Base: 1 << 33, Data: bytes.Repeat([]byte{0xDA, 0xA3, 0x20, 0xA7}, 1<<18)}

// TestFetchRespCodecAllocatesNothing: encoding into a buffer of enough
// capacity and decoding (Data aliasing the input) allocate nothing per call;
// so do the header-only encoding the master uses and DecodeFetch's fixed
// fields (its Group is its one allocation).
func TestFetchRespCodecAllocatesNothing(t *testing.T) {
	buf := make([]byte, 0, fetchRespFixed+len(benchResp.Data))
	enc := AppendFetchResp(nil, benchResp)
	for name, fn := range map[string]func(){
		"AppendFetchResp":       func() { buf = AppendFetchResp(buf[:0], benchResp) },
		"AppendFetchRespHeader": func() { buf = AppendFetchRespHeader(buf[:0], benchResp) },
		"DecodeFetchResp": func() {
			if r, err := DecodeFetchResp(enc); err != nil || len(r.Data) != len(benchResp.Data) {
				t.Fatalf("DecodeFetchResp: %d bytes, %v", len(r.Data), err)
			}
		},
		"AppendFetch": func() { buf = AppendFetch(buf[:0], goldenFetch) },
	} {
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, n)
		}
	}
	fe := AppendFetch(nil, goldenFetch)
	if n := testing.AllocsPerRun(100, func() { _, _ = DecodeFetch(fe) }); n > 1 {
		t.Errorf("DecodeFetch: %v allocations per call, want at most 1 (the group)", n)
	}
}

func BenchmarkAppendFetchResp(b *testing.B) {
	buf := make([]byte, 0, fetchRespFixed+len(benchResp.Data))
	b.SetBytes(int64(len(benchResp.Data)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendFetchResp(buf[:0], benchResp)
	}
}

func BenchmarkAppendFetchRespHeader(b *testing.B) {
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendFetchRespHeader(buf[:0], benchResp)
	}
}

func BenchmarkDecodeFetchResp(b *testing.B) {
	enc := AppendFetchResp(nil, benchResp)
	b.ReportAllocs() // Data aliases enc: nothing is copied
	for b.Loop() {
		if _, err := DecodeFetchResp(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadFrame(b *testing.B) {
	var frame bytes.Buffer
	if err := WriteFrame(&frame, AppendFetchResp(nil, benchResp)); err != nil {
		b.Fatal(err)
	}
	in := frame.Bytes()
	r := bytes.NewReader(in)
	buf := make([]byte, 0, len(in))
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(in)
		p, err := ReadFrame(r, buf)
		if err != nil {
			b.Fatal(err)
		}
		buf = p
	}
}

func BenchmarkDecodeFetch(b *testing.B) {
	enc := AppendFetch(nil, goldenFetch)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeFetch(enc); err != nil {
			b.Fatal(err)
		}
	}
}
