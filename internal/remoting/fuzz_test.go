package remoting

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

func validUTF8(c *Command) bool {
	if !utf8.ValidString(c.Remark) || !utf8.ValidString(c.Language) {
		return false
	}
	for k, v := range c.ExtFields {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return false
		}
	}
	return true
}

var writeSeeds = flag.Bool("write-seeds", false, "rewrite the committed fuzz seed corpora under testdata/fuzz")

const fuzzMaxFrame = 1 << 20

// seedHeaders are JSON headers as Go and Java peers write them, plus odd
// ones.
var seedHeaders = []string{
	`{"code":10,"language":"GO","version":317,"opaque":2,"flag":0,"remark":"","extFields":{"topic":"TopicTest","properties":"TAGS\u0001TagA\u0002KEYS\u0001k\u0002"}}`,
	`{"code":0,"extFields":{"msgId":"AC11000100002A9F","queueId":"1","queueOffset":"5"},"flag":1,"language":"JAVA","opaque":2,"serializeTypeCurrentRPC":"JSON","version":401}`,
	`{"code":17,"language":0,"version":1,"opaque":3,"flag":1,"remark":null,"extFields":null}`,
	`{"code":"12","extFields":{"n":5,"b":true,"o":{"a":[1,2.5e3]},"z":null},"x":[{},[]]}`,
	`{"remark":"\ud83d\ude00 \u00e9 \\ \" \/ \b\f\n\r\t","extFields":{"k\u00e9":"\ud800"}}`,
	`{}`,
	// Codes beyond int16 (RocketMQ 5's POP_MESSAGE), as number and string.
	`{"code":200050,"language":"JAVA","version":401,"opaque":5,"flag":0,"extFields":{"topic":"T"}}`,
	`{"code":"-40000","flag":1}`,
}

func seedFrames() [][]byte {
	var out [][]byte
	for _, h := range seedHeaders {
		out = append(out, jsonFrame(h, []byte("body")))
	}
	for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
		c := sendRequest()
		c.SerializeType = st
		c.Body = c.Body[:16]
		f, _ := EncodeFrame(nil, c)
		out = append(out, f)
		r := &Command{Code: 0, Language: "JAVA", Flag: FlagResponse, Opaque: 9, Remark: "ok", SerializeType: st,
			ExtFields: map[string]string{"a": "b"}}
		f2, _ := EncodeFrame(nil, r)
		out = append(out, f2, append(append([]byte(nil), f...), f2...))
	}
	out = append(out, []byte{0, 0, 0, 6, 0, 0, 0, 9, '{', '}'}, []byte{0xff, 0xff, 0xff, 0xff}, []byte{0, 0, 0, 4, 1, 0, 0, 0})
	// A frame declaring far more than it carries (the reader grows its
	// buffer as bytes arrive), and one a whole chunk long.
	out = append(out, append([]byte{0, 0x0f, 0xff, 0xff, 0, 0, 0, 2, '{', '}'}, make([]byte, 100)...),
		jsonFrame(`{"code":10}`, make([]byte, 3*minFrameChunk)))
	return out
}

func seedHeaderInputs() []struct {
	st byte
	h  []byte
} {
	var out []struct {
		st byte
		h  []byte
	}
	for _, h := range seedHeaders {
		out = append(out, struct {
			st byte
			h  []byte
		}{SerializeJSON, []byte(h)})
	}
	for _, c := range []*Command{sendRequest(), {Code: 1, Language: "JAVA", Flag: 1, Remark: "r", ExtFields: map[string]string{"": "x"}}, {}} {
		h, _ := appendBinaryHeader(nil, c)
		out = append(out, struct {
			st byte
			h  []byte
		}{SerializeRocketMQ, h})
	}
	return out
}

