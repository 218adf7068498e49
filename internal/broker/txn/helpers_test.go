package txn

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/meta"
	"github.com/petrelmq/petrel/internal/store/storetest"
	"github.com/petrelmq/petrel/internal/vfs"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

const waitLimit = 10 * time.Second

// checkCall is one Checker call.
type checkCall struct {
	group  string
	qo     int64
	clo    int64
	checks string // TRANSACTION_CHECK_TIMES of the record ("" = none)
	at     time.Time
	rec    message.Record
}

// fakeChecker records calls; the first `offline` calls report no producer.
type fakeChecker struct {
	clk     *clock.Manual
	mu      sync.Mutex
	calls   []checkCall
	offline int
	// answer, when set, runs inside the call (a producer answering at once).
	answer func(c checkCall)
}

func (f *fakeChecker) check(group string, r message.Record, qo int64) bool {
	c := checkCall{group: group, qo: qo, clo: r.PhysicalOffset(), at: f.clk.Now(), rec: r}
	if v, ok := r.Property(PropertyCheckTimes); ok {
		c.checks = string(v)
	}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	online := f.offline <= 0
	f.offline--
	answer := f.answer
	f.mu.Unlock()
	if online && answer != nil {
		answer(c)
	}
	return online
}

func (f *fakeChecker) n() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func (f *fakeChecker) last() checkCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[len(f.calls)-1]
}

// logSink writes to t.Log and keeps the messages of Warn and above.
type logSink struct {
	t     testing.TB
	mu    sync.Mutex
	warns []string
}

func (l *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (l *logSink) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	if r.Level >= slog.LevelInfo {
		l.t.Log(b.String())
	}
	if r.Level >= slog.LevelWarn {
		l.mu.Lock()
		l.warns = append(l.warns, r.Message)
		l.mu.Unlock()
	}
	return nil
}
func (l *logSink) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logSink) WithGroup(string) slog.Handler      { return l }

func (l *logSink) warned(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, w := range l.warns {
		if strings.Contains(w, substr) {
			n++
		}
	}
	return n
}

// env is a Manager with a manual clock over the in-memory twin of the
// store (memstore) and a meta store on an in-memory FS, or, from
// newDiskEnv, over the file store on that FS (for crashes and disk errors).
type env struct {
	t       *testing.T
	fs      *vfs.MemFS
	clk     *clock.Manual
	logs    *logSink
	scfg    store.Config
	cfg     Config
	chk     *fakeChecker
	st      store.MessageStore
	file    *store.Store     // st on the file store
	stores  storetest.Stores // st and md: the twin, or the file store (Disk)
	md      *meta.Store
	m       *Manager
	arrived chan struct{}
	uniq    int
}

func newEnv(t *testing.T, opts ...func(*Config)) *env {
	t.Helper()
	return startEnv(t, false, opts)
}

func newDiskEnv(t *testing.T, opts ...func(*Config)) *env {
	t.Helper()
	return startEnv(t, true, opts)
}

func startEnv(t *testing.T, disk bool, opts []func(*Config)) *env {
	t.Helper()
	e := &env{t: t, fs: vfs.NewMem(), clk: clock.NewManual(t0), logs: &logSink{t: t}, stores: storetest.Stores{Disk: disk}}
	e.chk = &fakeChecker{clk: e.clk}
	logger := slog.New(e.logs)
	e.scfg = storetest.SmallConfig(e.fs, e.clk, slog.New(slog.DiscardHandler))
	e.cfg = Config{Clock: e.clk, Timeout: 6 * time.Second, CheckInterval: time.Minute, MaxChecks: 3, Logger: logger}
	for _, o := range opts {
		o(&e.cfg)
	}
	e.open()
	t.Cleanup(e.close)
	return e
}

func (e *env) open() {
	e.t.Helper()
	e.stores.Cfg = e.scfg
	e.stores.Open(e.t)
	e.st, e.md, e.file = e.stores.St, e.stores.Md, e.stores.File
	st := e.st
	m, err := New(st, e.md, e.chk.check, e.cfg)
	if err != nil {
		e.closeStores()
		e.t.Fatalf("new manager: %v", err)
	}
	// After New: listeners run in order, so when this one has run for a
	// record the manager has seen it too.
	e.arrived = make(chan struct{}, 1)
	st.AddListener(func(string, int32, int64) {
		select {
		case e.arrived <- struct{}{}:
		default:
		}
	})
	e.m = m
	m.Start()
}

func (e *env) close() {
	if e.m != nil {
		if err := e.m.Close(); err != nil {
			e.t.Errorf("close manager: %v", err)
		}
		e.m = nil
	}
	e.closeStores()
}

func (e *env) closeStores() {
	if e.st == nil {
		return // closed, or closed by the test itself
	}
	e.stores.Close(e.t)
	e.st, e.md, e.file = nil, nil, nil
}

func (e *env) restart() {
	e.t.Helper()
	e.close()
	e.open()
}

