package remoting

import (
	"context"
	"slices"
	"testing"
	"time"
)

const codeGuardBatch int16 = 102

// A guard's answer replaces the handler for plain and batched requests;
// what it lets through is handled as before, and the client's Sign hook
// has run on every request the guard sees.
func TestGuardRefusesAndSignRuns(t *testing.T) {
	guard := func(_ *Conn, req *Command) *Command {
		if req.Ext("sig") != "ok" {
			return NewResponse(req, 16, "no signature")
		}
		if req.Ext("i") == "13" {
			return NewResponse(req, 16, "refused 13")
		}
		return nil
	}
	ts := startServer(t, ServerOptions{Guard: guard}, nil)
	ts.HandleBatch(func(_ context.Context, _ *Conn, reqs []*Command, reply func(int, func() *Command)) {
		for i, r := range reqs {
			reply(i, func() *Command { return NewResponse(r, CodeSuccess, "batched "+r.Ext("i")) })
		}
	}, codeGuardBatch)
	if got := ts.Codes(); !slices.Contains(got, int32(codeEcho)) || !slices.Contains(got, int32(codeGuardBatch)) {
		t.Fatalf("Codes() = %v, want %d and %d among them", got, codeEcho, codeGuardBatch)
	}

	unsigned := newClient(t, ClientOptions{})
	resp, err := unsigned.Invoke(ctxTimeout(t, 10*time.Second), ts.addr, echoReq(1))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != 16 || resp.Remark != "no signature" {
		t.Fatalf("unsigned request: code %d remark %q, want the guard's refusal", resp.Code, resp.Remark)
	}

	signs := 0
	signed := newClient(t, ClientOptions{Sign: func(c *Command) { signs++; c.SetExt("sig", "ok") }})
	for _, tc := range []struct {
		code       int16
		i          int
		wantCode   int16
		wantRemark string
	}{
		{codeEcho, 1, CodeSuccess, "1"},
		{codeEcho, 13, 16, "refused 13"},
		{codeGuardBatch, 2, CodeSuccess, "batched 2"},
		{codeGuardBatch, 13, 16, "refused 13"},
	} {
		req := echoReq(tc.i)
		req.Code = tc.code
		resp, err := signed.Invoke(ctxTimeout(t, 10*time.Second), ts.addr, req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code != tc.wantCode || resp.Remark != tc.wantRemark {
			t.Errorf("code %d i=%d: got code %d remark %q, want %d %q", tc.code, tc.i, resp.Code, resp.Remark, tc.wantCode, tc.wantRemark)
		}
	}
	if signs != 4 {
		t.Errorf("Sign ran %d times for 4 requests", signs)
	}
	// A oneway request the guard refuses gets no answer and runs nothing;
	// the connection stays usable.
	ow := NewRequest(codeEcho, map[string]string{"i": "13"}, nil)
	c, err := signed.Conn(ctxTimeout(t, 10*time.Second), ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.InvokeOneway(ow); err != nil {
		t.Fatal(err)
	}
	invokeEcho(t, signed, ts.addr, 5)
}
