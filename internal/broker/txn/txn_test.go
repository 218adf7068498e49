package txn

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/vfs"
)

func TestCommitDeliversOnce(t *testing.T) {
	e := newEnv(t)
	h := e.prepare("orders", 2, "pay", "pg", message.PropertyKeys, "k1")
	if h.Topic != HalfTopic || h.QueueID != 0 {
		t.Fatalf("half stored in %s/%d, want %s/0", h.Topic, h.QueueID, HalfTopic)
	}
	if got := e.bodies("orders", 2); len(got) != 0 {
		t.Fatalf("half visible in its real topic before the commit: %q", got)
	}
	e.wantPending(0) // not read yet: the first round reads it
	e.advance(time.Second)
	e.wantPending(1)
	e.end(h, EndCommit)

	msgs := e.messages("orders", 2)
	if len(msgs) != 1 {
		t.Fatalf("%d messages in orders/2 after commit, want 1", len(msgs))
	}
	c := msgs[0]
	if string(c.Body) != "pay" || c.Flag != 7 || c.Tags() != "tagA" || c.Property(message.PropertyKeys) != "k1" {
		t.Errorf("committed message lost fields: body %q flag %d tags %q keys %q", c.Body, c.Flag, c.Tags(), c.Property(message.PropertyKeys))
	}
	if c.Property(PropertyProducerGroup) != "pg" || c.Property(message.PropertyUniqKey) != h.Property(message.PropertyUniqKey) {
		t.Errorf("PGROUP %q / UNIQ_KEY %q not kept", c.Property(PropertyProducerGroup), c.Property(message.PropertyUniqKey))
	}
	if got := c.Property(PropertyTransactionID); got != h.Property(message.PropertyUniqKey) {
		t.Errorf("committed message has __transactionId__ %q, want the UNIQ_KEY %q (as RocketMQ delivers it)", got, h.Property(message.PropertyUniqKey))
	}
	for _, k := range []string{PropertyRealTopic, PropertyRealQueueID, PropertyTransactionPrepared, PropertyCheckTimes, PropertyNextCheck} {
		if _, ok := message.PropertyOf(c.Properties, k); ok {
			t.Errorf("committed message still has property %s", k)
		}
	}
	if c.SysFlag&message.SysFlagTxMask != message.SysFlagTxCommit {
		t.Errorf("sysFlag %#x, want transaction type commit", c.SysFlag)
	}
	if c.PreparedTransactionOffset != h.PhysicalOffset {
		t.Errorf("PREPAREDTRANSACTIONOFFSET %d, want the half's %d", c.PreparedTransactionOffset, h.PhysicalOffset)
	}
	if c.StoreTimestamp != t0.Add(time.Second).UnixMilli() || c.BornTimestamp != h.BornTimestamp {
		t.Errorf("store time %d (want %d), born %d (want %d)", c.StoreTimestamp, t0.Add(time.Second).UnixMilli(), c.BornTimestamp, h.BornTimestamp)
	}
	e.wantPending(0)
	if ops := e.messages(OpTopic, 0); len(ops) != 1 || string(ops[0].Body) != strconv.FormatInt(h.QueueOffset, 10) || ops[0].Tags() != OpTag {
		t.Fatalf("op records %v, want one with body %d and tag d", ops, h.QueueOffset)
	}

	// A duplicate END (the client retries, or answers a check late).
	e.end(h, EndCommit)
	e.end(h, EndRollback)
	e.put("orders", 2, "marker")
	if got := e.bodies("orders", 2); !slices.Equal(got, []string{"pay", "marker"}) {
		t.Fatalf("orders/2 = %q after duplicate ENDs, want [pay marker]", got)
	}
	e.advance(10 * time.Minute)
	e.wantChecks(0)

	e.restart()
	e.wantPending(0)
	e.end(h, EndCommit)
	e.advance(10 * time.Minute)
	e.put("orders", 2, "marker2")
	if got := e.bodies("orders", 2); !slices.Equal(got, []string{"pay", "marker", "marker2"}) {
		t.Fatalf("orders/2 = %q after END following a restart, want [pay marker marker2]", got)
	}
	e.wantChecks(0)
}

func TestRollbackNeverVisible(t *testing.T) {
	e := newEnv(t)
	h := e.prepare("orders", 0, "cancelled", "pg")
	e.advance(time.Second)
	e.end(h, EndRollback)
	e.wantPending(0)
	e.advance(10 * time.Minute)
	e.wantChecks(0)
	e.end(h, EndCommit) // too late: ended
	e.restart()
	e.end(h, EndCommit)
	e.advance(10 * time.Minute)
	e.wantChecks(0)
	if got := e.bodies("orders", 0); len(got) != 0 {
		t.Fatalf("rolled back message visible: %q", got)
	}
}

