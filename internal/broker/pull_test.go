package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/store"
)

// TestPullStatusesAndNextBeginOffset covers every row of
// remoting-protocol.md §6.3 on a queue whose min offset is 0.
func TestPullStatusesAndNextBeginOffset(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 2)
	for i := range 3 {
		e.send("T", 0, fmt.Sprint("m", i))
	}
	cases := []struct {
		name      string
		qid       int32
		off       int64
		maxMsgs   int32
		maxBytes  int
		status    PullStatus
		next      int64
		count     int
		firstBody string
	}{
		{"found all", 0, 0, 32, 0, PullFound, 3, 3, "m0"},
		{"found from the middle", 0, 1, 32, 0, PullFound, 3, 2, "m1"},
		{"maxMsgNums 0 means 1", 0, 0, 0, 0, PullFound, 1, 1, "m0"},
		{"maxMsgNums negative means 1", 0, 1, -5, 0, PullFound, 2, 1, "m1"},
		{"byte cap still returns one record", 0, 0, 32, 1, PullFound, 1, 1, "m0"},
		{"offset equals max", 0, 3, 32, 0, PullNoNewMsg, 3, 0, ""},
		{"offset past max with min 0 goes to min", 0, 7, 32, 0, PullOffsetMoved, 0, 0, ""},
		{"empty queue at 0", 1, 0, 32, 0, PullNoNewMsg, 0, 0, ""},
		{"empty queue at non-zero", 1, 5, 32, 0, PullOffsetMoved, 0, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := pullReq("g", "T", c.qid, c.off).withSub("*")
			r.MaxMsgs, r.MaxBytes = c.maxMsgs, c.maxBytes
			p := e.mustPull(r)
			if p.res.Status != c.status || p.res.NextBeginOffset != c.next || len(p.recs) != c.count {
				t.Fatalf("status %v next %d count %d, want %v %d %d", p.res.Status, p.res.NextBeginOffset, len(p.recs), c.status, c.next, c.count)
			}
			if c.count > 0 && p.bodies[0] != c.firstBody {
				t.Fatalf("first body %q, want %q", p.bodies[0], c.firstBody)
			}
			wantMax := int64(3)
			if c.qid == 1 {
				wantMax = 0
			}
			if p.res.MinOffset != 0 || p.res.MaxOffset != wantMax {
				t.Fatalf("min/max %d/%d, want 0/%d", p.res.MinOffset, p.res.MaxOffset, wantMax)
			}
		})
	}
}

// TestPullOffsetsAfterRetention covers the rows that need a min offset
// above 0: offset too small, and past max with min > 0.
func TestPullOffsetsAfterRetention(t *testing.T) {
	e := newDiskEnv(t, func(s *store.Config, _ *Config) {
		s.SegmentBytes = 4096
		s.MaxMessageBytes = 2048
		s.FileReservedTime = time.Minute
		s.RetentionInterval = time.Hour
	})
	e.createTopic("T", 1)
	body := strings.Repeat("x", 1000)
	for range 10 {
		e.send("T", 0, body)
	}
	e.clk.Advance(2 * time.Minute)
	if _, err := e.file.RunRetention(); err != nil {
		t.Fatal(err)
	}
	minOff, maxOff := e.b.MinOffset("T", 0), e.b.MaxOffset("T", 0)
	if minOff == 0 || maxOff != 10 {
		t.Fatalf("after retention min %d max %d; want min > 0, max 10", minOff, maxOff)
	}
	p := e.mustPull(pullReq("g", "T", 0, 0).withSub("*"))
	if p.res.Status != PullOffsetMoved || p.res.NextBeginOffset != minOff {
		t.Fatalf("offset below min: %v next %d, want OFFSET_MOVED next %d", p.res.Status, p.res.NextBeginOffset, minOff)
	}
	p = e.mustPull(pullReq("g", "T", 0, 15).withSub("*"))
	if p.res.Status != PullOffsetMoved || p.res.NextBeginOffset != maxOff {
		t.Fatalf("offset past max: %v next %d, want OFFSET_MOVED next %d", p.res.Status, p.res.NextBeginOffset, maxOff)
	}
	p = e.mustPull(pullReq("g", "T", 0, minOff).withSub("*"))
	if p.res.Status != PullFound || p.recs[0].QueueOffset != minOff {
		t.Fatalf("pull at min: %v", p.res.Status)
	}
	// Java's rule: no stored offset and min offset > 0 is "not found".
	if off, ok := e.b.QueryConsumerOffset("fresh", "T", 0); ok {
		t.Fatalf("QueryConsumerOffset on a trimmed queue = %d, true; want not found", off)
	}
}

