package ha

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/ha/epoch"
	"github.com/petrelmq/petrel/internal/ha/track"
	"github.com/petrelmq/petrel/internal/ha/wire"
	"github.com/petrelmq/petrel/internal/logtest"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/vfs"
)

// The tests run in a synctest bubble over the in-memory network with
// clock.Real: time is the bubble's fake time, so long polls, idle timeouts
// and back-offs pass without real waiting, and synctest.Wait tells when
// every goroutine is blocked.

const masterAddr = "master:10912"

// big puts the log above 2^31 so that no offset fits in an int32.
const big = int64(3) << 30

type cluster struct {
	t    *testing.T
	net  *netx.Mem
	logs *logtest.Buffer

	mlog   *memLog
	mfs    *vfs.MemFS
	tr     *track.Tracker
	trCfg  track.Config
	m      *Master
	slaves map[int64]*node

	mu        sync.Mutex
	violation []string
	linger    time.Duration                      // MasterConfig.Linger
	hwDelay   time.Duration                      // MasterConfig.HWPushDelay
	onStale   func(uint32)                       // MasterConfig.OnStale
	authn     func(string, []byte, []byte) error // MasterConfig.Authenticate
	creds     Credentials                        // SlaveConfig.Credentials of the slaves started next
	prevHW    int64                              // the HW of the masters before a restart
	acked     []int64                            // ends of the records whose Wait returned nil
}

type node struct {
	id   int64
	host string
	log  *memLog
	fs   *vfs.MemFS
	s    *Slave
	hist *epoch.History
	cfg  SlaveConfig
}

func newCluster(t *testing.T, trCfg track.Config, start int64, opts ...func(*cluster)) *cluster {
	// track keeps its waiters (with their channels) in a sync.Pool: one
	// made in an earlier test's bubble cannot be used in this one, so empty
	// the pool (and its victim cache) first.
	runtime.GC()
	runtime.GC()
	c := &cluster{t: t, net: netx.NewMem(), logs: &logtest.Buffer{}, trCfg: trCfg, slaves: map[int64]*node{},
		mfs: vfs.NewMem(), mlog: newMemLog(start, true)}
	for _, o := range opts {
		o(c)
	}
	c.startMaster()
	t.Cleanup(c.stop)
	return c
}

func (c *cluster) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(c.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// groupHW is the highest commit point any master of the group has had: the
// current master's tracker's HW, or a previous master's (a response of the
// old master may still arrive after a restart; the new tracker starts low).
func (c *cluster) groupHW() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(c.prevHW, c.tr.HW())
}

