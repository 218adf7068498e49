package broker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/vfs"
)

func topicCfg(name string, queues, perm int32) TopicConfig {
	return TopicConfig{Name: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: perm}
}

func TestSendValidationRules(t *testing.T) {
	e := newEnv(t, func(_ *store.Config, c *Config) { c.MaxMessageBytes = 1024 })
	e.createTopic("T", 4)
	if err := e.b.CreateTopic(topicCfg("ReadOnly", 2, PermRead)); err != nil {
		t.Fatal(err)
	}
	longProps := props("K", strings.Repeat("v", message.MaxPropertiesLen))
	cases := []struct {
		name   string
		mutate func(r *SendRequest)
		kind   Kind
		msg    []string
	}{
		{"empty topic", func(r *SendRequest) { r.Topic = "" }, KindMessageIllegal, []string{"empty"}},
		{"illegal characters", func(r *SendRequest) { r.Topic = "bad topic!" }, KindMessageIllegal, []string{"illegal characters", "^[%|a-zA-Z0-9_-]+$"}},
		{"topic over 127", func(r *SendRequest) { r.Topic = strings.Repeat("t", 128) }, KindMessageIllegal, []string{"128 characters", "limit of 127"}},
		{"body over MaxMessageBytes", func(r *SendRequest) { r.Body = make([]byte, 1025) }, KindMessageIllegal, []string{"1025 bytes", "1024", "MaxMessageBytes"}},
		{"batch body over MaxMessageBytes", func(r *SendRequest) {
			r.Batch, r.Body = true, message.EncodeBatch([]message.BatchItem{{Body: make([]byte, 1100)}})
		}, KindMessageIllegal, []string{"batch body", "MaxMessageBytes"}},
		{"properties over 32767", func(r *SendRequest) { r.Properties = message.EncodedProperties(longProps) }, KindMessageIllegal, []string{"properties", "32767"}},
		{"batch item properties over 32767", func(r *SendRequest) {
			r.Batch, r.Body = true, message.EncodeBatch([]message.BatchItem{{Body: []byte("a")}, {Body: []byte("b"), Properties: props("K", strings.Repeat("v", 32750))}})
			e.b.cfg.MaxMessageBytes = 64 << 10
		}, KindMessageIllegal, []string{"batch item 1", "32767"}},
		{"queue id outside the topic", func(r *SendRequest) { r.QueueID = 4 }, KindSystemError, []string{"queue id 4", "4 queues"}},
		{"topic not writable", func(r *SendRequest) { r.Topic = "ReadOnly" }, KindNoPermission, []string{"not writable"}},
		{"malformed batch", func(r *SendRequest) { r.Batch, r.Body = true, []byte{0, 0, 0, 9, 1, 2} }, KindMessageIllegal, []string{"batch body is malformed"}},
		{"empty batch", func(r *SendRequest) { r.Batch, r.Body = true, nil }, KindMessageIllegal, []string{"no message"}},
		{"batch to a retry topic", func(r *SendRequest) {
			r.Topic, r.Batch, r.Body = "%RETRY%g", true, message.EncodeBatch([]message.BatchItem{{Body: []byte("a")}})
		}, KindMessageIllegal, []string{"retry topic"}},
		{"record over the store limit", func(r *SendRequest) {
			e.b.cfg.MaxMessageBytes = 1 << 20
			r.Body = make([]byte, 100<<10)
		}, KindMessageIllegal, []string{"record limit"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			saved := e.b.cfg.MaxMessageBytes
			defer func() { e.b.cfg.MaxMessageBytes = saved }()
			r := sendReq("T", 0, "body")
			c.mutate(r)
			_, err := e.b.Send(context.Background(), r)
			wantKind(t, err, c.kind, c.msg...)
		})
	}
	if e.st.MaxOffset("T", 0) != 0 {
		t.Fatal("a refused send stored a message")
	}
}

