package interop

// The official 5.x Go client's Producer on a slave's gRPC endpoint: the
// slave forwards sends and transaction ends to its master, and answers
// HA_NOT_AVAILABLE once the master is gone.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

// TestGRPCProducerOnASlave: a group master + slave (sync replication),
// the slave with a gRPC endpoint. A 5.x producer on the slave's endpoint
// sends 10 messages (SEND_OK: the slave holds them, the commit point covers
// them), a transaction it commits, one it rolls back and one it leaves
// open, which the master checks back through the slave's front and the
// producer's checker commits: the master's queues then hold the 10 and
// the two committed ones, and so do the slave's (replicated). Then the master is killed: a send through the slave fails
// with HA_NOT_AVAILABLE (50002) naming the master.
func TestGRPCProducerOnASlave(t *testing.T) {
	c := startHACluster(t, "sync", "broker-a")
	c.waitInSync("broker-a")
	master, slave := c.brokers["broker-a"][0], c.brokers["broker-a"][1]

	// The master again, checking undecided transactions back after 1 s.
	if err := master.signal(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	master.args = append(master.args, "--transaction-timeout", "1s", "--transaction-check-interval", "1s")
	master.start()
	c.waitInSync("broker-a")

	grpcAddr := c.restartWithGRPC(slave)
	topic := c.topicOnSlave(slave)

	var checked atomic.Value
	checker := &rmq.TransactionChecker{Check: func(mv *rmq.MessageView) rmq.TransactionResolution {
		checked.Store(string(mv.GetBody()))
		if string(mv.GetBody()) == "check" {
			return rmq.COMMIT
		}
		return rmq.UNKNOWN
	}}
	prod, err := rmq.NewProducer(rmq5Config(&petrel{grpcAddr: grpcAddr}, ""), rmq.WithTopics(topic), rmq.WithTransactionChecker(checker))
	if err != nil {
		t.Fatal(err)
	}
	initIsolated(t, prod)
	if err := prod.Start(); err != nil {
		t.Fatalf("start the producer on the slave: %v", err)
	}
	// Not stopped: see newProducer5 (the client's race with a checker).

	send := func(m *rmq.Message, tx rmq.Transaction) (*rmq.SendReceipt, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		var rs []*rmq.SendReceipt
		var err error
		if tx != nil {
			rs, err = prod.SendWithTransaction(ctx, m, tx)
		} else {
			rs, err = prod.Send(ctx, m)
		}
		if err != nil {
			return nil, err
		}
		if len(rs) != 1 || rs[0].MessageID == "" {
			return nil, fmt.Errorf("receipts %v", rs)
		}
		return rs[0], nil
	}
	const n = 10
	for i := range n {
		if _, err := send(&rmq.Message{Topic: topic, Body: []byte("m" + strconv.Itoa(i))}, nil); err != nil {
			t.Fatalf("send %d through the slave: %v", i, err)
		}
	}
	commit := prod.BeginTransaction()
	if _, err := send(&rmq.Message{Topic: topic, Body: []byte("commit")}, commit); err != nil {
		t.Fatalf("transactional send through the slave: %v", err)
	}
	if err := commit.Commit(); err != nil {
		t.Fatalf("commit through the slave: %v", err)
	}
	rollback := prod.BeginTransaction()
	if _, err := send(&rmq.Message{Topic: topic, Body: []byte("rollback")}, rollback); err != nil {
		t.Fatalf("transactional send through the slave: %v", err)
	}
	if err := rollback.RollBack(); err != nil {
		t.Fatalf("rollback through the slave: %v", err)
	}

	// Left open: the master checks it back through the slave's front,
	// whose producer commits it.
	if _, err := send(&rmq.Message{Topic: topic, Body: []byte("check")}, prod.BeginTransaction()); err != nil {
		t.Fatalf("transactional send through the slave: %v", err)
	}

	// The master's and the slave's queues hold the 10, the committed one
	// and the checked one.
	for _, b := range []*proc{master, slave} {
		waitFor(t, 60*time.Second, fmt.Sprintf("%s's queues of %s to hold %d messages", b.name, topic, n+2), func() (bool, string) {
			var sum int64
			for q := range 2 {
				resp, err := rawCall(c.addr[b], 30, map[string]string{"topic": topic, "queueId": strconv.Itoa(q)}, 5*time.Second)
				if err != nil {
					return false, err.Error()
				}
				off, _ := strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
				sum += off
			}
			return sum == n+2, fmt.Sprintf("max offsets sum to %d (checker last called for %v)", sum, checked.Load())
		})
	}
	if checked.Load() != "check" {
		t.Fatalf("the checker was last called for %v, want the open transaction", checked.Load())
	}

	if err := master.signal(syscall.SIGKILL, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	_, err = send(&rmq.Message{Topic: topic, Body: []byte("after")}, nil)
	var st *rmq.ErrRpcStatus
	if !errors.As(err, &st) || st.GetCode() != 50002 || !strings.Contains(st.GetMessage(), "master") {
		t.Fatalf("send through the slave with its master killed: %v, want HA_NOT_AVAILABLE (50002) naming the master", err)
	}
}