func (c *cluster) violate(format string, args ...any) {
	c.mu.Lock()
	c.violation = append(c.violation, fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

func (c *cluster) startMaster() {
	c.t.Helper()
	hist, err := epoch.Open(c.mfs, "epochs")
	if err != nil {
		c.t.Fatal(err)
	}
	tr, ml := track.New(c.trCfg, clock.Real, c.logger()), c.mlog
	c.mu.Lock()
	if c.tr != nil {
		c.prevHW = max(c.prevHW, c.tr.HW())
	}
	c.tr = tr
	c.mu.Unlock()
	ml.onCP = nil
	m, err := StartMaster(MasterConfig{Group: "g", Listen: masterAddr, Network: c.net.Host("master"), Tracker: tr,
		Epochs: hist, Logger: c.logger(), MaxBytes: 300, MaxWait: time.Second, IdleTimeout: 5 * time.Second, Linger: c.linger, HWPushDelay: c.hwDelay, OnStale: c.onStale, Authenticate: c.authn,
		OnCommit: func(hw int64) {
			// Invariant: the master's store never gets a commit point above
			// the tracker's HW or its own durable end.
			if hw > tr.HW() || hw > ml.Durable() {
				c.violate("master commit point %d above HW %d or durable %d", hw, tr.HW(), ml.Durable())
			}
			ml.SetCommitPoint(hw)
		}}, ml)
	if err != nil {
		c.t.Fatal(err)
	}
	c.m = m
}

func (c *cluster) addSlave(id int64, l *memLog, fs *vfs.MemFS) *node {
	c.t.Helper()
	if fs == nil {
		fs = vfs.NewMem()
	}
	n := &node{id: id, host: fmt.Sprintf("s%d", id), log: l, fs: fs}
	c.slaves[id] = n
	c.startSlave(n, l)
	return n
}

func (c *cluster) startSlave(n *node, sink Sink) {
	c.t.Helper()
	hist, err := epoch.Open(n.fs, "epochs")
	if err != nil {
		c.t.Fatal(err)
	}
	n.hist = hist
	l := n.log
	l.onCP = func(off int64) {
		// Invariant: a slave's commit point is never above the master's HW
		// (which never moves back) nor its own durable end.
		if hw := c.groupHW(); off > hw || off > l.Durable() {
			c.violate("slave %d commit point %d above master HW %d or its durable %d", n.id, off, hw, l.Durable())
		}
	}
	n.cfg = SlaveConfig{Group: "g", ID: n.id, Master: func() string { return masterAddr }, Network: c.net.Host(n.host),
		Epochs: hist, MaxBytes: 200, MaxWait: time.Second, ResponseTimeout: 2 * time.Second,
		BackoffMin: 100 * time.Millisecond, BackoffMax: time.Second, Logger: c.logger(), Credentials: c.creds}
	s, err := StartSlave(n.cfg, sink)
	if err != nil {
		c.t.Fatal(err)
	}
	n.s = s
}

// crashSlave stops slave n and restarts it on what its disk held.
func (c *cluster) crashSlave(n *node) { c.crashSlaveThen(n, nil) }

// crashSlaveThen crashes n and calls check (when set) with what the
// restart finds, before the fetcher starts again: it re-fetches at once,
// so a look after crashSlave races with it.
func (c *cluster) crashSlaveThen(n *node, check func(*memLog)) {
	n.s.Close()
	n.log = n.log.Crash()
	if check != nil {
		check(n.log)
	}
	n.fs = n.fs.CrashClone(vfs.CrashOptions{})
	c.startSlave(n, n.log)
}

func (c *cluster) stop() {
	for _, n := range c.slaves {
		n.s.Close()
	}
	if c.m != nil {
		c.m.Close()
	}
}

// put appends a record on the master and returns its end.
func (c *cluster) put(i int) int64 {
	return c.mlog.Put([]byte(fmt.Sprintf("record-%06d|", i)))
}

// syncSend is a sync send: append, then wait for the commit point; on nil
// it checks at once that SyncReplicas slaves hold the record durably.
func (c *cluster) syncSend(i int, timeout time.Duration) error {
	end := c.put(i)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := c.m.WaitReplicated(ctx, end)
	if err == nil {
		c.mu.Lock()
		c.acked = append(c.acked, end)
		c.mu.Unlock()
		if h := c.holders(end); h < c.trCfg.SyncReplicas {
			c.violate("record ending at %d acked with %d durable copies, need %d", end, h, c.trCfg.SyncReplicas)
		}
	}
	return err
}

// holders counts the slaves whose durable log holds [master start, end)
// byte for byte.
func (c *cluster) holders(end int64) int {
	n := 0
	for _, s := range c.slaves {
		if c.holds(s.log, end) {
			n++
		}
	}
	return n
}

func (c *cluster) holds(l *memLog, end int64) bool {
	from := max(l.MinOffset(), c.mlog.MinOffset())
	if l.Durable() < end || from > end {
		return false
	}
	return bytes.Equal(l.Bytes(from, end), c.mlog.Bytes(from, end))
}

// await lets the bubble run (advancing fake time by step while nothing
// else can happen) until cond holds.
func (c *cluster) await(what string, cond func() bool) {
	c.t.Helper()
	for range 600 {
		synctest.Wait()
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("%s: not within 60 s of fake time\n%s", what, c.logs.String())
}

func (c *cluster) inSync(n int) func() bool {
	return func() bool { return len(c.tr.InSync()) == n }
}

func (c *cluster) caughtUp(ids ...int64) func() bool {
	return func() bool {
		for _, id := range ids {
			if !c.holds(c.slaves[id].log, c.mlog.Written()) {
				return false
			}
		}
		return true
	}
}

// check runs the end-of-test invariants: no violation recorded, every
// acked record still on SyncReplicas slaves' durable logs.
func (c *cluster) check() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range c.violation {
		c.t.Error(v)
	}
	for _, end := range c.acked {
		if h := c.holders(end); h < c.trCfg.SyncReplicas {
			c.t.Errorf("acked record ending at %d now on %d slaves, need %d", end, h, c.trCfg.SyncReplicas)
		}
	}
}

func syncCfg(n int) track.Config {
	cfg := track.DefaultConfig()
	cfg.SyncReplicas = n
	cfg.MaxLagTime = 3 * time.Second
	return cfg
}

func TestTwoSlavesCopyAndAckSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, syncCfg(2), big)
		for i := range 5 {
			c.put(i) // before the slaves exist
		}
		c.addSlave(1, newMemLog(0, true), nil)
		c.addSlave(2, newMemLog(0, true), nil)
		c.await("slaves copy the log", c.caughtUp(1, 2))
		for i := 5; i < 40; i++ {
			if err := c.syncSend(i, 5*time.Second); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		}
		c.await("slaves learn the commit point", func() bool {
			return c.slaves[1].log.CommitPoint() == c.mlog.Written() && c.slaves[2].log.CommitPoint() == c.mlog.Written()
		})
		if got := c.mlog.CommitPoint(); got != c.mlog.Written() {
			t.Errorf("master commit point %d, want %d", got, c.mlog.Written())
		}
		for _, n := range c.slaves {
			st := n.s.Status()
			if !st.Connected || st.LagBytes != 0 || st.Epoch != 1 || st.Written != c.mlog.Written() {
				t.Errorf("slave %d status %+v", n.id, st)
			}
			if es := n.hist.Entries(); len(es) != 1 || es[0].Epoch != 1 {
				t.Errorf("slave %d epochs %v", n.id, es)
			}
		}
		c.check()
	})
}

