package remoting

import (
	"testing"
	"time"
)

// The counts keep every code below 1024 and 64 distinct others apart and
// lump the rest, so a peer cycling through codes cannot grow them.
func TestRequestCountsAreBounded(t *testing.T) {
	var r requestCounts
	r.add(10)
	r.add(10)
	r.add(1023)
	r.add(-3)
	for c := range int32(200) {
		r.add(200000 + c)
	}
	r.add(200000) // kept apart: one of the first 64
	got := r.snapshot()
	if got[10] != 2 || got[1023] != 1 || got[-3] != 1 || got[200000] != 2 {
		t.Fatalf("counts %v", got)
	}
	if n := len(r.other); n != maxOtherCodes {
		t.Fatalf("%d codes kept apart, want %d", n, maxOtherCodes)
	}
	// -3 and 63 wide codes kept; 137 lumped.
	if got[OtherRequestCode] != 137 {
		t.Fatalf("lumped %d, want 137", got[OtherRequestCode])
	}
}

// A server counts each request it reads by code, the unsupported ones
// too.
func TestServerCountsRequestsByCode(t *testing.T) {
	ts := startServer(t, ServerOptions{}, nil)
	cl := newClient(t, ClientOptions{})
	for i := range 3 {
		invokeEcho(t, cl, ts.addr, i)
	}
	resp, err := cl.Invoke(ctxTimeout(t, 10*time.Second), ts.addr, NewRequest(318, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != CodeRequestCodeNotSupported {
		t.Fatalf("code 318 answered %d, want not supported", resp.Code)
	}
	got := ts.RequestCounts()
	if got[int32(codeEcho)] != 3 || got[318] != 1 || len(got) != 2 {
		t.Fatalf("counts %v, want 3 of %d and 1 of 318", got, codeEcho)
	}
}