func TestUnknownIsCheckedUntilDiscarded(t *testing.T) {
	e := newEnv(t) // Timeout 6 s, CheckInterval 1 min, MaxChecks 3
	h := e.prepare("orders", 1, "maybe", "pg")
	e.end(h, EndUnknown)
	e.advance(6*time.Second - time.Millisecond)
	e.wantChecks(0)
	e.advance(time.Millisecond)
	e.wantChecks(1)
	c := e.chk.last()
	if c.group != "pg" || c.qo != h.QueueOffset || c.clo != h.PhysicalOffset || c.checks != "" || !c.at.Equal(t0.Add(6*time.Second)) {
		t.Fatalf("first check %+v, want group pg, half %d/%d, no count, at +6s", c, h.QueueOffset, h.PhysicalOffset)
	}
	hdr, body, err := CheckRequest(c.rec)
	if err != nil {
		t.Fatal(err)
	}
	if hdr.TranStateTableOffset != h.QueueOffset || hdr.CommitLogOffset != h.PhysicalOffset ||
		hdr.MsgID != h.Property(message.PropertyUniqKey) || hdr.TransactionID != hdr.MsgID ||
		hdr.OffsetMsgID != message.OffsetID(e.scfg.StoreHost, h.PhysicalOffset) {
		t.Fatalf("check header %+v", hdr)
	}
	bm, _, err := message.Decode(body)
	if err != nil || bm.Topic != "orders" || bm.QueueID != 1 || string(bm.Body) != "maybe" || bm.Property(PropertyProducerGroup) != "pg" {
		t.Fatalf("check body %+v (%v): want the message in orders/1", bm, err)
	}

	for i := 2; i <= 3; i++ {
		e.advance(time.Minute - time.Millisecond)
		e.wantChecks(i - 1)
		e.advance(time.Millisecond)
		e.wantChecks(i)
		c := e.chk.last()
		if c.checks != strconv.Itoa(i-1) || !c.at.Equal(t0.Add(6*time.Second+time.Duration(i-1)*time.Minute)) {
			t.Fatalf("check %d: count %q at %v", i, c.checks, c.at.Sub(t0))
		}
		if c.qo == h.QueueOffset {
			t.Fatalf("check %d names the first half again, want its re-stored copy", i)
		}
	}
	e.wantPending(1)
	e.advance(time.Minute)
	e.wantChecks(3)
	e.wantPending(0)
	if e.logs.warned("discarding") != 1 {
		t.Fatalf("warnings %q, want one discard", e.logs.warns)
	}
	e.advance(time.Hour)
	e.wantChecks(3)
	// The producer answers after the discard: too late.
	e.end(h, EndCommit)
	if got := e.bodies("orders", 1); len(got) != 0 {
		t.Fatalf("discarded message committed: %q", got)
	}
	e.restart()
	e.advance(time.Hour)
	e.wantChecks(3)
	e.wantPending(0)
}

func TestCheckAnswerCommitsOnce(t *testing.T) {
	e := newEnv(t)
	e.chk.answer = func(c checkCall) {
		if err := e.endFromCheck(c, EndCommit); err != nil {
			t.Errorf("END from check: %v", err)
		}
	}
	h := e.prepare("orders", 0, "late", "pg")
	e.advance(6 * time.Second)
	e.wantChecks(1)
	e.wantPending(0)
	// The producer's own END arrives after its answer to the check.
	e.end(h, EndCommit)
	e.put("orders", 0, "marker")
	if got := e.bodies("orders", 0); !slices.Equal(got, []string{"late", "marker"}) {
		t.Fatalf("orders/0 = %q, want [late marker]", got)
	}
	e.advance(time.Hour)
	e.wantChecks(1)
}

func TestEndOfOldCopyCommitsOpenTransaction(t *testing.T) {
	e := newEnv(t)
	h := e.prepare("orders", 0, "slow", "pg")
	e.advance(6 * time.Second)
	e.wantChecks(1) // names h; h is then replaced by a copy
	e.advance(time.Minute)
	e.wantChecks(2) // names the copy, replaced by a second copy
	check := e.chk.last()
	// The producer's first END names the original half, long superseded.
	e.end(h, EndCommit)
	e.wantPending(0)
	// Its answer to the second check names the first copy.
	if err := e.endFromCheck(check, EndCommit); err != nil {
		t.Fatal(err)
	}
	e.put("orders", 0, "marker")
	if got := e.bodies("orders", 0); !slices.Equal(got, []string{"slow", "marker"}) {
		t.Fatalf("orders/0 = %q, want [slow marker]", got)
	}
	e.advance(time.Hour)
	e.wantChecks(2)
}

