package cli

import (
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/message"
)

// traceBody is a trace message's body: the records as a Java client
// encodes them.
func traceBody(recs ...message.TraceRecord) []byte {
	var b []byte
	for _, r := range recs {
		b = message.AppendTrace(b, r)
	}
	return b
}

func TestMessageTraceShowsBothSidesInTimeOrder(t *testing.T) {
	c := startCluster(t)
	const id = "0A00000100012B3C0000000000000042"
	const ts = 1764000000000 // 2025-11-24T16:00:00Z
	// The consumer's trace message is stored first: the order shown comes
	// from the records' times. The first delivery fails (its SubAfter is
	// an old client's, without a time); the redelivery succeeds.
	consumer := traceBody(
		message.TraceRecord{Type: message.TraceSubBefore, Timestamp: ts + 100, RegionID: "DefaultRegion", Group: "billing", RequestID: "R1", MsgID: id, Keys: "order-1"},
		message.TraceRecord{Type: message.TraceSubAfter, RequestID: "R1", MsgID: id, CostMS: 12, Success: false, Keys: "order-1", ContextCode: 2},
		message.TraceRecord{Type: message.TraceSubBefore, Timestamp: ts + 10100, RegionID: "DefaultRegion", Group: "billing", RequestID: "R2", MsgID: id, RetryTimes: 1, Keys: "order-1"},
		message.TraceRecord{Type: message.TraceSubAfter, Timestamp: ts + 10107, Group: "billing", RequestID: "R2", MsgID: id, CostMS: 7, Success: true, Keys: "order-1"},
	)
	consumer = append(consumer, "SubBefore\x01soon\x02"...) // a record that does not decode
	producer := traceBody(
		message.TraceRecord{Type: message.TracePub, Timestamp: ts, RegionID: "DefaultRegion", Group: "shop", Topic: "Orders", MsgID: id,
			Tags: "paid", Keys: "order-1", StoreHost: "10.0.0.5:10911", BodyLength: 5, CostMS: 3, OffsetMsgID: "0A00000500002A9F0000000000000F3C", Success: true},
		message.TraceRecord{Type: message.TracePub, Timestamp: ts - 5, Group: "shop", Topic: "Orders", MsgID: "SOMEONE-ELSE", Success: true},
	)
	c.must(OutputTable, func(cl *CLI) error {
		return cl.Send(bg, SendSpec{Topic: DefaultTraceTopic, Keys: []string{id, "order-1"}, Body: consumer})
	})
	c.must(OutputTable, func(cl *CLI) error {
		return cl.Send(bg, SendSpec{Topic: DefaultTraceTopic, Keys: []string{id, "SOMEONE-ELSE", "order-1"}, Body: producer})
	})
	c.dispatched()

	var got struct {
		MsgID      string       `json:"msgId"`
		TraceTopic string       `json:"traceTopic"`
		Events     []TraceEvent `json:"events"`
		Skipped    int          `json:"skipped"`
	}
	c.mustJSON(&got, func(cl *CLI) error { return cl.MessageTrace(bg, TraceSpec{ID: id}) })
	var order []string
	for _, e := range got.Events {
		order = append(order, string(e.Type)+"/"+e.Group+"/"+e.Status)
	}
	want := "Pub/shop/success SubBefore/billing/ SubAfter/billing/failed (EXCEPTION) SubBefore/billing/ SubAfter/billing/success"
	if strings.Join(order, " ") != want {
		t.Fatalf("events %v\nwant %s", order, want)
	}
	if got.MsgID != id || got.TraceTopic != DefaultTraceTopic || got.Skipped != 1 {
		t.Fatalf("trace %+v", got)
	}
	pub := got.Events[0]
	if pub.StoreHost != "10.0.0.5:10911" || pub.Topic != "Orders" || pub.CostMS != 3 || pub.OffsetMsgID == "" || pub.ClientHost != "127.0.0.1" {
		t.Fatalf("pub event %+v (the client host comes from the trace message's born host)", pub)
	}
	if got.Events[3].RetryTimes != 1 {
		t.Fatalf("redelivery %+v", got.Events[3])
	}

	golden(t, "message_trace", c.must(OutputTable, func(cl *CLI) error { return cl.MessageTrace(bg, TraceSpec{ID: id}) }))

	// --topic leaves out sends of other topics; consume records carry none.
	c.mustJSON(&got, func(cl *CLI) error { return cl.MessageTrace(bg, TraceSpec{ID: id, Topic: "Refunds"}) })
	if len(got.Events) != 4 || got.Events[0].Type != message.TraceSubBefore {
		t.Fatalf("--topic Refunds: %+v", got.Events)
	}

	_, err := c.run(OutputTable, func(cl *CLI) error { return cl.MessageTrace(bg, TraceSpec{ID: "0A00000100012B3C00000000000000FF"}) })
	wantErr(t, err, ErrNotFound, "0A00000100012B3C00000000000000FF", DefaultTraceTopic, "enableMsgTrace", "--trace-topic")
	_, err = c.run(OutputTable, func(cl *CLI) error { return cl.MessageTrace(bg, TraceSpec{}) })
	wantErr(t, err, ErrUsage, "message id")
}

func TestMessageTraceReadsACustomTraceTopic(t *testing.T) {
	c := startCluster(t)
	c.must(OutputTable, func(cl *CLI) error {
		return cl.TopicCreate(bg, TopicSpec{Name: "ShopTrace", ReadQueues: 1, WriteQueues: 1})
	})
	const id = "0A00000100012B3C0000000000000043"
	c.must(OutputTable, func(cl *CLI) error {
		return cl.Send(bg, SendSpec{Topic: "ShopTrace", Keys: []string{id}, Body: traceBody(
			message.TraceRecord{Type: message.TracePub, Timestamp: 1764000000000, Group: "shop", Topic: "Orders", MsgID: id, Success: false})})
	})
	c.dispatched()
	_, err := c.run(OutputTable, func(cl *CLI) error { return cl.MessageTrace(bg, TraceSpec{ID: id}) })
	wantErr(t, err, ErrNotFound, DefaultTraceTopic)
	out := c.must(OutputTable, func(cl *CLI) error { return cl.MessageTrace(bg, TraceSpec{ID: id, TraceTopic: "ShopTrace"}) })
	if !strings.Contains(out, "Pub") || !strings.Contains(out, "failed") || !strings.Contains(out, "shop") {
		t.Fatalf("trace in ShopTrace:\n%s", out)
	}
}
