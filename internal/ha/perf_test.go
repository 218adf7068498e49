package ha

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/petrelmq/petrel/internal/ha/wire"
	"github.com/petrelmq/petrel/internal/logtest"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/vfs"
)

func (h *hostile) ack(a wire.Ack) {
	if err := wire.WriteFrame(h.nc, wire.AppendAck(nil, a)); err != nil {
		h.t.Fatal(err)
	}
}

// An Ack between fetches moves the commit point at once, with no fetch
// after it and no answer to it; an Ack that moves backwards, or one sent
// before the handshake, costs the peer its connection.
func TestAckFrameMovesTheCommitPoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, syncCfg(1), big)
		end := c.put(0)
		h := c.dialHostile("peer")
		defer h.nc.Close()
		h.fetch(wire.Fetch{Group: "g", ReplicaID: 4, Offset: big, Durable: big, MaxBytes: 1000, MaxWait: time.Second})
		r, ok := h.next()
		if !ok || r.Err != wire.OK || r.Base+int64(len(r.Data)) != end {
			t.Fatalf("first answer %+v ok=%v", r, ok)
		}
		h.fetch(wire.Fetch{Group: "g", ReplicaID: 4, Offset: big, Durable: big, MaxBytes: 1000, MaxWait: time.Second})
		synctest.Wait()
		if hw := c.tr.HW(); hw >= end {
			t.Fatalf("HW %d before any ack of the record ending at %d", hw, end)
		}
		h.ack(wire.Ack{Offset: end, Durable: end})
		synctest.Wait()
		if hw := c.tr.HW(); hw != end {
			t.Fatalf("HW %d after the durable ack of %d", hw, end)
		}
		// The parked fetch answers with the new HW (the long poll pushes
		// it); the Ack itself gets no answer.
		// (An answer pushing an older HW may come first; the fetch asks
		// for the HW in case both fetches were answered already.)
		h.fetch(wire.Fetch{Group: "g", ReplicaID: 4, Offset: end, Durable: end, MaxBytes: 1000, MaxWait: time.Second})
		for r.HW != end {
			if r, ok = h.next(); !ok || r.Err != wire.OK || len(r.Data) != 0 || r.HW > end {
				t.Fatalf("answer after the ack %+v ok=%v", r, ok)
			}
		}
		h.ack(wire.Ack{Offset: end, Durable: end - 1})
		for range 3 { // the fetches parked before it are answered first
			if r, ok = h.next(); !ok || r.Err != wire.OK {
				break
			}
		}
		if !ok || r.Err != wire.InvalidRequest {
			t.Fatalf("backwards ack: answer %v ok=%v, want InvalidRequest", r.Err, ok)
		}
		if _, ok := h.next(); ok {
			t.Fatal("the master kept the connection of a backwards ack")
		}

		h2 := c.dialHostile("peer2")
		defer h2.nc.Close()
		h2.ack(wire.Ack{Offset: big, Durable: big})
		if r, ok := h2.next(); !ok || r.Err != wire.InvalidRequest {
			t.Fatalf("ack before the handshake: answer %v ok=%v, want InvalidRequest", r.Err, ok)
		}
	})
}

// With Linger, a parked fetch woken by a small write waits for more bytes
// (up to Linger): two writes 1 ms apart come in one response; without it,
// the first write is answered alone.
func TestLingerShipsSmallWritesTogether(t *testing.T) {
	for _, linger := range []time.Duration{0, 10 * time.Millisecond} {
		t.Run(linger.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				runtime.GC()
				runtime.GC()
				c := &cluster{t: t, net: netx.NewMem(), logs: &logtest.Buffer{}, trCfg: syncCfg(0), slaves: map[int64]*node{},
					mfs: vfs.NewMem(), mlog: newMemLog(0, true), linger: linger}
				c.startMaster()
				t.Cleanup(c.stop)
				h := c.dialHostile("peer")
				defer h.nc.Close()
				f := wire.Fetch{Group: "g", ReplicaID: 2, MaxBytes: 1000, MaxWait: time.Second}
				h.fetch(f)
				if r, ok := h.next(); !ok || r.Err != wire.OK || len(r.Data) != 0 {
					t.Fatalf("handshake answer %+v ok=%v", r, ok) // at once: the HW it carries is news
				}
				h.fetch(f)
				synctest.Wait() // parked: nothing to send
				first := c.put(0)
				time.Sleep(time.Millisecond)
				second := c.put(1)
				r, ok := h.next()
				if !ok || r.Err != wire.OK || r.Base != 0 {
					t.Fatalf("answer %+v ok=%v", r, ok)
				}
				want := first
				if linger > 0 {
					want = second
				}
				if got := int64(len(r.Data)); got != want {
					t.Fatalf("response of %d bytes, want %d (writes end at %d and %d)", got, want, first, second)
				}
				if !bytes.Equal(r.Data, c.mlog.Bytes(0, want)) {
					t.Fatal("data differs from the master's log")
				}
			})
		})
	}
}

