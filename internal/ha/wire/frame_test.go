package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
)

func frameHeader(n uint32, crc uint32) []byte {
	var h [FrameHeader]byte
	binary.BigEndian.PutUint32(h[0:4], n)
	binary.BigEndian.PutUint32(h[4:8], crc)
	return h[:]
}

// allocated returns the bytes fn allocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestReadFrameRefusesOversizeBeforeAllocating(t *testing.T) {
	for _, n := range []uint32{MaxFrame + 1, 1<<32 - 1} {
		var err error
		bytesAlloc := allocated(func() { _, err = ReadFrame(bytes.NewReader(frameHeader(n, 0)), nil) })
		if !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("length %d: %v, want ErrFrameTooLarge", n, err)
		}
		if bytesAlloc > 64<<10 { // errors and the race detector take a few KiB; MaxFrame is 32 MiB
			t.Fatalf("length %d: refused after allocating %d bytes", n, bytesAlloc)
		}
	}
}

// TestReadFrameAllocatesWhatArrives: a peer that announces the biggest
// frame and sends a few bytes costs one small chunk, not MaxFrame.
func TestReadFrameAllocatesWhatArrives(t *testing.T) {
	in := append(frameHeader(MaxFrame, 0), make([]byte, 100)...)
	var err error
	bytesAlloc := allocated(func() { _, err = ReadFrame(bytes.NewReader(in), nil) })
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated frame: %v, want io.ErrUnexpectedEOF", err)
	}
	if bytesAlloc > 2*readChunk {
		t.Fatalf("a 100-byte body of an announced %d-byte frame allocated %d bytes", MaxFrame, bytesAlloc)
	}
}

func TestReadFrameGrowsToMaxFrame(t *testing.T) {
	payload := make([]byte, MaxFrame)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	var buf bytes.Buffer
	if err := WriteFrame(&buf, payload); err != nil {
		t.Fatal(err)
	}
	// A small buffer to start from: its bytes come first in the result.
	got, err := ReadFrame(&buf, make([]byte, 0, 10))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatal("payload of MaxFrame bytes read back differently")
	}
	if err := WriteFrame(io.Discard, make([]byte, MaxFrame+1)); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("WriteFrame of MaxFrame+1 bytes: %v, want ErrFrameTooLarge", err)
	}
	if err := WriteFrameParts(io.Discard, make([]byte, MaxFrame), []byte{1}); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("WriteFrameParts of MaxFrame+1 bytes: %v, want ErrFrameTooLarge", err)
	}
}

func TestReadFrameErrors(t *testing.T) {
	var good bytes.Buffer
	if err := WriteFrame(&good, []byte("payload")); err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(good.Bytes())
	flipped[FrameHeader+2] ^= 1
	badCRC := bytes.Clone(good.Bytes())
	badCRC[5] ^= 1
	for _, c := range []struct {
		name string
		in   []byte
		is   error
		want string
	}{
		{"nothing", nil, io.EOF, "EOF"},
		{"half a header", good.Bytes()[:3], io.ErrUnexpectedEOF, "wire: read frame header: unexpected EOF"},
		{"cut payload", good.Bytes()[:good.Len()-1], io.ErrUnexpectedEOF, "wire: read frame payload of 7 bytes: unexpected EOF"},
		{"no payload", good.Bytes()[:FrameHeader], io.ErrUnexpectedEOF, "payload of 7 bytes"},
		{"flipped payload bit", flipped, ErrChecksum, "wire: frame checksum mismatch: payload of 7 bytes"},
		{"flipped crc bit", badCRC, ErrChecksum, "frame checksum mismatch"},
		{"length 0", frameHeader(0, 0), ErrEmptyFrame, "frame length 0"},
		{"too long", frameHeader(MaxFrame+1, 0), ErrFrameTooLarge, "frame length 33554433, at most 33554432"},
	} {
		for _, buf := range [][]byte{nil, make([]byte, 0, 64)} {
			_, err := ReadFrame(bytes.NewReader(c.in), buf)
			if !errors.Is(err, c.is) || err.Error() != c.want && !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
				t.Errorf("%s (buf cap %d): %v, want %v containing %q", c.name, cap(buf), err, c.is, c.want)
			}
		}
	}
	if err := WriteFrame(io.Discard, nil); !errors.Is(err, ErrEmptyFrame) {
		t.Errorf("WriteFrame(nil): %v, want ErrEmptyFrame", err)
	}
}