func TestPartitionedSlave(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas int
	}{{"sync_replicas_1", 1}, {"sync_replicas_2", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t, syncCfg(tc.replicas), big)
				c.addSlave(1, newMemLog(0, true), nil)
				c.addSlave(2, newMemLog(0, true), nil)
				c.await("both slaves in sync", c.inSync(2))
				if err := c.syncSend(0, 5*time.Second); err != nil {
					t.Fatal(err)
				}
				c.await("HW published", func() bool { return c.m.HW() == c.mlog.Written() })
				c.net.Partition("master", "s2")
				hwBefore := c.m.HW()
				var errs []error
				for i := 1; i < 10; i++ {
					errs = append(errs, c.syncSend(i, 2*time.Second))
				}
				switch tc.replicas {
				case 1:
					for i, err := range errs {
						if err != nil {
							t.Errorf("send %d with one slave partitioned: %v", i+1, err)
						}
					}
					c.await("HW published", func() bool { return c.m.HW() == c.mlog.Written() })
				case 2:
					for i, err := range errs {
						if !errors.Is(err, track.ErrTimeout) && !errors.Is(err, track.ErrNotEnoughReplicas) {
							t.Errorf("send %d with one of two required slaves partitioned: %v", i+1, err)
						}
					}
					if c.m.HW() != hwBefore {
						t.Errorf("HW moved from %d to %d with a required slave partitioned", hwBefore, c.m.HW())
					}
					// Once it is out of sync, sends fail at once.
					c.await("slave 2 falls out of sync", func() bool { return len(c.tr.InSync()) == 1 })
					if err := c.syncSend(10, time.Minute); !errors.Is(err, track.ErrNotEnoughReplicas) {
						t.Errorf("send with 1 of 2 slaves in sync: %v, want ErrNotEnoughReplicas", err)
					}
				}
				c.net.Heal("master", "s2")
				c.await("slave 2 catches up", c.caughtUp(1, 2))
				c.await("HW covers everything", func() bool { return c.m.HW() == c.mlog.Written() })
				if err := c.syncSend(11, 5*time.Second); err != nil {
					t.Errorf("send after heal: %v", err)
				}
				c.check()
			})
		})
	}
}

func TestCrashedSlaveRefetchesFromDurableEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, func() track.Config { cfg := syncCfg(1); return cfg }(), 0)
		n := c.addSlave(1, newMemLog(0, false), nil) // async flush: durable lags
		for i := range 10 {
			c.put(i)
		}
		c.await("slave written", func() bool { return n.log.Written() == c.mlog.Written() })
		n.log.Flush()
		mid := n.log.Durable()
		for i := 10; i < 20; i++ {
			c.put(i)
		}
		c.await("slave written again", func() bool { return n.log.Written() == c.mlog.Written() })
		if n.log.Durable() != mid {
			t.Fatalf("durable %d moved without a flush (want %d)", n.log.Durable(), mid)
		}
		// Nothing above the slave's durable end is committed: the master
		// needs one durable copy.
		if hw := c.m.HW(); hw > mid {
			t.Fatalf("HW %d above the only slave's durable end %d", hw, mid)
		}
		c.crashSlaveThen(n, func(l *memLog) {
			if l.Written() != mid {
				t.Fatalf("after the crash the slave holds %d bytes, want %d", l.Written(), mid)
			}
		})
		c.await("restarted slave re-fetches", func() bool { return n.log.Written() == c.mlog.Written() })
		if !c.holds(&memLog{start: 0, data: n.log.Bytes(0, n.log.Written()), durable: n.log.Written()}, c.mlog.Written()) {
			t.Fatal("re-fetched bytes differ from the master's")
		}
		// A sync send completes once the slave has flushed the record.
		res := make(chan error, 1)
		go func() { res <- c.syncSend(20, 10*time.Second) }()
		c.await("slave receives record 20", func() bool { return n.log.Written() == c.mlog.Written() })
		select {
		case err := <-res:
			t.Fatalf("sync send answered (%v) before the only slave flushed it", err)
		default:
		}
		n.log.Flush()
		if err := <-res; err != nil {
			t.Fatal(err)
		}
		c.await("HW covers the flushed log", func() bool { return c.m.HW() == c.mlog.Written() })
		c.check()
	})
}

func TestFreshSlaveCopiesFromLogStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, syncCfg(1), big)
		for i := range 30 {
			c.put(i)
		}
		c.mlog.Trim(big + 100)
		n := c.addSlave(1, newMemLog(0, true), nil)
		c.await("fresh slave copies", c.caughtUp(1))
		if got := n.log.MinOffset(); got != big+100 {
			t.Errorf("slave log starts at %d, want the master's log start %d", got, big+100)
		}
		if len(c.logs.Lines("starting over")) == 0 {
			t.Error("the slave did not log that it starts over from the master's log start")
		}
		if err := n.s.Err(); err != nil {
			t.Errorf("Err %v", err)
		}

		// A slave whose log ends below the master's first byte and cannot
		// start over stops and says why.
		old := newMemLog(0, true)
		old.AppendRaw(0, c.mlog.Bytes(big+100, big+110)) // some bytes at 0..10
		on := &node{id: 2, host: "s2", log: old, fs: vfs.NewMem()}
		hist, _ := epoch.Open(on.fs, "epochs")
		hist.Append(epoch.Entry{Epoch: 1, Start: 0})
		c.slaves[2] = on
		c.startSlave(on, noRestart{old})
		c.await("slave stops", func() bool { return on.s.Err() != nil })
		if err := on.s.Err(); !errors.Is(err, ErrBelowLogStart) {
			t.Errorf("Err %v, want ErrBelowLogStart", err)
		}
		delete(c.slaves, 2)
		on.s.Close()
		c.check()
	})
}

