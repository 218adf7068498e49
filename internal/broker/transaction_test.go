package broker

import (
	"context"
	"testing"

	"github.com/petrelmq/petrel/internal/broker/txn"
	"github.com/petrelmq/petrel/internal/message"
)

// sendHalf stores a prepared send of producer group pg with UNIQ_KEY id.
func (e *env) sendHalf(topic, pg, id, body string) SendResult {
	e.t.Helper()
	req := sendReq(topic, 0, body, message.PropertyUniqKey, id, message.PropertyTransactionFlag, "true",
		message.PropertyProducerGroup, pg)
	req.ProducerGroup = pg
	res, err := e.b.Send(context.Background(), req)
	if err != nil {
		e.t.Fatalf("prepared send %s: %v", id, err)
	}
	return res
}

// TestFindHalfByTransactionID: a half is found by its UNIQ_KEY at once
// (no wait for the dispatcher by the caller), after a restart, and for
// another group's request (End then refuses it); an unknown id is
// KindQueryNotFound. The offsets it gives commit the transaction.
func TestFindHalfByTransactionID(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 1)
	res := e.sendHalf("T1", "T1", "TX-1", "half one")
	_, phys, err := message.ParseOffsetID(res.MsgID)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	gotPhys, gotQO, err := e.b.FindHalf(ctx, "T1", "TX-1")
	if err != nil || gotPhys != phys || gotQO != res.QueueOffset {
		t.Fatalf("FindHalf = %d, %d, %v; want the half at %d, queue offset %d", gotPhys, gotQO, err, phys, res.QueueOffset)
	}
	if p, _, err := e.b.FindHalf(ctx, "other", "TX-1"); err != nil || p != phys {
		t.Fatalf("another group's lookup = %d, %v; want the half (End refuses it)", p, err)
	}
	_, _, err = e.b.FindHalf(ctx, "T1", "TX-NONE")
	wantKind(t, err, KindQueryNotFound, "TX-NONE")

	e.restart()
	gotPhys, gotQO, err = e.b.FindHalf(ctx, "T1", "TX-1")
	if err != nil || gotPhys != phys || gotQO != res.QueueOffset {
		t.Fatalf("after a restart FindHalf = %d, %d, %v; want %d, %d", gotPhys, gotQO, err, phys, res.QueueOffset)
	}
	if err := e.b.EndTransaction(EndTransactionRequest{ProducerGroup: "T1", TranStateTableOffset: gotQO,
		CommitLogOffset: gotPhys, CommitOrRollback: txn.EndCommit}); err != nil {
		t.Fatalf("commit by the found offsets: %v", err)
	}
	e.waitMax("T1", 0, 1)
	recs, err := e.b.QueryByKey("T1", "TX-1", 0, 1<<62, 4)
	if err != nil || len(recs) != 1 {
		t.Fatalf("committed message by key: %d, %v", len(recs), err)
	}
	if v, _ := recs[0].Property(txn.PropertyTransactionID); string(v) != "TX-1" {
		t.Fatalf("committed message has __transactionId__ %q, want TX-1", v)
	}
}
