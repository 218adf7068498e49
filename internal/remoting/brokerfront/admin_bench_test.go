package brokerfront_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/namesrv"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/brokerfront"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/vfs"
)

// envInt reads a positive integer from the environment, def when unset.
func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// BenchmarkCreateTopics creates topics the way an operator's tool does,
// with UPDATE_AND_CREATE_TOPIC requests over remoting, many in flight, on a
// broker whose store is on disk (b.TempDir), and then restarts the broker
// and times how long until it serves again with every topic. Run it once:
//
//	go test -run '^$' -bench CreateTopics -benchtime 1x ./internal/remoting/brokerfront/
//
// PETREL_BENCH_TOPICS (default 10000) sets the number of topics,
// PETREL_BENCH_INFLIGHT (default 256) the requests in flight and
// PETREL_BENCH_CONNS (default 1) the client connections they are spread
// over (the server runs at most 256 requests of one connection at once).
// "front" is the remoting front over the broker and its store, with no
// topic hook; "daemon" the daemon's broker with no name server (its hook
// hands the whole topic table to the registrar after each batch of
// changes); "daemon-namesrv" with a name server it registers with.
func BenchmarkCreateTopics(b *testing.B) {
	n := envInt(b, "PETREL_BENCH_TOPICS", 10000)
	inflight := envInt(b, "PETREL_BENCH_INFLIGHT", 256)
	conns := envInt(b, "PETREL_BENCH_CONNS", 1)
	for _, mode := range []string{"front", "daemon", "daemon-namesrv"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				createTopicsAndRestart(b, mode, n, inflight, conns)
			}
		})
	}
}

// benchBroker is a broker being measured: a daemon's or a bare front's.
type benchBroker struct {
	addr   string
	topics func() int
	close  func() error
}

func startBenchBroker(b *testing.B, mode string, cfg daemon.BrokerConfig) *benchBroker {
	if mode != "front" {
		d, err := daemon.StartBroker(cfg)
		if err != nil {
			b.Fatal(err)
		}
		return &benchBroker{addr: d.Addr().String(), topics: func() int { return len(d.Core().Topics()) }, close: d.Close}
	}
	st, err := store.Open(cfg.Store)
	if err != nil {
		b.Fatal(err)
	}
	br, err := broker.New(st, st.Meta(), cfg.Broker)
	if err != nil {
		b.Fatal(err)
	}
	front := brokerfront.New(br, brokerfront.Options{})
	srv := remoting.NewServer(remoting.ServerOptions{OnConnClose: front.ConnClosed})
	front.Register(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	return &benchBroker{addr: ln.Addr().String(), topics: func() int { return len(br.Topics()) }, close: func() error {
		br.Close()
		err := srv.Close()
		<-done
		return errors.Join(err, st.Close())
	}}
}

func createTopicsAndRestart(b *testing.B, mode string, n, inflight, conns int) {
	dir := b.TempDir()
	cfg := daemon.BrokerConfig{Store: store.DefaultConfig(dir), Broker: broker.DefaultConfig(), Listen: "127.0.0.1:0"}
	cfg.Store.FS = vfs.OS
	cfg.Broker.BrokerName, cfg.Broker.ClusterName = "broker-a", "DefaultCluster"
	if mode == "daemon-namesrv" {
		ns, err := daemon.StartNameServer("127.0.0.1:0", namesrv.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer ns.Close()
		cfg.NameServers = []string{ns.Addr().String()}
	}
	d := startBenchBroker(b, mode, cfg)
	clients := make([]*remoting.Client, conns)
	for i := range clients {
		clients[i] = remoting.NewClient(remoting.ClientOptions{})
		defer clients[i].Close()
	}

	start := time.Now()
	var (
		next   atomic.Int64
		failed atomic.Int64
		wg     sync.WaitGroup
	)
	for w := range inflight {
		cl := clients[w%conns]
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				req := remoting.NewRequest(17, map[string]string{ // UPDATE_AND_CREATE_TOPIC
					"topic": fmt.Sprintf("bench-topic-%06d", i), "readQueueNums": "4", "writeQueueNums": "4",
					"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
				}, nil)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				resp, err := cl.Invoke(ctx, d.addr, req)
				cancel()
				if err != nil || resp.Code != 0 {
					if failed.Add(1) == 1 {
						b.Errorf("create %d: %v %+v", i, err, resp)
					}
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d creates failed", f, n)
	}
	if got := d.topics(); got < n {
		b.Fatalf("%d topics after %d creates", got, n)
	}
	b.ReportMetric(took.Seconds(), "create-s")
	b.ReportMetric(float64(n)/took.Seconds(), "topics/s")

	closeStart := time.Now()
	if err := d.close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(time.Since(closeStart).Seconds(), "close-s")

	restart := time.Now()
	d = startBenchBroker(b, mode, cfg)
	restarted := time.Since(restart)
	b.ReportMetric(restarted.Seconds(), "restart-s")
	defer d.close()
	if got := d.topics(); got < n {
		b.Fatalf("%d topics after the restart, want %d", got, n)
	}
	b.Logf("%s: %d topics, %d in flight over %d connections: created in %v, restarted in %v",
		mode, n, inflight, conns, took.Round(time.Millisecond), restarted.Round(time.Millisecond))
}
