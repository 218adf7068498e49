package remoting

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWideCodeHandled: a handler registered with HandleWide gets the
// requests of its code (above int16, as RocketMQ 5's POP_MESSAGE 200050),
// a Client sends them with NewWideRequest over a JSON header, and another
// wide code without a handler is still refused.
func TestWideCodeHandled(t *testing.T) {
	srv := startServer(t, ServerOptions{}, nil)
	srv.HandleWide(200050, func(_ context.Context, _ *Conn, req *Command) *Command {
		resp := NewResponse(req, CodeSuccess, "pop "+req.Ext("topic"))
		resp.SetExt("code", "200050")
		return resp
	})
	// A wide registration of a code that fits int16 is an ordinary one.
	srv.HandleWide(int32(codeEcho)+1, func(_ context.Context, _ *Conn, req *Command) *Command {
		return NewResponse(req, CodeSuccess, "narrow")
	})
	cl := NewClient(ClientOptions{})
	t.Cleanup(func() { cl.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	req := NewWideRequest(200050, map[string]string{"topic": "T"}, nil)
	if req.FullCode() != 200050 || req.Code != 0 {
		t.Fatalf("NewWideRequest: Code %d FullCode %d", req.Code, req.FullCode())
	}
	resp, err := cl.Invoke(ctx, srv.addr, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != CodeSuccess || resp.Remark != "pop T" {
		t.Fatalf("wide request answered %d %q", resp.Code, resp.Remark)
	}
	resp, err = cl.Invoke(ctx, srv.addr, NewWideRequest(200051, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != CodeRequestCodeNotSupported || resp.Remark != "request code 200051 is not supported" {
		t.Fatalf("unregistered wide code answered %d %q", resp.Code, resp.Remark)
	}
	n := NewWideRequest(int32(codeEcho)+1, nil, nil)
	if n.Code != codeEcho+1 || n.FullCode() != int32(codeEcho)+1 {
		t.Fatalf("NewWideRequest of a narrow code: Code %d FullCode %d", n.Code, n.FullCode())
	}
	if resp, err = cl.Invoke(ctx, srv.addr, n); err != nil || resp.Remark != "narrow" {
		t.Fatalf("narrow code through HandleWide: %v %+v", err, resp)
	}
	// The binary header cannot carry a wide code.
	b := NewWideRequest(200050, nil, nil)
	b.SerializeType = SerializeRocketMQ
	if _, err := EncodeFrame(nil, b); !errors.Is(err, ErrInvalidCommand) {
		t.Fatalf("binary encode of a wide code: %v", err)
	}
}
