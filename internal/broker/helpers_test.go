package broker

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
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

// env is a broker over a store with a manual clock: by default the
// in-memory twin (memstore), with the meta, timer and pop state on an
// in-memory FS; newDiskEnv puts it on the file store on that FS, for the
// tests of durability, visibility after fsync, crashes, disk errors and
// retention.
type env struct {
	t       testing.TB
	fs      *vfs.MemFS
	clk     *clock.Manual
	st      store.MessageStore
	file    *store.Store     // st on the file store
	stores  storetest.Stores // st and md: the twin, or the file store (Disk)
	md      *meta.Store
	b       *Broker
	scfg    store.Config
	bcfg    Config
	arrived chan struct{}
	parked  chan struct{}
}

// newEnv is a broker over the in-memory twin of the store.
func newEnv(t testing.TB, opts ...func(*store.Config, *Config)) *env {
	t.Helper()
	return startEnv(t, false, opts)
}

// newDiskEnv is a broker over the file store on an in-memory FS.
func newDiskEnv(t testing.TB, opts ...func(*store.Config, *Config)) *env {
	t.Helper()
	return startEnv(t, true, opts)
}

func startEnv(t testing.TB, disk bool, opts []func(*store.Config, *Config)) *env {
	t.Helper()
	e := &env{t: t, fs: vfs.NewMem(), clk: clock.NewManual(t0), stores: storetest.Stores{Disk: disk}}
	logger := storetest.Logger(t)
	e.scfg = storetest.SmallConfig(e.fs, e.clk, logger)
	e.bcfg = DefaultConfig()
	e.bcfg.Clock = e.clk
	e.bcfg.Logger = logger
	for _, o := range opts {
		o(&e.scfg, &e.bcfg)
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
	e.arrived = make(chan struct{}, 1)
	st.AddListener(func(string, int32, int64) {
		select {
		case e.arrived <- struct{}{}:
		default:
		}
	})
	b, err := New(st, e.md, e.bcfg)
	if err != nil {
		e.closeStores()
		e.t.Fatalf("new broker: %v", err)
	}
	e.b = b
	e.parked = make(chan struct{}, 100)
	b.polls.testHookParked = func() { e.parked <- struct{}{} }
}

func (e *env) close() {
	if e.b != nil {
		e.b.Close()
		e.b = nil
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

// restart closes broker and store and opens both again on the same FS.
func (e *env) restart() {
	e.close()
	e.open()
}

// waitMax waits until the queue's max offset reaches want.
func (e *env) waitMax(topic string, qid int32, want int64) {
	e.t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for e.st.MaxOffset(topic, qid) < want {
		select {
		case <-e.arrived:
		case <-deadline.C:
			e.t.Fatalf("queue %s/%d: max offset %d, want %d", topic, qid, e.st.MaxOffset(topic, qid), want)
		}
	}
}

// waitParked waits for n parks.
func (e *env) waitParked(n int) {
	e.t.Helper()
	for range n {
		select {
		case <-e.parked:
		case <-time.After(waitLimit):
			e.t.Fatalf("pull not parked within %v (parked: %d)", waitLimit, e.b.ParkedPulls())
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

// sendReq is a send with encoded properties kv, typed as the 4.x front
// types them (typed).
func sendReq(topic string, qid int32, body string, kv ...string) *SendRequest {
	r := &SendRequest{
		ProducerGroup: "pg", Topic: topic, DefaultTopic: TemplateTopic, DefaultTopicQueueNums: 4,
		QueueID: qid, BornTimestamp: t0.UnixMilli(), BornHost: netip.MustParseAddrPort("10.0.0.2:40000"),
		Properties: message.EncodedProperties(props(kv...)), Body: []byte(body),
	}
	typed(r, kv...)
	return r
}

// typed sets r's Transactional and Delay from the 4.x properties kv
// (TRAN_MSG=true; TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS,
// DELAY), as the 4.x front does (the tests use one delay key at a time).
func typed(r *SendRequest, kv ...string) {
	for i := 0; i+1 < len(kv); i += 2 {
		v, _ := strconv.ParseInt(kv[i+1], 10, 64)
		switch kv[i] {
		case message.PropertyTransactionFlag:
			r.Transactional = kv[i+1] == "true"
		case message.PropertyTimerDeliverMS:
			r.Delay = message.Delay{AtMS: v}
		case PropertyTimerDelaySec:
			r.Delay = message.Delay{After: time.Duration(v) * time.Second}
		case PropertyTimerDelayMS:
			r.Delay = message.Delay{After: time.Duration(v) * time.Millisecond}
		case message.PropertyDelayLevel:
			r.Delay = message.Delay{Level: int32(v)}
		}
	}
}

// send stores a message and waits until a pull can see it.
func (e *env) send(topic string, qid int32, body string, kv ...string) SendResult {
	e.t.Helper()
	res, err := e.b.Send(context.Background(), sendReq(topic, qid, body, kv...))
	if err != nil {
		e.t.Fatalf("send %s/%d: %v", topic, qid, err)
	}
	e.waitMax(topic, qid, res.QueueOffset+1)
	// And until its listeners ran: a late arrival must not wake a pull or
	// pop the test parks next.
	if err := e.st.WaitDispatched(context.Background()); err != nil {
		e.t.Fatalf("send %s/%d: wait for dispatch: %v", topic, qid, err)
	}
	return res
}

func (e *env) createTopic(name string, queues int32) {
	e.t.Helper()
	if err := e.b.CreateTopic(topicCfg(name, queues, 6)); err != nil {
		e.t.Fatal(err)
	}
}

// subscribe registers a consumer group member on conn.
func (e *env) subscribe(conn uint64, clientID, group, topic, expr string) {
	e.b.Heartbeat(conn, Heartbeat{ClientID: clientID, Consumers: []ConsumerData{{
		Group: group, ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET",
		Subscriptions: []Subscription{{Topic: topic, Expression: expr, ExpressionType: ExpressionTag, SubVersion: 1}},
	}}})
}

type pulled struct {
	res    *PullResult
	bodies []string
	tags   []string
	recs   []*message.Message
}

// pull runs a pull and decodes the records.
func (e *env) pull(req *PullRequest) (pulled, error) {
	return pullOn(e.b, context.Background(), req)
}

func pullOn(b *Broker, ctx context.Context, req *PullRequest) (pulled, error) {
	res, err := b.Pull(ctx, req)
	if err != nil {
		return pulled{}, err
	}
	p := pulled{res: res}
	body := res.Body
	for len(body) > 0 {
		m, n, err := message.Decode(body)
		if err != nil {
			return p, fmt.Errorf("decode pulled record: %w", err)
		}
		p.recs = append(p.recs, m)
		p.bodies = append(p.bodies, string(m.Body))
		p.tags = append(p.tags, m.Tags())
		body = body[n:]
	}
	if len(p.recs) != res.Count {
		return p, fmt.Errorf("body holds %d records, Count says %d", len(p.recs), res.Count)
	}
	res.Release()
	return p, nil
}

func (e *env) mustPull(req *PullRequest) pulled {
	e.t.Helper()
	p, err := e.pull(req)
	if err != nil {
		e.t.Fatalf("pull %+v: %v", *req, err)
	}
	return p
}

func pullReq(group, topic string, qid int32, off int64) *PullRequest {
	return &PullRequest{Group: group, Topic: topic, QueueID: qid, Offset: off, MaxMsgs: 32, Conn: 1}
}

func wantKind(t *testing.T, err error, kind Kind, substr ...string) {
	t.Helper()
	var be *Error
	if !errors.As(err, &be) {
		t.Fatalf("err = %v, want a *broker.Error of kind %v", err, kind)
	}
	if be.Kind != kind {
		t.Fatalf("kind = %v (%v), want %v", be.Kind, err, kind)
	}
	for _, s := range substr {
		if !strings.Contains(be.Msg, s) {
			t.Fatalf("message %q does not contain %q", be.Msg, s)
		}
	}
}

// asyncPull runs a pull on its own goroutine.
type asyncPull struct {
	done chan struct{}
	p    pulled
	err  error
}

func (e *env) startPull(ctx context.Context, req *PullRequest) *asyncPull {
	a := &asyncPull{done: make(chan struct{})}
	b := e.b
	go func() {
		defer close(a.done)
		a.p, a.err = pullOn(b, ctx, req)
	}()
	return a
}

func (a *asyncPull) answered() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

func (a *asyncPull) wait(t *testing.T) pulled {
	t.Helper()
	select {
	case <-a.done:
	case <-time.After(waitLimit):
		t.Fatalf("parked pull not answered within %v", waitLimit)
	}
	if a.err != nil {
		t.Fatalf("parked pull: %v", a.err)
	}
	return a.p
}

// hookLog records hook calls.
type hookLog struct {
	mu    sync.Mutex
	calls []string
}

func (h *hookLog) add(s string) {
	h.mu.Lock()
	h.calls = append(h.calls, s)
	h.mu.Unlock()
}

func (h *hookLog) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.calls
	h.calls = nil
	return out
}
