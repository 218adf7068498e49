package broker

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
)

// TestLeaseTimer: invalid until extended; valid strictly before the
// expiry; a grant of an older heartbeat does not shorten it; Revoke ends
// it at once and a later Extend grants again.
func TestLeaseTimer(t *testing.T) {
	clk := clock.NewManual(t0)
	l := NewLeaseClock(clk)
	if l.Valid() {
		t.Fatal("a new lease is valid before any grant")
	}
	if _, ok := l.Until(); ok {
		t.Fatal("a new lease has an expiry")
	}
	l.Extend(t0.Add(3 * time.Second))
	if !l.Valid() {
		t.Fatal("not valid after a grant until t0+3s")
	}
	l.Extend(t0.Add(time.Second)) // an older heartbeat's grant, answered late
	if u, ok := l.Until(); !ok || !u.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("expiry %v %v after a shorter grant, want t0+3s kept", u, ok)
	}
	clk.Advance(3*time.Second - time.Nanosecond)
	if !l.Valid() {
		t.Fatal("not valid 1ns before the expiry")
	}
	clk.Advance(time.Nanosecond)
	if l.Valid() {
		t.Fatal("valid at the expiry (the expiry is exclusive)")
	}
	l.Extend(clk.Now().Add(3 * time.Second))
	if !l.Valid() {
		t.Fatal("not valid after a fresh grant")
	}
	l.Revoke()
	if l.Valid() {
		t.Fatal("valid after Revoke")
	}
	if _, ok := l.Until(); ok {
		t.Fatal("a revoked lease has an expiry")
	}
	l.Extend(clk.Now().Add(time.Second))
	if !l.Valid() {
		t.Fatal("not valid after a grant that follows Revoke")
	}
}

// TestLeaseTimerRealClockIsMonotonic: on the real clock a lease extended
// from clk.Now() is valid at once and invalid once its (short) duration
// has passed, however the wall clock reads.
func TestLeaseTimerRealClockIsMonotonic(t *testing.T) {
	l := NewLeaseClock(clock.Real)
	l.Extend(time.Now().Add(time.Hour))
	if !l.Valid() {
		t.Fatal("not valid with an hour to run")
	}
	past := time.Now().Add(-time.Millisecond)
	l.Revoke()
	l.Extend(past)
	if l.Valid() {
		t.Fatal("valid with an expiry in the past")
	}
}

// stepLease answers Valid true for its first n calls, false after.
type stepLease struct {
	n     int64
	calls atomic.Int64
}

func (l *stepLease) Valid() bool { return l.calls.Add(1) <= l.n }

func withLease(l Lease) func(*store.Config, *Config) {
	return func(_ *store.Config, c *Config) { c.Lease = l }
}

// TestLeaseExpiredRefusesWritesAtAdmission: a master whose lease is not
// valid refuses sends, batch sends, send-backs and transaction ends with
// SERVICE_NOT_AVAILABLE and a sentence saying why, stores nothing, and
// counts each refusal; once the lease holds again, sends are taken.
func TestLeaseExpiredRefusesWritesAtAdmission(t *testing.T) {
	clk := clock.NewManual(t0)
	l := NewLeaseClock(clk)
	e := newEnv(t, withLease(l), func(_ *store.Config, c *Config) { c.Clock = clk })
	l.Extend(clk.Now().Add(time.Hour))
	e.createTopic("T", 1)
	first := e.send("T", 0, "while the lease holds")
	if first.Status != SendOK {
		t.Fatalf("send with a valid lease: %v", first.Status)
	}
	written := e.st.Durable()
	l.Revoke()

	_, err := e.b.Send(context.Background(), sendReq("T", 0, "fenced"))
	wantKind(t, err, KindServiceUnavailable, "master lease expired", "retries the new master")
	if !errors.Is(err, ErrLeaseExpired) {
		t.Fatalf("refusal %v lacks ErrLeaseExpired", err)
	}
	_, err = e.b.Send(context.Background(), sendReq("Unknown", 0, "fenced, auto-create")) // the slow path
	wantKind(t, err, KindServiceUnavailable, "master lease expired")
	batch := &SendRequest{Topic: "T", QueueID: 0, Batch: true, Body: message.EncodeBatch([]message.BatchItem{{Body: []byte("a")}, {Body: []byte("b")}})}
	_, err = e.b.Send(context.Background(), batch)
	wantKind(t, err, KindServiceUnavailable, "master lease expired")
	_, err = e.b.SendBack(context.Background(), &SendBackRequest{Group: "g", Offset: 0})
	wantKind(t, err, KindServiceUnavailable, "master lease expired")
	wantKind(t, e.b.EndTransaction(EndTransactionRequest{ProducerGroup: "pg"}), KindServiceUnavailable, "master lease expired")
	if got := e.b.LeaseRefusals(); got != 5 {
		t.Fatalf("LeaseRefusals = %d, want 5", got)
	}
	if w := e.st.Durable(); w != written {
		t.Fatalf("the log grew from %d to %d while fenced", written, w)
	}
	if _, ok := e.b.Topic("Unknown"); ok {
		t.Fatal("a fenced send auto-created its topic")
	}

	l.Extend(clk.Now().Add(time.Second))
	if res := e.send("T", 0, "lease back"); res.Status != SendOK {
		t.Fatalf("send after a new grant: %v", res.Status)
	}
}

