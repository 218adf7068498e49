package wire

import (
	"bytes"
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"testing"
)

// The seeds are in testdata/fuzz/<target>/: the golden payloads, the edges
// of each bound and a few malformed inputs.

// decodeErrOK tells whether err is one a decoder may return: malformed or
// another version, naming what it decoded.
func decodeErrOK(err error, what string) bool {
	return (errors.Is(err, ErrMalformed) || errors.Is(err, ErrVersion)) && strings.Contains(err.Error(), what+": ")
}

// FuzzDecodeFetch: DecodeFetch never panics, refuses with a malformed or
// version error, and what it accepts is valid and re-encodes to the same
// bytes.
func FuzzDecodeFetch(f *testing.F) {
	f.Add(AppendFetch(nil, goldenFetch))
	f.Fuzz(func(t *testing.T, b []byte) {
		fe, err := DecodeFetch(b)
		if err != nil {
			if !decodeErrOK(err, "fetch") {
				t.Fatalf("DecodeFetch error of an unexpected class: %v", err)
			}
			return
		}
		if err := fe.Validate(); err != nil {
			t.Fatalf("decoded an invalid fetch: %v", err)
		}
		if again := AppendFetch(nil, fe); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", b, again)
		}
	})
}

// FuzzDecodeFetchResp: as FuzzDecodeFetch, and Data lies inside the input.
func FuzzDecodeFetchResp(f *testing.F) {
	f.Add(AppendFetchResp(nil, goldenResp))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeFetchResp(b)
		if err != nil {
			if !decodeErrOK(err, "fetch response") {
				t.Fatalf("DecodeFetchResp error of an unexpected class: %v", err)
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("decoded an invalid response: %v", err)
		}
		if len(r.Data) > 0 && &r.Data[len(r.Data)-1] != &b[len(b)-1] {
			t.Fatal("Data does not end the input it aliases")
		}
		if again := AppendFetchResp(nil, r); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", b, again)
		}
		head := AppendFetchRespHeader(nil, r)
		if !bytes.Equal(append(head, r.Data...), b) {
			t.Fatal("header + data differs from the input")
		}
	})
}

// FuzzReadFrame reads frames off arbitrary bytes until an error: every
// payload returned is within bounds and matches its CRC, writing it again
// gives the bytes it was read from, and the only errors are the documented
// ones.
func FuzzReadFrame(f *testing.F) {
	var seed bytes.Buffer
	_ = WriteFrame(&seed, AppendFetch(nil, goldenFetch))
	f.Add(seed.Bytes(), uint8(0))
	f.Fuzz(func(t *testing.T, in []byte, bufCap uint8) {
		r := bytes.NewReader(in)
		buf := make([]byte, 0, int(bufCap))
		pos := 0
		for {
			p, err := ReadFrame(r, buf)
			if err != nil {
				switch {
				case err == io.EOF:
					if pos != len(in) {
						t.Fatalf("io.EOF at byte %d of %d", pos, len(in))
					}
				case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, ErrChecksum),
					errors.Is(err, ErrFrameTooLarge), errors.Is(err, ErrEmptyFrame):
				default:
					t.Fatalf("ReadFrame error of an unexpected class: %v", err)
				}
				return
			}
			if len(p) == 0 || len(p) > MaxFrame {
				t.Fatalf("payload of %d bytes", len(p))
			}
			frame := in[pos : pos+FrameHeader+len(p)]
			if crc32.Checksum(p, castagnoli) != crc32.Checksum(frame[FrameHeader:], castagnoli) {
				t.Fatal("payload differs from the frame's bytes")
			}
			var out bytes.Buffer
			if err := WriteFrame(&out, p); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), frame) {
				t.Fatalf("re-written frame differs:\n in %x\nout %x", frame, out.Bytes())
			}
			pos += len(frame)
			buf = p
		}
	})
}
