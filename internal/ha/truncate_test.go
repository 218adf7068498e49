package ha

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/petrelmq/petrel/internal/ha/epoch"
	"github.com/petrelmq/petrel/internal/ha/wire"
	"github.com/petrelmq/petrel/internal/logtest"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/vfs"
)

// truncLog is a memLog that can cut its log (a Truncater).
type truncLog struct {
	*memLog
	mu    sync.Mutex
	calls []int64
}

func (l *truncLog) TruncateTo(off int64) (Truncation, error) {
	l.mu.Lock()
	l.calls = append(l.calls, off)
	l.mu.Unlock()
	m := l.memLog
	m.mu.Lock()
	defer m.mu.Unlock()
	if off < m.cp {
		return Truncation{}, fmt.Errorf("memlog: cut at %d below the commit point %d", off, m.cp)
	}
	end := m.endLocked()
	if off > end || off < m.start {
		return Truncation{}, fmt.Errorf("memlog: cut at %d outside [%d, %d]", off, m.start, end)
	}
	dropped := m.data[off-m.start:]
	res := Truncation{Bytes: end - off, Messages: bytes.Count(dropped, []byte("|"))}
	m.data = m.data[: off-m.start : off-m.start]
	m.durable = min(m.durable, off)
	return res, nil
}

func (l *truncLog) Calls() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int64(nil), l.calls...)
}

// newEpochCluster is a cluster whose master has epochs 1 (from 0) and 3
// (from 20) over 20 records of 14 bytes.
func newEpochCluster(t *testing.T) *cluster {
	c := &cluster{t: t, net: netx.NewMem(), logs: &logtest.Buffer{}, trCfg: syncCfg(0), slaves: map[int64]*node{},
		mfs: vfs.NewMem(), mlog: newMemLog(0, true)}
	runtime.GC()
	runtime.GC()
	for i := range 20 {
		c.put(i)
	}
	h, _ := epoch.Open(c.mfs, "epochs")
	h.Append(epoch.Entry{Epoch: 1, Start: 0})
	h.Append(epoch.Entry{Epoch: 3, Start: 20})
	return c
}

// TestMasterAnswersDiverging: a handshake whose log is not a prefix gets
// Diverging with the largest shared epoch and the cut; one that knows a
// newer epoch gets NewerEpoch first (a stale master cuts nobody) and the
// master hears it is stale.
func TestMasterAnswersDiverging(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newEpochCluster(t)
		var stale []uint32
		var mu sync.Mutex
		c.onStale = func(e uint32) { mu.Lock(); stale = append(stale, e); mu.Unlock() }
		c.startMaster()
		t.Cleanup(c.stop)
		leo := c.mlog.Written()
		for i, tc := range []struct {
			f          wire.Fetch
			code       wire.Code
			epoch      uint32
			epochStart int64
			base       int64
		}{
			{wire.Fetch{LastEpoch: 2, Offset: 40, Durable: 40}, wire.Diverging, 1, 0, 20},
			{wire.Fetch{LastEpoch: 1, Offset: 56, Durable: 56}, wire.Diverging, 1, 0, 20},
			{wire.Fetch{LastEpoch: 1, Offset: 12, Durable: 12}, wire.OK, 1, 0, 12},
			{wire.Fetch{Epoch: 3, LastEpoch: 3, Offset: leo + 30, Durable: leo}, wire.Diverging, 3, 20, leo},
			{wire.Fetch{LastEpoch: 9, Offset: leo + 30, Durable: leo}, wire.Diverging, 3, 20, leo},
			{wire.Fetch{Epoch: 4, LastEpoch: 2, Offset: 40, Durable: 40}, wire.NewerEpoch, 3, 20, 0},
			{wire.Fetch{Epoch: 3, LastEpoch: 3, Offset: 100, Durable: 100}, wire.OK, 3, 20, 100},
		} {
			h := c.dialHostile(fmt.Sprintf("peer%d", i))
			f := tc.f
			f.Group, f.ReplicaID, f.MaxBytes = "g", int64(10+i), 50
			h.fetch(f)
			r, ok := h.next()
			h.nc.Close()
			if !ok || r.Err != tc.code || r.Epoch != tc.epoch || r.EpochStart != tc.epochStart || r.Base != tc.base {
				t.Errorf("fetch %+v: answer %v epoch %d start %d base %d (%q), want %v epoch %d start %d base %d",
					tc.f, r.Err, r.Epoch, r.EpochStart, r.Base, r.Message, tc.code, tc.epoch, tc.epochStart, tc.base)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(stale) != 1 || stale[0] != 4 {
			t.Errorf("OnStale heard %v, want [4]", stale)
		}
	})
}

