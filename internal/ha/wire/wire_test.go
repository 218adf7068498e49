package wire

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

func TestFetchRoundTrip(t *testing.T) {
	f := Fetch{Group: "broker-a", ReplicaID: 2, Epoch: 3, Offset: 5 << 31, Durable: 5<<31 - 7,
		LastEpoch: 3, MaxBytes: 1 << 20, MaxWait: 1500 * time.Millisecond}
	got, err := DecodeFetch(AppendFetch(nil, f))
	if err != nil {
		t.Fatal(err)
	}
	if got != f {
		t.Fatalf("round trip %+v, want %+v", got, f)
	}
}

func TestFetchRespRoundTrip(t *testing.T) {
	r := FetchResp{Err: OK, Epoch: 3, EpochStart: 1 << 32, HW: 1<<32 + 10, LEO: 1<<32 + 100, LogStart: 1 << 31,
		Base: 1<<32 + 50, Data: []byte("log bytes")}
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
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip %+v, want %+v", got, r)
	}
}
