package brokerfront_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/brokerfront"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/store"
)

// fakeRoutes is an Options.TopicRoute whose answer the test sets; it
// counts the reads.
type fakeRoutes struct {
	mu     sync.Mutex
	queues []broker.RouteQueue
	err    error
	reads  int
}

func (r *fakeRoutes) read(context.Context, string) ([]broker.RouteQueue, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	return slices.Clone(r.queues), r.err
}

func (r *fakeRoutes) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reads
}

func (r *fakeRoutes) set(qs []broker.RouteQueue, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queues, r.err = qs, err
}

// TestQueryAssignmentRouteCache: 400 reads a topic's route at most every
// 5 s (the broker's clock); when the name servers fail it assigns over
// the last route read; when they know no route it answers null; a new
// route serves once read.
func TestQueryAssignmentRouteCache(t *testing.T) {
	cfg := daemontest.Config()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	cfg.Broker.Clock = clk
	st, err := store.Open(cfg.Store)
	if err != nil {
		t.Fatal(err)
	}
	br, err := broker.New(st, st.Meta(), cfg.Broker)
	if err != nil {
		t.Fatal(err)
	}
	routes := &fakeRoutes{}
	fr := brokerfront.New(br, brokerfront.Options{TopicRoute: routes.read})
	srv := remoting.NewServer(remoting.ServerOptions{OnConnClose: fr.ConnClosed})
	fr.Register(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	cl := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(func() {
		cl.Close()
		br.Close()
		srv.Close()
		<-done
		st.Close()
	})
	f := &front{addr: ln.Addr().String(), client: cl}
	// Broadcasting: every queue of the route, no member needed.
	assigned := func() []rmq.MessageQueue {
		t.Helper()
		req := rmq.EncodeQueryAssignment(rmq.QueryAssignmentRequest{Topic: "T", ConsumerGroup: "cg", ClientID: "a@host", StrategyName: "AVG", MessageModel: "BROADCASTING"})
		resp := f.invoke(t, req.Code, nil, req.Body)
		a, err := rmq.DecodeQueryAssignmentResponse(resp.Body)
		if resp.Code != rmq.RespSuccess || err != nil {
			t.Fatalf("400: %d %q, %v", resp.Code, resp.Remark, err)
		}
		if a.MessageQueueAssignments == nil {
			return nil
		}
		var out []rmq.MessageQueue
		for _, m := range a.MessageQueueAssignments {
			out = append(out, m.MessageQueue)
		}
		return out
	}
	first := []broker.RouteQueue{{BrokerName: "x", QueueID: 0}, {BrokerName: "y", QueueID: 0}}
	wantFirst := []rmq.MessageQueue{{Topic: "T", BrokerName: "x", QueueID: 0}, {Topic: "T", BrokerName: "y", QueueID: 0}}
	routes.set(first, nil)
	if got := assigned(); !slices.Equal(got, wantFirst) || routes.count() != 1 {
		t.Fatalf("first: %v after %d reads", got, routes.count())
	}
	routes.set(nil, errors.New("name servers down"))
	if got := assigned(); !slices.Equal(got, wantFirst) || routes.count() != 1 {
		t.Fatalf("within 5 s: %v after %d reads, want the cached route and no read", got, routes.count())
	}
	clk.Advance(6 * time.Second)
	if got := assigned(); !slices.Equal(got, wantFirst) || routes.count() != 2 {
		t.Fatalf("name servers failing: %v after %d reads, want the last route read", got, routes.count())
	}
	routes.set(nil, brokerfront.ErrNoRoute)
	if got := assigned(); got != nil || routes.count() != 3 {
		t.Fatalf("no route: %v after %d reads, want null", got, routes.count())
	}
	routes.set([]broker.RouteQueue{{BrokerName: "z", QueueID: 1}}, nil)
	if got := assigned(); !slices.Equal(got, []rmq.MessageQueue{{Topic: "T", BrokerName: "z", QueueID: 1}}) || routes.count() != 4 {
		t.Fatalf("a new route: %v after %d reads", got, routes.count())
	}
}