func TestSendStoresAndAnswersOffsetID(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 2)
	r1 := e.send("T", 1, "one", "TAGS", "A", "UNIQ_KEY", "U1")
	r2 := e.send("T", 1, "two")
	if r1.Status != SendOK || r1.QueueID != 1 || r1.QueueOffset != 0 || r2.QueueOffset != 1 || r1.RegionID != DefaultRegionID {
		t.Fatalf("results %+v %+v", r1, r2)
	}
	host, phys, err := message.ParseOffsetID(r2.MsgID)
	if err != nil || host != e.scfg.StoreHost {
		t.Fatalf("msgId %q: %v %v", r2.MsgID, host, err)
	}
	rec, err := e.b.ViewByOffset(phys)
	if err != nil || string(rec.Body()) != "two" {
		t.Fatalf("view by offset: %v", err)
	}
	p := e.mustPull(pullReq("g", "T", 1, 0).withSub("*"))
	m := p.recs[0]
	if m.Property(message.PropertyUniqKey) != "U1" || m.Property(message.PropertyCluster) != "DefaultCluster" || m.Tags() != "A" {
		t.Fatalf("stored properties %q", m.Properties)
	}
	if m.BornHost.String() != "10.0.0.2:40000" {
		t.Fatalf("born host %v", m.BornHost)
	}
	// A negative queue id lets the broker choose a write queue.
	r3, err := e.b.Send(context.Background(), sendReq("T", -1, "any"))
	if err != nil || r3.QueueID < 0 || r3.QueueID > 1 {
		t.Fatalf("send with queue -1: %+v, %v", r3, err)
	}
}

func (r *PullRequest) withSub(expr string) *PullRequest {
	r.SysFlag |= PullFlagSubscription
	r.Subscription = expr
	r.ExpressionType = ExpressionTag
	return r
}

