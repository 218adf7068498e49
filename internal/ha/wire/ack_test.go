package wire

import (
	"bytes"
	"errors"
	"testing"
)

var (
	goldenAck    = Ack{Offset: 1<<32 + 5, Durable: 1<<32 + 1}
	goldenAckHex = `01 03 | 0000000100000005 | 0000000100000001`
)

func TestGoldenAck(t *testing.T) {
	want := unhex(t, goldenAckHex)
	if got := AppendAck(nil, goldenAck); !bytes.Equal(got, want) {
		t.Fatalf("AppendAck:\n got %x\nwant %x", got, want)
	}
	got, err := DecodeAck(want)
	if err != nil || got != goldenAck {
		t.Fatalf("DecodeAck = %+v, %v; want %+v", got, err, goldenAck)
	}
	if len(want) != AckLen {
		t.Fatalf("ack is %d bytes, AckLen says %d", len(want), AckLen)
	}
}

func TestDecodeAckRefuses(t *testing.T) {
	good := AppendAck(nil, goldenAck)
	neg := AppendAck(nil, Ack{})
	neg[2] = 0x80 // Offset negative
	negD := AppendAck(nil, Ack{})
	negD[10] = 0x80
	for name, c := range map[string]struct {
		in    []byte
		field string
	}{
		"empty":            {nil, "version"},
		"cut":              {good[:AckLen-1], "durable"},
		"trailing":         {append(append([]byte{}, good...), 0), "end"},
		"fetch kind":       {AppendFetch(nil, goldenFetch), "kind"},
		"negative offset":  {neg, "offset"},
		"negative durable": {negD, "durable"},
	} {
		_, err := DecodeAck(c.in)
		if !errors.Is(err, ErrMalformed) || !bytes.Contains([]byte(err.Error()), []byte("ack: "+c.field)) {
			t.Errorf("%s: DecodeAck error %v, want a malformed error naming %q", name, err, c.field)
		}
	}
	v2 := append([]byte{}, good...)
	v2[0] = 2
	if _, err := DecodeAck(v2); !errors.Is(err, ErrVersion) {
		t.Errorf("version 2: %v, want ErrVersion", err)
	}
}

func TestKindOf(t *testing.T) {
	for want, p := range map[byte][]byte{
		KindFetch:     AppendFetch(nil, goldenFetch),
		KindFetchResp: AppendFetchResp(nil, goldenResp),
		KindAck:       AppendAck(nil, goldenAck),
	} {
		if k, err := KindOf(p); err != nil || k != want {
			t.Errorf("KindOf = %d, %v; want %d", k, err, want)
		}
	}
	if _, err := KindOf([]byte{Version}); !errors.Is(err, ErrMalformed) {
		t.Errorf("KindOf of 1 byte: %v, want ErrMalformed", err)
	}
	if _, err := KindOf([]byte{2, KindAck}); !errors.Is(err, ErrVersion) {
		t.Errorf("KindOf of version 2: %v, want ErrVersion", err)
	}
}

func TestAppendAckPanicsOnInvalid(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("AppendAck of a negative offset did not panic")
		}
	}()
	AppendAck(nil, Ack{Offset: -1})
}

// FuzzDecodeAck: DecodeAck never panics, refuses with a malformed or
// version error, and what it accepts is valid and re-encodes to the same
// bytes. Seeds in testdata/fuzz/FuzzDecodeAck.
func FuzzDecodeAck(f *testing.F) {
	f.Add(AppendAck(nil, goldenAck))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAck(b)
		if err != nil {
			if !decodeErrOK(err, "ack") {
				t.Fatalf("DecodeAck error of an unexpected class: %v", err)
			}
			return
		}
		if err := a.Validate(); err != nil {
			t.Fatalf("decoded an invalid ack: %v", err)
		}
		if again := AppendAck(nil, a); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", b, again)
		}
	})
}