func TestImmunityDelaysFirstCheck(t *testing.T) {
	e := newEnv(t)
	e.prepare("orders", 0, "a", "pg", PropertyCheckImmunitySeconds, "20")
	e.prepare("orders", 0, "b", "pg", PropertyCheckImmunitySeconds, "2") // below Timeout: Timeout wins
	e.prepare("orders", 0, "c", "pg", PropertyCheckImmunitySeconds, "150")
	e.advance(6*time.Second - time.Millisecond)
	e.wantChecks(0)
	e.advance(time.Millisecond)
	e.wantChecks(1)
	e.advance(14*time.Second - time.Millisecond)
	e.wantChecks(1)
	e.advance(time.Millisecond)
	e.wantChecks(2)
	if m, _, _ := message.Decode(e.chk.last().rec); string(m.Body) != "a" {
		t.Fatalf("check at 20 s was for %q, want a", m.Body)
	}
	halves := len(e.messages(HalfTopic, 0))
	// c waits 150 s: re-stored (not checked) after a minute, then checked.
	e.advance(150*time.Second - 20*time.Second - time.Millisecond)
	if got := len(e.messages(HalfTopic, 0)); got <= halves {
		t.Fatalf("half queue did not grow while c waited: %d records", got)
	}
	n := e.chk.n()
	e.advance(time.Millisecond)
	if e.chk.n() != n+1 {
		t.Fatalf("%d checks at 150 s, want %d", e.chk.n(), n+1)
	}
	if m, _, _ := message.Decode(e.chk.last().rec); string(m.Body) != "c" || e.chk.last().checks != "" {
		t.Fatalf("check at 150 s was for %q (count %q), want c, uncounted", m.Body, e.chk.last().checks)
	}
	e.restart() // the wait survives a restart too: no check before each copy is due
	e.wantPending(3)
}

func TestNoProducerOnlineNotCounted(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxChecks = 2 })
	e.chk.offline = 2
	e.prepare("orders", 0, "x", "pg")
	e.advance(6 * time.Second)
	e.wantChecks(1)
	for range 3 {
		e.advance(time.Minute)
	}
	e.wantChecks(4)
	counts := []string{}
	for _, c := range e.chk.calls {
		counts = append(counts, c.checks)
	}
	if !slices.Equal(counts, []string{"", "", "", "1"}) {
		t.Fatalf("check counts %q, want [  1]: offline checks are not counted", counts)
	}
	e.wantPending(1)
	e.advance(time.Minute)
	e.wantChecks(4)
	e.wantPending(0)
}

func TestRestartMidTransaction(t *testing.T) {
	e := newEnv(t)
	a := e.prepare("orders", 0, "a", "pg")
	b := e.prepare("orders", 1, "b", "pg")
	e.advance(6 * time.Second)
	e.wantChecks(2)
	checkA := e.chk.calls[0]
	e.restart()
	e.wantPending(2)
	e.advance(time.Minute - time.Millisecond)
	e.wantChecks(2)
	e.advance(time.Millisecond)
	e.wantChecks(4)
	if got := e.chk.last().checks; got != "1" {
		t.Fatalf("count after restart %q, want 1", got)
	}
	// Commit a by its first check's offsets, then by the original's.
	if err := e.endFromCheck(checkA, EndCommit); err != nil {
		t.Fatal(err)
	}
	e.end(a, EndCommit)
	e.restart()
	e.end(a, EndCommit)
	e.wantPending(1)
	e.put("orders", 0, "marker")
	if got := e.bodies("orders", 0); !slices.Equal(got, []string{"a", "marker"}) {
		t.Fatalf("orders/0 = %q, want [a marker]", got)
	}
	e.end(b, EndRollback)
	e.wantPending(0)
	e.advance(time.Hour)
	e.wantChecks(4)
	if got := e.bodies("orders", 1); len(got) != 0 {
		t.Fatalf("orders/1 = %q, want nothing", got)
	}
}