// divergentSlave is a slave log holding the master's first 10 bytes and
// 25 of its own epoch 2 (an old master's tail the new one never had).
func divergentSlave(c *cluster) (*truncLog, *vfs.MemFS) {
	l := &truncLog{memLog: newMemLog(0, true)}
	l.AppendRaw(0, append(c.mlog.Bytes(0, 10), strings.Repeat("z", 24)+"|"...))
	fs := vfs.NewMem()
	hist, _ := epoch.Open(fs, "epochs")
	hist.Append(epoch.Entry{Epoch: 1, Start: 0})
	hist.Append(epoch.Entry{Epoch: 2, Start: 10})
	return l, fs
}

// TestSlaveTruncatesDivergentTail: a slave whose tail is of an epoch the
// master never had cuts it — at its own end of the shared epoch, below the
// master's — drops the epoch entries above the cut, says so, and copies
// the master from there.
func TestSlaveTruncatesDivergentTail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newEpochCluster(t)
		c.startMaster()
		t.Cleanup(c.stop)
		l, fs := divergentSlave(c)
		n := &node{id: 1, host: "s1", log: l.memLog, fs: fs}
		c.slaves[1] = n
		c.startSlave(n, l)
		c.await("slave caught up after the truncation", c.caughtUp(1))
		if calls := l.Calls(); len(calls) != 1 || calls[0] != 10 {
			t.Fatalf("TruncateTo calls %v, want one at 10 (the slave's own end of epoch 1)", calls)
		}
		if got, want := fmt.Sprint(n.hist.Entries()), fmt.Sprint([]epoch.Entry{{Epoch: 1, Start: 0}, {Epoch: 3, Start: 20}}); got != want {
			t.Errorf("slave epochs %s, want the master's %s", got, want)
		}
		st := n.s.Status()
		if st.Truncations != 1 || st.TruncatedBytes != 25 || n.s.Err() != nil {
			t.Errorf("status %+v, err %v: want one truncation of 25 bytes", st, n.s.Err())
		}
		if logs := c.logs.String(); !strings.Contains(logs, "truncated 25 bytes (1 messages) above 10 diverging from the master's epoch 1") {
			t.Errorf("no truncation line in the log:\n%s", logs)
		}
		c.check()
	})
}

// TestSlaveRefusesTruncationBelowCommitPoint: a cut below the slave's
// commit point is refused loudly: the slave stops with Err, its log
// untouched, and acks nothing more.
func TestSlaveRefusesTruncationBelowCommitPoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newEpochCluster(t)
		c.startMaster()
		t.Cleanup(c.stop)
		l, fs := divergentSlave(c)
		l.cp = 15 // the slave counted [0, 15) committed (an unclean election)
		n := &node{id: 1, host: "s1", log: l.memLog, fs: fs}
		c.slaves[1] = n
		c.startSlave(n, l)
		c.await("slave stops", func() bool { return n.s.Err() != nil })
		if err := n.s.Err(); !errors.Is(err, ErrBelowCommitPoint) {
			t.Fatalf("Err %v, want ErrBelowCommitPoint", err)
		}
		if calls := l.Calls(); len(calls) != 0 {
			t.Errorf("TruncateTo was called at %v", calls)
		}
		if l.Written() != 35 || len(n.hist.Entries()) != 2 {
			t.Errorf("the refusing slave changed its log (end %d) or epochs %v", l.Written(), n.hist.Entries())
		}
		if st := n.s.Status(); !st.Stopped || st.Truncations != 0 {
			t.Errorf("status %+v", st)
		}
		if logs := c.logs.String(); !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "commit point") {
			t.Errorf("the refusal is not logged at Error:\n%s", logs)
		}
		if len(c.tr.InSync()) != 0 {
			t.Errorf("the refusing slave is in sync: %v", c.tr.InSync())
		}
		delete(c.slaves, 1)
	})
}

