package ha

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"runtime"
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

// storeSource adapts a store to Source as the daemon does: the commit
// log's first byte is CommitLogMinOffset (Store.MinOffset is per queue).
type storeSource struct{ *store.Store }

func (s storeSource) MinOffset() int64 { return s.CommitLogMinOffset() }

func openStore(t *testing.T, fs vfs.FS) *store.Store {
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
	s, err := store.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testMsg(i int) *message.Message {
	m := &message.Message{Topic: "T", QueueID: int32(i % 2), Body: []byte(fmt.Sprintf("body-%04d-%s", i, bytes.Repeat([]byte("x"), 80))),
		BornTimestamp: 1, BornHost: netip.MustParseAddrPort("127.0.0.2:40000")}
	m.SetProperty(message.PropertyUniqKey, fmt.Sprintf("U%04d", i))
	return m
}

// awaitBubble lets the synctest bubble run (advancing fake time by 100 ms
// while nothing else can happen) until cond holds, for up to 60 s of fake
// time; then it fails the test with the logs.
func awaitBubble(t *testing.T, logs *logtest.Buffer, what string, cond func() bool) {
	t.Helper()
	for range 600 {
		synctest.Wait()
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond) // the bubble's time: the fetchers' timers fire
	}
	t.Fatalf("%s: not within 60 s of fake time\n%s", what, logs.String())
}

// sameLog reports whether got ends where want does and holds the same
// bytes as want from off to that end.
func sameLog(want, got *store.Store, off int64) bool {
	w := want.Written()
	if got.Written() != w {
		return false
	}
	for off < w {
		a, err1 := want.ReadRaw(off, 1<<20)
		b, err2 := got.ReadRaw(off, 1<<20)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) || len(a) == 0 {
			return false
		}
		off += int64(len(a))
	}
	return true
}

// TestRealStores ships a real store's log to a real slave store across
// segments, acks sync sends only once the slave holds them durably, keeps
// every dispatcher below the commit point, and survives a slave crash.
func TestRealStores(t *testing.T) {
	// track's pooled waiters may come from an earlier test's bubble (see
	// newCluster): empty the pool first.
	runtime.GC()
	runtime.GC()
	synctest.Test(t, func(t *testing.T) {
		logs := &logtest.Buffer{}
		nw := netx.NewMem()
		mfs, sfs := vfs.NewMem(), vfs.NewMem()
		ms := openStore(t, mfs)
		defer ms.Close()
		mh, _ := epoch.Open(mfs, "/epochs")
		cfg := track.DefaultConfig()
		cfg.SyncReplicas = 1
		tr := track.New(cfg, clock.Real, (&cluster{logs: logs}).logger())
		var bad []string
		m, err := StartMaster(MasterConfig{Group: "g", Listen: masterAddr, Network: nw.Host("master"), Tracker: tr, Epochs: mh,
			Logger: (&cluster{logs: logs}).logger(), OnCommit: func(hw int64) {
				if hw > ms.Durable() {
					bad = append(bad, fmt.Sprintf("master commit point %d above durable %d", hw, ms.Durable()))
				}
				ms.SetCommitPoint(hw)
			}}, storeSource{ms})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()

		startSlave := func(ss *store.Store) *Slave {
			sh, err := epoch.Open(sfs, "/epochs")
			if err != nil {
				t.Fatal(err)
			}
			s, err := StartSlave(SlaveConfig{Group: "g", ID: 1, Master: func() string { return masterAddr }, Network: nw.Host("s1"),
				Epochs: sh, MaxBytes: 3000, Logger: (&cluster{logs: logs}).logger()}, ss)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		ss := openStore(t, sfs)
		sl := startSlave(ss)

		check := func(what string) {
			t.Helper()
			if d, cp := ss.Dispatched(), ss.CommitPoint(); d > cp || cp > tr.HW() {
				t.Fatalf("%s: slave dispatched %d, commit point %d, master HW %d", what, d, cp, tr.HW())
			}
			if d, cp := ms.Dispatched(), ms.CommitPoint(); d > cp {
				t.Fatalf("%s: master dispatched %d above its commit point %d", what, d, cp)
			}
		}
		await := func(what string, cond func() bool) {
			t.Helper()
			awaitBubble(t, logs, what, func() bool { check(what); return cond() })
		}
		await("slave in sync", func() bool { return len(tr.InSync()) == 1 })
		send := func(i int) {
			t.Helper()
			if err := ms.Put(testMsg(i)); err != nil {
				t.Fatal(err)
			}
			end := ms.Written()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := m.WaitReplicated(ctx, end); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
			if ss.Durable() < end {
				t.Fatalf("send %d acked at %d with the slave durable at %d", i, end, ss.Durable())
			}
			check("after an ack")
		}
		for i := range 150 { // ~20 KiB: three 8 KiB segments
			send(i)
		}
		await("slave log identical and visible", func() bool { return sameLog(ms, ss, 0) && ss.CommitPoint() == ms.Written() })

		// Crash the slave: what it held durably survives; it re-fetches
		// from there.
		sl.Close()
		sfs = sfs.CrashClone(vfs.CrashOptions{})
		ss.Close()
		ss = openStore(t, sfs)
		defer ss.Close()
		sl = startSlave(ss)
		defer sl.Close()
		await("slave back in sync", func() bool { return len(tr.InSync()) == 1 })
		for i := 150; i < 200; i++ {
			send(i)
		}
		await("slave log identical after the crash and dispatched", func() bool {
			return sameLog(ms, ss, 0) && ss.CommitPoint() == ms.Written() && ss.Dispatched() == ms.Written()
		})
		if len(bad) > 0 {
			t.Error(bad)
		}
	})
}
