package grpcfront

import (
	"context"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/petrelmq/petrel/internal/broker"
)

// TestGroupUpdateReachesRunningConsumers: a group config changed with
// broker.UpdateGroup (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, `petrel group
// update`) is pushed as new Settings to the group's connected consumer and
// used by its next receive; the top-level consumeMessageOrderly decides
// FIFO, retryMaxTimes the max attempts; other groups' clients get nothing.
func TestGroupUpdateReachesRunningConsumers(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 2)
	g := broker.DefaultGroup("g1")
	g.RetryMaxTimes = 2
	if err := e.b.UpdateGroup(g); err != nil {
		t.Fatal(err)
	}
	stream, reply := e.telemetry("c1", consumerSettings("g1", "T1", time.Second))
	if sub := reply.GetSettings().GetSubscription(); sub.GetFifo() || reply.GetSettings().GetBackoffPolicy().GetMaxAttempts() != 3 {
		t.Fatalf("first settings: fifo %v attempts %d, want false 3", sub.GetFifo(), reply.GetSettings().GetBackoffPolicy().GetMaxAttempts())
	}

	g.ConsumeMessageOrderly = true
	g.RetryMaxTimes = 0
	g.GroupRetryPolicy = &broker.RetryPolicy{Type: "EXPONENTIAL", Exponential: &broker.ExponentialRetry{Initial: 100, Max: 1000, Multiplier: 3}}
	if err := e.b.UpdateGroup(g); err != nil {
		t.Fatal(err)
	}
	pushed, err := recvWithin(stream, waitLimit)
	if err != nil {
		t.Fatalf("no pushed settings: %v", err)
	}
	st := pushed.GetSettings()
	if code(pushed.GetStatus()) != v2.Code_OK || !st.GetSubscription().GetFifo() || st.GetBackoffPolicy().GetMaxAttempts() != 1 ||
		st.GetSubscription().GetGroup().GetName() != "g1" || st.GetSubscription().GetLongPollingTimeout().AsDuration() != time.Second {
		t.Fatalf("pushed settings %v; want fifo, 1 attempt (retryMaxTimes 0), the client's group and long poll", st)
	}
	exp := st.GetBackoffPolicy().GetExponentialBackoff()
	if exp.GetInitial().AsDuration() != 100*time.Millisecond || exp.GetMax().AsDuration() != time.Second || exp.GetMultiplier() != 3 {
		t.Fatalf("pushed back-off %v, want the group's exponential policy", st.GetBackoffPolicy())
	}

	// The next receive pops with the new policy.
	f := e.fakePop()
	ctx, cancel := context.WithTimeout(e.ctx("c1"), 5*time.Second)
	defer cancel()
	e.receive(ctx, receiveReq("g1", "T1", 1, 10*time.Second))
	if len(f.pops) != 1 || !f.pops[0].FIFO || f.pops[0].MaxAttempts != 1 {
		t.Fatalf("pops after the update %+v, want FIFO with 1 attempt", f.pops)
	}

	// Deleting the group is a change too: its member hears the defaults.
	if err := e.b.DeleteGroup("g1", true); err != nil {
		t.Fatal(err)
	}
	pushed, err = recvWithin(stream, waitLimit)
	if err != nil {
		t.Fatalf("no settings pushed after the delete: %v", err)
	}
	if st := pushed.GetSettings(); st.GetSubscription().GetFifo() || st.GetBackoffPolicy().GetMaxAttempts() != e.b.Config().DefaultMaxReconsumeTimes+1 {
		t.Fatalf("settings after the delete %v, want the defaults", st)
	}
}

// TestGroupPolicyReadsTheTopLevelFlag: consumeMessageOrderly of the config
// is what makes a group FIFO (the attribute is the older spelling).
func TestGroupPolicyReadsTheTopLevelFlag(t *testing.T) {
	e := newEnv(t)
	g := broker.DefaultGroup("top")
	g.ConsumeMessageOrderly = true
	g.RetryMaxTimes = 4
	if err := e.b.UpdateGroup(g); err != nil {
		t.Fatal(err)
	}
	if fifo, attempts := e.s.groupPolicy("top"); !fifo || attempts != 5 {
		t.Fatalf("groupPolicy(top) = %v %d, want true 5", fifo, attempts)
	}
	e.putGroup("attr", 1, map[string]string{FIFOAttribute: "true"})
	if fifo, attempts := e.s.groupPolicy("attr"); !fifo || attempts != 2 {
		t.Fatalf("groupPolicy(attr) = %v %d, want true 2", fifo, attempts)
	}
	if fifo, attempts := e.s.groupPolicy("none"); fifo || attempts != e.b.Config().DefaultMaxReconsumeTimes+1 {
		t.Fatalf("groupPolicy(none) = %v %d", fifo, attempts)
	}
}

// recvWithin is stream.Recv bounded by d.
func recvWithin(stream v2.MessagingService_TelemetryClient, d time.Duration) (*v2.TelemetryCommand, error) {
	type result struct {
		cmd *v2.TelemetryCommand
		err error
	}
	ch := make(chan result, 1)
	go func() {
		cmd, err := stream.Recv()
		ch <- result{cmd, err}
	}()
	select {
	case r := <-ch:
		return r.cmd, r.err
	case <-time.After(d):
		return nil, context.DeadlineExceeded
	}
}