// asyncLog is a memLog that answers its appends later, from its own
// goroutine (as the store's writer and flusher do), so the slave hands it
// the next chunks before the previous ones are durable.
type asyncLog struct {
	*memLog
	mu   sync.Mutex
	q    []func()
	wake chan struct{}
	stop chan struct{}
	seen int // the most appends unanswered at once
	// hold, when set, keeps every append unanswered until it is closed.
	hold chan struct{}
	// restarts counts ResetAt calls; restartPending the appends still
	// unanswered at the worst of them.
	restarts, restartPending int
}

// ResetAt notes how many appends are still unanswered.
func (a *asyncLog) ResetAt(off int64) error {
	a.mu.Lock()
	a.restarts++
	a.restartPending = max(a.restartPending, len(a.q))
	a.mu.Unlock()
	return a.memLog.ResetAt(off)
}

// newAsyncLog starts l's answering goroutine, stopped when the test ends
// (after the cleanups registered later, such as the cluster's).
func newAsyncLog(t *testing.T, l *memLog) *asyncLog {
	a := &asyncLog{memLog: l, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.run()
	}()
	t.Cleanup(func() {
		close(a.stop)
		<-done
	})
	return a
}

func (a *asyncLog) AppendRawAsync(off int64, b []byte, done func(int64, error)) {
	a.mu.Lock()
	a.q = append(a.q, func() {
		if err := a.AppendRaw(off, b); err != nil {
			done(0, err)
			return
		}
		done(a.Written(), nil)
	})
	a.seen = max(a.seen, len(a.q))
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *asyncLog) run() {
	for {
		select {
		case <-a.wake:
		case <-a.stop:
			return
		}
		a.mu.Lock()
		hold := a.hold
		a.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-a.stop:
				return
			}
		}
		time.Sleep(time.Millisecond) // an fsync
		a.mu.Lock()
		q := a.q
		a.q = nil
		a.mu.Unlock()
		for _, f := range q {
			f()
		}
	}
}

// A slave over an AsyncSink copies the log byte for byte, keeps at most
// maxPendingAppends chunks unanswered, and every sync send is acked only
// once the slave holds it durably (check).
func TestAsyncSinkSlaveCopiesAndAcks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		al := newAsyncLog(t, newMemLog(0, true))
		c := newCluster(t, syncCfg(1), big)
		n := &node{id: 1, host: "s1", log: al.memLog, fs: vfs.NewMem()}
		c.slaves[1] = n
		c.startSlave(n, al)
		c.await("slave in sync", c.inSync(1))
		var wg sync.WaitGroup
		errs := make(chan error, 200)
		for i := range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				end := c.put(i)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := c.m.WaitReplicated(ctx, end); err != nil {
					errs <- err
					return
				}
				if !c.holds(al.memLog, end) {
					errs <- context.Canceled
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("a sync send: %v", err)
		}
		c.await("slave caught up", c.caughtUp(1))
		if w := c.mlog.Written(); !bytes.Equal(al.Bytes(big, w), c.mlog.Bytes(big, w)) {
			t.Fatal("the slave's log differs from the master's")
		}
		al.mu.Lock()
		seen := al.seen
		al.mu.Unlock()
		if seen > maxPendingAppends {
			t.Fatalf("%d appends unanswered at once, at most %d allowed", seen, maxPendingAppends)
		}
		c.check()
	})
}