// TestSlaveOfAStaleMasterKeepsTrying: a slave that knows a newer epoch
// than the master's is answered NewerEpoch before its log is looked at —
// nothing is cut, even with a Truncater — and keeps retrying (the daemon
// points it at the new master) instead of stopping.
func TestSlaveOfAStaleMasterKeepsTrying(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, syncCfg(0), 0)
		var stale []uint32
		var mu sync.Mutex
		c.m.Close()
		c.onStale = func(e uint32) { mu.Lock(); stale = append(stale, e); mu.Unlock() }
		c.startMaster()
		for i := range 5 {
			c.put(i)
		}
		// The slave's log holds epoch-2 bytes the master (epoch 1) never
		// had.
		l := &truncLog{memLog: newMemLog(0, true)}
		l.AppendRaw(0, c.mlog.Bytes(0, 20))
		fs := vfs.NewMem()
		hist, _ := epoch.Open(fs, "epochs")
		hist.Append(epoch.Entry{Epoch: 1, Start: 0})
		hist.Append(epoch.Entry{Epoch: 2, Start: 10})
		n := &node{id: 1, host: "s1", log: l.memLog, fs: fs}
		c.slaves[1] = n
		c.startSlave(n, l)
		c.await("the master hears it is stale three times", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(stale) >= 3
		})
		st := n.s.Status()
		if st.Stopped || n.s.Err() != nil || !strings.Contains(st.LastError, "NewerEpoch") {
			t.Errorf("status %+v, err %v: want retrying after NewerEpoch", st, n.s.Err())
		}
		if calls := l.Calls(); len(calls) != 0 || l.Written() != 20 {
			t.Errorf("a stale master made the slave cut its log: calls %v, end %d", calls, l.Written())
		}
		mu.Lock()
		defer mu.Unlock()
		if stale[0] != 2 {
			t.Errorf("OnStale heard %v, want epoch 2", stale)
		}
	})
}

// TestSessionDropsEpochEntriesAboveTheLog: a truncation that a crash cut
// short after the log was cut leaves epoch entries above the log's end;
// the next session drops them, so the master's epochs can be recorded
// again and the slave copies on.
func TestSessionDropsEpochEntriesAboveTheLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newEpochCluster(t)
		c.startMaster()
		t.Cleanup(c.stop)
		l := &truncLog{memLog: newMemLog(0, true)}
		l.AppendRaw(0, c.mlog.Bytes(0, 18))
		fs := vfs.NewMem()
		hist, _ := epoch.Open(fs, "epochs")
		hist.Append(epoch.Entry{Epoch: 1, Start: 0})
		hist.Append(epoch.Entry{Epoch: 2, Start: 40}) // its bytes were cut
		n := &node{id: 1, host: "s1", log: l.memLog, fs: fs}
		c.slaves[1] = n
		c.startSlave(n, l)
		c.await("slave caught up", c.caughtUp(1))
		if got, want := fmt.Sprint(n.hist.Entries()), fmt.Sprint([]epoch.Entry{{Epoch: 1, Start: 0}, {Epoch: 3, Start: 20}}); got != want {
			t.Errorf("slave epochs %s, want the master's %s", got, want)
		}
		if calls := l.Calls(); len(calls) != 0 {
			t.Errorf("TruncateTo was called at %v: the log was a prefix", calls)
		}
		c.check()
	})
}
