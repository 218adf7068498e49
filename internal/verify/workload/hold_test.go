package workload

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/verify/history"
)

// holdNet is a network whose connections, while held, swallow what is
// written (a blackholed link, or a paused peer, as the client sees it):
// requests get no answer until the hold ends.
type holdNet struct {
	held atomic.Bool
}

func (h *holdNet) Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

func (h *holdNet) Dial(ctx context.Context, addr string) (net.Conn, error) {
	nc, err := netx.TCP.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return &holdConn{Conn: nc, h: h}, nil
}

type holdConn struct {
	net.Conn
	h *holdNet
}

func (c *holdConn) Write(b []byte) (int, error) {
	if c.h.held.Load() {
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// TestHeldLinksMakeSendsInDoubt: while every link of producer queue-p0
// and consumer queue-c0 swallows requests, Run goes on: the producer's
// sends time out as InDoubt (never OK, never a hang), the other clients
// go on, and once the links pass again the producer's sends succeed and
// the drain finds everything acked.
func TestHeldLinksMakeSendsInDoubt(t *testing.T) {
	c := daemontest.Start(t)
	env := testEnv(c.NameServerAddr())
	env.SendTimeout = 300 * time.Millisecond
	held := &holdNet{}
	var mu sync.Mutex
	used := map[string]bool{}
	env.Network = func(client string) netx.Network {
		mu.Lock()
		used[client] = true
		mu.Unlock()
		if client == "queue-p0" || client == "queue-c0" {
			return held
		}
		return netx.TCP
	}
	stop := started(t, "queue", env, 0)
	hw := env.History
	byP0 := func(typ history.Type) int {
		n := 0
		for _, op := range hw.Ops() {
			if op.F == history.Send && op.Type == typ && op.Process == "queue-p0" {
				n++
			}
		}
		return n
	}
	await(t, "acked sends of queue-p0", func() bool { return byP0(history.OK) >= 20 })
	held.held.Store(true)
	await(t, "in-doubt sends of queue-p0", func() bool { return byP0(history.InDoubt) >= 3 })
	okHeld, okOthers := byP0(history.OK), count(hw.Ops(), history.OK, history.Send)-byP0(history.OK)
	await(t, "queue-p1 going on", func() bool { return count(hw.Ops(), history.OK, history.Send)-byP0(history.OK) >= okOthers+20 })
	if n := byP0(history.OK); n > okHeld+1 { // one send may have been answered as the hold began
		t.Fatalf("queue-p0 got %d acks while its links were held", n-okHeld)
	}
	held.held.Store(false)
	await(t, "acked sends of queue-p0 after the hold", func() bool { return byP0(history.OK) >= okHeld+20 })
	ops := stop()
	checkHistory(t, ops, "queue", env.Consumers, false)
	for _, op := range ops {
		if op.Type == history.InDoubt && op.Process == "queue-p0" && !strings.Contains(op.Error, "deadline") {
			t.Fatalf("in-doubt send without a timeout: %+v", op)
		}
		// A send that ignored its deadline would never return (the held
		// request is swallowed, no answer comes); one that honours it
		// returns once its goroutine runs again, which on a loaded 2-core
		// machine under the race detector took 2.4 s once.
		if op.Type == history.InDoubt && op.Latency > env.SendTimeout+5*time.Second {
			t.Fatalf("in-doubt send took %v, beyond its timeout", op.Latency)
		}
	}
	for _, want := range []string{"queue-setup", "queue-p0", "queue-p1", "queue-c0", "queue-c1", "queue-drain"} {
		if !used[want] {
			t.Errorf("no network asked for client %s (have %v)", want, used)
		}
	}
}
