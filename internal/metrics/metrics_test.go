package metrics

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/meta"
	"github.com/petrelmq/petrel/internal/store/storetest"
	"github.com/petrelmq/petrel/internal/vfs"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

const waitLimit = 10 * time.Second

// env is a broker over an in-memory store with its metrics served by an
// httptest server.
type env struct {
	t    *testing.T
	m    *Metrics
	st   *store.Store
	b    *broker.Broker
	http *httptest.Server
}

func newEnv(t *testing.T) *env {
	t.Helper()
	logger := storetest.Logger(t)
	m := New(Options{Logger: logger})
	clk := clock.NewManual(t0)
	scfg := storetest.SmallConfig(vfs.NewMem(), clk, logger)
	scfg.OnGroupCommit = m.ObserveGroupCommit
	st, err := store.Open(scfg)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	bcfg := broker.DefaultConfig()
	bcfg.Clock, bcfg.Logger = clk, logger
	bcfg.ObserveSend = m.ObserveSend
	return startEnv(t, m, st, bcfg)
}

// startEnv starts a broker with bcfg over st (closing st if that fails)
// and serves m; all of it is closed when the test ends.
func startEnv(t *testing.T, m *Metrics, st *store.Store, bcfg broker.Config) *env {
	t.Helper()
	b, err := broker.New(st, st.Meta(), bcfg)
	if err != nil {
		st.Close()
		t.Fatalf("new broker: %v", err)
	}
	e := &env{t: t, m: m, st: st, b: b, http: httptest.NewServer(m.Handler())}
	t.Cleanup(func() {
		e.http.Close()
		b.Close()
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return e
}

// scrape fetches /metrics and parses it with the Prometheus text parser.
func (e *env) scrape() map[string]*dto.MetricFamily {
	e.t.Helper()
	resp, err := http.Get(e.http.URL + "/metrics")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("/metrics answered %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		e.t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// await waits until cond holds.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, waitLimit)
		}
		<-tick.C
	}
}

func sendReq(topic string, qid int32, body string, props map[string]string) *broker.SendRequest {
	return &broker.SendRequest{
		ProducerGroup: "pg", Topic: topic, DefaultTopic: broker.TemplateTopic, DefaultTopicQueueNums: 4,
		QueueID: qid, BornTimestamp: t0.UnixMilli(), BornHost: netip.MustParseAddrPort("10.0.0.2:40000"),
		Properties: message.EncodeProperties(props), Body: []byte(body),
	}
}

func (e *env) send(req *broker.SendRequest) broker.SendResult {
	e.t.Helper()
	res, err := e.b.Send(context.Background(), req)
	if err != nil {
		e.t.Fatalf("send to %s: %v", req.Topic, err)
	}
	return res
}

// value finds the sample of family name whose labels include labels
// (name, value pairs) and returns its value (a histogram: its count).
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no series %s in /metrics", name)
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	t.Fatalf("no sample of %s with labels %v", name, labels)
	return 0
}

func histogramSum(t *testing.T, fams map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil || len(f.GetMetric()) != 1 || f.GetMetric()[0].Histogram == nil {
		t.Fatalf("%s is not one histogram in /metrics", name)
	}
	return f.GetMetric()[0].GetHistogram().GetSampleSum()
}

