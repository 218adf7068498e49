package pop

import (
	"errors"
	"strings"
	"testing"
)

func TestHandleRoundTrip(t *testing.T) {
	h := Handle{QueueID: 7, Offset: 1 << 40, Gen: 99, Attempt: 3, Until: 1_790_000_000_123,
		GroupHash: NameHash("g"), TopicHash: NameHash("t")}
	s := EncodeHandle(h)
	if len(s) != 60 {
		t.Fatalf("handle %q has %d characters, want 60", s, len(s))
	}
	got, err := DecodeHandle(s)
	if err != nil {
		t.Fatal(err)
	}
	if got != h {
		t.Fatalf("decoded %+v, want %+v", got, h)
	}
}

func TestDecodeHandleRefusesGarbage(t *testing.T) {
	good := EncodeHandle(Handle{QueueID: 1, Offset: 2, Gen: 3, Attempt: 1, Until: 4})
	flip := []byte(good)
	if flip[10] == 'A' {
		flip[10] = 'B'
	} else {
		flip[10] = 'A'
	}
	cases := map[string]string{
		"empty":        "",
		"short":        good[:59],
		"long":         good + "A",
		"alphabet":     strings.Repeat("!", 60),
		"checksum":     string(flip),
		"zero gen":     EncodeHandle(Handle{QueueID: 1, Offset: 2, Gen: 0, Attempt: 1}),
		"zero attempt": EncodeHandle(Handle{QueueID: 1, Offset: 2, Gen: 1, Attempt: 0}),
		"negative":     EncodeHandle(Handle{QueueID: -1, Offset: 2, Gen: 1, Attempt: 1}),
		"rocketmq":     "f5aa2c9c-a3a2-4f3f-bbd4-8c8a0b1c2d3e 1700000000000 60000 0 0 broker-a 0 0",
	}
	for name, s := range cases {
		if _, err := DecodeHandle(s); !errors.Is(err, ErrInvalidHandle) {
			t.Errorf("%s: err = %v, want ErrInvalidHandle", name, err)
		}
	}
}

// FuzzDecodeHandle: any input either fails with ErrInvalidHandle or
// decodes to a handle that encodes back to the same text.
func FuzzDecodeHandle(f *testing.F) {
	f.Add(EncodeHandle(Handle{QueueID: 0, Offset: 0, Gen: 1, Attempt: 1, Until: 0}))
	f.Add(EncodeHandle(Handle{QueueID: 3, Offset: 12345, Gen: 77, Attempt: 2, Until: 1_790_000_000_000, GroupHash: 1, TopicHash: 2}))
	f.Add("")
	f.Add("not a handle")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := DecodeHandle(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidHandle) {
				t.Fatalf("err = %v, want ErrInvalidHandle", err)
			}
			return
		}
		if again := EncodeHandle(h); again != s {
			t.Fatalf("decoded %q to %+v, which encodes to %q", s, h, again)
		}
	})
}