func TestPullTagFiltering(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	for _, tag := range []string{"A", "B", "C", "", "A"} {
		if tag == "" {
			e.send("T", 0, "none")
			continue
		}
		e.send("T", 0, "tag"+tag, "TAGS", tag)
	}
	cases := []struct {
		expr   string
		bodies string
		status PullStatus
	}{
		{"*", "tagA,tagB,tagC,none,tagA", PullFound},
		{"", "tagA,tagB,tagC,none,tagA", PullFound},
		{"A || C", "tagA,tagC,tagA", PullFound},
		{" A||C ", "tagA,tagC,tagA", PullFound},
		{"B", "tagB", PullFound},
		{"Z", "", PullNoMatched},
	}
	for _, c := range cases {
		t.Run("heartbeat "+c.expr, func(t *testing.T) {
			group := "g" + strings.NewReplacer(" ", "", "|", "", "*", "all").Replace(c.expr)
			e.subscribe(9, "client-1", group, "T", c.expr)
			p := e.mustPull(pullReq(group, "T", 0, 0))
			if p.res.Status != c.status || strings.Join(p.bodies, ",") != c.bodies || p.res.NextBeginOffset != 5 {
				t.Fatalf("got %v %v next %d, want %v %q next 5", p.res.Status, p.bodies, p.res.NextBeginOffset, c.status, c.bodies)
			}
		})
		t.Run("request "+c.expr, func(t *testing.T) {
			p := e.mustPull(pullReq("unregistered", "T", 0, 0).withSub(c.expr))
			if p.res.Status != c.status || strings.Join(p.bodies, ",") != c.bodies {
				t.Fatalf("got %v %v, want %v %q", p.res.Status, p.bodies, c.status, c.bodies)
			}
		})
	}
	// NextBeginOffset is after the last scanned entry when the count cap
	// stops the scan.
	e.subscribe(9, "client-1", "gAC", "T", "A || C")
	r := pullReq("gAC", "T", 0, 0)
	r.MaxMsgs = 2
	p := e.mustPull(r)
	if strings.Join(p.bodies, ",") != "tagA,tagC" || p.res.NextBeginOffset != 3 {
		t.Fatalf("capped filter pull: %v next %d, want tagA,tagC next 3", p.bodies, p.res.NextBeginOffset)
	}
}

// TestPullSQL92Filter: a SQL92 subscription gets exactly the messages whose
// properties match, whether registered by heartbeat (which wins over a
// TAG-typed request subscription: the Go pull consumer sends SQL text as
// TAG) or sent with the pull; a bad expression is refused naming where.
func TestPullSQL92Filter(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	var want []string
	for i := range 10 {
		b := []string{"x", "y"}[i%2]
		body := fmt.Sprintf("a=%d,b=%s", i, b)
		e.send("T", 0, body, "a", fmt.Sprint(i), "b", b, "TAGS", "t"+fmt.Sprint(i%3))
		if i > 5 && b == "x" {
			want = append(want, body)
		}
	}
	e.send("T", 0, "no props")
	e.waitMax("T", 0, 11)
	const expr = "a > 5 AND b = 'x'"
	e.b.Heartbeat(9, Heartbeat{ClientID: "client-1", Consumers: []ConsumerData{{Group: "gsql",
		Subscriptions: []Subscription{{Topic: "T", Expression: expr, ExpressionType: ExpressionSQL92}}}}})
	for _, r := range []*PullRequest{pullReq("gsql", "T", 0, 0).withSub(expr), pullReq("gsql", "T", 0, 0)} {
		p := e.mustPull(r)
		if p.res.Status != PullFound || strings.Join(p.bodies, ";") != strings.Join(want, ";") || p.res.NextBeginOffset != 11 {
			t.Fatalf("SQL92 pull: %v %q next %d, want %q next 11", p.res.Status, p.bodies, p.res.NextBeginOffset, want)
		}
	}
	// TAGS is the tag.
	r := pullReq("other", "T", 0, 0).withSub("TAGS = 't1'")
	r.ExpressionType = ExpressionSQL92
	if p := e.mustPull(r); strings.Join(p.bodies, ";") != "a=1,b=y;a=4,b=x;a=7,b=y" {
		t.Fatalf("TAGS filter: %q", p.bodies)
	}
	// Nothing matches: NO_MATCHED with the offset to go on from.
	r = pullReq("other", "T", 0, 0).withSub("a > 100")
	r.ExpressionType = ExpressionSQL92
	if p := e.mustPull(r); p.res.Status != PullNoMatched || p.res.NextBeginOffset != 11 {
		t.Fatalf("no match: %v next %d", p.res.Status, p.res.NextBeginOffset)
	}
	r = pullReq("other", "T", 0, 0).withSub("a > ")
	r.ExpressionType = ExpressionSQL92
	_, err := e.pull(r)
	wantKind(t, err, KindSubscriptionParseFailed, "position 5")
}