func TestAutoCreateTopicFromTemplate(t *testing.T) {
	e := newEnv(t)
	tmpl, ok := e.b.Topic(TemplateTopic)
	if !ok || tmpl.Perm != 7 || tmpl.WriteQueueNums != 8 || tmpl.ReadQueueNums != 8 {
		t.Fatalf("template %+v, %v", tmpl, ok)
	}
	var hooks hookLog
	e.b.OnTopicsChanged(func() { hooks.add("changed") })

	// V1 header: defaultTopicQueueNums 4.
	if _, err := e.b.Send(context.Background(), sendReq("Auto1", 3, "x")); err != nil {
		t.Fatal(err)
	}
	got, ok := e.b.Topic("Auto1")
	if !ok || got.ReadQueueNums != 4 || got.WriteQueueNums != 4 || got.Perm != 6 {
		t.Fatalf("auto-created %+v", got)
	}
	if n := len(hooks.take()); n != 1 {
		t.Fatalf("topic hook ran %d times, want 1", n)
	}
	// A second send does not create again.
	if _, err := e.b.Send(context.Background(), sendReq("Auto1", 0, "y")); err != nil {
		t.Fatal(err)
	}
	if n := len(hooks.take()); n != 0 {
		t.Fatalf("topic hook ran %d times for an existing topic", n)
	}
	// V2 header asking for 16: capped by the template's 8.
	r := sendReq("Auto2", 0, "x")
	r.DefaultTopicQueueNums = 16
	if _, err := e.b.Send(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.b.Topic("Auto2"); got.WriteQueueNums != 8 {
		t.Fatalf("Auto2 has %d queues, want 8", got.WriteQueueNums)
	}
	// A queue id beyond the created queues is refused.
	_, err := e.b.Send(context.Background(), sendReq("Auto3", 5, "x"))
	wantKind(t, err, KindSystemError, "queue id 5")
	// A template without the inherit bit does not create.
	if err := e.b.CreateTopic(topicCfg("NoInherit", 4, 6)); err != nil {
		t.Fatal(err)
	}
	r = sendReq("Auto4", 0, "x")
	r.DefaultTopic = "NoInherit"
	_, err = e.b.Send(context.Background(), r)
	wantKind(t, err, KindTopicNotExist, "may not be inherited")
	if _, ok := e.b.Topic("Auto4"); ok {
		t.Fatal("Auto4 created from a template without the inherit bit")
	}
}

func TestAutoCreateOff(t *testing.T) {
	e := newEnv(t, func(_ *store.Config, c *Config) { c.AutoCreateTopics = false })
	if _, ok := e.b.Topic(TemplateTopic); ok {
		t.Fatal("TBW102 created with auto-create off")
	}
	_, err := e.b.Send(context.Background(), sendReq("Nope", 0, "x"))
	wantKind(t, err, KindTopicNotExist, "auto-creation is off", "Nope")
	if _, ok := e.b.Topic("Nope"); ok {
		t.Fatal("topic created with auto-create off")
	}
	// Even if a template exists (created by an operator).
	if err := e.b.CreateTopic(topicCfg(TemplateTopic, 8, 7)); err != nil {
		t.Fatal(err)
	}
	_, err = e.b.Send(context.Background(), sendReq("Nope", 0, "x"))
	wantKind(t, err, KindTopicNotExist)
}

func TestSendBatch(t *testing.T) {
	e := newEnv(t)
	e.createTopic("B", 2)
	e.send("B", 1, "before")
	items := []message.BatchItem{
		{Flag: 7, Body: []byte("b0"), Properties: props("TAGS", "A")},
		{Body: []byte("b1"), Properties: props("UNIQ_KEY", "MINE", "KEYS", "k1 k2")},
		{Body: []byte("b2")},
	}
	r := sendReq("B", 1, "")
	r.Batch, r.Body = true, message.EncodeBatch(items)
	res, err := e.b.Send(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	ids := strings.Split(res.MsgID, ",")
	if len(ids) != 3 || res.QueueOffset != 1 || res.QueueID != 1 {
		t.Fatalf("batch result %+v", res)
	}
	e.waitMax("B", 1, 4)
	p := e.mustPull(pullReq("g", "B", 1, 1).withSub("*"))
	if strings.Join(p.bodies, ",") != "b0,b1,b2" || p.res.NextBeginOffset != 4 {
		t.Fatalf("pulled %v next %d", p.bodies, p.res.NextBeginOffset)
	}
	seen := map[string]bool{}
	for i, m := range p.recs {
		_, phys, err := message.ParseOffsetID(ids[i])
		if err != nil || phys != m.PhysicalOffset || m.QueueOffset != int64(i+1) {
			t.Fatalf("item %d: id %s (phys %d), record phys %d queue offset %d", i, ids[i], phys, m.PhysicalOffset, m.QueueOffset)
		}
		u := m.Property(message.PropertyUniqKey)
		if u == "" || seen[u] {
			t.Fatalf("item %d: UNIQ_KEY %q missing or repeated", i, u)
		}
		seen[u] = true
	}
	if p.recs[0].Flag != 7 || p.recs[0].Tags() != "A" || p.recs[1].Property(message.PropertyUniqKey) != "MINE" {
		t.Fatalf("items lost their own fields: %+v", p.recs[:2])
	}
	if u := p.recs[2].Property(message.PropertyUniqKey); len(u) != 32 || strings.ToUpper(u) != u {
		t.Fatalf("generated UNIQ_KEY %q is not 32 upper-case hex chars", u)
	}
	recs, err := e.b.QueryByKey("B", "k2", 0, t0.Add(time.Hour).UnixMilli(), 10)
	if err != nil || len(recs) != 1 || string(recs[0].Body()) != "b1" {
		t.Fatalf("query by key: %d records, %v", len(recs), err)
	}
	_, err = e.b.QueryByKey("B", "absent", 0, t0.Add(time.Hour).UnixMilli(), 10)
	wantKind(t, err, KindQueryNotFound)
}

func TestSendFlushTimeoutStatus(t *testing.T) {
	e := newDiskEnv(t)
	e.createTopic("T", 1)
	release := make(chan struct{})
	entered := make(chan struct{})
	var once sync.Once
	e.fs.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpSync && strings.Contains(p, "commitlog/") {
			once.Do(func() { close(entered) })
			<-release
		}
		return nil
	})
	type out struct {
		res SendResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := e.b.Send(context.Background(), sendReq("T", 0, "slow"))
		done <- out{res, err}
	}()
	<-entered
	e.clk.Advance(e.scfg.SyncFlushTimeout + time.Second)
	o := <-done
	close(release)
	e.fs.InjectError(nil)
	if o.err != nil || o.res.Status != SendFlushDiskTimeout || o.res.MsgID == "" {
		t.Fatalf("send under a stuck fsync: %+v, %v; want FLUSH_DISK_TIMEOUT with a msgId", o.res, o.err)
	}
}