func TestDivergentSlaveGetsNotPrefix(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The master has epochs 1 and 3 (a slave that knows a newer
		// epoch than the master's gets NewerEpoch instead:
		// TestSlaveOfAStaleMasterKeepsTrying).
		c := newEpochCluster(t)
		c.startMaster()
		t.Cleanup(c.stop)
		// The slave's log holds epoch-2 bytes the master (epochs 1 and 3)
		// never had; its store cannot truncate.
		l := newMemLog(0, true)
		l.AppendRaw(0, c.mlog.Bytes(0, 20))
		fs := vfs.NewMem()
		hist, _ := epoch.Open(fs, "epochs")
		hist.Append(epoch.Entry{Epoch: 1, Start: 0})
		hist.Append(epoch.Entry{Epoch: 2, Start: 10})
		n := c.addSlave(1, l, fs)
		c.await("slave stops", func() bool { return n.s.Err() != nil })
		err := n.s.Err()
		if !errors.Is(err, ErrNotPrefix) {
			t.Fatalf("Err %v, want ErrNotPrefix", err)
		}
		st := n.s.Status()
		if !st.Stopped || st.LastError == "" {
			t.Errorf("status %+v", st)
		}
		if l.Written() != 20 || l.CommitPoint() != 0 {
			t.Errorf("the refused slave changed its log: written %d, commit point %d", l.Written(), l.CommitPoint())
		}
		// Ahead of the master: also not a prefix.
		l2 := newMemLog(0, true)
		l2.AppendRaw(0, append(c.mlog.Bytes(0, c.mlog.Written()), "extra"...))
		fs2 := vfs.NewMem()
		h2, _ := epoch.Open(fs2, "epochs")
		h2.Append(epoch.Entry{Epoch: 1, Start: 0})
		n2 := c.addSlave(2, l2, fs2)
		c.await("slave 2 stops", func() bool { return n2.s.Err() != nil })
		if err := n2.s.Err(); !errors.Is(err, ErrNotPrefix) {
			t.Fatalf("slave ahead of the master: Err %v, want ErrNotPrefix", err)
		}
		delete(c.slaves, 1)
		delete(c.slaves, 2)
		c.check()
	})
}

func TestMasterRestartSlavesReconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, syncCfg(1), big)
		c.addSlave(1, newMemLog(0, true), nil)
		c.addSlave(2, newMemLog(0, true), nil)
		c.await("both slaves in sync", c.inSync(2))
		for i := range 10 {
			if err := c.syncSend(i, 5*time.Second); err != nil {
				t.Fatal(err)
			}
		}
		c.m.Close()
		c.m = nil
		c.mlog = c.mlog.Crash()
		synctest.Wait()
		c.startMaster()
		c.await("slaves reconnect to the restarted master", c.inSync(2))
		for i := 10; i < 20; i++ {
			if err := c.syncSend(i, 10*time.Second); err != nil {
				t.Fatalf("send %d after the restart: %v", i, err)
			}
		}
		c.await("both slaves back", c.caughtUp(1, 2))
		for _, n := range c.slaves {
			if st := n.s.Status(); st.Sessions < 2 || !st.Connected {
				t.Errorf("slave %d status %+v: want a second session", n.id, st)
			}
		}
		c.check()
	})
}

// hostile dials the master as a raw peer and sends frames by hand.
type hostile struct {
	t  *testing.T
	nc net.Conn
}

func (c *cluster) dialHostile(host string) *hostile {
	nc, err := c.net.Host(host).Dial(context.Background(), masterAddr)
	if err != nil {
		c.t.Fatal(err)
	}
	return &hostile{t: c.t, nc: nc}
}

func (h *hostile) fetch(f wire.Fetch) {
	if err := wire.WriteFrame(h.nc, wire.AppendFetch(nil, f)); err != nil {
		h.t.Fatal(err)
	}
}

// next reads one response; ok false when the master closed the connection.
func (h *hostile) next() (wire.FetchResp, bool) {
	p, err := wire.ReadFrame(h.nc, nil)
	if err != nil {
		return wire.FetchResp{}, false
	}
	r, err := wire.DecodeFetchResp(p)
	if err != nil {
		h.t.Fatal(err)
	}
	return r, true
}