func TestMetricsAfterProduceAndConsume(t *testing.T) {
	e := newEnv(t)
	before := e.scrape()
	if n := value(t, before, "petrel_send_duration_seconds"); n != 0 {
		t.Fatalf("send histogram has %v samples before any send", n)
	}
	if _, ok := before["petrel_put_messages_total"]; ok {
		t.Fatal("broker series present before Attach")
	}
	e.m.Attach(Source{Broker: e.b, Store: e.st, Conns: func() int { return 3 }})

	const topic, group = "Orders", "G"
	if err := e.b.CreateTopic(meta.Topic{Name: topic, ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}); err != nil {
		t.Fatal(err)
	}
	e.b.Heartbeat(1, broker.Heartbeat{ClientID: "c1", Consumers: []broker.ConsumerData{{
		Group: group, ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET",
		Subscriptions: []broker.Subscription{{Topic: topic, Expression: "*", ExpressionType: broker.ExpressionTag, SubVersion: 1}},
	}}})
	// Five sync sends to queue 0, one of them resent (a dedup hit), and
	// five async sends to queue 1.
	for i := range 5 {
		e.send(sendReq(topic, 0, "body", map[string]string{message.PropertyUniqKey: "K" + string(rune('0'+i))}))
	}
	e.send(sendReq(topic, 0, "body", map[string]string{message.PropertyUniqKey: "K0"}))
	for range 5 {
		done := make(chan error, 1)
		if !e.b.SendAsync(context.Background(), sendReq(topic, 1, "body", nil), func(_ broker.SendResult, err error) { done <- err }) {
			t.Fatal("SendAsync did not take a send to an existing topic")
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// One delayed message (level 3) stays pending under the manual clock.
	e.send(sendReq(topic, 0, "later", map[string]string{message.PropertyDelayLevel: "3"}))
	await(t, "dispatch of the sends", func() bool {
		return e.b.MaxOffset(topic, 0) == 5 && e.b.MaxOffset(topic, 1) == 5 && e.b.PendingTimers() == 1
	})
	// The group has committed nothing yet on both queues: lag 5 and 5.
	e.b.UpdateConsumerOffset(group, topic, 0, 0)
	e.b.UpdateConsumerOffset(group, topic, 1, 0)
	// A pull on an empty topic parks.
	if err := e.b.CreateTopic(meta.Topic{Name: "Empty", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}); err != nil {
		t.Fatal(err)
	}
	parked := make(chan error, 1)
	go func() {
		_, err := e.b.Pull(context.Background(), &broker.PullRequest{Group: group, Topic: "Empty", MaxMsgs: 1,
			SysFlag: broker.PullFlagSuspend | broker.PullFlagSubscription, SuspendTimeout: time.Minute, Conn: 1,
			Subscription: "*", ExpressionType: broker.ExpressionTag})
		parked <- err
	}()
	await(t, "the pull to park", func() bool {
		select {
		case err := <-parked:
			t.Fatalf("the pull on an empty queue returned at once: %v", err)
		default:
		}
		return e.b.ParkedPulls() == 1
	})

	fams := e.scrape()
	if v := value(t, fams, "petrel_put_messages_total", "topic", topic); v != 10 {
		t.Errorf("put messages of %s = %v, want 10 (the resend is not stored)", topic, v)
	}
	if v := value(t, fams, "petrel_put_bytes_total", "topic", topic); v < 10*4 {
		t.Errorf("put bytes of %s = %v, want at least the 40 body bytes", topic, v)
	}
	if v := value(t, fams, "petrel_send_duration_seconds"); v != 12 {
		t.Errorf("send histogram count = %v, want 12 (5 + resend + 5 async + delayed)", v)
	}
	if v := value(t, fams, "petrel_commitlog_group_commit_messages"); v < 1 {
		t.Errorf("group-commit histogram count = %v, want at least 1", v)
	}
	if s := histogramSum(t, fams, "petrel_commitlog_group_commit_messages"); s < 11 {
		t.Errorf("group commits acknowledged %v messages, want at least the 11 stored", s)
	}
	if v := value(t, fams, "petrel_commitlog_flush_duration_seconds"); v < 1 {
		t.Errorf("flush histogram count = %v, want at least 1 under FlushSync", v)
	}
	if v := value(t, fams, "petrel_consumer_lag_messages", "group", group, "topic", topic, "queue_id", "0"); v != 5 {
		t.Errorf("lag of queue 0 = %v, want 5", v)
	}
	if v := value(t, fams, "petrel_consumer_lag_messages", "group", group, "topic", topic, "queue_id", "1"); v != 5 {
		t.Errorf("lag of queue 1 = %v, want 5", v)
	}
	if v := value(t, fams, "petrel_consumer_lag_omitted_queues"); v != 0 {
		t.Errorf("omitted lag queues = %v, want 0", v)
	}
	if v := value(t, fams, "petrel_parked_pulls"); v != 1 {
		t.Errorf("parked pulls = %v, want 1", v)
	}
	if v := value(t, fams, "petrel_dedup_hits_total"); v != 1 {
		t.Errorf("dedup hits = %v, want 1", v)
	}
	if v := value(t, fams, "petrel_dedup_window_entries"); v < 5 {
		t.Errorf("dedup window entries = %v, want at least 5", v)
	}
	if v := value(t, fams, "petrel_timer_pending_messages"); v != 1 {
		t.Errorf("pending timers = %v, want 1", v)
	}
	if v := value(t, fams, "petrel_connections"); v != 3 {
		t.Errorf("connections = %v, want 3", v)
	}
	total, free := value(t, fams, "petrel_disk_total_bytes"), value(t, fams, "petrel_disk_free_bytes")
	if total <= 0 || free <= 0 || free > total {
		t.Errorf("disk total %v, free %v: want 0 < free ≤ total", total, free)
	}
	if v := value(t, fams, "petrel_commitlog_bytes"); v <= 0 {
		t.Errorf("commit-log bytes = %v, want > 0", v)
	}
	if v := value(t, fams, "petrel_broker_start_time_seconds"); v != float64(t0.Unix()) {
		t.Errorf("start time = %v, want %d", v, t0.Unix())
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("no Go runtime series")
	}

	// Consume queue 0 and commit: its lag drops to 0, get counters grow.
	pr, err := e.b.Pull(context.Background(), &broker.PullRequest{Group: group, Topic: topic, QueueID: 0, MaxMsgs: 32, Conn: 2})
	if err != nil {
		t.Fatal(err)
	}
	if pr.Count != 5 {
		t.Fatalf("pulled %d messages, want 5", pr.Count)
	}
	e.b.UpdateConsumerOffset(group, topic, 0, pr.NextBeginOffset)
	pr.Release()
	// One message goes to the dead-letter queue.
	first, err := e.b.Pull(context.Background(), &broker.PullRequest{Group: group, Topic: topic, QueueID: 1, MaxMsgs: 1, Conn: 2})
	if err != nil || first.Count != 1 {
		t.Fatalf("pull one of queue 1: %v, %+v", err, first)
	}
	m, _, err := message.Decode(first.Body)
	if err != nil {
		t.Fatal(err)
	}
	first.Release()
	if _, err := e.b.SendBack(context.Background(), &broker.SendBackRequest{Offset: m.PhysicalOffset, Group: group,
		DelayLevel: -1, OriginTopic: topic}); err != nil {
		t.Fatal(err)
	}
	dlq := broker.DLQGroupTopicPrefix + group
	await(t, "the dead-letter message", func() bool { return e.b.MaxOffset(dlq, 0) == 1 })

	fams = e.scrape()
	if v := value(t, fams, "petrel_consumer_lag_messages", "group", group, "topic", topic, "queue_id", "0"); v != 0 {
		t.Errorf("lag of queue 0 after consuming = %v, want 0", v)
	}
	if v := value(t, fams, "petrel_get_messages_total", "topic", topic); v != 6 {
		t.Errorf("get messages of %s = %v, want 6", topic, v)
	}
	if v := value(t, fams, "petrel_get_bytes_total", "topic", topic); v <= 0 {
		t.Errorf("get bytes of %s = %v, want > 0", topic, v)
	}
	if v := value(t, fams, "petrel_dlq_messages", "group", group); v != 1 {
		t.Errorf("DLQ messages of %s = %v, want 1", group, v)
	}
	if s := histogramSum(t, fams, "petrel_send_duration_seconds"); s != 0 || math.IsNaN(s) {
		// The manual clock does not move: every send took 0 s by it.
		t.Errorf("send durations sum to %v under a manual clock, want 0", s)
	}

	e.b.Close() // answers the parked pull
	if err := <-parked; err != nil && !strings.Contains(err.Error(), "clos") {
		t.Errorf("parked pull ended with %v", err)
	}
}

func TestHealthzAndReadyz(t *testing.T) {
	var r Readiness
	m := New(Options{Ready: r.Err})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "recovering") {
		t.Fatalf("/readyz while recovering: %d %q", code, body)
	}
	r.SetRecovered()
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "name server") {
		t.Fatalf("/readyz before registration: %d %q", code, body)
	}
	r.SetRegistered()
	if code, body := get("/readyz"); code != 200 || body != "ready\n" {
		t.Fatalf("/readyz when ready: %d %q", code, body)
	}
	if code, _ := get("/nothing"); code != 404 {
		t.Fatalf("unknown path answered %d, want 404", code)
	}
}

