package message

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"testing"
)

// FuzzDecode feeds Check and Decode arbitrary bytes followed by an
// arbitrary tail. Seeds are in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	for _, b := range sampleRecords() {
		f.Add(b, []byte{})
	}
	f.Fuzz(func(t *testing.T, b, tail []byte) {
		n, err := Check(b)
		m, dn, derr := Decode(b)
		if dn != n || !errors.Is(derr, err) && err != derr {
			t.Fatalf("Check = %d, %v but Decode = %d, %v", n, err, dn, derr)
		}
		if (m != nil) != (err == nil) {
			t.Fatalf("Decode returned message %v with error %v", m, err)
		}
		switch {
		case err == nil:
			checkAccepted(t, b, n, m, tail)
		case errors.Is(err, ErrBlank):
			if n < 8 {
				t.Fatalf("blank filler of length %d", n)
			}
		case errors.Is(err, ErrShort):
			if n != 0 {
				t.Fatalf("ErrShort with length %d", n)
			}
			// A prefix of a short input is short too.
			for _, k := range []int{0, len(b) / 2, len(b) - 1} {
				if k >= 0 {
					if _, err := Check(b[:k]); !errors.Is(err, ErrShort) {
						t.Fatalf("input is short but its first %d bytes give %v", k, err)
					}
				}
			}
		case errors.Is(err, ErrCorrupt):
			if n != 0 {
				t.Fatalf("ErrCorrupt with length %d", n)
			}
		default:
			t.Fatalf("Check returned an unexpected error %v", err)
		}
		// Unless the input was too short to decide, the bytes after it do
		// not change the result.
		if !errors.Is(err, ErrShort) {
			ext := append(b[:len(b):len(b)], tail...)
			if n2, err2 := Check(ext); n2 != n || err2 != err {
				t.Fatalf("Check = %d, %v; with %d bytes appended %d, %v", n, err, len(tail), n2, err2)
			}
		}
	})
}

func checkAccepted(t *testing.T, b []byte, n int, m *Message, tail []byte) {
	t.Helper()
	if n < MinRecordLen || n > len(b) {
		t.Fatalf("accepted length %d outside %d..%d", n, MinRecordLen, len(b))
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("decoded message fails Validate: %v", err)
	}
	if m.EncodedLen() != n {
		t.Fatalf("EncodedLen of the decoded message = %d, record is %d", m.EncodedLen(), n)
	}
	if enc := m.Encode(); !bytes.Equal(enc, b[:n]) {
		t.Fatalf("Decode -> Encode differs:\n got %x\nwant %x", enc, b[:n])
	}
	assertRecordMatches(t, Record(b[:n]), m)
	// Every strict prefix is short; for long records test a spread of cuts.
	step := 1
	if n > 2048 {
		step = n / 512
	}
	for k := 0; k < n; k += step {
		if _, err := Check(b[:k]); !errors.Is(err, ErrShort) {
			t.Fatalf("first %d bytes of an accepted %d-byte record give %v, want ErrShort", k, n, err)
		}
	}
	if _, err := Check(b[:n-1]); !errors.Is(err, ErrShort) {
		t.Fatalf("record less its last byte gives %v, want ErrShort", err)
	}
	// A torn copy (cut somewhere, zeros after) of a record with properties
	// is never accepted.
	if len(Record(b[:n]).Properties()) > 0 {
		k := len(tail) % n
		torn := make([]byte, n)
		copy(torn, b[:k])
		if _, err := Check(torn); err == nil {
			t.Fatalf("record cut at %d and zero-padded was accepted", k)
		}
	}
}

// FuzzProperties checks the properties codec against ParseProperties.
// Seeds are in testdata/fuzz/FuzzProperties.
func FuzzProperties(f *testing.F) {
	f.Add("KEYS\x01a b\x02TAGS\x01TagA\x02", "TAGS")
	f.Add("A\x011\x01x\x02A\x012\x02\x02B\x01\x02", "A")
	f.Fuzz(func(t *testing.T, props, key string) {
		m := ParseProperties(props)
		for k, v := range m {
			if got, ok := PropertyOf(props, k); !ok || got != v {
				t.Fatalf("PropertyOf(%q, %q) = %q, %v; ParseProperties has %q", props, k, got, ok, v)
			}
			if got, ok := lookup([]byte(props), k); !ok || string(got) != v {
				t.Fatalf("lookup(%q, %q) = %q, %v; ParseProperties has %q", props, k, got, ok, v)
			}
		}
		want, wantOK := m[key]
		if got, ok := PropertyOf(props, key); got != want || ok != wantOK {
			t.Fatalf("PropertyOf(%q, %q) = %q, %v; ParseProperties has %q, %v", props, key, got, ok, want, wantOK)
		}
		if got, ok := lookup([]byte(props), key); string(got) != want || ok != wantOK {
			t.Fatalf("lookup(%q, %q) = %q, %v; ParseProperties has %q, %v", props, key, got, ok, want, wantOK)
		}

		// Encode/parse round trip of the encodable part of the map.
		valid := make(map[string]string)
		for k, v := range m {
			if ValidProperty(k, v) {
				valid[k] = v
			}
		}
		enc := EncodeProperties(valid)
		if got := ParseProperties(enc); !maps.Equal(got, valid) {
			t.Fatalf("ParseProperties(EncodeProperties(%q)) = %q", valid, got)
		}
		built := &Message{}
		for _, k := range slices.Sorted(maps.Keys(valid)) {
			built.SetProperty(k, valid[k])
		}
		if built.Properties != enc {
			t.Fatalf("SetProperty in key order built %q, EncodeProperties %q", built.Properties, enc)
		}

		// SetProperty and RemoveProperty on the raw string change only
		// the key, as ParseProperties sees it.
		if ValidProperty(key, "v") {
			msg := &Message{Properties: props}
			msg.SetProperty(key, "v")
			want := maps.Clone(m)
			want[key] = "v"
			if got := ParseProperties(msg.Properties); !maps.Equal(got, want) {
				t.Fatalf("SetProperty(%q) on %q gave %q, parsing to %q; want %q", key, props, msg.Properties, got, want)
			}
			if msg.Properties[len(msg.Properties)-1] != PropertySeparator {
				t.Fatalf("SetProperty left %q without a final separator", msg.Properties)
			}
			msg.RemoveProperty(key)
			delete(want, key)
			if got := ParseProperties(msg.Properties); !maps.Equal(got, want) {
				t.Fatalf("RemoveProperty(%q) gave %q, parsing to %q; want %q", key, msg.Properties, got, want)
			}
		}
	})
}

// FuzzBatch feeds DecodeBatch arbitrary bodies. Seeds are in
// testdata/fuzz/FuzzBatch.
func FuzzBatch(f *testing.F) {
	f.Add(EncodeBatch(sampleBatch()))
	f.Fuzz(func(t *testing.T, body []byte) {
		items, err := collectBatch(body)
		enc := EncodeBatch(items)
		if err == nil {
			if !bytes.Equal(enc, body) {
				t.Fatalf("EncodeBatch(DecodeBatch(body)) differs:\n got %x\nwant %x", enc, body)
			}
			return
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("DecodeBatch error %v does not wrap ErrCorrupt", err)
		}
		// The items passed before the error are the body's good prefix.
		if !bytes.HasPrefix(body, enc) {
			t.Fatalf("items decoded before the error do not re-encode to a prefix of the body")
		}
	})
}