func TestHostileSlaveLosesOnlyItsConnection(t *testing.T) {
	for _, tc := range []struct {
		name string
		act  func(h *hostile, leo int64)
		want wire.Code
	}{
		{"ack_beyond_leo", func(h *hostile, leo int64) {
			h.fetch(wire.Fetch{Group: "g", ReplicaID: 7, Offset: leo + 1000, Durable: leo + 1000, LastEpoch: 1, MaxBytes: 100})
		}, wire.InvalidRequest},
		{"ack_backwards", func(h *hostile, leo int64) {
			h.fetch(wire.Fetch{Group: "g", ReplicaID: 7, Offset: 0, Durable: 0, MaxBytes: 100})
		}, wire.InvalidRequest},
		{"oversize_frame", func(h *hostile, leo int64) {
			var hdr [8]byte
			binary.BigEndian.PutUint32(hdr[:4], wire.MaxFrame+1)
			h.nc.Write(hdr[:])
		}, wire.InvalidRequest},
		{"big_frame_for_a_fetch", func(h *hostile, leo int64) {
			var hdr [8]byte
			binary.BigEndian.PutUint32(hdr[:4], 1<<20)
			h.nc.Write(hdr[:])
		}, wire.InvalidRequest},
		{"bad_crc", func(h *hostile, leo int64) {
			fr := []byte{0, 0, 0, 3, 1, 2, 3, 4, 9, 9, 9}
			h.nc.Write(fr)
		}, wire.InvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t, syncCfg(1), big)
				c.addSlave(1, newMemLog(0, true), nil)
				c.await("slave in sync", c.inSync(1))
				for i := range 5 {
					if err := c.syncSend(i, 5*time.Second); err != nil {
						t.Fatal(err)
					}
				}
				h := c.dialHostile("evil")
				defer h.nc.Close()
				// A proper handshake first: copy from the start.
				h.fetch(wire.Fetch{Group: "g", ReplicaID: 7, Offset: big, Durable: big, MaxBytes: 30})
				r, ok := h.next()
				if !ok || r.Err != wire.OK || r.Base != big || len(r.Data) != 30 {
					t.Fatalf("handshake answer %+v ok=%v", r, ok)
				}
				tc.act(h, c.mlog.Written())
				r, ok = h.next()
				if !ok || r.Err != tc.want {
					t.Fatalf("answer %v ok=%v (%s), want %v", r.Err, ok, r.Message, tc.want)
				}
				if _, ok := h.next(); ok {
					t.Fatal("the master kept the hostile connection open")
				}
				// The good slave keeps replicating, the HW keeps moving.
				for i := 5; i < 10; i++ {
					if err := c.syncSend(i, 5*time.Second); err != nil {
						t.Fatalf("send after the hostile peer: %v", err)
					}
				}
				if st := c.slaves[1].s.Status(); st.Sessions != 1 || !st.Connected {
					t.Errorf("the good slave was disturbed: %+v", st)
				}
				for _, id := range c.tr.InSync() {
					if id == 7 {
						t.Error("the hostile peer is still counted in sync")
					}
				}
				c.check()
			})
		})
	}
}

func TestEpochsRecordedAndNeverCrossed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &cluster{t: t, net: netx.NewMem(), logs: &logtest.Buffer{}, trCfg: syncCfg(1), slaves: map[int64]*node{},
			mfs: vfs.NewMem(), mlog: newMemLog(0, true)}
		runtime.GC()
		runtime.GC()
		for i := range 4 {
			c.put(i) // 4 × 14 bytes of epoch 1
		}
		h, _ := epoch.Open(c.mfs, "epochs")
		h.Append(epoch.Entry{Epoch: 1, Start: 0})
		h.Append(epoch.Entry{Epoch: 3, Start: 20}) // mid-record on purpose: bytes, not records
		c.startMaster()
		t.Cleanup(c.stop)
		for i := 4; i < 20; i++ {
			c.put(i)
		}
		n := &node{id: 1, host: "s1", log: newMemLog(0, true), fs: vfs.NewMem()}
		c.slaves[1] = n
		rec := &recordingSink{memLog: n.log}
		c.startSlave(n, rec)
		c.await("slave copies", c.caughtUp(1))
		rec.mu.Lock()
		for _, a := range rec.appends {
			if a[0] < 20 && a[1] > 20 {
				t.Errorf("an append of [%d, %d) crossed the epoch boundary at 20", a[0], a[1])
			}
		}
		rec.mu.Unlock()
		got, want := n.hist.Entries(), h.Entries()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("slave epochs %v, want the master's %v", got, want)
		}
		if st := n.s.Status(); st.Epoch != 3 {
			t.Errorf("status epoch %d, want 3", st.Epoch)
		}
		c.check()
	})
}

