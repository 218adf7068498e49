package workload

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/verify/history"
)

// liveBroker runs a name server and a broker (in-memory store) with its
// gRPC front on loopback, transactions checked back after 500 ms, and
// returns an Env for them whose history is kept in memory.
func liveBroker(t *testing.T, workload string) *Env {
	t.Helper()
	d := daemontest.Start(t, func(cfg *daemon.BrokerConfig) {
		cfg.GRPCListen = "127.0.0.1:0"
		cfg.Broker.TransactionTimeout = 500 * time.Millisecond
		cfg.Broker.TransactionCheckInterval = 500 * time.Millisecond
		// Small key-index files: the in-memory FS fills a default one
		// (88 MB) on the first key, which under -race holds the
		// dispatcher for seconds.
		cfg.Store.IndexSlotsPerFile, cfg.Store.IndexEntriesPerFile = 1<<12, 1<<14
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
		cfg.Broker.Logger = cfg.Logger
	})
	env := testEnv(d.NameServerAddr())
	env.GRPC = d.Broker.GRPCAddr().String()
	env.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})).With("workload", workload)
	return env
}

// testWriter sends log lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// TestGRPCWorkloadDeliversAndDrainsEveryAckedSend runs the grpc workload
// against a live front: every acked send is delivered to the group and
// found by the drain with the checksum it was sent with.
func TestGRPCWorkloadDeliversAndDrainsEveryAckedSend(t *testing.T) {
	env := liveBroker(t, grpcName)
	ops := runBriefly(t, grpcName, env, 1500*time.Millisecond)
	sends := checkSends(t, ops)
	delivered, drained := map[string]int{}, map[string]int{}
	starts := map[string]string{}
	for _, op := range ops {
		switch op.F {
		case history.Start:
			starts[op.Process] = op.Role
		case history.Deliver:
			if op.Workload != grpcName || op.Corrupt || op.Queue < 0 || op.Offset < 0 {
				t.Errorf("bad deliver line %+v", op)
			}
			if s := sends[op.ID]; s == nil || s.invoke.Sum != op.Sum {
				t.Errorf("delivered %s was not sent with sum %d", op.ID, op.Sum)
			}
			delivered[op.ID]++
		case history.Drain:
			if op.Process != grpcName+"-drain" || op.Topic != env.Topic(grpcName) {
				t.Errorf("bad drain line %+v", op)
			}
			drained[op.ID]++
		}
	}
	n := 0
	for id, s := range sends {
		ok, isAcked := acked(s)
		if !isAcked {
			continue
		}
		n++
		if ok.Offset < 0 {
			t.Errorf("OK of %s has no offset", id)
		}
		if delivered[id] == 0 {
			t.Errorf("acked %s never delivered", id)
		}
		if drained[id] != 1 {
			t.Errorf("acked %s drained %d times", id, drained[id])
		}
	}
	if n < 20 {
		t.Fatalf("only %d sends acked", n)
	}
	if starts["grpc-p0"] != history.RoleProducer || starts["grpc-c1"] != history.RoleConsumer {
		t.Errorf("start lines %v", starts)
	}
	t.Logf("%d acked, %d delivered, %d drained", n, len(delivered), len(drained))
}

// cutNet is the real network with a switch: while cut, dials fail and
// the connections made before are closed (a client cut off, then healed).
type cutNet struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (n *cutNet) Listen(addr string) (net.Listener, error) { return netx.TCP.Listen(addr) }

func (n *cutNet) Dial(ctx context.Context, addr string) (net.Conn, error) {
	n.mu.Lock()
	cut := n.cut
	n.mu.Unlock()
	if cut {
		return nil, errors.New("cutNet: cut")
	}
	c, err := netx.TCP.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.conns = append(n.conns, c)
	n.mu.Unlock()
	return c, nil
}

func (n *cutNet) set(cut bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut = cut
	if cut {
		for _, c := range n.conns {
			c.Close()
		}
		n.conns = nil
	}
}

// TestWorkloadsRideOutACutClient cuts every client of the grpc, delay and
// txn workloads off for a while during Run: Run ends on time, every send
// has one outcome, some failed or are in doubt, and every acked message
// meant to arrive is delivered and drained.
func TestWorkloadsRideOutACutClient(t *testing.T) {
	for _, name := range []string{grpcName, delayName, txnName} {
		t.Run(name, func(t *testing.T) {
			env := liveBroker(t, name)
			env.SendTimeout = time.Second
			cn := &cutNet{}
			env.Network = func(string) netx.Network { return cn }
			go func() {
				time.Sleep(700 * time.Millisecond)
				cn.set(true)
				time.Sleep(500 * time.Millisecond)
				cn.set(false)
			}()
			t0 := time.Now()
			ops := runBriefly(t, name, env, 2*time.Second, func(w Workload) {
				if tw, ok := w.(*txnWorkload); ok {
					tw.settleAfter, tw.quiet = 2*time.Second, 1500*time.Millisecond
				}
			})
			t.Logf("run and drain took %v", time.Since(t0))
			sends := checkSends(t, ops)
			got, bad := map[string]bool{}, 0
			for _, op := range ops {
				if op.F == history.Deliver {
					got[op.ID] = true
				}
				if op.F == history.Drain {
					got[op.ID+"/drain"] = true
				}
			}
			n := 0
			for id, s := range sends {
				for _, op := range s.outcome {
					if op.Type != history.OK {
						bad++
					}
				}
				if _, ok := acked(s); !ok {
					continue
				}
				if in := s.invoke.Txn; in == history.Rollback || in == history.CheckRollback {
					continue
				}
				n++
				if !got[id] || !got[id+"/drain"] {
					t.Errorf("acked %s: delivered %v, drained %v", id, got[id], got[id+"/drain"])
				}
			}
			if bad == 0 || n < 10 {
				t.Errorf("%d acked to arrive, %d sends failed or in doubt: the cut did not show", n, bad)
			}
			t.Logf("%d acked to arrive, %d sends failed or in doubt", n, bad)
		})
	}
}

