package ha

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/ha/epoch"
	"github.com/petrelmq/petrel/internal/ha/track"
	"github.com/petrelmq/petrel/internal/logtest"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/vfs"
)

// TestRealSlaveBelowRetentionStartsOver: a real slave store copies part of
// a real master's log, the master moves to a new epoch, the slave is down
// while the master writes several segments and its retention removes the
// slave's end; the restarted slave resets its store to the master's first
// retained byte, says so, counts it, drops the epoch history of the
// dropped bytes, copies the master from there byte for byte and serves the
// retained messages from queues that start at the master's queue offsets.
func TestRealSlaveBelowRetentionStartsOver(t *testing.T) {
	synctest.Test(t, testRealSlaveBelowRetention)
}

func testRealSlaveBelowRetention(t *testing.T) {
	logs := &logtest.Buffer{}
	lg := (&cluster{logs: logs}).logger()
	nw := netx.NewMem()
	mfs, sfs := vfs.NewMem(), vfs.NewMem()
	retained := func(cfg *store.Config) {
		cfg.FileReservedTime = time.Minute
		cfg.RetentionInterval = 1000 * time.Hour // run by hand
	}
	ms := openStoreWith(t, mfs, retained)
	defer ms.Close()
	mh, _ := epoch.Open(mfs, "/epochs")
	tcfg := track.DefaultConfig()
	tcfg.SyncReplicas = 0 // async: the master goes on while the slave is down
	tr := track.New(tcfg, clock.Real, lg)
	startMaster := func() *Master {
		m, err := StartMaster(MasterConfig{Group: "g", Listen: masterAddr, Network: nw.Host("master"), Tracker: tr, Epochs: mh,
			Logger: lg, OnCommit: ms.SetCommitPoint}, storeSource{ms})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := startMaster()
	var restarts atomic.Int32
	startSlave := func(ss *store.Store) (*Slave, *epoch.History) {
		sh, err := epoch.Open(sfs, "/epochs")
		if err != nil {
			t.Fatal(err)
		}
		s, err := StartSlave(SlaveConfig{Group: "g", ID: 1, Master: func() string { return masterAddr }, Network: nw.Host("s1"),
			Epochs: sh, MaxBytes: 3000, Logger: lg, OnRestart: func(from, to int64) { restarts.Add(1) }}, ss)
		if err != nil {
			t.Fatal(err)
		}
		return s, sh
	}
	ss := openStore(t, sfs)
	sl, _ := startSlave(ss)
	await := func(what string, cond func() bool) { t.Helper(); awaitBubble(t, logs, what, cond) }
	put := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			// PutBatch, not Put: Put's requests are pooled, with channels
			// of the synctest bubble that made them.
			if err := ms.PutBatch([]*message.Message{testMsg(i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(0, 40)
	await("the slave copies the first records", func() bool { return ss.Written() == ms.Written() })

	// A new master epoch (as after a failover), then the slave is away.
	m.Close()
	epoch2 := ms.Written()
	if err := mh.Append(epoch.Entry{Epoch: 2, Start: epoch2}); err != nil {
		t.Fatal(err)
	}
	m = startMaster()
	defer func() { m.Close() }()
	put(40, 60)
	await("the slave copies epoch-2 records", func() bool { return ss.Written() == ms.Written() })
	sl.Close()
	if err := ss.Close(); err != nil {
		t.Fatal(err)
	}
	oldEnd := ms.Written()
	put(60, 300)                // ~40 KiB: five more 8 KiB segments
	time.Sleep(2 * time.Minute) // the bubble's time: the records age past FileReservedTime
	if _, err := ms.RunRetention(); err != nil {
		t.Fatal(err)
	}
	logStart := ms.CommitLogMinOffset()
	if logStart <= oldEnd {
		t.Fatalf("the master's retention kept its log from %d, the slave's end %d is still there", logStart, oldEnd)
	}

	ss = openStore(t, sfs)
	defer ss.Close()
	var sh *epoch.History
	sl, sh = startSlave(ss)
	defer sl.Close()
	same := func() bool { return ss.CommitLogMinOffset() == logStart && sameLog(ms, ss, logStart) }
	await("the slave starts over and catches up", func() bool { return same() && ss.Dispatched() == ms.Written() })
	if err := sl.Err(); err != nil {
		t.Fatalf("the slave stopped: %v", err)
	}
	st := sl.Status()
	if st.Restarts != 1 || st.RestartFrom != oldEnd || st.RestartTo != logStart || st.RestartAt.IsZero() || restarts.Load() != 1 {
		t.Fatalf("status restarts %d from %d to %d at %v (OnRestart %d times), want 1 from %d to %d",
			st.Restarts, st.RestartFrom, st.RestartTo, st.RestartAt, restarts.Load(), oldEnd, logStart)
	}
	want := fmt.Sprintf("the slave's log ends at %d, the master's starts at %d: starting over from %d, the older records are gone from the master", oldEnd, logStart, logStart)
	if len(logs.Lines(want)) != 1 {
		t.Fatalf("no log line %q\n%s", want, logs.String())
	}
	// The history describes the new log only: epoch 2 from where the
	// master began it (the slave's log lies wholly inside it).
	if got := sh.Entries(); !slices.Equal(got, []epoch.Entry{{Epoch: 2, Start: epoch2}}) {
		t.Fatalf("the slave's epoch history is %v, want only epoch 2 from %d", got, epoch2)
	}
	// The slave serves the retained messages from the master's queue
	// offsets.
	for q := range int32(2) {
		lo, hi := ss.MinOffset("T", q), ss.MaxOffset("T", q)
		if lo != ms.MinOffset("T", q) || hi != ms.MaxOffset("T", q) || lo == 0 {
			t.Fatalf("T/%d on the slave is [%d, %d), on the master [%d, %d)", q, lo, hi, ms.MinOffset("T", q), ms.MaxOffset("T", q))
		}
		a, err := ms.GetMessages("T", q, lo, 1000, 1<<24, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := ss.GetMessages("T", q, lo, 1000, 1<<24, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Body, b.Body) || b.Count == 0 || int64(b.Count) != hi-lo {
			t.Fatalf("T/%d: the slave serves %d records, other than the master's %d", q, b.Count, a.Count)
		}
		a.Release()
		b.Release()
	}
	// And it replicates on.
	put(300, 310)
	await("the slave copies what comes next", same)

	// Restarted again, it goes on from its end: no second reset.
	sl.Close()
	ss.Close()
	ss = openStore(t, sfs)
	defer ss.Close()
	sl, _ = startSlave(ss)
	defer sl.Close()
	put(310, 320)
	await("the slave goes on after a restart", same)
	if st := sl.Status(); st.Restarts != 0 || restarts.Load() != 1 {
		t.Fatalf("a restart of a reset slave reset it again (%d, OnRestart %d times)", st.Restarts, restarts.Load())
	}
}

// openStoreWith is openStore with cfg changed by change.
func openStoreWith(t *testing.T, fs vfs.FS, change func(*store.Config)) *store.Store {
	t.Helper()
	cfg := store.DefaultConfig("/data")
	cfg.FS = fs
	cfg.Clock = clock.Real // the bubble's fake time
	cfg.SegmentBytes = 8 << 10
	cfg.MaxMessageBytes = 4 << 10
	cfg.ConsumeQueueEntriesPerFile = 64
	cfg.IndexSlotsPerFile = 64
	cfg.IndexEntriesPerFile = 256
	cfg.StoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
	cfg.CommitPoint = true
	change(&cfg)
	s, err := store.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
