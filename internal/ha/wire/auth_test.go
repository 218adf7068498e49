package wire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

var (
	goldenNonce = [NonceLen]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	// Sig computed independently: HMAC-SHA1("s3cret",
	// "petrel-ha\x00broker-a\x001764640000000\x00" + goldenNonce).
	goldenAuth = Auth{Group: "broker-a", AccessKey: "admin", TimeMs: 1764640000000, Nonce: goldenNonce,
		Sig: []byte{0x88, 0x40, 0x01, 0xf7, 0x8e, 0x8d, 0xc4, 0x5e, 0x2b, 0xfc, 0x79, 0xbd, 0x50, 0x42, 0x1e, 0x00, 0xa0, 0x3a, 0xa5, 0xd8}}
	goldenAuthHex = `01 04 | 0008 62726f6b65722d61 | 0005 61646d696e | 0000019adcbd8800 |
		000102030405060708090a0b0c0d0e0f | 0014 884001f78e8dc45e2bfc79bd50421e00a03aa5d8`
)

func TestGoldenAuth(t *testing.T) {
	if got := SignAuth("broker-a", "admin", "s3cret", 1764640000000, goldenNonce); !reflect.DeepEqual(got, goldenAuth) {
		t.Fatalf("SignAuth = %+v\nwant %+v", got, goldenAuth)
	}
	want := unhex(t, goldenAuthHex)
	if got := AppendAuth(nil, goldenAuth); !bytes.Equal(got, want) {
		t.Fatalf("AppendAuth:\n got %x\nwant %x", got, want)
	}
	got, err := DecodeAuth(want)
	if err != nil || !reflect.DeepEqual(got, goldenAuth) {
		t.Fatalf("DecodeAuth = %+v, %v; want %+v", got, err, goldenAuth)
	}
	if len(want) != authFixed+len(goldenAuth.Group)+len(goldenAuth.AccessKey)+len(goldenAuth.Sig) {
		t.Fatalf("auth is %d bytes, authFixed says %d + group + access key + signature", len(want), authFixed)
	}
	if k, err := KindOf(want); err != nil || k != KindAuth {
		t.Fatalf("KindOf = %d, %v; want %d", k, err, KindAuth)
	}
	if Unauthorized.String() != "Unauthorized" {
		t.Fatalf("Unauthorized.String() = %q", Unauthorized.String())
	}
}

// A signature covers the group, the time and the nonce.
func TestAuthContentCoversEveryField(t *testing.T) {
	base := SignAuth("g", "u", "k", 5, goldenNonce)
	n2 := goldenNonce
	n2[15] ^= 1
	for name, other := range map[string]Auth{
		"group":  SignAuth("h", "u", "k", 5, goldenNonce),
		"time":   SignAuth("g", "u", "k", 6, goldenNonce),
		"nonce":  SignAuth("g", "u", "k", 5, n2),
		"secret": SignAuth("g", "u", "K", 5, goldenNonce),
	} {
		if bytes.Equal(other.Sig, base.Sig) {
			t.Errorf("another %s gives the same signature", name)
		}
	}
}

func TestDecodeAuthRefuses(t *testing.T) {
	good := AppendAuth(nil, goldenAuth)
	negTime := AppendAuth(nil, goldenAuth)
	negTime[2+2+8+2+5] = 0x80
	noKey := []byte{Version, KindAuth, 0, 0, 0, 0}
	noKey = append(noKey, make([]byte, 8+NonceLen)...)
	noKey = append(noKey, 0, 1, 0xff)
	noSig := AppendAuth(nil, goldenAuth)
	noSig = append(noSig[:len(noSig)-len(goldenAuth.Sig)-2], 0, 0)
	longSig := AppendAuth(nil, goldenAuth)
	longSig = append(longSig[:len(longSig)-len(goldenAuth.Sig)-2], 0, MaxSig+1)
	longSig = append(longSig, make([]byte, MaxSig+1)...)
	for name, c := range map[string]struct {
		in    []byte
		field string
	}{
		"empty":         {nil, "version"},
		"cut":           {good[:len(good)-1], "signature"},
		"cut nonce":     {good[:2+2+8+2+5+8+3], "nonce"},
		"trailing":      {append(append([]byte{}, good...), 0), "end"},
		"fetch kind":    {AppendFetch(nil, goldenFetch), "kind"},
		"negative time": {negTime, "time"},
		"no access key": {noKey, "access key"},
		"no signature":  {noSig, "signature"},
		"long sig":      {longSig, "signature"},
	} {
		_, err := DecodeAuth(c.in)
		if !errors.Is(err, ErrMalformed) || !bytes.Contains([]byte(err.Error()), []byte("auth: "+c.field)) {
			t.Errorf("%s: DecodeAuth error %v, want a malformed error naming %q", name, err, c.field)
		}
	}
	v2 := append([]byte{}, good...)
	v2[0] = 2
	if _, err := DecodeAuth(v2); !errors.Is(err, ErrVersion) {
		t.Errorf("version 2: %v, want ErrVersion", err)
	}
}

func TestAppendAuthPanicsOnInvalid(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("AppendAuth without an access key did not panic")
		}
	}()
	AppendAuth(nil, Auth{Sig: []byte{1}})
}

// FuzzDecodeAuth: DecodeAuth never panics, refuses with a malformed or
// version error, and what it accepts is valid and re-encodes to the same
// bytes. Seeds in testdata/fuzz/FuzzDecodeAuth.
func FuzzDecodeAuth(f *testing.F) {
	f.Add(AppendAuth(nil, goldenAuth))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAuth(b)
		if err != nil {
			if !decodeErrOK(err, "auth") {
				t.Fatalf("DecodeAuth error of an unexpected class: %v", err)
			}
			return
		}
		if err := a.Validate(); err != nil {
			t.Fatalf("decoded an invalid auth: %v", err)
		}
		if again := AppendAuth(nil, a); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", b, again)
		}
	})
}
