package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
)

// testTruncate: an old master's log is cut above its commit point
// (TruncateTo): a cut below the commit point or inside a record is refused
// with nothing changed; a cut at a record boundary reports the dropped
// records, and every queue goes on from its last kept record, also after a
// restart.
func testTruncate(t *testing.T, s *suite) {
	r := s.replica()
	r.EnableCommitPoint()
	var ms []*message.Message
	for i := range 60 {
		m := s.msg("T", int32(i%2), fmt.Sprintf("m%02d", i), fmt.Sprint("key", i), "")
		s.put(m)
		ms = append(ms, m)
	}
	cp := ms[20].PhysicalOffset
	r.SetCommitPoint(cp)
	s.sync()
	w := r.Written()
	for _, tc := range []struct {
		off  int64
		want error
	}{
		{ms[5].PhysicalOffset, store.ErrBelowCommitPoint},
		{cp - 1, store.ErrBelowCommitPoint},
		{ms[30].PhysicalOffset + 3, store.ErrTruncateOffset},
		{w + 1, store.ErrTruncateOffset},
	} {
		if _, err := r.TruncateTo(tc.off); !errors.Is(err, tc.want) {
			t.Fatalf("TruncateTo(%d): %v, want %v", tc.off, err, tc.want)
		}
		if r.Written() != w {
			t.Fatalf("a refused TruncateTo(%d) moved the end to %d", tc.off, r.Written())
		}
	}
	off := ms[40].PhysicalOffset
	res, err := r.TruncateTo(off)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range ms[40:] {
		ids = append(ids, m.Property(message.PropertyUniqKey))
	}
	if res.From != off || res.Bytes != w-off || res.Messages != 20 || !slices.Equal(res.MsgIDs, ids) {
		t.Fatalf("TruncateTo(%d) = %+v, want From %d, Bytes %d, the ids %v", off, res, off, w-off, ids)
	}
	check := func(st store.MessageStore, r store.Replica) {
		t.Helper()
		if r.Written() != off {
			t.Fatalf("the log ends at %d, want %d", r.Written(), off)
		}
		r.SetCommitPoint(off)
		waitAll(t, st)
		for q := range int32(2) {
			if got := st.MaxOffset("T", q); got != 20 {
				t.Fatalf("T/%d has max offset %d after the truncation, want 20", q, got)
			}
		}
		if rs, err := st.QueryByKey("T", "key45", 0, 1<<62, 10); err != nil || len(rs) != 0 {
			t.Fatalf("a dropped key finds %d records (%v)", len(rs), err)
		}
	}
	check(s.st(), r)
	s.h.Restart(t)
	r = s.replica()
	r.EnableCommitPoint()
	check(s.st(), r)
	for q := range int32(2) {
		m := s.msg("T", q, "after", "key-after", "")
		s.put(m)
		if m.QueueOffset != 20 {
			t.Fatalf("the first put to T/%d after the truncation got queue offset %d, want 20", q, m.QueueOffset)
		}
		if q == 0 && m.PhysicalOffset != off {
			t.Fatalf("the first record after the truncation is at %d, want %d", m.PhysicalOffset, off)
		}
	}
}

// testPrepareMaster: a slave holding records above its commit point and a
// record cut at its end becomes master: PrepareMaster drops the cut record
// and the next put of each queue gets the offset after its last record in
// the log.
func testPrepareMaster(t *testing.T, s *suite) {
	master := s.replica()
	var ms []*message.Message
	for i := range 30 {
		m := s.msg("T", int32(i%3), fmt.Sprintf("m%02d", i), "", "")
		s.put(m)
		ms = append(ms, m)
	}
	h2 := s.open(t, SuiteConfig(t, clock.NewManual(SuiteT0)))
	t.Cleanup(func() { h2.Close() })
	slave := h2.Store().(store.Replica)
	slave.EnableCommitPoint()
	torn := ms[25].PhysicalOffset + 20
	rnd := rand.New(rand.NewPCG(3, 3))
	for from := int64(0); from < torn; from = slave.Written() {
		b, err := master.ReadRaw(from, 1+rnd.IntN(700))
		if err != nil {
			t.Fatal(err)
		}
		if err := slave.AppendRaw(from, b[:min(int64(len(b)), torn-from)]); err != nil {
			t.Fatal(err)
		}
	}
	slave.SetCommitPoint(ms[10].PhysicalOffset)
	waitAll(t, h2.Store())
	if slave.Written() != torn {
		t.Fatalf("the slave's log ends at %d, want %d", slave.Written(), torn)
	}
	if _, err := slave.TruncateTo(torn - 5); !errors.Is(err, store.ErrTruncateOffset) {
		t.Fatalf("TruncateTo inside the cut record: %v, want ErrTruncateOffset", err)
	}
	if slave.Written() != torn {
		t.Fatalf("a refused TruncateTo moved the end to %d", slave.Written())
	}
	cut, err := slave.PrepareMaster()
	if err != nil {
		t.Fatal(err)
	}
	if cut != ms[25].PhysicalOffset || slave.Written() != cut {
		t.Fatalf("PrepareMaster cut at %d (end %d), want %d", cut, slave.Written(), ms[25].PhysicalOffset)
	}
	for q := range int32(3) {
		want := int64(0)
		for _, m := range ms[:25] {
			if m.QueueID == q {
				want = m.QueueOffset + 1
			}
		}
		m := s.msg("T", q, "as-master", "", "")
		if err := h2.Store().Put(m); err != nil {
			t.Fatal(err)
		}
		if m.QueueOffset != want {
			t.Fatalf("T/%d: the first put as master got queue offset %d, want %d", q, m.QueueOffset, want)
		}
	}
}