// TestLeaseNotCheckedOnASlave: a slave refuses as a slave (ErrNotMaster),
// whatever its lease, and that is no lease refusal.
func TestLeaseNotCheckedOnASlave(t *testing.T) {
	e := newEnv(t, withLease(&stepLease{}), func(_ *store.Config, c *Config) { c.BrokerID = 1; c.Role = RoleSlave })
	_, err := e.b.Send(context.Background(), sendReq("T", 0, "x"))
	if !errors.Is(err, ErrNotMaster) || errors.Is(err, ErrLeaseExpired) {
		t.Fatalf("slave's refusal %v, want ErrNotMaster only", err)
	}
	if n := e.b.LeaseRefusals(); n != 0 {
		t.Fatalf("LeaseRefusals = %d on a slave", n)
	}
}

// TestLeaseExpiredDuringSyncReplicationIsNotSendOK: a send admitted under a
// valid lease whose commit point arrives after the lease ran out is
// answered FLUSH_SLAVE_TIMEOUT (stored, in doubt), never SEND_OK.
func TestLeaseExpiredDuringSyncReplicationIsNotSendOK(t *testing.T) {
	f := newFakeRepl()
	clk := clock.NewManual(t0)
	l := NewLeaseClock(clk)
	e := newEnv(t, withRepl(f), withLease(l), func(_ *store.Config, c *Config) {
		c.Clock = clk
		c.ReplicationTimeout = time.Minute // the replication wait never ends first here
	})
	e.createTopic("T", 1)
	l.Extend(clk.Now().Add(3 * time.Second))
	ch := sendAsync(e.b, sendReq("T", 0, "replicated after the lease"))
	end := f.nextPoll(t)
	clk.Advance(3 * time.Second) // the lease runs out while the slaves are slow
	f.set(end, false)
	a := awaitAnswer(t, ch)
	if a.err != nil || a.res.Status != SendFlushSlaveTimeout {
		t.Fatalf("answer %+v %v, want FLUSH_SLAVE_TIMEOUT", a.res, a.err)
	}
	if a.res.MsgID == "" {
		t.Fatal("the in-doubt answer lost its message id (the message is stored)")
	}
	if got := e.b.LeaseRefusals(); got != 1 {
		t.Fatalf("LeaseRefusals = %d, want 1", got)
	}
	// With the lease granted again, the next send is acknowledged.
	l.Extend(clk.Now().Add(3 * time.Second))
	ch = sendAsync(e.b, sendReq("T", 0, "lease back"))
	end = f.nextPoll(t)
	f.set(end, false)
	if a := awaitAnswer(t, ch); a.err != nil || a.res.Status != SendOK {
		t.Fatalf("answer %+v %v with a valid lease, want SEND_OK", a.res, a.err)
	}
}

// TestLeaseExpiredBeforeTheAnswerIsNotSendOK: with async replication (the
// answer follows the local flush) and without a replicator, a send
// admitted under the lease and stored after it ran out is answered
// FLUSH_SLAVE_TIMEOUT; so is a resend answered from the dedup window.
func TestLeaseExpiredBeforeTheAnswerIsNotSendOK(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  func(*store.Config, *Config)
	}{
		{"async-replication", func(_ *store.Config, c *Config) { c.Replicator = newFakeRepl(); c.ReplicationAsync = true }},
		{"no-replicator", func(*store.Config, *Config) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &stepLease{n: 1} // admission sees it valid, the answer not
			e := newEnv(t, tc.opt, withLease(l))
			e.createTopic("T", 1)
			res, err := e.b.Send(context.Background(), sendReq("T", 0, "x", "UNIQ_KEY", "U1"))
			if err != nil || res.Status != SendFlushSlaveTimeout {
				t.Fatalf("answer %+v %v, want FLUSH_SLAVE_TIMEOUT", res, err)
			}
			if e.st.MaxOffset("T", 0) != 1 {
				t.Fatal("the in-doubt send is not stored")
			}
			// The resend: admitted (call 3 valid), answered from the dedup
			// window after the lease ran out (call 4).
			l.n = 3
			res, err = e.b.Send(context.Background(), sendReq("T", 0, "x", "UNIQ_KEY", "U1"))
			if err != nil || res.Status != SendFlushSlaveTimeout {
				t.Fatalf("resend answer %+v %v, want FLUSH_SLAVE_TIMEOUT", res, err)
			}
			if e.st.MaxOffset("T", 0) != 1 {
				t.Fatal("the resend was stored again")
			}
			if got := e.b.LeaseRefusals(); got != 2 {
				t.Fatalf("LeaseRefusals = %d, want 2", got)
			}
		})
	}
}

// TestLeaseExpiredBeforeASendBackIsAnswered: a send-back stored after the
// lease ran out is a SYSTEM_ERROR (the consumer retries it itself), not a
// success.
func TestLeaseExpiredBeforeASendBackIsAnswered(t *testing.T) {
	l := &stepLease{n: 1 << 30}
	e := newEnv(t, withLease(l))
	e.createTopic("T", 1)
	e.subscribe(1, "c1", "g", "T", "*")
	e.send("T", 0, "work")
	m := e.mustPull(pullReq("g", "T", 0, 0).withSub("*")).recs[0]
	l.n = l.calls.Load() + 1 // admission valid, the answer not
	_, err := e.b.SendBack(context.Background(), &SendBackRequest{Offset: m.PhysicalOffset, Group: "g"})
	wantKind(t, err, KindSystemError, "master lease expired")
	if got := e.b.LeaseRefusals(); got != 1 {
		t.Fatalf("LeaseRefusals = %d, want 1", got)
	}
}

// BenchmarkLeaseTimerValid is the cost of one lease check on the real
// clock (a send makes two).
func BenchmarkLeaseTimerValid(b *testing.B) {
	l := NewLeaseClock(clock.Real)
	l.Extend(time.Now().Add(time.Hour))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !l.Valid() {
				b.Error("lease not valid")
				return
			}
		}
	})
}
