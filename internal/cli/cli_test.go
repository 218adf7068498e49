package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

var bg = context.Background()

func TestUnreachableNameServerSaysWhereAndWhatToDo(t *testing.T) {
	addr := deadAddr(t)
	var out bytes.Buffer
	c, err := New(Config{NameServers: []string{addr}, Out: &out, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for name, run := range map[string]func() error{
		"cluster list":   func() error { return c.ClusterList(bg) },
		"topic list":     func() error { return c.TopicList(bg, false) },
		"topic describe": func() error { return c.TopicDescribe(bg, "T") },
		"topic create":   func() error { return c.TopicCreate(bg, TopicSpec{Name: "T", ReadQueues: 1, WriteQueues: 1}) },
		"group describe": func() error { return c.GroupDescribe(bg, "g") },
		"send":           func() error { return c.Send(bg, SendSpec{Topic: "T", Body: []byte("x")}) },
		"consume":        func() error { return c.Consume(bg, ConsumeSpec{Topic: "T", Exit: true}) },
		"dlq list":       func() error { return c.DLQList(bg, "g", 0) },
	} {
		err := run()
		if err == nil {
			t.Fatalf("%s: no error with no name server", name)
		}
		wantErr(t, err, ErrUnreachable, addr, "petrel server", "--namesrv")
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := New(Config{Output: "yaml"}); err == nil || !strings.Contains(err.Error(), "table or json") {
		t.Fatalf("output yaml: %v", err)
	}
	if _, err := New(Config{NameServers: []string{"localhost"}}); err == nil || !strings.Contains(err.Error(), "host:port") {
		t.Fatalf("address without port: %v", err)
	}
}

func TestClusterList(t *testing.T) {
	c := startCluster(t)
	golden(t, "cluster_list", c.must(OutputTable, func(cl *CLI) error { return cl.ClusterList(bg) }))
	var got struct {
		Brokers []BrokerStatus `json:"brokers"`
	}
	c.mustJSON(&got, func(cl *CLI) error { return cl.ClusterList(bg) })
	if len(got.Brokers) != 1 {
		t.Fatalf("brokers %+v", got.Brokers)
	}
	b := got.Brokers[0]
	if b.Cluster != "DefaultCluster" || b.Broker != "broker-a" || b.Role != "MASTER" || b.Address != c.b.Advertised() ||
		b.Version == "" || b.BootTimestamp == 0 || b.DiskTotalBytes == 0 || b.Error != "" {
		t.Fatalf("broker %+v", b)
	}
}

func TestTopicCreateListUpdateDescribeDelete(t *testing.T) {
	c := startCluster(t)
	create := func(cl *CLI) error {
		return cl.TopicCreate(bg, TopicSpec{Name: "Orders", ReadQueues: 2, WriteQueues: 2, SetAttrs: map[string]string{"team": "shop"}})
	}
	golden(t, "topic_create", c.must(OutputTable, create))
	_, err := c.run(OutputTable, create)
	wantErr(t, err, ErrUsage, "already exists", "topic update")

	var res TopicResult
	c.mustJSON(&res, func(cl *CLI) error {
		return cl.TopicCreate(bg, TopicSpec{Name: "Ticks", ReadQueues: 1, WriteQueues: 1, Perm: "rw", SetAttrs: map[string]string{"persistent": "false"}})
	})
	if res.Action != "created" || res.Perm != "rw" || res.Attributes["persistent"] != "false" || len(res.Brokers) != 1 {
		t.Fatalf("create result %+v", res)
	}

	golden(t, "topic_list", c.must(OutputTable, func(cl *CLI) error { return cl.TopicList(bg, false) }))
	var list struct {
		Topics []TopicInfo `json:"topics"`
	}
	c.mustJSON(&list, func(cl *CLI) error { return cl.TopicList(bg, true) })
	names := map[string]TopicInfo{}
	for _, ti := range list.Topics {
		names[ti.Topic] = ti
	}
	if names["Ticks"].Attributes["persistent"] != "false" || names["Orders"].ReadQueues != 2 {
		t.Fatalf("topics %+v", list.Topics)
	}
	// --all lists the system topics its help promises: the template, the
	// timer topic and the transaction topics the broker stores into, and
	// the message trace topic every broker holds.
	for _, sys := range []string{"TBW102", "rmq_sys_wheel_timer", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "RMQ_SYS_TRACE_TOPIC"} {
		if _, ok := names[sys]; !ok {
			t.Fatalf("--all lacks the system topic %s: %+v", sys, list.Topics)
		}
	}

	c.must(OutputTable, func(cl *CLI) error {
		return cl.TopicUpdate(bg, TopicSpec{Name: "Orders", WriteQueues: 3, ReadQueues: 3, SetAttrs: map[string]string{"tier": "gold"}, RemoveAttrs: []string{"team"}})
	})
	c.must(OutputTable, func(cl *CLI) error { return cl.Send(bg, SendSpec{Topic: "Orders", Body: []byte("order"), Count: 3}) })
	c.dispatched()
	golden(t, "topic_describe", c.must(OutputTable, func(cl *CLI) error { return cl.TopicDescribe(bg, "Orders") }))
	var d TopicDescription
	c.mustJSON(&d, func(cl *CLI) error { return cl.TopicDescribe(bg, "Orders") })
	var total int64
	for _, q := range d.Queues {
		total += q.MaxOffset
		if q.MaxOffset > 0 && (q.LastStoreTimestamp == 0 || q.LastStoreTime == "") {
			t.Fatalf("queue with messages but no last store time: %+v", q)
		}
	}
	if len(d.Queues) != 3 || total != 3 || d.Attributes["tier"] != "gold" || d.Attributes["team"] != "" || d.WriteQueues != 3 {
		t.Fatalf("describe %+v", d)
	}

	c.must(OutputTable, func(cl *CLI) error { return cl.TopicDelete(bg, "Orders") })
	_, err = c.run(OutputTable, func(cl *CLI) error { return cl.TopicDescribe(bg, "Orders") })
	wantErr(t, err, ErrNotFound, `"Orders" does not exist`, "petrel topic list")
	_, err = c.run(OutputTable, func(cl *CLI) error { return cl.TopicDelete(bg, "Orders") })
	wantErr(t, err, ErrNotFound, "does not exist")
}

func TestSendConsumeAndFindMessages(t *testing.T) {
	c := startCluster(t)
	c.must(OutputTable, func(cl *CLI) error { return cl.TopicCreate(bg, TopicSpec{Name: "Mail", ReadQueues: 2, WriteQueues: 2}) })

	var sent []SendResult
	out := c.must(OutputJSON, func(cl *CLI) error {
		return cl.Send(bg, SendSpec{Topic: "Mail", Tag: "urgent", Keys: []string{"order-7"}, Properties: map[string]string{"from": "cli"}, Body: []byte("hello"), Count: 2})
	})
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r SendResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("send line %q: %v", line, err)
		}
		sent = append(sent, r)
	}
	if len(sent) != 2 || sent[0].Status != "SEND_OK" || sent[0].QueueID == sent[1].QueueID || len(sent[0].ID) != 32 || sent[0].OffsetID == "" {
		t.Fatalf("send results %+v", sent)
	}
	table := c.must(OutputTable, func(cl *CLI) error {
		return cl.Send(bg, SendSpec{Topic: "Mail", Lines: strings.NewReader("line one\nline two\nline three\n"), Count: 2})
	})
	if n := strings.Count(table, "\n"); n != 2 || !strings.Contains(table, "SEND_OK") {
		t.Fatalf("stdin send wrote %d lines, want 2 (--count 2):\n%s", n, table)
	}

	// A send is answered once stored; consume --exit reads up to the
	// queues' max offsets, which count a message once it is dispatched.
	waitFor(t, "the 4 messages in Mail's queues", func() bool {
		var d TopicDescription
		c.mustJSON(&d, func(cl *CLI) error { return cl.TopicDescribe(bg, "Mail") })
		n := int64(0)
		for _, q := range d.Queues {
			n += q.Messages
		}
		return n == 4
	})
	got := c.must(OutputTable, func(cl *CLI) error {
		return cl.Consume(bg, ConsumeSpec{Topic: "Mail", Exit: true, Format: "{{.QueueOffset}} {{.Tags}} {{.Body}}"})
	})
	// Each run of send starts at a random queue and goes round the two.
	for _, want := range []string{"0 urgent hello", "0 urgent hello", "1  line one", "1  line two"} {
		if !strings.Contains(got, want+"\n") {
			t.Fatalf("consume output lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "\n") != 4 {
		t.Fatalf("consume printed %d messages, want 4:\n%s", strings.Count(got, "\n"), got)
	}
	tagged := c.must(OutputTable, func(cl *CLI) error {
		return cl.Consume(bg, ConsumeSpec{Topic: "Mail", Exit: true, Tag: "urgent", Count: 5})
	})
	if strings.Count(tagged, "\n") != 2 || strings.Contains(tagged, "line") {
		t.Fatalf("consume --tag urgent:\n%s", tagged)
	}
	var m Message
	c.mustJSON(&m, func(cl *CLI) error { return cl.Consume(bg, ConsumeSpec{Topic: "Mail", Count: 1, Tag: "urgent"}) })
	if m.Body != "hello" || m.Properties["from"] != "cli" || m.Keys != "order-7" || m.StoreTimestamp == 0 {
		t.Fatalf("consumed %+v", m)
	}

	// By offset id, and by unique id with the topic.
	c.mustJSON(&m, func(cl *CLI) error { return cl.MessageGet(bg, sent[1].OffsetID, "") })
	if m.ID != sent[1].ID || m.Body != "hello" {
		t.Fatalf("get by offset id: %+v", m)
	}
	c.mustJSON(&m, func(cl *CLI) error { return cl.MessageGet(bg, sent[0].ID, "Mail") })
	if m.OffsetID != sent[0].OffsetID {
		t.Fatalf("get by unique id: %+v", m)
	}
	detail := c.must(OutputTable, func(cl *CLI) error { return cl.MessageGet(bg, sent[0].OffsetID, "") })
	if !strings.Contains(detail, "from=cli") || !strings.Contains(detail, "Body (5 bytes):\nhello") {
		t.Fatalf("get detail:\n%s", detail)
	}
	_, err := c.run(OutputTable, func(cl *CLI) error { return cl.MessageGet(bg, "NOPE", "") })
	wantErr(t, err, ErrNotFound, "NOPE", "--topic")

	var q struct {
		Messages []Message `json:"messages"`
	}
	c.mustJSON(&q, func(cl *CLI) error { return cl.MessageQuery(bg, "Mail", "order-7", time.Time{}, 0) })
	if len(q.Messages) != 2 || q.Messages[0].Keys != "order-7" {
		t.Fatalf("query by key: %+v", q.Messages)
	}
	none := c.must(OutputTable, func(cl *CLI) error { return cl.MessageQuery(bg, "Mail", "order-8", time.Time{}, 0) })
	if !strings.Contains(none, "no message of topic Mail has key order-8") {
		t.Fatalf("query with no match: %q", none)
	}

	_, err = c.run(OutputTable, func(cl *CLI) error { return cl.Consume(bg, ConsumeSpec{Topic: "Nope", Exit: true}) })
	wantErr(t, err, ErrNotFound, `"Nope" does not exist`)
}

// TestSendToANewTopic: a send to a topic that does not exist goes through
// the auto-create template (TBW102) as the clients' sends do, so the
// broker creates the topic with 4 queues; with auto-creation off the
// error says how to create it.
func TestSendToANewTopic(t *testing.T) {
	c := startCluster(t)
	var res SendResult
	c.mustJSON(&res, func(cl *CLI) error { return cl.Send(bg, SendSpec{Topic: "Fresh", Body: []byte("x")}) })
	if res.Status != "SEND_OK" || res.QueueID < 0 || res.QueueID >= 4 {
		t.Fatalf("send to a new topic: %+v", res)
	}
	var d TopicDescription
	c.mustJSON(&d, func(cl *CLI) error { return cl.TopicDescribe(bg, "Fresh") })
	if len(d.Queues) != 4 {
		t.Fatalf("the auto-created topic has %d queues, want 4", len(d.Queues))
	}

	off := startCluster(t, func(b *broker.Config) { b.AutoCreateTopics = false })
	_, err := off.run(OutputTable, func(cl *CLI) error { return cl.Send(bg, SendSpec{Topic: "Nope", Body: []byte("x")}) })
	wantErr(t, err, ErrNotFound, `"Nope" does not exist`, "petrel topic create Nope")
}

func TestSendDelayedReportsDeliveryTime(t *testing.T) {
	c := startCluster(t)
	c.must(OutputTable, func(cl *CLI) error {
		return cl.TopicCreate(bg, TopicSpec{Name: "Later", ReadQueues: 1, WriteQueues: 1})
	})
	var r SendResult
	c.mustJSON(&r, func(cl *CLI) error {
		return cl.Send(bg, SendSpec{Topic: "Later", Body: []byte("soon"), Delay: time.Hour})
	})
	at, err := time.Parse(time.RFC3339Nano, r.DeliverAt)
	if err != nil || time.Until(at) < 50*time.Minute {
		t.Fatalf("deliverAt %q: %v", r.DeliverAt, err)
	}
	// Not visible yet.
	out := c.must(OutputTable, func(cl *CLI) error { return cl.Consume(bg, ConsumeSpec{Topic: "Later", Exit: true}) })
	if out != "" {
		t.Fatalf("a message delayed by an hour is visible: %q", out)
	}
	_, err = c.run(OutputTable, func(cl *CLI) error {
		return cl.Send(bg, SendSpec{Topic: "Later", Body: []byte("x"), Delay: time.Second, DeliverAt: time.Now()})
	})
	wantErr(t, err, ErrUsage, "not both")
}

func TestGroupLagDrainAndReset(t *testing.T) {
	c := startCluster(t)
	c.must(OutputTable, func(cl *CLI) error { return cl.TopicCreate(bg, TopicSpec{Name: "Jobs", ReadQueues: 1, WriteQueues: 1}) })
	for range 5 {
		c.must(OutputTable, func(cl *CLI) error { return cl.Send(bg, SendSpec{Topic: "Jobs", Body: []byte("job")}) })
	}
	c.dispatched()
	_, err := c.run(OutputTable, func(cl *CLI) error { return cl.GroupDescribe(bg, "workers") })
	wantErr(t, err, ErrNotFound, `"workers" is unknown`, "petrel group list")

	c.heartbeat("worker-1@host", "workers", "Jobs")
	var d GroupDescription
	c.mustJSON(&d, func(cl *CLI) error { return cl.GroupDescribe(bg, "workers") })
	if !d.Online || len(d.Members) != 1 || d.Members[0].ClientID != "worker-1@host" || d.Members[0].Language != "GO" ||
		len(d.Subscriptions) != 1 || d.Subscriptions[0].Topic != "Jobs" || d.TotalLag != 5 {
		t.Fatalf("describe with a backlog: %+v", d)
	}
	golden(t, "group_describe_backlog", c.must(OutputTable, func(cl *CLI) error { return cl.GroupDescribe(bg, "workers") }))

	// A consumer of the group drains the backlog and commits.
	drained := c.must(OutputTable, func(cl *CLI) error { return cl.Consume(bg, ConsumeSpec{Topic: "Jobs", Group: "workers", Exit: true}) })
	if strings.Count(drained, "\n") != 5 {
		t.Fatalf("drain consumed:\n%s", drained)
	}
	c.mustJSON(&d, func(cl *CLI) error { return cl.GroupDescribe(bg, "workers") })
	if d.TotalLag != 0 || len(d.Queues) != 1 || d.Queues[0].ConsumerOffset != 5 || d.Queues[0].LastConsumedTimestamp == 0 {
		t.Fatalf("describe after draining: %+v", d)
	}
	golden(t, "group_list", c.must(OutputTable, func(cl *CLI) error { return cl.GroupList(bg) }))

	// Reset to the earliest offset: stored at once, and the member told.
	var rr ResetResult
	c.mustJSON(&rr, func(cl *CLI) error { return cl.GroupResetOffset(bg, "workers", "Jobs", ResetTarget{Earliest: true}) })
	if len(rr.Queues) != 1 || rr.Queues[0].Offset != 0 || rr.Queues[0].Broker != "broker-a" {
		t.Fatalf("reset result %+v", rr)
	}
	select {
	case n := <-c.notices:
		if n.Code != 220 || n.ExtFields["group"] != "workers" || n.ExtFields["topic"] != "Jobs" || n.ExtFields["timestamp"] != "0" {
			t.Fatalf("notice code %d ext %v", n.Code, n.ExtFields)
		}
		entries, err := rmq.DecodeOffsetTable(n.Body)
		if err != nil || len(entries) != 1 {
			t.Fatalf("notice body %s: %+v %v", n.Body, entries, err)
		}
		for q, off := range entries {
			if q.BrokerName != "broker-a" || off != 0 {
				t.Fatalf("notice body %s: %+v", n.Body, entries)
			}
		}
	case <-time.After(waitLimit):
		t.Fatal("the member got no RESET_CONSUMER_CLIENT_OFFSET")
	}
	c.mustJSON(&d, func(cl *CLI) error { return cl.GroupDescribe(bg, "workers") })
	if d.TotalLag != 5 {
		t.Fatalf("lag after reset to earliest: %d, want 5", d.TotalLag)
	}
	c.mustJSON(&rr, func(cl *CLI) error { return cl.GroupResetOffset(bg, "workers", "Jobs", ResetTarget{Latest: true}) })
	if rr.Queues[0].Offset != 5 || rr.Timestamp != -1 {
		t.Fatalf("reset to latest %+v", rr)
	}
	c.mustJSON(&rr, func(cl *CLI) error {
		return cl.GroupResetOffset(bg, "workers", "Jobs", ResetTarget{Time: time.Now().Add(-time.Hour)})
	})
	if rr.Queues[0].Offset != 0 {
		t.Fatalf("reset to an hour ago %+v", rr)
	}
	// A time before 1970 is the earliest, not (as -1 would say) the latest.
	c.mustJSON(&rr, func(cl *CLI) error { return cl.GroupResetOffset(bg, "workers", "Jobs", ResetTarget{Latest: true}) })
	c.mustJSON(&rr, func(cl *CLI) error {
		return cl.GroupResetOffset(bg, "workers", "Jobs", ResetTarget{Time: time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)})
	})
	if rr.Queues[0].Offset != 0 || rr.Timestamp != 0 {
		t.Fatalf("reset to 1960 %+v", rr)
	}
	_, err = c.run(OutputTable, func(cl *CLI) error { return cl.GroupResetOffset(bg, "ghosts", "Jobs", ResetTarget{Earliest: true}) })
	wantErr(t, err, ErrNotFound, `"ghosts" is unknown`)
	_, err = c.run(OutputTable, func(cl *CLI) error { return cl.GroupResetOffset(bg, "workers", "Nope", ResetTarget{Earliest: true}) })
	wantErr(t, err, ErrNotFound, `"Nope" does not exist`)
	_, err = c.run(OutputTable, func(cl *CLI) error {
		return cl.GroupResetOffset(bg, "workers", "Jobs", ResetTarget{Earliest: true, Latest: true})
	})
	wantErr(t, err, ErrUsage, "exactly one")
}

func TestDLQListAndResend(t *testing.T) {
	c := startCluster(t)
	c.must(OutputTable, func(cl *CLI) error { return cl.TopicCreate(bg, TopicSpec{Name: "Pay", ReadQueues: 1, WriteQueues: 1}) })
	var sent []SendResult
	for _, body := range []string{"p1", "p2"} {
		var r SendResult
		c.mustJSON(&r, func(cl *CLI) error { return cl.Send(bg, SendSpec{Topic: "Pay", Body: []byte(body)}) })
		sent = append(sent, r)
	}
	empty := c.must(OutputTable, func(cl *CLI) error { return cl.DLQList(bg, "billing", 0) })
	if !strings.Contains(empty, "group billing has no dead-letter messages") {
		t.Fatalf("empty dlq: %q", empty)
	}
	// The consumer gives up on both at once (delay level -1): to the DLQ.
	for _, r := range sent {
		_, off, _ := parseOffsetID(t, r.OffsetID)
		resp := c.invoke(c.b.Advertised(), remoting.NewRequest(36, map[string]string{
			"group": "billing", "offset": strconv.FormatInt(off, 10), "delayLevel": "-1", "originMsgId": r.ID, "originTopic": "Pay",
		}, nil))
		if resp.Code != 0 {
			t.Fatalf("send back: %d %s", resp.Code, resp.Remark)
		}
	}
	var list struct {
		Group    string       `json:"group"`
		Messages []DLQMessage `json:"messages"`
	}
	waitFor(t, "two messages in the DLQ listing", func() bool {
		out, err := c.run(OutputJSON, func(cl *CLI) error { return cl.DLQList(bg, "billing", 0) })
		return err == nil && json.Unmarshal([]byte(out), &list) == nil && len(list.Messages) == 2
	})
	if list.Messages[0].OriginalTopic != "Pay" || list.Messages[0].Body != "p1" || list.Messages[0].ID != sent[0].ID {
		t.Fatalf("dlq list %+v", list.Messages)
	}
	golden(t, "dlq_list", c.must(OutputTable, func(cl *CLI) error { return cl.DLQList(bg, "billing", 0) }))

	one := c.must(OutputTable, func(cl *CLI) error { return cl.DLQResend(bg, "billing", sent[1].ID, false) })
	if !strings.Contains(one, "resent 1 of 1 dead-letter messages of group billing") {
		t.Fatalf("resend one:\n%s", one)
	}
	var all struct {
		Resent []Resent `json:"resent"`
	}
	c.mustJSON(&all, func(cl *CLI) error { return cl.DLQResend(bg, "billing", "", true) })
	if len(all.Resent) != 2 || all.Resent[0].Topic != "Pay" {
		t.Fatalf("resend all %+v", all)
	}
	c.dispatched()
	got := c.must(OutputTable, func(cl *CLI) error {
		return cl.Consume(bg, ConsumeSpec{Topic: "Pay", Exit: true, Format: "{{.Body}}"})
	})
	if got != "p1\np2\np2\np1\np2\n" {
		t.Fatalf("Pay after resends:\n%q", got)
	}
	_, err := c.run(OutputTable, func(cl *CLI) error { return cl.DLQResend(bg, "billing", "NOPE", false) })
	wantErr(t, err, ErrNotFound, "dlq list --group billing")
	_, err = c.run(OutputTable, func(cl *CLI) error { return cl.DLQResend(bg, "billing", "", false) })
	wantErr(t, err, ErrUsage, "--id ID or --all")
}

// consume --sql has the broker filter by properties; --until stops at the
// first message stored after it (and, being past, at the end).
func TestConsumeSQLAndUntil(t *testing.T) {
	c := startCluster(t)
	c.must(OutputTable, func(cl *CLI) error { return cl.TopicCreate(bg, TopicSpec{Name: "Win", ReadQueues: 1, WriteQueues: 1}) })
	for i := 1; i <= 3; i++ {
		c.must(OutputJSON, func(cl *CLI) error {
			return cl.Send(bg, SendSpec{Topic: "Win", Properties: map[string]string{"a": strconv.Itoa(i)}, Body: []byte("m" + strconv.Itoa(i))})
		})
	}
	waitFor(t, "the 3 messages in Win", func() bool {
		var d TopicDescription
		c.mustJSON(&d, func(cl *CLI) error { return cl.TopicDescribe(bg, "Win") })
		return len(d.Queues) == 1 && d.Queues[0].Messages == 3
	})
	got := c.must(OutputTable, func(cl *CLI) error {
		return cl.Consume(bg, ConsumeSpec{Topic: "Win", Exit: true, SQL: "a > 1", Format: "{{.Body}}"})
	})
	if got != "m2\nm3\n" {
		t.Fatalf("consume --sql 'a > 1':\n%s", got)
	}
	if _, err := c.run(OutputTable, func(cl *CLI) error {
		return cl.Consume(bg, ConsumeSpec{Topic: "Win", Exit: true, SQL: "a > 1", Tag: "x"})
	}); !errors.Is(err, ErrUsage) {
		t.Fatalf("--tag with --sql: %v, want a usage error", err)
	}

	var last Message
	c.mustJSON(&last, func(cl *CLI) error { return cl.Consume(bg, ConsumeSpec{Topic: "Win", Exit: true, SQL: "a = 3"}) })
	cut := time.UnixMilli(last.StoreTimestamp)
	for time.Now().UnixMilli() <= last.StoreTimestamp {
		runtime.Gosched() // the next message must be stored a millisecond later
	}
	c.must(OutputJSON, func(cl *CLI) error { return cl.Send(bg, SendSpec{Topic: "Win", Body: []byte("late")}) })
	waitFor(t, "the late message in Win", func() bool {
		var d TopicDescription
		c.mustJSON(&d, func(cl *CLI) error { return cl.TopicDescribe(bg, "Win") })
		return d.Queues[0].Messages == 4
	})
	got = c.must(OutputTable, func(cl *CLI) error {
		return cl.Consume(bg, ConsumeSpec{Topic: "Win", From: "earliest", Until: cut.UTC().Format(time.RFC3339Nano), Format: "{{.Body}}"})
	})
	if got != "m1\nm2\nm3\n" {
		t.Fatalf("consume --until the third message's store time printed:\n%s", got)
	}
}