func TestLagSeriesAreBounded(t *testing.T) {
	e := newEnv(t)
	e.m.opts.MaxLagQueues = 3
	e.m.Attach(Source{Broker: e.b, Store: e.st})
	if err := e.b.CreateTopic(meta.Topic{Name: "T", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"A", "B"} {
		e.b.Heartbeat(1, broker.Heartbeat{ClientID: "c", Consumers: []broker.ConsumerData{{Group: g, ConsumeType: "CONSUME_PASSIVELY",
			MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET"}}})
		for q := range int32(4) {
			e.b.UpdateConsumerOffset(g, "T", q, 0)
		}
	}
	fams := e.scrape()
	if n := len(fams["petrel_consumer_lag_messages"].GetMetric()); n != 3 {
		t.Fatalf("%d lag series, want the bound 3", n)
	}
	if v := value(t, fams, "petrel_consumer_lag_omitted_queues"); v != 5 {
		t.Fatalf("omitted lag queues = %v, want 5", v)
	}
	if _, ok := fams["petrel_connections"]; ok {
		t.Fatal("connections reported without a Conns source")
	}
}

func TestServerListensAndCloses(t *testing.T) {
	m := New(Options{})
	s, err := Listen("127.0.0.1:0", m.Handler())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + s.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/healthz answered %s", resp.Status)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := http.Get("http://" + s.Addr().String() + "/healthz"); err == nil {
		t.Fatal("the server still answers after Close")
	}
	if _, err := Listen("127.0.0.1:-1", m.Handler()); err == nil {
		t.Fatal("listening on port -1 succeeded")
	}
}

func TestTrafficCountersExistAtZeroAndValuesArePlain(t *testing.T) {
	e := newEnv(t)
	e.m.Attach(Source{Broker: e.b, Store: e.st})
	if err := e.b.CreateTopic(meta.Topic{Name: "Idle", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}); err != nil {
		t.Fatal(err)
	}
	fams := e.scrape()
	for _, name := range []string{"petrel_put_messages_total", "petrel_put_bytes_total", "petrel_get_messages_total", "petrel_get_bytes_total"} {
		var found bool
		for _, m := range fams[name].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "topic" && l.GetValue() == "Idle" {
					found = true
					if v := m.GetCounter().GetValue(); v != 0 {
						t.Fatalf("%s{topic=Idle} = %v before any traffic, want 0", name, v)
					}
				}
			}
		}
		if !found {
			t.Fatalf("%s has no series for a topic without traffic", name)
		}
	}
	resp, err := http.Get(e.http.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		fields := strings.Fields(line[strings.LastIndexByte(line, '}')+1:])
		if len(fields) == 0 {
			t.Fatalf("sample line without a value: %q", line)
		}
		if strings.ContainsAny(fields[len(fields)-1], "eE") && !strings.Contains(fields[len(fields)-1], "Inf") {
			t.Fatalf("value in exponent notation: %q", line)
		}
	}
}

func TestIdleTopicSeriesAreBounded(t *testing.T) {
	e := newEnv(t)
	e.m.Attach(Source{Broker: e.b, Store: e.st})
	for i := range maxIdleTopicSeries + 10 {
		if err := e.b.CreateTopic(meta.Topic{Name: "T" + strconv.Itoa(i), ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(e.scrape()["petrel_put_messages_total"].GetMetric()); n != maxIdleTopicSeries {
		t.Fatalf("%d put series for idle topics, want the bound %d", n, maxIdleTopicSeries)
	}
}