func TestRestartBeforeFirstCheck(t *testing.T) {
	e := newEnv(t)
	e.prepare("orders", 0, "a", "pg")
	e.advance(time.Second)
	e.restart()
	e.advance(5*time.Second - time.Millisecond)
	e.wantChecks(0)
	e.advance(time.Millisecond)
	e.wantChecks(1)
}

func TestCrashAfterCommit(t *testing.T) {
	e := newDiskEnv(t)
	a := e.prepare("orders", 0, "a", "pg")
	b := e.prepare("orders", 0, "b", "pg")
	e.advance(6 * time.Second)
	e.wantChecks(2)
	e.end(a, EndCommit)
	// Crash: only what was synced survives (the offsets file maybe not).
	crashed := e.fs.CrashClone(vfs.CrashOptions{})
	e.close()
	e.fs = crashed
	e.scfg.FS = crashed
	e.open()
	e.wantPending(1)
	e.end(a, EndCommit)
	e.advance(time.Minute)
	e.wantChecks(3)
	if m, _, _ := message.Decode(e.chk.last().rec); string(m.Body) != "b" {
		t.Fatalf("check after the crash for %q, want b", m.Body)
	}
	e.end(b, EndCommit)
	e.put("orders", 0, "marker")
	if got := e.bodies("orders", 0); !slices.Equal(got, []string{"a", "b", "marker"}) {
		t.Fatalf("orders/0 = %q, want [a b marker]", got)
	}
}

