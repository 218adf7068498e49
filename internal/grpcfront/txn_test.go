package grpcfront

import (
	"strings"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/message"
)

func txnMsg(topic, id, body string) *v2.Message {
	m := msg(topic, id, body)
	m.SystemProperties.MessageType = v2.MessageType_TRANSACTION
	return m
}

func (e *env) end(topic, msgID, txID string, res v2.TransactionResolution) *v2.Status {
	e.t.Helper()
	resp, err := e.c.EndTransaction(e.ctx("p1"), &v2.EndTransactionRequest{Topic: &v2.Resource{Name: topic},
		MessageId: msgID, TransactionId: txID, Resolution: res})
	if err != nil {
		e.t.Fatalf("end transaction: %v", err)
	}
	return resp.Status
}

func TestTransactionCommitAndRollback(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 1)
	e.telemetry("p1", producerSettings("T1"))
	keep := e.send("p1", txnMsg("T1", "ID-KEEP", "commit me"))
	drop := e.send("p1", txnMsg("T1", "ID-DROP", "roll me back"))
	undecided := e.send("p1", txnMsg("T1", "ID-OPEN", "think"))
	for _, en := range []*v2.SendResultEntry{keep, drop, undecided} {
		if code(en.Status) != v2.Code_OK || en.TransactionId != en.MessageId {
			t.Fatalf("transactional send: %v, want OK with the message id as transaction id", en)
		}
	}
	e.dispatched()
	if n := e.st.MaxOffset("T1", 0); n != 0 {
		t.Fatalf("half messages are visible (%d records)", n)
	}
	if st := e.end("T1", "ID-OPEN", undecided.TransactionId, v2.TransactionResolution_TRANSACTION_RESOLUTION_UNSPECIFIED); code(st) != v2.Code_OK {
		t.Fatalf("unknown resolution: %v", st)
	}
	if st := e.end("T1", "ID-DROP", drop.TransactionId, v2.TransactionResolution_ROLLBACK); code(st) != v2.Code_OK {
		t.Fatalf("rollback: %v", st)
	}
	if st := e.end("T1", "ID-KEEP", keep.TransactionId, v2.TransactionResolution_COMMIT); code(st) != v2.Code_OK {
		t.Fatalf("commit: %v", st)
	}
	// A repeat is answered OK and stores nothing more.
	if st := e.end("T1", "ID-KEEP", keep.TransactionId, v2.TransactionResolution_COMMIT); code(st) != v2.Code_OK {
		t.Fatalf("repeated commit: %v", st)
	}
	recs := e.awaitRecords("T1", 1)[0]
	if len(recs) != 1 || string(recs[0].Body()) != "commit me" || prop(recs[0], message.PropertyUniqKey) != "ID-KEEP" {
		t.Fatalf("topic holds %d records, first %q", len(recs), recs[0].Body())
	}
	delivered := toMessage(recs[0], &v2.Resource{Name: "T1"})
	if got := delivered.SystemProperties.MessageType; got != v2.MessageType_TRANSACTION {
		t.Fatalf("committed message type %v", got)
	}
	// As RocketMQ delivers it: the transaction id is a user property.
	if got := delivered.UserProperties["__transactionId__"]; got != "ID-KEEP" {
		t.Fatalf("committed message has user properties %v, want __transactionId__=ID-KEEP", delivered.UserProperties)
	}
	if n := e.b.OpenTransactions(); n > 1 {
		t.Fatalf("%d open transactions, want at most the undecided one", n)
	}
}

