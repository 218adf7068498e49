package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(strings.NewReplacer("|", " ").Replace(s)), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	goldenFetch = Fetch{Group: "broker-a", ReplicaID: 2, Epoch: 3, Offset: 1<<32 + 5, Durable: 1<<32 + 1,
		LastEpoch: 3, MaxBytes: 1 << 20, MaxWait: 1500 * time.Millisecond}
	// The fields of doc.go's layout, in order.
	goldenFetchHex = `01 01 | 0008 62726f6b65722d61 | 0000000000000002 | 00000003 | 0000000100000005 |
		0000000100000001 | 00000003 | 00100000 | 0000000059682f00`

	goldenResp = FetchResp{Err: OK, Epoch: 3, EpochStart: 1 << 32, HW: 1<<32 + 10, LEO: 1<<32 + 100,
		LogStart: 1 << 31, Base: 1<<32 + 50, Data: []byte("abc")}
	goldenRespHex = `01 02 | 0000 | 00000003 | 0000000100000000 | 000000010000000a | 0000000100000064 |
		0000000080000000 | 0000000100000032 | 0000 | 00000003 616263`

	goldenErrResp = FetchResp{Err: NotPrefix, Epoch: 7, EpochStart: 1 << 33, HW: 9, LEO: 1 << 34,
		LogStart: 0, Base: 0, Message: "no"}
	goldenErrRespHex = `01 02 | 0004 | 00000007 | 0000000200000000 | 0000000000000009 | 0000000400000000 |
		0000000000000000 | 0000000000000000 | 0002 6e6f | 00000000`

	// A Diverging answer: the shared epoch 2 (starting at 2^32 on the
	// master) and the cut at 2^32+77 in Base.
	goldenDivergingResp = FetchResp{Err: Diverging, Epoch: 2, EpochStart: 1 << 32, HW: 1<<32 + 5, LEO: 1 << 33,
		LogStart: 0, Base: 1<<32 + 77, Message: "cut"}
	goldenDivergingRespHex = `01 02 | 000a | 00000002 | 0000000100000000 | 0000000100000005 | 0000000200000000 |
		0000000000000000 | 000000010000004d | 0003 637574 | 00000000`
)

func TestGoldenFetch(t *testing.T) {
	want := unhex(t, goldenFetchHex)
	if got := AppendFetch(nil, goldenFetch); !bytes.Equal(got, want) {
		t.Fatalf("AppendFetch:\n got %x\nwant %x", got, want)
	}
	got, err := DecodeFetch(want)
	if err != nil || got != goldenFetch {
		t.Fatalf("DecodeFetch = %+v, %v; want %+v", got, err, goldenFetch)
	}
	if len(want) != fetchFixed+len(goldenFetch.Group) {
		t.Fatalf("fetch is %d bytes, fetchFixed says %d + group", len(want), fetchFixed)
	}
}

func TestGoldenFetchResp(t *testing.T) {
	for _, c := range []struct {
		r   FetchResp
		hex string
	}{{goldenResp, goldenRespHex}, {goldenErrResp, goldenErrRespHex}, {goldenDivergingResp, goldenDivergingRespHex}} {
		want := unhex(t, c.hex)
		if got := AppendFetchResp(nil, c.r); !bytes.Equal(got, want) {
			t.Fatalf("AppendFetchResp(%+v):\n got %x\nwant %x", c.r, got, want)
		}
		got, err := DecodeFetchResp(want)
		if err != nil || !reflect.DeepEqual(got, c.r) {
			t.Fatalf("DecodeFetchResp = %+v, %v; want %+v", got, err, c.r)
		}
		if len(want) != fetchRespFixed+len(c.r.Message)+len(c.r.Data) {
			t.Fatalf("response is %d bytes, fetchRespFixed says %d + message + data", len(want), fetchRespFixed)
		}
	}
}

func TestGoldenFrame(t *testing.T) {
	// CRC-32C of "123456789" is the standard check value e3069283.
	want := unhex(t, "00000009 e3069283 313233343536373839")
	var buf bytes.Buffer
	if err := WriteFrame(&buf, []byte("123456789")); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("WriteFrame:\n got %x\nwant %x", buf.Bytes(), want)
	}
	p, err := ReadFrame(bytes.NewReader(want), nil)
	if err != nil || string(p) != "123456789" {
		t.Fatalf("ReadFrame = %q, %v", p, err)
	}
}

func TestFetchRoundTrip(t *testing.T) {
	for _, f := range []Fetch{
		goldenFetch,
		{ReplicaID: 1},
		{Group: strings.Repeat("g", MaxGroup), ReplicaID: 1<<63 - 1, Epoch: 1<<32 - 1, Offset: 1<<63 - 1,
			Durable: 1<<63 - 1, LastEpoch: 1<<32 - 1, MaxBytes: 1<<31 - 1, MaxWait: 1<<63 - 1},
	} {
		b := AppendFetch([]byte("prefix"), f)
		if string(b[:6]) != "prefix" {
			t.Fatal("AppendFetch overwrote dst")
		}
		got, err := DecodeFetch(b[6:])
		if err != nil {
			t.Fatalf("DecodeFetch(%+v): %v", f, err)
		}
		if got != f {
			t.Fatalf("round trip %+v, want %+v", got, f)
		}
	}
}

