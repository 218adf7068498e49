//go:build verifyfault

package broker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker/txn"
	"github.com/petrelmq/petrel/internal/faults"
	"github.com/petrelmq/petrel/internal/message"
)

// storedBodies reads every record of a queue from the store (not through
// Pull, which the reorder fault changes).
func (e *env) storedBodies(topic string, qid int32) []string {
	e.t.Helper()
	if err := e.st.WaitDispatched(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for off := int64(0); off < e.st.MaxOffset(topic, qid); {
		res, err := e.st.GetMessages(topic, qid, off, 256, 1<<20, nil)
		if err != nil {
			e.t.Fatal(err)
		}
		res.Records(func(r message.Record) { out = append(out, string(r.Body())) })
		off = res.NextOffset
		res.Release()
	}
	return out
}

func TestFaultLoseAckAcknowledgesOneInNWithoutStoring(t *testing.T) {
	t.Setenv(faults.EnvVar, "lose-ack=10")
	e := newDiskEnv(t)
	e.createTopic("T", 1)
	var acked, lost []string
	var lostOffsets []int64
	for i := 1; i <= 50; i++ {
		body := fmt.Sprintf("m%02d", i)
		res, err := e.b.Send(context.Background(), sendReq("T", 0, body, message.PropertyUniqKey, "U"+body))
		if err != nil || res.Status != SendOK || res.MsgID == "" {
			t.Fatalf("send %s: %+v, %v; want SEND_OK with a message id", body, res, err)
		}
		if i%10 == 0 {
			lost = append(lost, body)
			lostOffsets = append(lostOffsets, res.QueueOffset)
		} else {
			acked = append(acked, body)
		}
	}
	got := e.storedBodies("T", 0)
	if !slices.Equal(got, acked) {
		t.Fatalf("stored %v;\nwant every acknowledged send but %v", got, lost)
	}
	// Each lost send was answered with the queue's max offset as dispatched
	// then: at most the offset the next stored send got (dispatch may lag
	// the acknowledgement of the sends before it).
	for k, off := range lostOffsets {
		if next := int64(9 * (k + 1)); off < 0 || off > next {
			t.Errorf("lost send %s answered queue offset %d; want one in [0, %d]", lost[k], off, next)
		}
	}
	if e.b.faults.lose.Hits() != 5 {
		t.Fatalf("lose-ack hits %d; want 5", e.b.faults.lose.Hits())
	}
}

func TestFaultLoseAckInOneSendBatchKeepsTheOthersStored(t *testing.T) {
	t.Setenv(faults.EnvVar, "lose-ack=10")
	e := newEnv(t)
	e.createTopic("T", 1)
	reqs := make([]*SendRequest, 25)
	for i := range reqs {
		reqs[i] = sendReq("T", 0, fmt.Sprintf("m%02d", i+1))
	}
	answered := make(chan int, len(reqs))
	e.b.SendBatch(context.Background(), reqs, func(i int, res SendResult, err error) {
		if err != nil || res.Status != SendOK {
			t.Errorf("send %d: %+v, %v", i, res, err)
		}
		answered <- i
	})
	for range reqs {
		<-answered
	}
	var want []string
	for i := range reqs {
		if (i+1)%10 != 0 {
			want = append(want, string(reqs[i].Body))
		}
	}
	if got := e.storedBodies("T", 0); !slices.Equal(got, want) {
		t.Fatalf("stored %v; want %v (m10 and m20 lost)", got, want)
	}
}

func TestFaultLoseAckReleasesTheDedupClaim(t *testing.T) {
	t.Setenv(faults.EnvVar, "lose-ack=2")
	e := newEnv(t)
	e.createTopic("T", 1)
	send := func(body, uk string) SendResult {
		t.Helper()
		res, err := e.b.Send(context.Background(), sendReq("T", 0, body, message.PropertyUniqKey, uk))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	send("a", "UA")          // 1st: stored
	send("b", "UB")          // 2nd: lost
	again := send("b", "UB") // 3rd: a resend, which the window must not answer
	if hits := e.b.DedupStats().Hits; hits != 0 {
		t.Fatalf("dedup hits %d after resending a lost send; want 0 (nothing of it was stored)", hits)
	}
	if got := e.storedBodies("T", 0); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("stored %v; want [a b]: the resend of the lost send is stored", got)
	}
	// The resend, stored, is now what the window remembers.
	dup := send("b", "UB") // 4th: lost-ack would pick it, but it is a duplicate
	if e.b.DedupStats().Hits != 1 || dup.QueueOffset != again.QueueOffset || dup.MsgID != again.MsgID {
		t.Fatalf("second resend: %+v (hits %d); want the stored resend's answer %+v", dup, e.b.DedupStats().Hits, again)
	}
}

func TestFaultLoseAckNeverLosesTransactionalHalves(t *testing.T) {
	t.Setenv(faults.EnvVar, "lose-ack=1")
	e := newEnv(t)
	e.createTopic("T", 1)
	for i := range 3 {
		if _, err := e.b.Send(context.Background(), sendReq("T", 0, fmt.Sprint("h", i), message.PropertyTransactionFlag, "true")); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.storedBodies(txn.HalfTopic, 0); len(got) != 3 {
		t.Fatalf("halves stored: %v; want all 3", got)
	}
	if _, err := e.b.Send(context.Background(), sendReq("T", 0, "plain")); err != nil {
		t.Fatal(err)
	}
	if got := e.storedBodies("T", 0); len(got) != 0 {
		t.Fatalf("stored %v; want the plain send lost at 1 in 1", got)
	}
}

func TestFaultReorderReversesEachPullAnswer(t *testing.T) {
	t.Setenv(faults.EnvVar, "reorder")
	e := newEnv(t)
	e.createTopic("T", 2)
	for i := range 5 {
		e.send("T", 0, fmt.Sprint("k", i))
	}
	e.send("T", 1, "alone")
	e.subscribe(1, "c1", "g", "T", "*")
	p := e.mustPull(pullReq("g", "T", 0, 0))
	if want := []string{"k4", "k3", "k2", "k1", "k0"}; !slices.Equal(p.bodies, want) {
		t.Fatalf("pulled %v; want %v", p.bodies, want)
	}
	for i, m := range p.recs {
		if m.QueueOffset != int64(4-i) {
			t.Fatalf("record %d has queue offset %d; want %d (each record keeps its own)", i, m.QueueOffset, 4-i)
		}
	}
	if p.res.NextBeginOffset != 5 || p.res.Status != PullFound {
		t.Fatalf("answer %+v; want FOUND with next offset 5", p.res)
	}
	// An answer of one record has no order to change: it is held back
	// ("no new message" at the same offset) for reorderHold, so that a
	// consumer that keeps up gets several records at once, then given.
	if p := e.mustPull(pullReq("g", "T", 1, 0)); len(p.bodies) != 0 || p.res.Status != PullNoNewMsg || p.res.NextBeginOffset != 0 {
		t.Fatalf("first pull of a lone record: %v, %+v; want it held back (no new message at offset 0)", p.bodies, p.res)
	}
	e.clk.Advance(reorderHold - time.Millisecond)
	if p := e.mustPull(pullReq("g", "T", 1, 0)); len(p.bodies) != 0 {
		t.Fatalf("pulled %v before the hold ended; want nothing", p.bodies)
	}
	e.clk.Advance(time.Millisecond)
	if p := e.mustPull(pullReq("g", "T", 1, 0)); !slices.Equal(p.bodies, []string{"alone"}) {
		t.Fatalf("pulled %v once the hold ended; want [alone]", p.bodies)
	}
	// Nothing is stored out of order.
	if got := e.storedBodies("T", 0); !slices.Equal(got, []string{"k0", "k1", "k2", "k3", "k4"}) {
		t.Fatalf("stored %v", got)
	}
}

func TestFaultNoFaultsWithoutASpec(t *testing.T) {
	t.Setenv(faults.EnvVar, "")
	e := newEnv(t)
	e.createTopic("T", 1)
	for i := range 20 {
		e.send("T", 0, fmt.Sprint("m", i))
	}
	e.subscribe(1, "c1", "g", "T", "*")
	p := e.mustPull(pullReq("g", "T", 0, 0))
	if len(p.bodies) != 20 || p.bodies[0] != "m0" || p.bodies[19] != "m19" {
		t.Fatalf("pulled %v; want m0..m19 in order", p.bodies)
	}
}

func TestFaultABadSpecStopsTheBroker(t *testing.T) {
	e := newEnv(t)
	t.Setenv(faults.EnvVar, "lose-ack=0")
	// initFaults runs before New opens anything, so this second broker
	// over the same stores changes nothing.
	b, err := New(e.st, e.md, e.bcfg)
	if err == nil {
		b.Close()
		t.Fatal("New with a bad PETREL_TEST_FAULTS succeeded; want an error")
	}
	if !strings.Contains(err.Error(), "PETREL_TEST_FAULTS: faults: lose-ack=0") {
		t.Fatalf("err = %v; want it to name the variable and the entry", err)
	}
}
