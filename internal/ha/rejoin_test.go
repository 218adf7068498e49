package ha

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
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

// truncSink adapts a store to Truncater as the daemon does.
type truncSink struct{ *store.Store }

func (s truncSink) TruncateTo(off int64) (Truncation, error) {
	res, err := s.Store.TruncateTo(off)
	return Truncation{Bytes: res.Bytes, Messages: res.Messages, MsgIDs: res.MsgIDs}, err
}

// TestOldMasterRejoinsAndTruncates: master A (epoch 1) and slave B over
// real stores; B is cut off while A stores records no one acks; B is
// promoted (PrepareMaster, epoch 2) and stores its own; A rejoins as B's
// slave: B answers Diverging, A cuts exactly its unacked records (and
// reports their ids), copies B's log and ends byte-identical with B — the
// same epochs, the same consume queues — and every acked record is on
// both.
func TestOldMasterRejoinsAndTruncates(t *testing.T) {
	runtime.GC()
	runtime.GC()
	synctest.Test(t, func(t *testing.T) {
		logs := &logtest.Buffer{}
		lg := (&cluster{logs: logs}).logger()
		nw := netx.NewMem()
		afs, bfs := vfs.NewMem(), vfs.NewMem()
		as, bs := openStore(t, afs), openStore(t, bfs)
		defer func() { as.Close() }()
		defer func() { bs.Close() }()
		ah, _ := epoch.Open(afs, "/epochs")
		bh, _ := epoch.Open(bfs, "/epochs")
		await := func(what string, cond func() bool) { t.Helper(); awaitBubble(t, logs, what, cond) }
		startMaster := func(host string, s *store.Store, h *epoch.History, syncReplicas int) (*Master, *track.Tracker) {
			cfg := track.DefaultConfig()
			cfg.SyncReplicas = syncReplicas
			tr := track.New(cfg, clock.Real, lg)
			m, err := StartMaster(MasterConfig{Group: "g", Listen: host + ":10912", Network: nw.Host(host), Tracker: tr, Epochs: h,
				Logger: lg, OnCommit: s.SetCommitPoint}, storeSource{s})
			if err != nil {
				t.Fatal(err)
			}
			return m, tr
		}
		startSlave := func(host, master string, id int64, sink Sink, h *epoch.History) *Slave {
			sl, err := StartSlave(SlaveConfig{Group: "g", ID: id, Master: func() string { return master + ":10912" }, Network: nw.Host(host),
				Epochs: h, MaxBytes: 3000, Logger: lg}, sink)
			if err != nil {
				t.Fatal(err)
			}
			return sl
		}

		// Epoch 1: A masters, B copies; 60 acked sends.
		am, atr := startMaster("a", as, ah, 1)
		bsl := startSlave("b", "a", 2, truncSink{bs}, bh)
		await("B in sync", func() bool { return len(atr.InSync()) == 1 })
		var acked []*message.Message
		for i := range 60 {
			m := testMsg(i)
			if err := as.Put(m); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := am.WaitReplicated(ctx, as.Written())
			cancel()
			if err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
			acked = append(acked, m)
		}
		await("B holds every acked record", func() bool { return bs.Durable() == as.Written() })

		// B is cut off; A stores 12 more records, none acked.
		bsl.Close()
		await("A sees B gone", func() bool { return len(atr.InSync()) == 0 })
		var lost []string
		for i := 60; i < 72; i++ {
			m := testMsg(i)
			if err := as.Put(m); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			if err := am.WaitReplicated(ctx, as.Written()); err == nil {
				t.Fatalf("send %d acked with no slave in sync", i)
			}
			cancel()
			lost = append(lost, m.Property(message.PropertyUniqKey))
		}
		if as.CommitPoint() > bs.Written() {
			t.Fatalf("A's commit point %d above what B holds (%d)", as.CommitPoint(), bs.Written())
		}

		// B becomes master of epoch 2 and stores its own records; A is
		// stopped as master.
		am.Close()
		fork := bs.Written()
		if cut, err := bs.PrepareMaster(); err != nil || cut != fork {
			t.Fatalf("PrepareMaster: %d, %v; want %d", cut, err, fork)
		}
		if err := bh.Append(epoch.Entry{Epoch: 2, Start: fork}); err != nil {
			t.Fatal(err)
		}
		bm, _ := startMaster("b", bs, bh, 0)
		defer bm.Close()
		next := map[int32]int64{}
		for _, m := range acked {
			next[m.QueueID] = m.QueueOffset + 1
		}
		for i := 100; i < 130; i++ {
			m := testMsg(i)
			if err := bs.Put(m); err != nil {
				t.Fatal(err)
			}
			if m.QueueOffset != next[m.QueueID] {
				t.Fatalf("B's put to T/%d as master got queue offset %d, want %d (dense after the acked ones)", m.QueueID, m.QueueOffset, next[m.QueueID])
			}
			next[m.QueueID]++
		}

		// A rejoins as B's slave: it must cut its 12 unacked records.
		asl := startSlave("a", "b", 1, truncSink{as}, ah)
		defer asl.Close()
		await("A byte-identical with B", func() bool { return sameLog(bs, as, 0) && as.CommitPoint() == bs.Written() })
		if asl.Err() != nil {
			t.Fatalf("A's slave stopped: %v", asl.Err())
		}
		st := asl.Status()
		if st.Truncations != 1 || st.TruncatedBytes <= 0 {
			t.Fatalf("A's slave status %+v: want one truncation", st)
		}
		if got, want := fmt.Sprint(ah.Entries()), fmt.Sprint(bh.Entries()); got != want {
			t.Fatalf("A's epochs %s, B's %s", got, want)
		}
		text := logs.String()
		line := ""
		for _, l := range strings.Split(text, "\n") {
			if strings.Contains(l, "diverging from the master's epoch 1") {
				line = l
			}
		}
		if !strings.Contains(line, fmt.Sprintf("(12 messages) above %d", fork)) {
			t.Fatalf("no truncation line for the 12 unacked records above %d:\n%s", fork, text)
		}
		for _, id := range lost {
			if !strings.Contains(line, id) {
				t.Fatalf("the truncation line does not name %s: %s", id, line)
			}
		}
		for _, m := range acked {
			if strings.Contains(line, m.Property(message.PropertyUniqKey)+" ") || strings.Contains(line, m.Property(message.PropertyUniqKey)+"]") {
				t.Fatalf("an acked record %s was truncated: %s", m.Property(message.PropertyUniqKey), line)
			}
		}
		// Both serve the same queues: every acked record, then B's.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := as.WaitDispatched(ctx); err != nil {
			t.Fatal(err)
		}
		if err := bs.WaitDispatched(ctx); err != nil {
			t.Fatal(err)
		}
		for q := range int32(2) {
			if a, b := as.MaxOffset("T", q), bs.MaxOffset("T", q); a != b || a != 45 {
				t.Fatalf("T/%d: A max offset %d, B %d, want 45 on both", q, a, b)
			}
			ra, err := as.GetMessages("T", q, 0, 100, 1<<24, nil)
			if err != nil {
				t.Fatal(err)
			}
			rb, err := bs.GetMessages("T", q, 0, 100, 1<<24, nil)
			if err != nil {
				t.Fatal(err)
			}
			eq := bytes.Equal(ra.Body, rb.Body) && ra.Count == 45
			ra.Release()
			rb.Release()
			if !eq {
				t.Fatalf("T/%d: A and B serve other records", q)
			}
		}
		if !slices.ContainsFunc(acked, func(m *message.Message) bool { return m.PhysicalOffset < fork }) {
			t.Fatal("no acked record below the fork")
		}
	})
}