// TestWriteFuzzSeeds rewrites testdata/fuzz with -write-seeds; otherwise it
// checks that the committed corpora exist.
func TestWriteFuzzSeeds(t *testing.T) {
	frameDir := filepath.Join("testdata", "fuzz", "FuzzDecodeFrame")
	headerDir := filepath.Join("testdata", "fuzz", "FuzzHeader")
	if !*writeSeeds {
		for _, dir := range []string{frameDir, headerDir} {
			if ents, err := os.ReadDir(dir); err != nil || len(ents) == 0 {
				t.Fatalf("seed corpus %s missing (run with -write-seeds): %v", dir, err)
			}
		}
		return
	}
	for _, dir := range []string{frameDir, headerDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, f := range seedFrames() {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", f)
		if err := os.WriteFile(filepath.Join(frameDir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, in := range seedHeaderInputs() {
		body := fmt.Sprintf("go test fuzz v1\nbyte(%q)\n[]byte(%q)\n", in.st, in.h)
		if err := os.WriteFile(filepath.Join(headerDir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzDecodeFrame: no panic; only the documented errors; what decodes
// survives encode/decode and re-encodes identically; a reader that splits
// the stream anywhere yields the same frames and the same outcome.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var cmds []*Command
		var end error
		rest := data
		for {
			c, n, err := DecodeFrame(rest, fuzzMaxFrame)
			if err != nil {
				end = err
				break
			}
			if n <= 0 || n > len(rest) {
				t.Fatalf("consumed %d of %d", n, len(rest))
			}
			// The lazy decode async handlers get lists the same fields.
			lazy, err := decodeFrameBody(rest[4:n], true)
			if err != nil {
				t.Fatalf("lazy decode of a frame DecodeFrame took: %v", err)
			}
			lazy.materialize()
			if !sameCommand(c, lazy) {
				t.Fatalf("lazy decode\n got %+v\nwant %+v", lazy, c)
			}
			cmds = append(cmds, c)
			rest = rest[n:]
		}
		if !errors.Is(end, ErrShort) && !errors.Is(end, ErrMalformed) && !errors.Is(end, ErrFrameTooLarge) {
			t.Fatalf("unexpected error class: %v", end)
		}
		for _, c := range cmds {
			enc, err := EncodeFrame(nil, c)
			if err != nil {
				t.Fatalf("re-encode %+v: %v", c, err)
			}
			c2, n, err := DecodeFrame(enc, 0)
			if err != nil || n != len(enc) || !sameCommand(c, c2) {
				t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, c2, c)
			}
			enc2, _ := EncodeFrame(nil, c2)
			if !sameEncoding(enc, enc2, c) {
				t.Fatal("encoding is not canonical")
			}
		}
		splits := []int{}
		if len(data) <= 256 {
			for i := 0; i <= len(data); i++ {
				splits = append(splits, i)
			}
		} else {
			for i := 0; i <= 16; i++ {
				splits = append(splits, i*len(data)/16)
			}
		}
		for _, cut := range splits {
			r := bufio.NewReaderSize(io.MultiReader(iotest.HalfReader(bytes.NewReader(data[:cut])), bytes.NewReader(data[cut:])), 16)
			for i := 0; ; i++ {
				c, err := ReadFrame(r, fuzzMaxFrame)
				if err != nil {
					if i != len(cmds) {
						t.Fatalf("cut %d: ReadFrame stopped after %d frames, DecodeFrame after %d: %v", cut, i, len(cmds), err)
					}
					switch {
					case errors.Is(end, ErrShort):
						if err != io.EOF && err != io.ErrUnexpectedEOF || (err == io.EOF) != (len(rest) == 0) {
							t.Fatalf("cut %d: short input ended with %v (rest %d)", cut, err, len(rest))
						}
					case errors.Is(end, ErrMalformed) && !errors.Is(err, ErrMalformed),
						errors.Is(end, ErrFrameTooLarge) && !errors.Is(err, ErrFrameTooLarge):
						t.Fatalf("cut %d: ReadFrame error %v, DecodeFrame %v", cut, err, end)
					}
					break
				}
				if i >= len(cmds) || !sameCommand(c, cmds[i]) {
					t.Fatalf("cut %d: frame %d differs", cut, i)
				}
			}
		}
	})
}

// FuzzHeader: no panic; errors are ErrMalformed; an accepted JSON header is
// valid JSON; what decodes re-encodes canonically in its own type and
// survives the other type too.
func FuzzHeader(f *testing.F) {
	for _, in := range seedHeaderInputs() {
		f.Add(in.st, in.h)
	}
	f.Fuzz(func(t *testing.T, st byte, h []byte) {
		var c Command
		if err := decodeHeader(st, h, &c); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error class: %v", err)
			}
			return
		}
		if st == SerializeJSON && !json.Valid(h) {
			t.Fatalf("accepted invalid JSON %q", h)
		}
		checkLazy(t, st, h, &c)
		enc, err := appendHeader(nil, &c)
		if err != nil {
			t.Fatal(err)
		}
		var c2 Command
		if err := decodeHeader(st, enc, &c2); err != nil || !sameCommand(&c, &c2) {
			t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, &c2, &c)
		}
		enc2, _ := appendHeader(nil, &c2)
		if !sameEncoding(enc, enc2, &c) {
			t.Fatalf("not canonical:\n%q\n%q", enc, enc2)
		}
		// The other serialisation carries the same command (language names
		// outside Java's table become OTHER in binary; JSON cannot carry
		// invalid UTF-8).
		if st == SerializeRocketMQ && !validUTF8(&c) {
			return
		}
		other := c
		other.SerializeType = 1 - st
		oenc, err := appendHeader(nil, &other)
		if errors.Is(err, ErrInvalidCommand) {
			return // a JSON ext key too long for the binary layout
		}
		if err != nil {
			t.Fatal(err)
		}
		var c3 Command
		if err := decodeHeader(other.SerializeType, oenc, &c3); err != nil {
			t.Fatal(err)
		}
		c3.SerializeType, c3.Language = c.SerializeType, c.Language
		if !sameCommand(&c, &c3) {
			t.Fatalf("cross-type round trip:\n got %+v\nwant %+v", &c3, &c)
		}
	})
}

// sameEncoding reports whether two encodings of c are the same: byte for
// byte, except that the JSON header writes several ext fields in map order,
// so then only their lengths must agree (sameCommand checks the content).
func sameEncoding(a, b []byte, c *Command) bool {
	if c.SerializeType == SerializeJSON && len(c.ExtFields) > 1 {
		return len(a) == len(b)
	}
	return bytes.Equal(a, b)
}

// checkLazy decodes h as the server does for async handlers (ext fields
// listed, not mapped) and checks that Ext agrees with the map of the full
// decode c, that materializing gives that map, and that the listed form
// re-encodes to the same command.
func checkLazy(t *testing.T, st byte, h []byte, c *Command) {
	t.Helper()
	var lazy Command
	if err := decodeHeaderLazy(st, h, &lazy, true); err != nil {
		t.Fatalf("lazy decode failed where the full one did not: %v", err)
	}
	for k, v := range c.ExtFields {
		if got := lazy.Ext(k); got != v {
			t.Fatalf("lazy Ext(%q) = %q, want %q", k, got, v)
		}
	}
	lazy.EachExt(func(k, _ string) {
		if _, ok := c.ExtFields[k]; !ok && lazy.Ext(k) != "" {
			t.Fatalf("lazy Ext(%q) = %q for a key the full decode dropped", k, lazy.Ext(k))
		}
	})
	enc, err := appendHeader(nil, &lazy)
	if err != nil {
		t.Fatal(err)
	}
	var back Command
	if err := decodeHeader(st, enc, &back); err != nil || !sameCommand(c, &back) {
		t.Fatalf("lazy re-encode: %v\n got %+v\nwant %+v", err, &back, c)
	}
	lazy.materialize()
	if !sameCommand(c, &lazy) {
		t.Fatalf("materialized lazy decode:\n got %+v\nwant %+v", &lazy, c)
	}
}
