package remoting

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// jsonFrame builds a frame around a raw JSON header and a body.
func jsonFrame(header string, body []byte) []byte {
	return rawFrame(SerializeJSON, []byte(header), body)
}

func rawFrame(st byte, header, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(header)+len(body)))
	b = binary.BigEndian.AppendUint32(b, uint32(st)<<24|uint32(len(header)))
	b = append(b, header...)
	return append(b, body...)
}

// sameCommand compares what the wire carries: an empty language encodes as
// GO, and nil and empty ext maps and bodies are alike.
func sameCommand(a, b *Command) bool {
	la, lb := a.Language, b.Language
	if la == "" {
		la = LanguageGo
	}
	if lb == "" {
		lb = LanguageGo
	}
	return a.Code == b.Code && a.wideCode == b.wideCode && la == lb && a.Version == b.Version && a.Opaque == b.Opaque &&
		a.Flag == b.Flag && a.Remark == b.Remark && maps.Equal(a.ExtFields, b.ExtFields) &&
		bytes.Equal(a.Body, b.Body) && a.SerializeType == b.SerializeType
}

func sendRequest() *Command {
	return &Command{
		Code: 10, Language: "GO", Version: 317, Opaque: 2,
		ExtFields: map[string]string{
			"producerGroup": "PG", "topic": "TopicTest", "defaultTopic": "TBW102",
			"defaultTopicQueueNums": "4", "queueId": "3", "sysFlag": "0",
			"bornTimestamp": "1700000000000", "flag": "0",
			"properties":     "KEYS\x01k1\x02UNIQ_KEY\x01AC1100010000\x02WAIT\x01true\x02TAGS\x01TagA\x02",
			"reconsumeTimes": "0", "unitMode": "false", "batch": "false", "bname": "broker-a",
		},
		Body: bytes.Repeat([]byte("x"), 1024),
	}
}

