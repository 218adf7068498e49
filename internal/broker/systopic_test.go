package broker

import (
	"math"
	"testing"

	"github.com/petrelmq/petrel/internal/message"
)

// TestTraceTopicIsCreatedAtStart: every broker holds RMQ_SYS_TRACE_TOPIC
// with one read/write queue; a traced client's trace send to it is stored
// and found by each of its keys (the traced message ids), and it survives
// a restart without being created twice.
func TestTraceTopicIsCreatedAtStart(t *testing.T) {
	e := newDiskEnv(t)
	tc, ok := e.b.Topic(TraceTopic)
	if !ok || tc.ReadQueueNums != 1 || tc.WriteQueueNums != 1 || tc.Perm != PermRead|PermWrite {
		t.Fatalf("trace topic %+v (found %v), want 1 read and 1 write queue, perm 6", tc, ok)
	}
	e.send(TraceTopic, 0, "Pub\x011700000000000\x01DefaultRegion\x01pg\x01Orders\x01ID1\x01t\x01k\x01127.0.0.1:10911\x011\x012\x010\x01OFF1\x01true\x02",
		message.PropertyKeys, "ID1 order-7")
	for _, key := range []string{"ID1", "order-7"} {
		recs, err := e.b.QueryByKey(TraceTopic, key, 0, math.MaxInt64, 8)
		if err != nil || len(recs) != 1 {
			t.Fatalf("query the trace topic by %s: %d records, %v", key, len(recs), err)
		}
	}
	v := e.b.TopicsVersion()
	e.restart()
	if _, ok := e.b.Topic(TraceTopic); !ok {
		t.Fatal("the trace topic is gone after a restart")
	}
	if got := e.b.TopicsVersion(); got != v {
		t.Fatalf("topics version %+v after a restart, was %+v: the trace topic was created again", got, v)
	}
}