// With HWPushDelay, a long poll woken only by a commit point move waits
// that long for bytes and sends both in one response; without it, the
// move is pushed alone at once.
func TestHWPushDelayJoinsTheNextBytes(t *testing.T) {
	for _, delay := range []time.Duration{0, 10 * time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				runtime.GC()
				runtime.GC()
				c := &cluster{t: t, net: netx.NewMem(), logs: &logtest.Buffer{}, trCfg: syncCfg(1), slaves: map[int64]*node{},
					mfs: vfs.NewMem(), mlog: newMemLog(0, true), hwDelay: delay}
				c.startMaster()
				t.Cleanup(c.stop)
				end := c.put(0)
				h := c.dialHostile("peer")
				defer h.nc.Close()
				f := wire.Fetch{Group: "g", ReplicaID: 5, MaxBytes: 1000, MaxWait: time.Second}
				h.fetch(f)
				if r, ok := h.next(); !ok || r.Err != wire.OK || int64(len(r.Data)) != end {
					t.Fatalf("first answer %+v ok=%v", r, ok)
				}
				resps := make(chan wire.FetchResp, 4)
				go func() {
					for {
						r, ok := h.next()
						if !ok {
							close(resps)
							return
						}
						resps <- r
					}
				}()
				f.Offset = end
				h.fetch(f)
				synctest.Wait() // parked (or answered, if an older HW was news)
				for len(resps) > 0 {
					if r := <-resps; len(r.Data) != 0 || r.HW >= end {
						t.Fatalf("answer before the ack %+v", r)
					}
					h.fetch(f)
					synctest.Wait()
				}
				h.ack(wire.Ack{Offset: end, Durable: end})
				time.Sleep(delay / 2)
				synctest.Wait()
				if delay == 0 {
					if r := <-resps; r.HW != end || len(r.Data) != 0 {
						t.Fatalf("answer to the commit point move %+v, want HW %d alone", r, end)
					}
					return
				}
				if len(resps) != 0 {
					t.Fatalf("answered %+v within the delay", <-resps)
				}
				end2 := c.put(1)
				if r := <-resps; r.HW != end || r.Base != end || r.Base+int64(len(r.Data)) != end2 {
					t.Fatalf("answer %+v, want HW %d with the bytes [%d, %d)", r, end, end, end2)
				}
			})
		})
	}
}

// A slave told to start over (its position fell below the master's log
// start) while appends are still on their way into its log drops the log
// only once they are answered.
func TestStartOverWaitsForPendingAppends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		al := newAsyncLog(t, newMemLog(0, true))
		c := newCluster(t, syncCfg(0), 0)
		for i := range 7 {
			c.put(i) // 98 bytes the slave copies first
		}
		n := &node{id: 1, host: "s1", log: al.memLog, fs: vfs.NewMem()}
		c.slaves[1] = n
		c.startSlave(n, al)
		c.await("the slave copies the first records", c.caughtUp(1))
		hold := make(chan struct{})
		al.mu.Lock()
		al.hold = hold
		al.mu.Unlock()
		for i := 7; i < 22; i++ {
			c.put(i) // up to 308: responses of 200 and 10
		}
		synctest.Wait() // both responses handed over, unanswered; a fetch parked
		// One more record, and retention drops everything up to its end:
		// the parked fetch's position is below the log start now.
		ml := c.mlog
		ml.mu.Lock()
		ml.data = nil
		ml.start = 322
		ml.durable = 322
		ml.grewLocked()
		ml.mu.Unlock()
		synctest.Wait()
		al.mu.Lock()
		restarts, pending := al.restarts, len(al.q)
		al.mu.Unlock()
		if restarts != 0 || pending == 0 {
			t.Fatalf("%d restarts with %d appends unanswered; want none while they are held", restarts, pending)
		}
		close(hold)
		c.await("the slave starts over", func() bool {
			al.mu.Lock()
			defer al.mu.Unlock()
			return al.restarts > 0
		})
		al.mu.Lock()
		defer al.mu.Unlock()
		if al.restartPending != 0 {
			t.Fatalf("the log was dropped with %d appends unanswered", al.restartPending)
		}
	})
}
