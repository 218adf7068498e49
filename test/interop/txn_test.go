package interop

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// txnListener commits "commit", rolls back "rollback" and leaves the rest
// UNKNOWN, committing them when the broker checks back.
type txnListener struct {
	checks sync.Map // body -> *atomic.Int32
}

func (l *txnListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	switch string(m.Body) {
	case "commit":
		return primitive.CommitMessageState
	case "rollback":
		return primitive.RollbackMessageState
	}
	return primitive.UnkonwnState
}

func (l *txnListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	n, _ := l.checks.LoadOrStore(string(m.Body), new(atomic.Int32))
	n.(*atomic.Int32).Add(1)
	if string(m.Body) == "rollback" {
		return primitive.RollbackMessageState
	}
	return primitive.CommitMessageState
}

func (l *txnListener) checked(body string) int32 {
	n, ok := l.checks.Load(body)
	if !ok {
		return 0
	}
	return n.(*atomic.Int32).Load()
}

// newTransactionProducer starts a transactional producer of a new group
// that answers with lis; it is shut down when the test ends.
func newTransactionProducer(t *testing.T, p *petrel, lis primitive.TransactionListener) rocketmq.TransactionProducer {
	t.Helper()
	tp, err := rocketmq.NewTransactionProducer(lis,
		producer.WithNsResolver(p.resolver()),
		producer.WithGroupName(uniqueName(t, "tpg")),
		producer.WithInstanceName(uniqueName(t, "tpi")),
		producer.WithRetry(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown() })
	return tp
}

// TestTransactions: a committed transaction is consumed once; one left
// UNKNOWN is checked back (after the 6 s transaction timeout), committed
// by the listener and then consumed once; a rolled-back one is never
// consumed.
func TestTransactions(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	plain := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, plain, topic)

	lis := &txnListener{}
	tp := newTransactionProducer(t, p, lis)

	col := newCollector()
	c := newPushConsumer(t, p, uniqueName(t, "cg"))
	startPushConsumer(t, c, topic, consumer.MessageSelector{}, col, "c")

	for _, body := range []string{"commit", "rollback", "unknown"} {
		res, err := tp.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte(body)))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("transactional send %s: %+v %v", body, res, err)
		}
	}
	col.waitAll(t, consumeTimeout, "the committed and the checked-back transactions", []string{"commit", "unknown"})
	if lis.checked("unknown") < 1 {
		t.Fatal("the UNKNOWN transaction was consumed without a check-back")
	}
	// Give a wrongly visible rollback or a second commit time to show.
	sendAllSync(t, plain, topic, []string{"marker"}, nil)
	col.waitAll(t, consumeTimeout, "a later plain message", []string{"marker"})
	for _, d := range col.snapshot() {
		if d.body == "rollback" {
			t.Fatal("a rolled-back transaction was consumed")
		}
	}
	counts := map[string]int{}
	for _, d := range col.snapshot() {
		counts[d.body]++
	}
	if counts["commit"] != 1 || counts["unknown"] != 1 {
		t.Fatalf("deliveries %v, want commit and unknown once each", counts)
	}
}

// TestHalfTransactionSurvivesRestart: a transaction left UNKNOWN when the
// broker stops (SIGTERM) or is killed (SIGKILL, sync flush) is checked back
// after the restart, once the producer is heard from again, and its
// message is consumed once.
func TestHalfTransactionSurvivesRestart(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(map[bool]string{false: "SIGTERM", true: "SIGKILL"}[kill], func(t *testing.T) {
			t.Parallel()
			halfAcrossRestart(t, kill)
		})
	}
}

func halfAcrossRestart(t *testing.T, kill bool) {
	// A check-back that finds no producer of the group (it has not
	// reconnected since the restart) is due again one check interval
	// later: 10 s here instead of the default minute.
	p := startPetrel(t, serverOptions{extraArgs: []string{"--transaction-check-interval", "10s"}})
	plain := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, plain, topic)
	lis := &txnListener{}
	tp := newTransactionProducer(t, p, lis)
	res, err := tp.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte("pending")))
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("transactional send: %+v %v", res, err)
	}
	if kill {
		p.kill()
	} else {
		p.stop()
	}
	p.restart()
	waitRoute(t, p.nsAddr, topic)
	col := newCollector()
	c := newPushConsumer(t, p, uniqueName(t, "cg"))
	startPushConsumer(t, c, topic, consumer.MessageSelector{}, col, "c")
	col.waitAll(t, restartTimeout, "the transaction checked back after the restart", []string{"pending"})
	if lis.checked("pending") < 1 {
		t.Fatal("consumed without a check-back")
	}
	sendAllSync(t, plain, topic, []string{"marker"}, nil)
	col.waitAll(t, consumeTimeout, "a later plain message", []string{"marker"})
	n := 0
	for _, d := range col.snapshot() {
		if d.body == "pending" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the transaction's message was consumed %d times, want once", n)
	}
}