func TestPullErrors(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 2)
	e.createTopic("U", 1)
	if err := e.b.CreateTopic(topicCfg("W", 1, 2)); err != nil {
		t.Fatal(err)
	}
	e.subscribe(1, "c1", "g", "T", "*")
	cases := []struct {
		name string
		req  *PullRequest
		kind Kind
		msg  string
	}{
		{"unknown topic", pullReq("g", "Nope", 0, 0), KindTopicNotExist, "Nope"},
		{"queue out of range", pullReq("g", "T", 2, 0), KindSystemError, "queue id 2"},
		{"write-only topic", pullReq("g", "W", 0, 0), KindNoPermission, "not readable"},
		{"unknown group", pullReq("nobody", "T", 0, 0), KindSubscriptionNotExist, "no live client"},
		{"topic not subscribed", pullReq("g", "U", 0, 0), KindSubscriptionNotExist, "not subscribed"},
		{"bad expression type", func() *PullRequest {
			r := pullReq("g", "T", 0, 0).withSub("x")
			r.ExpressionType = "JSONPATH"
			return r
		}(), KindSubscriptionParseFailed, "JSONPATH"},
		{"tag expression without tags", pullReq("g", "T", 0, 0).withSub("||"), KindSubscriptionParseFailed, "names no tag"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.b.Pull(context.Background(), c.req)
			wantKind(t, err, c.kind, c.msg)
		})
	}
	g, _ := e.b.meta.Group("g")
	g.ConsumeEnable = false
	if err := e.b.meta.PutGroup(g); err != nil {
		t.Fatal(err)
	}
	_, err := e.b.Pull(context.Background(), pullReq("g", "T", 0, 0))
	wantKind(t, err, KindNoPermission, "consumeEnable")
}

func TestPullCommitBitStoresOffsetFirst(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 1)
	for range 3 {
		e.send("T", 0, "m")
	}
	e.subscribe(1, "c1", "g", "T", "*")
	r := pullReq("g", "T", 0, 2)
	r.SysFlag = PullFlagCommitOffset
	r.CommitOffset = 2
	e.mustPull(r)
	if off, ok := e.b.QueryConsumerOffset("g", "T", 0); !ok || off != 2 {
		t.Fatalf("committed offset %d %v, want 2", off, ok)
	}
	// Without the bit nothing is stored; a negative commit offset is ignored.
	r = pullReq("g", "T", 0, 3)
	r.CommitOffset = 3
	e.mustPull(r)
	r.SysFlag, r.CommitOffset = PullFlagCommitOffset, -1
	e.mustPull(r)
	if off, _ := e.b.QueryConsumerOffset("g", "T", 0); off != 2 {
		t.Fatalf("offset %d, want still 2", off)
	}
}

func TestQueryConsumerOffsetJavaRule(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T", 2)
	e.send("T", 0, "m")
	// No stored offset and min offset 0: 0, found (empty and unknown queues too).
	for _, q := range []struct {
		topic string
		qid   int32
	}{{"T", 0}, {"T", 1}, {"Unknown", 0}} {
		if off, ok := e.b.QueryConsumerOffset("g", q.topic, q.qid); !ok || off != 0 {
			t.Fatalf("%s/%d: %d %v, want 0 true", q.topic, q.qid, off, ok)
		}
	}
	e.b.UpdateConsumerOffset("g", "T", 0, 1)
	if off, ok := e.b.QueryConsumerOffset("g", "T", 0); !ok || off != 1 {
		t.Fatalf("stored offset: %d %v", off, ok)
	}
	if e.b.MaxOffset("T", 0) != 1 || e.b.MinOffset("T", 0) != 0 {
		t.Fatal("min/max offsets")
	}
	e.clk.Advance(time.Minute)
	e.send("T", 0, "later")
	if got := e.b.SearchOffset("T", 0, t0.Add(30*time.Second).UnixMilli()); got != 1 {
		t.Fatalf("search by time = %d, want 1", got)
	}
	if got := e.b.SearchOffset("T", 0, t0.Add(time.Hour).UnixMilli()); got != 2 {
		t.Fatalf("search past the end = %d, want max 2", got)
	}
}