func TestFetchRespRoundTrip(t *testing.T) {
	for _, r := range []FetchResp{
		goldenResp,
		goldenErrResp,
		{},
		{Err: Code(999), Epoch: 1<<32 - 1, EpochStart: 1<<63 - 1, HW: 1<<63 - 1, LEO: 1<<63 - 1, LogStart: 1<<63 - 1,
			Base: 1<<63 - 1 - 3, Data: []byte{0, 1, 2}, Message: strings.Repeat("m", MaxMessage)},
	} {
		var buf bytes.Buffer
		if err := WriteFrame(&buf, AppendFetchResp(nil, r)); err != nil {
			t.Fatal(err)
		}
		p, err := ReadFrame(&buf, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeFetchResp(p)
		if err != nil {
			t.Fatalf("DecodeFetchResp(%+v): %v", r, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip %+v, want %+v", got, r)
		}
	}
}

func TestDecodeFetchRespDataAliasesInput(t *testing.T) {
	b := AppendFetchResp(nil, goldenResp)
	r, err := DecodeFetchResp(b)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] = 'X'
	if string(r.Data) != "abX" {
		t.Fatalf("Data = %q: does not alias the input, as documented", r.Data)
	}
	if cap(r.Data) != len(r.Data) {
		t.Fatalf("Data has capacity %d beyond its length %d: an append to it would overwrite the input", cap(r.Data), len(r.Data))
	}
}

func TestMessageCut(t *testing.T) {
	long := strings.Repeat("x", MaxMessage-1) + "é" + "tail" // é is 2 bytes and straddles the limit
	r, err := DecodeFetchResp(AppendFetchResp(nil, FetchResp{Err: Unavailable, Message: long}))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Repeat("x", MaxMessage-1); r.Message != want {
		t.Fatalf("message of %d bytes cut to %d bytes %q..., want %d", len(long), len(r.Message), r.Message[len(r.Message)-3:], len(want))
	}
	ascii := strings.Repeat("y", MaxMessage+10)
	if r, _ := DecodeFetchResp(AppendFetchResp(nil, FetchResp{Message: ascii})); r.Message != ascii[:MaxMessage] {
		t.Fatalf("ASCII message cut to %d bytes, want %d", len(r.Message), MaxMessage)
	}
}

func TestAppendPanicsOnInvalid(t *testing.T) {
	for name, fn := range map[string]func(){
		"group too long": func() { AppendFetch(nil, Fetch{Group: strings.Repeat("g", MaxGroup+1), ReplicaID: 1}) },
		"replica id 0":   func() { AppendFetch(nil, Fetch{}) },
		"negative hw":    func() { AppendFetchResp(nil, FetchResp{HW: -1}) },
		"base overflows": func() { AppendFetchResp(nil, FetchResp{Base: 1<<63 - 1, Data: []byte("x")}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			fn()
		}()
	}
}

func TestCodeString(t *testing.T) {
	for c, want := range map[Code]string{OK: "OK", NotPrefix: "NotPrefix", Unavailable: "Unavailable", Diverging: "Diverging", 77: "Code(77)"} {
		if got := c.String(); got != want {
			t.Errorf("Code(%d).String() = %q, want %q", uint16(c), got, want)
		}
	}
}

// set overwrites b at off with the bytes of hex.
func set(t *testing.T, b []byte, off int, h string) []byte {
	t.Helper()
	b = bytes.Clone(b)
	copy(b[off:], unhex(t, h))
	return b
}

func TestDecodeFetchErrorsNameTheField(t *testing.T) {
	good := AppendFetch(nil, goldenFetch) // group "broker-a": g = 8
	const g = 8
	for _, c := range []struct {
		name string
		b    []byte
		want string
		is   error
	}{
		{"empty", nil, "fetch: version at byte 0: needs 1 bytes, 0 left", ErrMalformed},
		{"version 2", set(t, good, 0, "02"), "fetch: version 2 (this broker reads 1)", ErrVersion},
		{"version 0", set(t, good, 0, "00"), "fetch: version 0", ErrVersion},
		{"a response", AppendFetchResp(nil, goldenResp), "fetch: kind at byte 1: 2, want 1", ErrMalformed},
		{"group too long", set(t, good, 2, "0100"), "fetch: group at byte 2: length 256 above 255", ErrMalformed},
		{"group cut", good[:4+3], "fetch: group at byte 4: needs 8 bytes, 3 left", ErrMalformed},
		{"replica id cut", good[:4+g+7], "fetch: replica id at byte 12: needs 8 bytes, 7 left", ErrMalformed},
		{"replica id 0", set(t, good, 4+g, "0000000000000000"), "fetch: replica id: 0 below 1", ErrMalformed},
		{"replica id negative", set(t, good, 4+g, "ffffffffffffffff"), "fetch: replica id: -1 below 1", ErrMalformed},
		{"epoch cut", good[:12+g+1], "fetch: epoch at byte 20: needs 4 bytes, 1 left", ErrMalformed},
		{"offset negative", set(t, good, 16+g, "8000000000000000"), "fetch: offset: negative (-9223372036854775808)", ErrMalformed},
		{"durable negative", set(t, good, 24+g, "ffffffffffffffff"), "fetch: durable: negative (-1)", ErrMalformed},
		{"last epoch cut", good[:32+g+2], "fetch: last epoch at byte 40: needs 4 bytes", ErrMalformed},
		{"max bytes negative", set(t, good, 36+g, "ffffffff"), "fetch: max bytes: negative (-1)", ErrMalformed},
		{"max wait negative", set(t, good, 40+g, "fffffffffffffffe"), "fetch: max wait: negative (-2 ns)", ErrMalformed},
		{"max wait cut", good[:len(good)-1], "fetch: max wait at byte 48: needs 8 bytes, 7 left", ErrMalformed},
		{"trailing byte", append(bytes.Clone(good), 0), "fetch: end at byte 56: 1 trailing bytes", ErrMalformed},
	} {
		_, err := DecodeFetch(c.b)
		if err == nil || !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: DecodeFetch: %v\nwant an error wrapping %v containing %q", c.name, err, c.is, c.want)
		}
	}
}

func TestDecodeFetchRespErrorsNameTheField(t *testing.T) {
	good := AppendFetchResp(nil, goldenResp) // no message, data "abc"
	for _, c := range []struct {
		name string
		b    []byte
		want string
		is   error
	}{
		{"empty", nil, "fetch response: version at byte 0", ErrMalformed},
		{"version 9", set(t, good, 0, "09"), "fetch response: version 9 (this broker reads 1)", ErrVersion},
		{"a fetch", AppendFetch(nil, goldenFetch), "fetch response: kind at byte 1: 1, want 2", ErrMalformed},
		{"err cut", good[:3], "fetch response: err at byte 2: needs 2 bytes, 1 left", ErrMalformed},
		{"epoch cut", good[:7], "fetch response: epoch at byte 4", ErrMalformed},
		{"epoch start negative", set(t, good, 8, "ff"), "fetch response: epoch start: negative", ErrMalformed},
		{"hw negative", set(t, good, 16, "ff"), "fetch response: hw: negative", ErrMalformed},
		{"leo negative", set(t, good, 24, "ff"), "fetch response: leo: negative", ErrMalformed},
		{"log start negative", set(t, good, 32, "ff"), "fetch response: log start: negative", ErrMalformed},
		{"base negative", set(t, good, 40, "ff"), "fetch response: base: negative", ErrMalformed},
		{"base cut", good[:45], "fetch response: base at byte 40: needs 8 bytes, 5 left", ErrMalformed},
		{"message length cut", good[:49], "fetch response: message length at byte 48", ErrMalformed},
		{"message too long", set(t, good, 48, "0401"), "fetch response: message at byte 48: length 1025 above 1024", ErrMalformed},
		{"message cut", set(t, good, 48, "0010"), "fetch response: message at byte 50: needs 16 bytes, 7 left", ErrMalformed},
		{"data length cut", good[:52], "fetch response: data length at byte 50: needs 4 bytes, 2 left", ErrMalformed},
		{"data too long", set(t, good, 50, "01fff001"), "fetch response: data at byte 50: length 33550337 above 33550336", ErrMalformed},
		{"data length huge", set(t, good, 50, "ffffffff"), "fetch response: data at byte 50: length 4294967295 above", ErrMalformed},
		{"data cut", good[:len(good)-1], "fetch response: data at byte 54: needs 3 bytes, 2 left", ErrMalformed},
		{"base + data overflows", set(t, good, 40, "7fffffffffffffff"), "fetch response: data: base 9223372036854775807 + length 3 overflows", ErrMalformed},
		{"trailing bytes", append(bytes.Clone(good), 1, 2), "fetch response: end at byte 57: 2 trailing bytes", ErrMalformed},
	} {
		_, err := DecodeFetchResp(c.b)
		if err == nil || !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: DecodeFetchResp: %v\nwant an error wrapping %v containing %q", c.name, err, c.is, c.want)
		}
	}
}

// TestDecodeEveryPrefix cuts valid payloads at every length: each prefix is
// refused with an error that names a field.
func TestDecodeEveryPrefix(t *testing.T) {
	fetch := AppendFetch(nil, goldenFetch)
	for n := range len(fetch) {
		if _, err := DecodeFetch(fetch[:n]); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "needs") {
			t.Errorf("DecodeFetch of %d of %d bytes: %v", n, len(fetch), err)
		}
	}
	resp := AppendFetchResp(nil, goldenErrResp)
	for n := range len(resp) {
		if _, err := DecodeFetchResp(resp[:n]); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "needs") {
			t.Errorf("DecodeFetchResp of %d of %d bytes: %v", n, len(resp), err)
		}
	}
}
