package brokerfront_test

import (
	"context"
	"fmt"
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
// PETREL_BENCH_TOPICS (default 10000) sets the number of topics and
// PETREL_BENCH_INFLIGHT (default 256) the requests in flight.
// "no-namesrv" measures the broker alone; "namesrv" with a name server the
// broker registers every change with.
func BenchmarkCreateTopics(b *testing.B) {
	n := envInt(b, "PETREL_BENCH_TOPICS", 10000)
	inflight := envInt(b, "PETREL_BENCH_INFLIGHT", 256)
	for _, withNS := range []bool{false, true} {
		name := "no-namesrv"
		if withNS {
			name = "namesrv"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				createTopicsAndRestart(b, n, inflight, withNS)
			}
		})
	}
}

func createTopicsAndRestart(b *testing.B, n, inflight int, withNS bool) {
	dir := b.TempDir()
	cfg := daemon.BrokerConfig{Store: store.DefaultConfig(dir), Broker: broker.DefaultConfig(), Listen: "127.0.0.1:0"}
	cfg.Store.FS = vfs.OS
	cfg.Broker.BrokerName, cfg.Broker.ClusterName = "broker-a", "DefaultCluster"
	if withNS {
		ns, err := daemon.StartNameServer("127.0.0.1:0", namesrv.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer ns.Close()
		cfg.NameServers = []string{ns.Addr().String()}
	}
	d, err := daemon.StartBroker(cfg)
	if err != nil {
		b.Fatal(err)
	}
	addr := d.Addr().String()
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()

	start := time.Now()
	var (
		next   atomic.Int64
		failed atomic.Int64
		wg     sync.WaitGroup
	)
	for range inflight {
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
				resp, err := cl.Invoke(ctx, addr, req)
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
	if got := len(d.Core().Topics()); got < n {
		b.Fatalf("%d topics after %d creates", got, n)
	}
	b.ReportMetric(took.Seconds(), "create-s")
	b.ReportMetric(float64(n)/took.Seconds(), "topics/s")

	closeStart := time.Now()
	if err := d.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(time.Since(closeStart).Seconds(), "close-s")

	restart := time.Now()
	d, err = daemon.StartBroker(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(time.Since(restart).Seconds(), "restart-s")
	defer d.Close()
	if got := len(d.Core().Topics()); got < n {
		b.Fatalf("%d topics after the restart, want %d", got, n)
	}
	b.Logf("%d topics, %d in flight, name server %v: created in %v, restarted in %v",
		n, inflight, withNS, took.Round(time.Millisecond), time.Since(restart).Round(time.Millisecond))
}