// TestJSONHeaderShape: the header is byte for byte the shape of
// remoting-protocol.md §1.3.
func TestJSONHeaderShape(t *testing.T) {
	c := &Command{Code: 10, Language: "GO", Version: 317, Opaque: 2, ExtFields: map[string]string{"topic": "TopicTest"}}
	got := string(appendJSONHeader(nil, c))
	want := `{"code":10,"language":"GO","version":317,"opaque":2,"flag":0,"remark":"","extFields":{"topic":"TopicTest"}}`
	if got != want {
		t.Fatalf("header\n got %s\nwant %s", got, want)
	}
	// Empty language and nil ext fields still write every key.
	got = string(appendJSONHeader(nil, &Command{Code: -1, Opaque: -7, Flag: 3, Remark: `a"b\`}))
	want = `{"code":-1,"language":"GO","version":0,"opaque":-7,"flag":3,"remark":"a\"b\\","extFields":{}}`
	if got != want {
		t.Fatalf("header\n got %s\nwant %s", got, want)
	}
	// Ext keys in map order (not sorted: that cost a tenth of a
	// producer's CPU), values escaped as the Go client escapes them.
	c = &Command{Code: 11, Language: "GO", ExtFields: map[string]string{"b": "x>y", "a": "K\x01v\x02"}}
	got = string(appendJSONHeader(nil, c))
	head := `{"code":11,"language":"GO","version":0,"opaque":0,"flag":0,"remark":"","extFields":{`
	a, b := `"a":"K\u0001v\u0002"`, `"b":"x\u003ey"`
	if got != head+a+","+b+"}}" && got != head+b+","+a+"}}" {
		t.Fatalf("header\n got %s\nwant %s with fields %s and %s}}", got, head, a, b)
	}
}

// TestJSONStringMatchesEncodingJSON compares our string escaping with
// encoding/json's, and our unescaping with its decoder.
func TestJSONStringMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "\"", "\\", "/", "<", ">", "&", "\x00", "\x01", "\b", "\f", "\n", "\r", "\t", "\x1f",
		"é", "€", "😀", "\u2028", "\u2029", "\xff", "\xc3", "\xed\xa0\x80", " "}
	for i := 0; i < 3000; i++ {
		var sb strings.Builder
		for n := r.IntN(12); n > 0; n-- {
			sb.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		s := sb.String()
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got := appendJSONString(nil, s)
		if !bytes.Equal(got, want) {
			t.Fatalf("escape %q: got %s want %s", s, got, want)
		}
		var viaStd string
		if err := json.Unmarshal(got, &viaStd); err != nil {
			t.Fatal(err)
		}
		d := jsonDec{b: got}
		ours, err := d.str()
		if err != nil || string(ours) != viaStd {
			t.Fatalf("unescape %s: got %q, %v; want %q", got, ours, err, viaStd)
		}
	}
	// Escapes encoding/json does not write but peers may.
	for _, tc := range []struct{ in, want string }{
		{`"\u00e9\u20AC\/"`, "é€/"},
		{`"\ud83d\ude00"`, "😀"},
		{`"\ud83d"`, "\ufffd"},
		{`"\ud83dx"`, "\ufffdx"},
		{`"\ude00\ud83d\ude00"`, "\ufffd😀"},
		{"\"\xff\"", "\ufffd"},
	} {
		var viaStd string
		if err := json.Unmarshal([]byte(tc.in), &viaStd); err != nil {
			t.Fatal(err)
		}
		d := jsonDec{b: []byte(tc.in)}
		got, err := d.str()
		if err != nil || string(got) != tc.want || viaStd != tc.want {
			t.Fatalf("%s: got %q, %v; std %q; want %q", tc.in, got, err, viaStd, tc.want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	cmds := []*Command{
		sendRequest(),
		{Code: 0, Language: "JAVA", Version: 401, Opaque: 1 << 30, Flag: FlagResponse, Remark: "ok ✓ \"quoted\"",
			ExtFields: map[string]string{"msgId": "AC11000100002A9F0000000000000000", "queueOffset": "5"}},
		{Code: -3, Language: "GO", Opaque: -1, Flag: FlagOneway},
		{Code: 34, Language: "PYTHON", Version: -5, ExtFields: map[string]string{"": "", "k": strings.Repeat("v", 70000)},
			Body: []byte{0, 1, 2}},
	}
	for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
		for i, c := range cmds {
			c.SerializeType = st
			frame, err := EncodeFrame([]byte("prefix"), c)
			if err != nil {
				t.Fatalf("type %d cmd %d: encode: %v", st, i, err)
			}
			if string(frame[:6]) != "prefix" {
				t.Fatal("EncodeFrame did not append")
			}
			frame = frame[6:]
			got, n, err := DecodeFrame(frame, 0)
			if err != nil || n != len(frame) {
				t.Fatalf("type %d cmd %d: decode: n=%d/%d err=%v", st, i, n, len(frame), err)
			}
			if !sameCommand(c, got) {
				t.Fatalf("type %d cmd %d: round trip\n got %+v\nwant %+v", st, i, got, c)
			}
			// The frame is exactly as long as its prefix says.
			if int(binary.BigEndian.Uint32(frame))+4 != len(frame) {
				t.Fatal("length prefix does not match the frame")
			}
			// ReadFrame agrees.
			rc, err := ReadFrame(bufio.NewReader(bytes.NewReader(frame)), 0)
			if err != nil || !sameCommand(c, rc) {
				t.Fatalf("ReadFrame: %v %+v", err, rc)
			}
		}
	}
}

func TestBodyPartsEncodeAsConcatenation(t *testing.T) {
	c := &Command{Code: 11, Flag: FlagResponse, BodyParts: [][]byte{[]byte("ab"), nil, []byte("cde")}}
	frame, err := EncodeFrame(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := DecodeFrame(frame, 0)
	if err != nil || string(got.Body) != "abcde" {
		t.Fatalf("body %q, %v", got.Body, err)
	}
}

func TestDecodeJavaStyleHeaders(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header string
		want   Command
	}{
		{
			name:   "java response with language name, serializeTypeCurrentRPC, null extFields",
			header: `{"code":0,"extFields":null,"flag":1,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":401}`,
			want:   Command{Code: 0, Flag: 1, Language: "JAVA", Opaque: 7, Version: 401},
		},
		{
			name:   "language as integer, absent extFields, remark null",
			header: `{"code":17,"language":0,"version":1,"opaque":3,"flag":1,"remark":null}`,
			want:   Command{Code: 17, Language: "JAVA", Version: 1, Opaque: 3, Flag: 1},
		},
		{
			name:   "language GO as integer 9, unknown number kept as text",
			header: `{"code":1,"language":9,"opaque":1}`,
			want:   Command{Code: 1, Language: "GO", Opaque: 1},
		},
		{
			name:   "unknown language number",
			header: `{"language":200}`,
			want:   Command{Language: "200"},
		},
		{
			name: "non-string ext values become their text, null dropped, extra keys of every kind",
			header: " {\n \"code\" : 10 , \"extFields\" : {\"queueOffset\":5,\"ok\":true,\"no\":false,\"gone\":null," +
				`"obj":{"a":[1,2.5e3,"x"]},"s":"v"}, "extra":[{},[],null,-0.5], "nested":{"x":{"y":{}}}, "remark":"r"}` + "\t",
			want: Command{Code: 10, Remark: "r", ExtFields: map[string]string{
				"queueOffset": "5", "ok": "true", "no": "false", "obj": `{"a":[1,2.5e3,"x"]}`, "s": "v"}},
		},
		{
			name:   "integers as digit strings, duplicate keys last wins",
			header: `{"code":"12","opaque":"-4","flag":1,"flag":0,"extFields":{"a":"1","a":"2"}}`,
			want:   Command{Code: 12, Opaque: -4, ExtFields: map[string]string{"a": "2"}},
		},
		{
			name:   "empty object",
			header: `{}`,
			want:   Command{},
		},
		{
			name:   "escaped keys are matched after unescaping",
			header: `{"c\u006fde":5,"extFields":{"k\u00e9":"\u0041"}}`,
			want:   Command{Code: 5, ExtFields: map[string]string{"ké": "A"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := DecodeFrame(jsonFrame(tc.header, []byte("BODY")), 0)
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Body = []byte("BODY")
			if got.Language != tc.want.Language || !sameCommand(got, &tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, &tc.want)
			}
		})
	}
}

func TestDecodeMalformed(t *testing.T) {
	headers := []string{
		``, `null`, `[]`, `{`, `{"code":1`, `{"code":1,}`, `{"code":}`, `{code:1}`,
		`{"code":1.5}`, `{"code":1e2}`, `{"code":2147483648}`, `{"opaque":2147483648}`, `{"code":"x"}`, `{"code":true}`,
		`{"language":true}`, `{"language":1.5}`, `{"remark":5}`, `{"extFields":[]}`, `{"extFields":"a"}`,
		`{"extFields":{"a":}}`, `{"extFields":{"a":"b",}}`, `{"x":tru}`, `{"x":nul}`, `{"x":01}`, `{"x":-}`,
		`{"x":1.}`, `{"x":1e}`, `{"x":"\q"}`, `{"x":"\u12"}`, "{\"x\":\"a\x01\"}", `{"x":"abc}`,
		`{} {}`, `{}x`, `{"a":1 "b":2}`, `{"a" 1}`,
		`{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
	}
	for _, h := range headers {
		_, _, err := DecodeFrame(jsonFrame(h, nil), 0)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("header %q: err = %v, want ErrMalformed", h, err)
		}
		if json.Valid([]byte(h)) && err == nil {
			t.Errorf("header %q: accepted", h)
		}
	}

	frames := map[string][]byte{
		"length below 4":               {0, 0, 0, 3, 0, 0, 0},
		"header beyond frame":          {0, 0, 0, 6, 0, 0, 0, 3, '{', '}'},
		"unknown serialize type":       rawFrame(2, []byte(`{}`), nil),
		"binary too short":             rawFrame(SerializeRocketMQ, make([]byte, 20), nil),
		"binary remark beyond header":  rawFrame(SerializeRocketMQ, append(make([]byte, 13), 0, 0, 0, 9, 0, 0, 0, 0), nil),
		"binary negative remark":       rawFrame(SerializeRocketMQ, append(make([]byte, 13), 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0), nil),
		"binary ext length mismatch":   rawFrame(SerializeRocketMQ, append(make([]byte, 17), 0, 0, 0, 1), nil),
		"binary key beyond ext":        rawFrame(SerializeRocketMQ, append(make([]byte, 17), 0, 0, 0, 2, 0, 5), nil),
		"binary negative key length":   rawFrame(SerializeRocketMQ, append(make([]byte, 17), 0, 0, 0, 6, 0xff, 0xff, 0, 0, 0, 0), nil),
		"binary value length cut":      rawFrame(SerializeRocketMQ, append(make([]byte, 17), 0, 0, 0, 4, 0, 0, 0, 0), nil),
		"binary value beyond ext":      rawFrame(SerializeRocketMQ, append(make([]byte, 17), 0, 0, 0, 6, 0, 0, 0, 0, 0, 1), nil),
		"binary negative value length": rawFrame(SerializeRocketMQ, append(make([]byte, 17), 0, 0, 0, 6, 0, 0, 0x80, 0, 0, 0), nil),
	}
	for name, f := range frames {
		_, _, err := DecodeFrame(f, 0)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
		_, err = ReadFrame(bufio.NewReader(bytes.NewReader(f)), 0)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: ReadFrame err = %v, want ErrMalformed", name, err)
		}
	}
}

func TestFrameTooLarge(t *testing.T) {
	// Only the prefix is needed to refuse the frame.
	for _, prefix := range [][]byte{{0, 0, 4, 1}, {0xff, 0xff, 0xff, 0xff}, {0x80, 0, 0, 0}} {
		_, _, err := DecodeFrame(prefix, 1024)
		if !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("prefix %x: err = %v", prefix, err)
		}
		_, err = ReadFrame(bufio.NewReader(bytes.NewReader(prefix)), 1024)
		if !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("prefix %x: ReadFrame err = %v", prefix, err)
		}
	}
	// Exactly at the limit is fine.
	body := make([]byte, 1024-4-len(`{}`))
	if _, _, err := DecodeFrame(jsonFrame(`{}`, body), 1024); err != nil {
		t.Fatal(err)
	}
	// The default limit is 16 MiB.
	_, _, err := DecodeFrame(binary.BigEndian.AppendUint32(nil, DefaultMaxFrameBytes+1), 0)
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatal(err)
	}
}

func TestEncodeInvalid(t *testing.T) {
	for name, c := range map[string]*Command{
		"serialize type":  {SerializeType: 7},
		"header too long": {Remark: strings.Repeat("r", maxHeaderBytes)},
		"binary key":      {SerializeType: SerializeRocketMQ, ExtFields: map[string]string{strings.Repeat("k", 40000): ""}},
	} {
		out, err := EncodeFrame([]byte("keep"), c)
		if !errors.Is(err, ErrInvalidCommand) || string(out) != "keep" {
			t.Errorf("%s: err %v, out %q", name, err, out)
		}
	}
}

// TestPartialInput: every strict prefix of a stream is ErrShort or yields
// the frames it holds whole, and a reader delivering any split decodes the
// same.
func TestPartialInput(t *testing.T) {
	var stream []byte
	var want []*Command
	for i, c := range []*Command{sendRequest(), {Code: 1, Flag: 1, SerializeType: SerializeRocketMQ, ExtFields: map[string]string{"a": "b"}}, {Code: 2}} {
		c.Opaque = int32(i + 1)
		var err error
		stream, err = EncodeFrame(stream, c)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, c)
	}
	for cut := 0; cut <= len(stream); cut++ {
		got := decodeAll(t, stream[:cut])
		full := 0
		for off := 0; full < len(want); full++ {
			n := 4 + int(binary.BigEndian.Uint32(stream[off:]))
			if off+n > cut {
				break
			}
			off += n
		}
		if len(got) != full {
			t.Fatalf("cut %d: %d frames, want %d", cut, len(got), full)
		}
		for i := range got {
			if !sameCommand(got[i], want[i]) {
				t.Fatalf("cut %d frame %d differs", cut, i)
			}
		}
		// The same stream through a reader that splits it at cut.
		r := bufio.NewReaderSize(io.MultiReader(iotest.HalfReader(bytes.NewReader(stream[:cut])), bytes.NewReader(stream[cut:])), 16)
		for i := range want {
			c, err := ReadFrame(r, 0)
			if err != nil || !sameCommand(c, want[i]) {
				t.Fatalf("cut %d: ReadFrame %d: %v", cut, i, err)
			}
		}
		if _, err := ReadFrame(r, 0); err != io.EOF {
			t.Fatalf("cut %d: end of stream: %v", cut, err)
		}
		// A stream cut inside a frame ends with ErrUnexpectedEOF.
		if full < len(want) && cut < len(stream) {
			r := bufio.NewReader(bytes.NewReader(stream[:cut]))
			var err error
			for err == nil {
				_, err = ReadFrame(r, 0)
			}
			wantErr := io.ErrUnexpectedEOF
			if boundary(stream, cut) {
				wantErr = io.EOF
			}
			if err != wantErr {
				t.Fatalf("cut %d: %v, want %v", cut, err, wantErr)
			}
		}
	}
}

// boundary reports whether cut falls between frames of stream.
func boundary(stream []byte, cut int) bool {
	off := 0
	for off < cut {
		off += 4 + int(binary.BigEndian.Uint32(stream[off:]))
	}
	return off == cut
}

// decodeAll decodes frames with DecodeFrame until the input ends or is
// short; any other error fails the test.
func decodeAll(t *testing.T, b []byte) []*Command {
	t.Helper()
	var out []*Command
	for {
		c, n, err := DecodeFrame(b, 0)
		if errors.Is(err, ErrShort) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
		b = b[n:]
	}
}

func TestDecodedBodyIsClipped(t *testing.T) {
	a, _ := EncodeFrame(nil, &Command{Code: 1, Body: []byte("one")})
	stream, _ := EncodeFrame(a, &Command{Code: 2, Body: []byte("two")})
	c, _, err := DecodeFrame(stream, 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(c.Body, "over"...)
	c2, _, err := DecodeFrame(stream[len(a):], 0)
	if err != nil || string(c2.Body) != "two" {
		t.Fatalf("appending to a body overwrote the next frame: %q %v", c2.Body, err)
	}
}

func TestLanguageCodes(t *testing.T) {
	for name, code := range map[string]byte{"JAVA": 0, "GO": 9, "": 9, "CPP": 1, "RUST": 12, "200": 200, "FOO": 7, "0200": 7, "300": 7} {
		if got := languageCode(name); got != code {
			t.Errorf("languageCode(%q) = %d, want %d", name, got, code)
		}
	}
	for i := 0; i < 256; i++ {
		if got := languageCode(languageName(int64(i))); got != byte(i) {
			t.Fatalf("language %d round trips to %d", i, got)
		}
	}
}

func TestNewResponse(t *testing.T) {
	req := NewRequest(10, map[string]string{"a": "b"}, []byte("x"))
	req.Opaque = 42
	req.SerializeType = SerializeRocketMQ
	if req.Language != "GO" || req.Version != DefaultVersion || req.IsResponse() || req.IsOneway() {
		t.Fatalf("request %+v", req)
	}
	resp := NewResponse(req, CodeSystemBusy, "busy").SetExt("k", "v")
	if resp.Opaque != 42 || !resp.IsResponse() || resp.IsOneway() || resp.SerializeType != SerializeRocketMQ ||
		resp.Code != CodeSystemBusy || resp.Remark != "busy" || resp.Ext("k") != "v" {
		t.Fatalf("response %+v", resp)
	}
}

// TestBinaryHeaderListedExtFields: ext fields listed with AppendExt are
// written in their order, without a map, and a lazy decode (the one async
// handlers get) lists them again, in order, with no map either; a plain
// decode gives the map.
func TestBinaryHeaderListedExtFields(t *testing.T) {
	c := NewRequest(codeEcho, nil, []byte("body")).AppendExt("b", "2").AppendExt("a", "1").AppendExt("props", "K\x01V\x02")
	c.SerializeType = SerializeRocketMQ
	frame, err := EncodeFrame(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	if i, j := bytes.Index(frame, []byte("\x00\x01b")), bytes.Index(frame, []byte("\x00\x01a")); i < 0 || j < i {
		t.Fatalf("listed fields not written in their order (b at %d, a at %d)", i, j)
	}
	lazy, err := decodeFrameBody(frame[4:], true)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	lazy.EachExt(func(k, v string) { order = append(order, k+"="+v) })
	if lazy.ExtFields != nil || len(lazy.ext) != 0 || !slices.Equal(order, []string{"b=2", "a=1", "props=K\x01V\x02"}) {
		t.Fatalf("lazy decode: map %v, list %+v, fields in order %q", lazy.ExtFields, lazy.ext, order)
	}
	if again, err := EncodeFrame(nil, lazy); err != nil || !bytes.Equal(again, frame) {
		t.Fatalf("lazy re-encode differs from the frame decoded (%v):\n%q\n%q", err, again, frame)
	}
	if lazy.Ext("a") != "1" || string(lazy.Body) != "body" {
		t.Fatalf("lazy decode: Ext(a) = %q, body %q", lazy.Ext("a"), lazy.Body)
	}
	plain, err := decodeFrameBody(frame[4:], false)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"a": "1", "b": "2", "props": "K\x01V\x02"}; !maps.Equal(plain.ExtFields, want) || len(plain.ext) != 0 {
		t.Fatalf("plain decode: %v, list %+v", plain.ExtFields, plain.ext)
	}
	// A map and a list together are merged (the list wins) and sorted.
	m := NewRequest(codeEcho, map[string]string{"z": "map", "a": "map"}, nil).AppendExt("a", "list")
	m.SerializeType = SerializeRocketMQ
	if frame, err = EncodeFrame(nil, m); err != nil {
		t.Fatal(err)
	}
	got, err := decodeFrameBody(frame[4:], false)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"a": "list", "z": "map"}; !maps.Equal(got.ExtFields, want) {
		t.Fatalf("merged: %v", got.ExtFields)
	}
}