func TestSendDiskFullIsServiceUnavailable(t *testing.T) {
	e := newDiskEnv(t)
	e.createTopic("T", 1)
	e.fs.InjectError(func(op vfs.Op, p string) error {
		if op == vfs.OpWrite && strings.Contains(p, "commitlog/") {
			return vfs.ErrNoSpace
		}
		return nil
	})
	_, err := e.b.Send(context.Background(), sendReq("T", 0, "x"))
	e.fs.InjectError(nil)
	if err == nil {
		t.Fatal("send succeeded on a full disk")
	}
	wantKind(t, err, KindServiceUnavailable, "disk of broker broker-a is full")
	if !errors.Is(err, vfs.ErrNoSpace) {
		t.Fatalf("cause %v does not wrap vfs.ErrNoSpace", err)
	}
}

func TestClosedBrokerRefuses(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	e.b.Close()
	e.b.Close() // idempotent
	_, err := e.b.Send(context.Background(), sendReq("T", 0, "x"))
	wantKind(t, err, KindServiceUnavailable, "shutting down")
	_, err = e.b.Pull(context.Background(), pullReq("g", "T", 0, 0).withSub("*"))
	wantKind(t, err, KindServiceUnavailable)
}

// TestNoSendAckedBeforeItsTopicIsDurable: while an auto-created topic's
// config is being written, the topic is already visible, but no send to it
// is acknowledged until the config is on disk (a crash in between would
// otherwise lose the topic of an acknowledged message).
func TestNoSendAckedBeforeItsTopicIsDurable(t *testing.T) {
	e := newEnv(t)
	hold := make(chan struct{})
	holding := make(chan struct{}, 1)
	var once sync.Once
	e.fs.InjectError(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.Contains(path, "topics.json") {
			once.Do(func() { holding <- struct{}{}; <-hold })
		}
		return nil
	})
	first := make(chan error, 1)
	go func() {
		_, err := e.b.Send(context.Background(), sendReq("New", 0, "creator"))
		first <- err
	}()
	<-holding // the config write is held mid-way
	if _, ok := e.b.Topic("New"); !ok {
		t.Fatal("the topic is not visible while its config is written")
	}
	// A batch send does not wait for the topic table: SendBatch returns
	// with the send unanswered, and answers it once the table is durable.
	batched := make(chan error, 1)
	e.b.SendBatch(context.Background(), []*SendRequest{sendReq("New", 0, "batched")}, func(_ int, _ SendResult, err error) { batched <- err })
	second := make(chan error, 1)
	go func() {
		_, err := e.b.Send(context.Background(), sendReq("New", 0, "second"))
		second <- err
	}()
	select {
	case err := <-second:
		t.Fatalf("a send was answered (%v) while the topic config was not durable", err)
	case err := <-batched:
		t.Fatalf("a batch send was answered (%v) while the topic config was not durable", err)
	case err := <-first:
		t.Fatalf("the creating send was answered (%v) before its topic was durable", err)
	default:
	}
	close(hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if err := <-batched; err != nil {
		t.Fatal(err)
	}
	e.fs.InjectError(nil)
	e.waitMax("New", 0, 3)
}

// TestSendBusyWhileTheDiskStalls: while the disk does not sync, sends are
// refused as busy (SYSTEM_BUSY, which producers retry) rather than left to
// time out, and nothing refused is stored.
func TestSendBusyWhileTheDiskStalls(t *testing.T) {
	e := newDiskEnv(t)
	e.createTopic("T", 1)
	release := make(chan struct{})
	entered := make(chan struct{})
	var once sync.Once
	e.fs.InjectError(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.Contains(path, "commitlog") {
			once.Do(func() { close(entered); <-release })
		}
		return nil
	})
	first := make(chan error, 1)
	go func() {
		_, err := e.b.Send(context.Background(), sendReq("T", 0, "stuck"))
		first <- err
	}()
	<-entered
	e.clk.Advance(5 * time.Second / 4) // one sweep: the stuck send is over 1 s old
	_, err := e.b.Send(context.Background(), sendReq("T", 0, "refused"))
	wantKind(t, err, KindSystemBusy, "busy", "nothing was stored")
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	e.fs.InjectError(nil)
	e.clk.Advance(5 * time.Second / 4)
	e.send("T", 0, "after")
	p := e.mustPull(pullReq("g", "T", 0, 0).withSub("*"))
	if strings.Join(p.bodies, ",") != "stuck,after" {
		t.Fatalf("stored %v, want stuck,after", p.bodies)
	}
}