func TestEndTransactionRefusesBadIDs(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 1)
	e.createTopic("T2", 1)
	sent := e.send("p1", txnMsg("T1", "ID-1", "x"))
	for _, c := range []struct {
		topic, id string
		want      v2.Code
		says      string
	}{
		{"T1", "", v2.Code_INVALID_TRANSACTION_ID, "no transaction id"},
		{"T1", "not-a-transaction", v2.Code_INVALID_TRANSACTION_ID, "names no half message"},
		{"T1", "0000000000000100" + "0000000000000007", v2.Code_INVALID_TRANSACTION_ID, "names no half message"},
		{"T1", "bad\x01id", v2.Code_INVALID_TRANSACTION_ID, "not a transaction id"},
		{"T2", sent.TransactionId, v2.Code_INVALID_TRANSACTION_ID, "another topic"},
		{"", sent.TransactionId, v2.Code_ILLEGAL_TOPIC, "names no topic"},
	} {
		st := e.end(c.topic, "ID-1", c.id, v2.TransactionResolution_COMMIT)
		if code(st) != c.want || !strings.Contains(st.Message, c.says) {
			t.Errorf("topic %q id %q: %v, want %v saying %q", c.topic, c.id, st, c.want, c.says)
		}
	}
	e.dispatched()
	if n := e.st.MaxOffset("T1", 0); n != 0 {
		t.Fatalf("a refused end committed the message (%d records)", n)
	}
}

func TestTransactionCheckBackOverTelemetry(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 1)
	stream, _ := e.telemetry("p1", producerSettings("T1"))
	other, _ := e.telemetry("c1", consumerSettings("g1", "T1", 0))
	if got := e.send("p1", txnMsg("T1", "ID-CHECK", "check me")); code(got.Status) != v2.Code_OK {
		t.Fatalf("send: %v", got.Status)
	}

	cmds := make(chan *v2.TelemetryCommand, 4)
	go func() {
		for {
			cmd, err := stream.Recv()
			if err != nil {
				close(cmds)
				return
			}
			cmds <- cmd
		}
	}()
	// The first check round after the transaction timeout sends the check.
	// The half must be in its queue first: a round that runs before it is
	// dispatched finds nothing, and the dispatch then arms the next round a
	// whole timeout after the advanced clock.
	e.dispatched()
	e.clk.Advance(e.b.Config().TransactionCheckInterval)
	var chk *v2.RecoverOrphanedTransactionCommand
	select {
	case cmd := <-cmds:
		chk = cmd.GetRecoverOrphanedTransactionCommand()
		if chk == nil {
			t.Fatalf("got %v, want a RecoverOrphanedTransactionCommand", cmd)
		}
	case <-time.After(waitLimit):
		t.Fatal("no check-back on the producer's Telemetry stream")
	}
	sp := chk.Message.GetSystemProperties()
	if sp == nil || sp.MessageId != "ID-CHECK" || sp.MessageType != v2.MessageType_TRANSACTION ||
		chk.Message.Topic.GetName() != "T1" || string(chk.Message.Body) != "check me" || chk.TransactionId == "" {
		t.Fatalf("check-back %v", chk)
	}
	if chk.TransactionId != "ID-CHECK" {
		t.Fatalf("check-back transaction id %q, want the message id ID-CHECK (RocketMQ's)", chk.TransactionId)
	}
	// The consumer's stream was not sent the check: it is still answered.
	if r := e.settings(other, consumerSettings("g1", "T1", 0)); code(r.Status) != v2.Code_OK {
		t.Fatalf("consumer stream: %v", r.Status)
	}
	// The producer answers with the check's transaction id.
	if st := e.end("T1", sp.MessageId, chk.TransactionId, v2.TransactionResolution_COMMIT); code(st) != v2.Code_OK {
		t.Fatalf("commit from the check: %v", st)
	}
	recs := e.awaitRecords("T1", 1)[0]
	if string(recs[0].Body()) != "check me" {
		t.Fatalf("committed %q", recs[0].Body())
	}
}

// TestCheckBackSenderIgnoresOtherConnections: a check for a connection
// without a session here (another front's, or none) is not taken.
func TestCheckBackSenderIgnoresOtherConnections(t *testing.T) {
	e := newEnv(t)
	e.telemetry("p1", producerSettings("T1"))
	other := e.b.RegisterConn(broker.ConnInfo{Protocol: broker.ProtocolRemoting}, nil)
	for _, conn := range []uint64{other, 42, 1<<62 + 1000} {
		if e.s.sendCheck(checkFor(conn)) {
			t.Errorf("check for connection %d was taken by the gRPC front", conn)
		}
	}
}

func checkFor(conn uint64) broker.TransactionCheck {
	return broker.TransactionCheck{Conn: conn, Group: "T1"}
}