func TestDuplicateLiveCopiesAfterCrash(t *testing.T) {
	// A crash between a copy and the op record of the half it replaces
	// leaves two live halves of one transaction: one check, one commit.
	e := newEnv(t)
	h := e.prepare("orders", 0, "dup", "pg")
	rec, err := e.st.ReadMessage(h.PhysicalOffset)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := renewed(rec, h.QueueOffset, 1, t0.Add(time.Minute).UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.Put(cp); err != nil {
		t.Fatal(err)
	}
	e.restart()
	e.wantPending(1)
	e.advance(time.Minute)
	e.wantChecks(1)
	if c := e.chk.last(); c.qo != cp.QueueOffset || c.checks != "1" {
		t.Fatalf("checked half %d (count %q), want the copy %d (count 1)", c.qo, c.checks, cp.QueueOffset)
	}
	e.end(h, EndCommit)
	if err := e.m.End(endReq(cp, EndCommit)); err != nil {
		t.Fatal(err)
	}
	e.put("orders", 0, "marker")
	if got := e.bodies("orders", 0); !slices.Equal(got, []string{"dup", "marker"}) {
		t.Fatalf("orders/0 = %q, want [dup marker]", got)
	}
}

func TestEndRefusals(t *testing.T) {
	e := newEnv(t)
	h := e.prepare("orders", 0, "x", "pg")
	plain := e.put("orders", 1, "plain")
	cases := []struct {
		name string
		req  EndRequest
		want error
	}{
		{"other group", func() EndRequest { r := endReq(h, EndCommit); r.ProducerGroup = "other"; return r }(), ErrGroupMismatch},
		{"queue offset", func() EndRequest { r := endReq(h, EndCommit); r.TranStateTableOffset++; return r }(), ErrOffsetMismatch},
		{"no record", func() EndRequest { r := endReq(h, EndCommit); r.CommitLogOffset = 1 << 40; return r }(), ErrHalfNotFound},
		{"not a half", EndRequest{ProducerGroup: "pg", CommitLogOffset: plain.PhysicalOffset, CommitOrRollback: EndRollback}, ErrNotHalf},
		{"bad type", func() EndRequest { r := endReq(h, EndCommit); r.CommitOrRollback = 5; return r }(), ErrBadEndType},
	}
	for _, c := range cases {
		if err := e.m.End(c.req); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	if got := e.bodies("orders", 0); len(got) != 0 {
		t.Fatalf("refused END made %q visible", got)
	}
	e.advance(6 * time.Second)
	e.wantChecks(1)
	e.wantPending(1)
	e.m.Close()
	if err := e.m.End(endReq(h, EndCommit)); !errors.Is(err, ErrClosed) {
		t.Fatalf("End after Close: %v, want ErrClosed", err)
	}
	if err := e.m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestHalfWithoutGroupIsDiscarded(t *testing.T) {
	e := newEnv(t)
	msg := &message.Message{Topic: "orders", SysFlag: message.SysFlagTxPrepared, Body: []byte("x"),
		Properties: props(PropertyTransactionPrepared, "true")}
	e.m.Half(msg)
	if err := e.st.Put(msg); err != nil {
		t.Fatal(err)
	}
	e.settle()
	e.advance(6 * time.Second)
	e.wantChecks(0)
	e.wantPending(0)
	if e.logs.warned("discarding") != 1 {
		t.Fatalf("warnings %q, want one discard", e.logs.warns)
	}
}

func TestConcurrentEnds(t *testing.T) {
	e := newEnv(t)
	var hs []*message.Message
	for i := range 8 {
		hs = append(hs, e.prepare("orders", 0, strconv.Itoa(i), "pg"))
	}
	var wg sync.WaitGroup
	for _, h := range hs {
		for range 4 {
			wg.Go(func() {
				if err := e.m.End(endReq(h, EndCommit)); err != nil {
					t.Errorf("End: %v", err)
				}
			})
		}
	}
	// A round running meanwhile must not check or re-store them twice.
	wg.Go(func() { e.clk.Advance(time.Minute) })
	wg.Wait()
	e.put("orders", 0, "marker")
	got := e.bodies("orders", 0)
	slices.Sort(got)
	want := []string{"0", "1", "2", "3", "4", "5", "6", "7", "marker"}
	if !slices.Equal(got, want) {
		t.Fatalf("orders/0 = %q, want each message once: %q", got, want)
	}
	e.wantPending(0)
	e.restart()
	e.wantPending(0)
}

func TestProgressOffsetsMove(t *testing.T) {
	e := newEnv(t)
	var last *message.Message
	for i := range 5 {
		last = e.prepare("orders", 0, strconv.Itoa(i), "pg")
		e.end(last, EndRollback)
	}
	open := e.prepare("orders", 0, "open", "pg")
	e.advance(time.Second)
	meta := e.md
	if off, ok := meta.Offset(ProgressGroup, HalfTopic, 0); !ok || off != open.QueueOffset {
		t.Fatalf("half progress %d (%v), want %d (the open half)", off, ok, open.QueueOffset)
	}
	if off, ok := meta.Offset(ProgressGroup, OpTopic, 0); !ok || off != 5 {
		t.Fatalf("op progress %d (%v), want 5", off, ok)
	}
	e.end(open, EndCommit)
	e.advance(time.Minute)
	if off, _ := meta.Offset(ProgressGroup, HalfTopic, 0); off != open.QueueOffset+1 {
		t.Fatalf("half progress %d, want %d", off, open.QueueOffset+1)
	}
	if off, _ := meta.Offset(ProgressGroup, OpTopic, 0); off != 6 {
		t.Fatalf("op progress %d, want 6", off)
	}
	e.restart()
	e.wantPending(0)
	_ = last
}

func TestHalfRewrite(t *testing.T) {
	m := &message.Message{Topic: "orders", QueueID: 3, SysFlag: message.SysFlagTxPrepared | message.SysFlagCompressed,
		Properties: props(PropertyProducerGroup, "pg", PropertyTransactionPrepared, "true", message.PropertyUniqKey, "U")}
	toHalf(m)
	if m.Topic != HalfTopic || m.QueueID != 0 || m.SysFlag != message.SysFlagCompressed {
		t.Fatalf("half %s/%d sysFlag %#x", m.Topic, m.QueueID, m.SysFlag)
	}
	want := map[string]string{PropertyRealTopic: "orders", PropertyRealQueueID: "3", PropertyProducerGroup: "pg",
		PropertyTransactionPrepared: "true", message.PropertyUniqKey: "U",
		// As RocketMQ's broker: the transaction id of a half is its UNIQ_KEY.
		PropertyTransactionID: "U"}
	for k, v := range want {
		if got := m.Property(k); got != v {
			t.Errorf("property %s = %q, want %q", k, got, v)
		}
	}
}

// TestHalfTransactionIDReplacesClients: a half's __transactionId__ is its
// UNIQ_KEY even when the producer set one (RocketMQ's broker overwrites
// it); without a UNIQ_KEY the producer's stays.
func TestHalfTransactionIDReplacesClients(t *testing.T) {
	m := &message.Message{Topic: "orders", Properties: props(message.PropertyUniqKey, "U1", PropertyTransactionID, "client")}
	toHalf(m)
	if got := m.Property(PropertyTransactionID); got != "U1" {
		t.Fatalf("transaction id %q, want the UNIQ_KEY U1", got)
	}
	m = &message.Message{Topic: "orders", Properties: props(PropertyTransactionID, "client")}
	toHalf(m)
	if got := m.Property(PropertyTransactionID); got != "client" {
		t.Fatalf("without a UNIQ_KEY the transaction id is %q, want the producer's", got)
	}
}

// TestIsSystemTopic: the three transaction topics are system topics; a
// send's prepared flag is the front's to decode (rmq.Prepared, tested
// there).
func TestIsSystemTopic(t *testing.T) {
	for _, s := range []string{HalfTopic, OpTopic, CheckMaxTimeTopic} {
		if !IsSystemTopic(s) {
			t.Errorf("IsSystemTopic(%s) = false", s)
		}
	}
	if IsSystemTopic("orders") || !IsHalfTopic(HalfTopic) || IsHalfTopic(OpTopic) {
		t.Error("IsSystemTopic / IsHalfTopic wrong for plain topics")
	}
}

func TestOpOffsets(t *testing.T) {
	cases := map[string][]int64{"17": {17}, "1,2,3": {1, 2, 3}, "": nil, "x,4": {4}, "-1": nil, " 5 ": {5}}
	for in, want := range cases {
		var got []int64
		opOffsets([]byte(in), func(v int64) { got = append(got, v) })
		if !slices.Equal(got, want) {
			t.Errorf("opOffsets(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestConfig(t *testing.T) {
	d := DefaultConfig()
	if d.Timeout != 6*time.Second || d.CheckInterval != time.Minute || d.MaxChecks != 15 {
		t.Fatalf("defaults %+v", d)
	}
	for _, c := range []Config{{Timeout: -1}, {CheckInterval: -time.Second}, {MaxChecks: -1}} {
		c.fill()
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil", c)
		}
	}
	st, err := store.Open(func() store.Config {
		c := store.DefaultConfig("/d")
		c.FS = vfs.NewMem()
		c.SegmentBytes = 1 << 20
		c.MaxMessageBytes = 64 << 10
		c.IndexSlotsPerFile = 64
		c.IndexEntriesPerFile = 256
		return c
	}())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := New(st, st.Meta(), nil, Config{}); err == nil {
		t.Error("New without a Checker succeeded")
	}
}

func TestStoreFailureLeavesTransactionOpen(t *testing.T) {
	e := newDiskEnv(t)
	h := e.prepare("orders", 0, "x", "pg")
	e.advance(time.Second)
	e.fs.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpWrite && strings.Contains(p, "commitlog") {
			return errors.New("injected write error")
		}
		return nil
	})
	if err := e.m.End(endReq(h, EndCommit)); err == nil {
		t.Fatal("End succeeded though the commit log cannot be written")
	}
	e.wantPending(1)
	e.clk.Advance(5 * time.Second) // the check's copy cannot be stored either
	e.wantChecks(1)
	e.wantPending(1)
	if e.logs.warned("re-storing a half message failed") != 1 {
		t.Fatalf("warnings %q, want one failed re-store", e.logs.warns)
	}
	// Reopen without the fault: the transaction is still open.
	e.fs.InjectError(nil)
	e.m.Close()
	e.file.Close() // reports the log failure
	e.m, e.st, e.file = nil, nil, nil
	e.open()
	e.advance(time.Second)
	e.wantPending(1)
	e.end(h, EndCommit)
	e.end(h, EndCommit)
	e.put("orders", 0, "marker")
	if got := e.bodies("orders", 0); !slices.Equal(got, []string{"x", "marker"}) {
		t.Fatalf("orders/0 = %q, want [x marker]", got)
	}
}

func TestRealClockRounds(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Clock = clock.Real
		c.Timeout = 20 * time.Millisecond
		c.CheckInterval = 30 * time.Millisecond
		c.MaxChecks = 100
	})
	calls := make(chan checkCall, 100)
	e.chk.mu.Lock()
	e.chk.answer = func(c checkCall) { calls <- c }
	e.chk.mu.Unlock()
	h := e.prepare("orders", 0, "real", "pg")
	var last checkCall
	for i := range 2 {
		select {
		case last = <-calls:
		case <-time.After(waitLimit):
			t.Fatalf("check %d did not come", i+1)
		}
	}
	if last.checks != "1" {
		t.Fatalf("second check has count %q, want 1", last.checks)
	}
	if err := e.endFromCheck(last, EndCommit); err != nil {
		t.Fatal(err)
	}
	e.end(h, EndCommit)
	e.put("orders", 0, "marker")
	if got := e.bodies("orders", 0); !slices.Equal(got, []string{"real", "marker"}) {
		t.Fatalf("orders/0 = %q, want [real marker]", got)
	}
}