// recordingSink records the ranges appended.
type recordingSink struct {
	*memLog
	mu      sync.Mutex
	appends [][2]int64
}

func (r *recordingSink) AppendRaw(off int64, b []byte) error {
	r.mu.Lock()
	r.appends = append(r.appends, [2]int64{off, off + int64(len(b))})
	r.mu.Unlock()
	return r.memLog.AppendRaw(off, b)
}

func TestCommitPointFollowsLocalFlush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, syncCfg(0), 0) // no slaves needed: HW = the master's durable end
		c.mlog.mu.Lock()
		c.mlog.syncAppend = false
		c.mlog.mu.Unlock()
		c.put(0)
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		if cp, w := c.mlog.CommitPoint(), c.mlog.Written(); cp >= w {
			t.Fatalf("commit point %d covers %d bytes that are not durable", cp, w)
		}
		c.mlog.Flush()
		time.Sleep(5 * time.Millisecond) // far less than the 500 ms tick
		synctest.Wait()
		if cp, w := c.mlog.CommitPoint(), c.mlog.Written(); cp != w {
			t.Fatalf("commit point %d 5 ms after the flush, want %d", cp, w)
		}
		c.check()
	})
}

func TestPipelinedFetchesGetConsecutiveRanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, syncCfg(0), big)
		for i := range 10 {
			c.put(i)
		}
		h := c.dialHostile("peer")
		defer h.nc.Close()
		f := wire.Fetch{Group: "g", ReplicaID: 3, Offset: big, Durable: big, MaxBytes: 40, MaxWait: time.Second}
		h.fetch(f)
		h.fetch(f) // the same acks: nothing appended yet
		r1, ok1 := h.next()
		r2, ok2 := h.next()
		if !ok1 || !ok2 || r1.Err != wire.OK || r2.Err != wire.OK {
			t.Fatalf("answers %v %v", r1.Err, r2.Err)
		}
		if r1.Base != big || len(r1.Data) != 40 || r2.Base != big+40 || len(r2.Data) != 40 {
			t.Fatalf("ranges [%d,+%d) [%d,+%d), want [%d,+40) [%d,+40)", r1.Base, len(r1.Data), r2.Base, len(r2.Data), big, big+40)
		}
		if !bytes.Equal(append(r1.Data, r2.Data...), c.mlog.Bytes(big, big+80)) {
			t.Fatal("data differs from the master's log")
		}
	})
}

func TestSlaveBelowLogStartRestarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, syncCfg(1), 0)
		for i := range 20 {
			c.put(i)
		}
		l := newMemLog(0, true)
		l.AppendRaw(0, c.mlog.Bytes(0, 28))
		fs := vfs.NewMem()
		h, _ := epoch.Open(fs, "epochs")
		h.Append(epoch.Entry{Epoch: 1, Start: 0})
		c.mlog.Trim(140)
		n := c.addSlave(1, l, fs)
		c.await("slave starts over and copies", c.caughtUp(1))
		if n.log.MinOffset() != 140 || n.s.Err() != nil {
			t.Errorf("slave log starts at %d (want 140), Err %v", n.log.MinOffset(), n.s.Err())
		}
		if st := n.s.Status(); st.Restarts != 1 || st.RestartFrom != 28 || st.RestartTo != 140 || n.log.Resets() != 1 {
			t.Errorf("status restarts %d from %d to %d, store resets %d; want 1 from 28 to 140", st.Restarts, st.RestartFrom, st.RestartTo, n.log.Resets())
		}
		if len(c.logs.Lines("the slave's log ends at 28, the master's starts at 140: starting over from 140")) != 1 {
			t.Error("the slave did not say that it starts over")
		}
		c.check()
	})
}

func TestReconnectBackoffIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, syncCfg(1), 0)
		c.m.Close()
		c.m = nil
		n := c.addSlave(1, newMemLog(0, true), nil)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		var got []string
		for _, line := range c.logs.Lines("reconnecting") {
			if i := strings.Index(line, "backoff="); i >= 0 {
				got = append(got, line[i+len("backoff="):])
			}
		}
		want := []string{"100ms", "200ms", "400ms", "800ms", "1s", "1s"}
		if len(got) < len(want) || strings.Join(got[:len(want)], ",") != strings.Join(want, ",") {
			t.Fatalf("back-offs %v, want them to start %v", got, want)
		}
		for _, b := range got[len(want):] {
			if b != "1s" {
				t.Fatalf("back-off %s beyond BackoffMax 1s (%v)", b, got)
			}
		}
		if st := n.s.Status(); st.Connected || st.LastError == "" {
			t.Errorf("status %+v with no master", st)
		}
		c.startMaster()
		c.await("slave connects once the master is up", c.inSync(1))
		if err := c.syncSend(0, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		c.check()
	})
}

// TestFaultSequence runs a fixed, seeded sequence of sends, partitions,
// connection resets, flushes and slave crashes on a master with two slaves
// (one flushing per append, one only when told), then heals everything:
// no acked record is ever missing from a slave's durable log, no commit
// point ever exceeds the HW, and both slaves end identical to the master.
func TestFaultSequence(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12} {
		t.Run(fmt.Sprint("seed_", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, seed))
				c := newCluster(t, syncCfg(1), big)
				c.addSlave(1, newMemLog(0, true), nil)
				c.addSlave(2, newMemLog(0, false), nil)
				c.await("slaves in sync", c.inSync(2))
				rec, acked := 0, 0
				for range 60 {
					switch k := rng.IntN(11); {
					case k < 5:
						for range 1 + rng.IntN(5) {
							switch err := c.syncSend(rec, 3*time.Second); {
							case err == nil:
								acked++
							case !errors.Is(err, track.ErrTimeout) && !errors.Is(err, track.ErrNotEnoughReplicas):
								t.Errorf("send %d: %v, want nil, ErrTimeout or ErrNotEnoughReplicas", rec, err)
							}
							rec++
						}
					case k == 5:
						s := fmt.Sprintf("s%d", 1+rng.IntN(2))
						if c.net.Partitioned("master", s) {
							c.net.Heal("master", s)
						} else {
							c.net.Partition("master", s)
						}
					case k == 6:
						c.net.Reset("master", fmt.Sprintf("s%d", 1+rng.IntN(2)))
					case k == 7:
						c.slaves[2].log.Flush()
					case k == 8:
						c.crashSlave(c.slaves[int64(1+rng.IntN(2))])
					case k == 9:
						time.Sleep(time.Duration(rng.IntN(4000)) * time.Millisecond)
					case k == 10: // the master restarts (sync flush: it loses nothing)
						c.m.Close()
						c.mlog = c.mlog.Crash()
						c.startMaster()
					}
				}
				c.net.Heal("master", "s1")
				c.net.Heal("master", "s2")
				c.await("both slaves catch up", func() bool {
					c.slaves[2].log.Flush()
					return c.caughtUp(1, 2)()
				})
				if acked == 0 {
					t.Fatal("no send was acked: the sequence tests nothing")
				}
				t.Logf("%d records, %d acked", rec, acked)
				c.check()
			})
		})
	}
}

// A slave that started its copy at the master's log start and crashed
// before any byte was durable holds an empty log at that offset: it must
// resume, not take itself for a foreign log (seen in TestFaultSequence).
func TestSlaveCrashedBeforeItsFirstDurableByte(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, syncCfg(1), big)
		n := c.addSlave(1, newMemLog(0, false), nil)
		for i := range 5 {
			c.put(i)
		}
		c.await("slave written", func() bool { return n.log.Written() == c.mlog.Written() })
		c.crashSlaveThen(n, func(l *memLog) {
			if l.Written() != big {
				t.Fatalf("after the crash the slave ends at %d, want %d", l.Written(), big)
			}
		})
		c.await("slave resumes", func() bool { n.log.Flush(); return c.caughtUp(1)() })
		if err := n.s.Err(); err != nil {
			t.Fatal(err)
		}
		c.check()
	})
}