// TestGRPCClientMovesToTheNextEndpoint: with a list of fronts, a client
// whose first endpoint does not answer uses the next one.
func TestGRPCClientMovesToTheNextEndpoint(t *testing.T) {
	env := liveBroker(t, grpcName)
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	live := env.GRPC
	// Every client starts on the dead endpoint: its id rotates the list
	// to it.
	var id string
	for i := 0; ; i++ {
		id = "client-" + strconv.Itoa(i)
		if rotate([]string{deadAddr, live}, id)[0] == deadAddr {
			break
		}
	}
	if got := rotate([]string{"a", "b", "c"}, "x"); len(got) != 3 || !slices.Contains(got, "a") || !slices.Contains(got, "b") || !slices.Contains(got, "c") {
		t.Fatalf("rotate lost an endpoint: %v", got)
	}
	env.GRPC, env.GRPCGroup = deadAddr+","+live, "broker-a"
	ops := runBriefly(t, grpcName, env, 1500*time.Millisecond)
	n := 0
	for _, op := range ops {
		if op.F == history.Send && op.Group != "broker-a" {
			t.Fatalf("a send line without the fronts' group: %+v", op)
		}
		if op.F == history.Send && op.Type == history.OK {
			n++
		}
	}
	if n < 10 {
		t.Fatalf("only %d sends acked through a list whose first endpoint is dead", n)
	}
	c, err := dialGRPC(netx.TCP, deadAddr+","+live, id, &v2.Settings{}, grpcSecurity{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.stub.QueryRoute(c.ctx(ctx), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: env.Topic(grpcName)}, Endpoints: grpcEndpoints(live)}); err != nil {
		t.Fatalf("a client starting on the dead endpoint got no answer: %v", err)
	}
}

// relay forwards every connection made to its address to target (a
// second address of the same front).
func relay(t *testing.T, target string) string {
	return serveLoopback(t, func(in net.Conn) {
		out, err := net.Dial("tcp", target)
		if err != nil {
			in.Close()
			return
		}
		go func() { io.Copy(out, in); out.Close() }() // in closes with the listener
		go io.Copy(in, out)
	})
}

// TestGRPCClientLeavesAFrontThatStopsAnswering: a front whose connection
// stays open but answers nothing (a paused process) makes the call in
// flight time out, in doubt, and the client's next call goes to the next
// front of the list instead of waiting on the same one again.
func TestGRPCClientLeavesAFrontThatStopsAnswering(t *testing.T) {
	env := liveBroker(t, grpcName)
	live := env.GRPC
	paused := relay(t, live)
	var id string
	for i := 0; ; i++ {
		id = "client-" + strconv.Itoa(i)
		if rotate([]string{paused, live}, id)[0] == paused {
			break
		}
	}
	hold := &brokerHold{addr: paused}
	c, err := dialGRPC(hold, paused+","+live, id, &v2.Settings{}, grpcSecurity{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	topic := env.Topic(grpcName)
	e, err := env.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	setup := NewAdminClient(e, "setup")
	defer setup.Close()
	if err := setup.CreateTopic(context.Background(), topic, 1, false); err != nil {
		t.Fatal(err)
	}
	m := func(n int) *v2.Message {
		id := ID(env.RunID, grpcName, 0, n)
		return &v2.Message{Topic: &v2.Resource{Name: topic}, Body: []byte(id), SystemProperties: &v2.SystemProperties{
			MessageId: id, MessageType: v2.MessageType_NORMAL, BornTimestamp: timestamppb.Now(), BodyEncoding: v2.Encoding_IDENTITY}}
	}
	ctx := context.Background()
	if out, _, why := c.sendOne(ctx, 10*time.Second, m(0)); out != grpcSendOK {
		t.Fatalf("send through the first front: %s", why)
	}
	hold.held.Store(true)
	if out, _, why := c.sendOne(ctx, 300*time.Millisecond, m(1)); out != grpcSendInDoubt {
		t.Fatalf("send to the paused front: outcome %d (%s), want in doubt", out, why)
	}
	if out, _, why := c.sendOne(ctx, 10*time.Second, m(2)); out != grpcSendOK {
		t.Fatalf("the send after the timeout did not go to the next front: outcome %d (%s)", out, why)
	}
}