func TestReadFrameStream(t *testing.T) {
	var stream bytes.Buffer
	payloads := [][]byte{[]byte("a"), bytes.Repeat([]byte("b"), 100), []byte("c"), bytes.Repeat([]byte("d"), 3*readChunk+5)}
	for _, p := range payloads {
		if err := WriteFrame(&stream, p); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 0, 200)
	for i, want := range payloads {
		p, err := ReadFrame(&stream, buf)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(p, want) {
			t.Fatalf("frame %d: %d bytes, want %d", i, len(p), len(want))
		}
		if len(want) <= cap(buf) && &p[0] != &buf[:1][0] {
			t.Fatalf("frame %d: a payload that fits was not read into buf", i)
		}
		buf = p
	}
	if _, err := ReadFrame(&stream, buf); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

func TestReadFrameReusedBufferAllocatesNothing(t *testing.T) {
	var frame bytes.Buffer
	if err := WriteFrame(&frame, AppendFetchResp(nil, goldenResp)); err != nil {
		t.Fatal(err)
	}
	in := frame.Bytes()
	r := bytes.NewReader(in)
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() {
		r.Reset(in)
		p, err := ReadFrame(r, buf)
		if err != nil || len(p) != len(in)-FrameHeader {
			t.Fatalf("ReadFrame: %d bytes, %v", len(p), err)
		}
	}); n != 0 {
		t.Fatalf("ReadFrame into a big enough buffer: %v allocations per call, want 0", n)
	}
}

func TestWriteFramePartsIsOneFrame(t *testing.T) {
	r := goldenResp
	r.Data = bytes.Repeat([]byte("log"), 1000)
	var whole, parts bytes.Buffer
	if err := WriteFrame(&whole, AppendFetchResp(nil, r)); err != nil {
		t.Fatal(err)
	}
	if err := WriteFrameParts(&parts, AppendFetchRespHeader(nil, r), r.Data); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(whole.Bytes(), parts.Bytes()) {
		t.Fatal("WriteFrameParts(header, data) differs from WriteFrame(AppendFetchResp)")
	}
}

// TestWriteFramePartsOverTCP sends frames header + data over a loopback TCP
// connection (the writev path) and reads them back.
func TestWriteFramePartsOverTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const frames = 20
	errc := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			errc <- err
			return
		}
		defer c.Close()
		for i := range frames {
			r := goldenResp
			r.Base = int64(i) << 31
			r.Data = bytes.Repeat([]byte{byte(i)}, 1000*i+1)
			if err := WriteFrameParts(c, AppendFetchRespHeader(nil, r), r.Data); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var buf []byte
	for i := range frames {
		p, err := ReadFrame(c, buf)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		r, err := DecodeFetchResp(p)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if r.Base != int64(i)<<31 || !bytes.Equal(r.Data, bytes.Repeat([]byte{byte(i)}, 1000*i+1)) {
			t.Fatalf("frame %d: base %d, %d data bytes", i, r.Base, len(r.Data))
		}
		buf = p
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

type shortWriter struct{ n int }

func (w *shortWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return w.n, nil
	}
	return len(p), nil
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("connection reset") }

func TestWriteFrameReportsShortAndFailedWrites(t *testing.T) {
	if err := WriteFrame(&shortWriter{n: 3}, []byte("payload")); !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("WriteFrame to a short writer: %v, want io.ErrShortWrite", err)
	}
	if err := WriteFrameParts(&shortWriter{n: 3}, []byte("head"), []byte("tail")); !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("WriteFrameParts to a short writer: %v, want io.ErrShortWrite", err)
	}
	if err := WriteFrameParts(failWriter{}, []byte("head"), []byte("tail")); err == nil || !bytes.Contains([]byte(err.Error()), []byte("connection reset")) {
		t.Errorf("WriteFrameParts to a failing writer: %v", err)
	}
}

func TestFrameWriterAllocatesNothing(t *testing.T) {
	head := AppendFetchRespHeader(nil, goldenResp)
	var out bytes.Buffer
	fw := NewFrameWriter(&out)
	if err := fw.WriteFrame(head, goldenResp.Data); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := WriteFrame(&want, AppendFetchResp(nil, goldenResp)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want.Bytes()) {
		t.Fatalf("FrameWriter wrote %x, want %x", out.Bytes(), want.Bytes())
	}
	fw = NewFrameWriter(io.Discard)
	for name, fn := range map[string]func(){
		"head and tail": func() { _ = fw.WriteFrame(head, goldenResp.Data) },
		"head only":     func() { _ = fw.WriteFrame(head, nil) },
	} {
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("FrameWriter.WriteFrame, %s: %v allocations per frame, want 0", name, n)
		}
	}
}