// settle waits until everything stored so far is dispatched (and the
// listeners, the manager's included, have seen it).
func (e *env) settle() {
	e.t.Helper()
	if !e.stores.Disk {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := e.st.WaitDispatched(ctx); err != nil {
			e.t.Fatalf("wait for the listeners: %v", err)
		}
		return
	}
	target := e.file.Durable()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for e.file.Dispatched() < target {
		select {
		case <-e.arrived:
		case <-time.After(time.Millisecond):
		case <-deadline.C:
			e.t.Fatalf("dispatched %d, want %d", e.file.Dispatched(), target)
		}
	}
}

func props(kv ...string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return message.EncodeProperties(m)
}

// prepare does what the broker does with a transactional send: Half, then
// store. It returns the stored half.
func (e *env) prepare(topic string, qid int32, body, group string, kv ...string) *message.Message {
	e.t.Helper()
	e.uniq++
	kv = append([]string{PropertyProducerGroup, group, PropertyTransactionPrepared, "true",
		message.PropertyUniqKey, fmt.Sprintf("UNIQ%04d", e.uniq), message.PropertyTags, "tagA"}, kv...)
	msg := &message.Message{
		Topic: topic, QueueID: qid, Flag: 7, SysFlag: message.SysFlagTxPrepared,
		BornTimestamp: e.clk.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("10.0.0.2:40000"),
		Body: []byte(body), Properties: props(kv...),
	}
	e.m.Half(msg)
	if err := msg.Validate(); err != nil {
		e.t.Fatal(err)
	}
	if err := e.st.Put(msg); err != nil {
		e.t.Fatalf("store half: %v", err)
	}
	e.settle()
	return msg
}

// put stores a plain message (a marker: once it is readable, anything
// stored before it in the same queue is too).
func (e *env) put(topic string, qid int32, body string) *message.Message {
	e.t.Helper()
	msg := &message.Message{Topic: topic, QueueID: qid, BornTimestamp: e.clk.Now().UnixMilli(),
		BornHost: netip.MustParseAddrPort("10.0.0.2:40000"), Body: []byte(body)}
	if err := e.st.Put(msg); err != nil {
		e.t.Fatal(err)
	}
	e.settle()
	return msg
}

func endReq(h *message.Message, typ int32) EndRequest {
	return EndRequest{
		ProducerGroup:        h.Property(PropertyProducerGroup),
		TranStateTableOffset: h.QueueOffset,
		CommitLogOffset:      h.PhysicalOffset,
		CommitOrRollback:     typ,
		MsgID:                h.Property(message.PropertyUniqKey),
	}
}

func (e *env) end(h *message.Message, typ int32) {
	e.t.Helper()
	if err := e.m.End(endReq(h, typ)); err != nil {
		e.t.Fatalf("End(%d) of half %d: %v", typ, h.QueueOffset, err)
	}
	e.settle()
}

// endFromCheck answers a check the way the client does: offsets from the
// check header.
func (e *env) endFromCheck(c checkCall, typ int32) error {
	hdr, _, err := CheckRequest(c.rec)
	if err != nil {
		return err
	}
	return e.m.End(EndRequest{ProducerGroup: c.group, TranStateTableOffset: hdr.TranStateTableOffset,
		CommitLogOffset: hdr.CommitLogOffset, CommitOrRollback: typ, FromTransactionCheck: true,
		MsgID: hdr.MsgID, TransactionID: hdr.TransactionID})
}

// messages returns every message of a queue.
func (e *env) messages(topic string, qid int32) []*message.Message {
	e.t.Helper()
	e.settle()
	var out []*message.Message
	for off := int64(0); ; {
		res, err := e.st.GetMessages(topic, qid, off, 64, 1<<20, nil)
		if err != nil {
			e.t.Fatal(err)
		}
		if res.Status != store.Found {
			res.Release()
			return out
		}
		res.Records(func(r message.Record) {
			m, _, err := message.Decode(r)
			if err != nil {
				e.t.Fatal(err)
			}
			out = append(out, m)
		})
		off = res.NextOffset
		res.Release()
	}
}

// bodies lists the bodies of a queue's messages.
func (e *env) bodies(topic string, qid int32) []string {
	var out []string
	for _, m := range e.messages(topic, qid) {
		out = append(out, string(m.Body))
	}
	return out
}

// advance moves the clock and lets what the rounds stored be dispatched.
func (e *env) advance(d time.Duration) {
	e.t.Helper()
	e.clk.Advance(d)
	e.settle()
}

func (e *env) wantChecks(n int) {
	e.t.Helper()
	if got := e.chk.n(); got != n {
		e.t.Fatalf("%d checks, want %d", got, n)
	}
}

func (e *env) wantPending(n int) {
	e.t.Helper()
	if got := e.m.Pending(); got != n {
		e.t.Fatalf("%d open transactions, want %d", got, n)
	}
}
