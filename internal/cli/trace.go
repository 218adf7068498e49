package cli

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/petrelmq/petrel/internal/message"
)

// DefaultTraceTopic is the topic traced clients send their trace records
// to unless given another (RocketMQ's RMQ_SYS_TRACE_TOPIC; every Petrel
// broker holds it).
const DefaultTraceTopic = "RMQ_SYS_TRACE_TOPIC"

// traceQueryLimit is the trace messages asked of each broker. A trace
// message holds the records of up to a batch of traced messages; one
// message's send and its deliveries rarely take more than a few.
const traceQueryLimit = 64

// TraceEvent is one trace record of a message as `message trace` shows
// it: the decoded record (clientHost filled from the trace message's born
// host when the record does not carry it) and its status in words.
type TraceEvent struct {
	message.TraceRecord
	// Status is "success" or "failed" for a send, a consumption (with the
	// consume return type when it is not SUCCESS) or a recall, the
	// transaction state for an end of transaction, "" for a SubBefore.
	Status string `json:"status"`
}

// TraceSpec selects the trace records of one message.
type TraceSpec struct {
	// ID is the traced message's unique id (the msgId of its send).
	ID string
	// Topic, when set, leaves out Pub, EndTransaction and Recall records of
	// other topics (consume records carry no topic).
	Topic string
	// TraceTopic is the topic the clients sent their trace records to;
	// DefaultTraceTopic when empty.
	TraceTopic string
}

// MessageTrace writes the trace events of one message in time order: its
// send (Pub), each delivery to a consumer (SubBefore, then SubAfter with
// the outcome) and the end of its transaction, as traced clients recorded
// them. The records are found by a key query on the trace topic, on every
// broker of its route: a traced client keys each trace message with the
// traced messages' ids.
func (c *CLI) MessageTrace(ctx context.Context, spec TraceSpec) error {
	if spec.ID == "" {
		return fmt.Errorf("%w: give the message id (the msgId of its send)", ErrUsage)
	}
	if spec.TraceTopic == "" {
		spec.TraceTopic = DefaultTraceTopic
	}
	ms, err := c.queryKey(ctx, spec.TraceTopic, spec.ID, 0, traceQueryLimit)
	if err != nil {
		return err
	}
	var events []TraceEvent
	skipped := 0
	seen := map[string]bool{}
	for _, m := range ms {
		if seen[m.OffsetID] {
			continue
		}
		seen[m.OffsetID] = true
		recs, err := message.DecodeTrace([]byte(m.Body))
		if err != nil {
			skipped++
		}
		for _, r := range recs {
			if !strings.EqualFold(r.MsgID, spec.ID) || spec.Topic != "" && r.Topic != "" && r.Topic != spec.Topic {
				continue
			}
			if r.ClientHost == "" {
				r.ClientHost = hostOnly(m.BornHost)
			}
			events = append(events, TraceEvent{TraceRecord: r, Status: traceStatus(r)})
		}
	}
	sortTrace(events)
	if len(events) == 0 {
		return fmt.Errorf("%w: no trace of message %s in topic %s; trace records reach the broker a few seconds after the send or consumption (clients batch them), and only from clients with message trace enabled (enableMsgTrace) that send to this trace topic (--trace-topic)",
			ErrNotFound, spec.ID, spec.TraceTopic)
	}
	if c.json() {
		return c.writeJSON(struct {
			MsgID      string       `json:"msgId"`
			TraceTopic string       `json:"traceTopic"`
			Events     []TraceEvent `json:"events"`
			// Skipped counts trace messages with a record that did not
			// decode (left out).
			Skipped int `json:"skipped,omitempty"`
		}{spec.ID, spec.TraceTopic, events, skipped})
	}
	t := newTable("TYPE", "TIME", "GROUP", "CLIENT", "STORE HOST", "COST", "STATUS", "RETRIES")
	for _, e := range events {
		retries := "-"
		if e.Type == message.TraceSubBefore {
			retries = strconv.Itoa(int(e.RetryTimes))
		}
		cost := "-"
		if e.Type == message.TracePub || e.Type == message.TraceSubAfter {
			cost = strconv.Itoa(int(e.CostMS)) + "ms"
		}
		t.add(string(e.Type), formatTime(e.Timestamp), dash(e.Group), dash(e.ClientHost), dash(e.StoreHost), cost, dash(e.Status), retries)
	}
	if err := t.write(c.cfg.Out); err != nil {
		return err
	}
	if skipped > 0 {
		_, err := fmt.Fprintf(c.cfg.Out, "left out the records that do not decode, in %d trace message(s)\n", skipped)
		return err
	}
	return nil
}

func traceStatus(r message.TraceRecord) string {
	switch r.Type {
	case message.TraceSubBefore:
		return ""
	case message.TraceEndTransaction:
		return r.TransactionState
	}
	s := "failed"
	if r.Success {
		s = "success"
	}
	if r.Type == message.TraceSubAfter && r.ContextCode != 0 {
		s += " (" + message.TraceContextName(r.ContextCode) + ")"
	}
	return s
}

// sortTrace orders events by time. A SubAfter of an old client has no
// time and no group: it takes its SubBefore's group (same request id) and
// goes just after it.
func sortTrace(events []TraceEvent) {
	before := map[string]TraceEvent{}
	for _, e := range events {
		if e.Type == message.TraceSubBefore {
			before[e.RequestID] = e
		}
	}
	for i, e := range events {
		if e.Type == message.TraceSubAfter && e.Group == "" {
			events[i].Group = before[e.RequestID].Group
		}
	}
	at := func(e TraceEvent) (int64, int) {
		if e.Type == message.TraceSubAfter && e.Timestamp == 0 {
			return before[e.RequestID].Timestamp, 1
		}
		if e.Type == message.TraceSubAfter {
			return e.Timestamp, 1
		}
		return e.Timestamp, 0
	}
	sort.SliceStable(events, func(i, j int) bool {
		ti, ri := at(events[i])
		tj, rj := at(events[j])
		if ti != tj {
			return ti < tj
		}
		return ri < rj
	})
}

// hostOnly drops the port of host:port.
func hostOnly(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}
