package grpcfront

import (
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/petrelmq/petrel/internal/broker"
)

func TestProducerSettingsHandshake(t *testing.T) {
	e := newEnv(t)
	_, reply := e.telemetry("p1", producerSettings("T1"))
	if code(reply.Status) != v2.Code_OK {
		t.Fatalf("reply status %v", reply.Status)
	}
	pub := reply.GetSettings().GetPublishing()
	if pub == nil {
		t.Fatalf("reply %v has no publishing settings", reply)
	}
	if pub.MaxBodySize != int32(e.b.Config().MaxMessageBytes) || pub.MaxBodySize <= 0 {
		t.Errorf("max body size %d, want the broker's limit %d", pub.MaxBodySize, e.b.Config().MaxMessageBytes)
	}
	if len(pub.Topics) != 1 || pub.Topics[0].Name != "T1" {
		t.Errorf("topics %v", pub.Topics)
	}
	exp := reply.GetSettings().GetBackoffPolicy().GetExponentialBackoff()
	if exp == nil || exp.Max.AsDuration() > 4*time.Second || exp.Max.AsDuration() <= 0 {
		t.Errorf("producer back-off %v, want exponential with 0 < max ≤ 4s", reply.GetSettings().GetBackoffPolicy())
	}
	if m := reply.GetSettings().GetMetric(); m != nil {
		t.Errorf("metric %v: leave it out (the Go client resets its meter on each one, racing with sends)", m)
	}
	// The Go client gets no back-off (it would race applying it).
	goSettings := producerSettings("T1")
	goSettings.UserAgent = &v2.UA{Language: v2.Language_GOLANG, Version: "5.0.1-rc1"}
	_, goReply := e.telemetry("p-go", goSettings)
	if goReply.GetSettings().GetBackoffPolicy() != nil || goReply.GetSettings().GetPublishing().GetMaxBodySize() <= 0 {
		t.Errorf("Go producer reply %v: want no back-off policy and a max body size", goReply.GetSettings())
	}
	// The producers are registered with the broker under their topic, on
	// two connections the broker registered as gRPC sessions.
	conns := e.b.ProducerConns("T1")
	if len(conns) != 2 || conns[0] == conns[1] {
		t.Fatalf("producer conns of T1: %v, want two distinct ids", conns)
	}
	for _, id := range conns {
		if info, ok := e.b.Conn(id); !ok || info.Protocol != broker.ProtocolGRPC || info.IdleTimeout != 30*time.Second {
			t.Fatalf("conn %d registered as %+v %v, want a gRPC session with the front's client expiry", id, info, ok)
		}
	}
}

func TestConsumerSettingsComeFromTheGroupConfig(t *testing.T) {
	e := newEnv(t)
	e.putGroup("ordered", 2, map[string]string{FIFOAttribute: "true"})
	_, reply := e.telemetry("c1", consumerSettings("ordered", "T1", 7*time.Second))
	sub := reply.GetSettings().GetSubscription()
	if code(reply.Status) != v2.Code_OK || sub == nil {
		t.Fatalf("reply %v", reply)
	}
	if !sub.GetFifo() || sub.GetReceiveBatchSize() != receiveBatchSize || sub.GetLongPollingTimeout().AsDuration() != 7*time.Second {
		t.Errorf("subscription fifo %v batch %d long poll %v; want true, %d, 7s", sub.GetFifo(), sub.GetReceiveBatchSize(), sub.GetLongPollingTimeout().AsDuration(), receiveBatchSize)
	}
	if got := reply.GetSettings().GetBackoffPolicy().GetMaxAttempts(); got != 3 {
		t.Errorf("max attempts %d, want RetryMaxTimes 2 + 1", got)
	}
	if ids := e.b.ConsumerIDs("ordered"); len(ids) != 1 || ids[0] != "c1" {
		t.Errorf("consumer ids of the group: %v", ids)
	}

	// A group without config: created with the defaults, not FIFO.
	_, reply = e.telemetry("c2", consumerSettings("plain", "T1", 0))
	sub = reply.GetSettings().GetSubscription()
	if sub.GetFifo() || sub.GetLongPollingTimeout().AsDuration() != defaultLongPoll {
		t.Errorf("plain group: fifo %v long poll %v; want false and %v", sub.GetFifo(), sub.GetLongPollingTimeout().AsDuration(), defaultLongPoll)
	}
	if got := reply.GetSettings().GetBackoffPolicy().GetMaxAttempts(); got != e.b.Config().DefaultMaxReconsumeTimes+1 {
		t.Errorf("plain group max attempts %d", got)
	}
}

func TestRepeatedSettingsAreAnsweredEachTime(t *testing.T) {
	e := newEnv(t)
	stream, _ := e.telemetry("p1", producerSettings("T1"))
	for range 3 {
		if r := e.settings(stream, producerSettings("T1", "T2")); r.GetSettings().GetPublishing() == nil {
			t.Fatalf("reply %v", r)
		}
	}
	if len(e.b.ProducerConns("T2")) != 1 || len(e.b.ProducerConns("T1")) != 1 {
		t.Fatalf("producer registrations T1 %v T2 %v", e.b.ProducerConns("T1"), e.b.ProducerConns("T2"))
	}
}

func TestHeartbeatNeedsKnownClient(t *testing.T) {
	e := newEnv(t)
	resp, err := e.c.Heartbeat(e.ctx("stranger"), &v2.HeartbeatRequest{ClientType: v2.ClientType_PRODUCER})
	if err != nil {
		t.Fatal(err)
	}
	if code(resp.Status) != v2.Code_UNRECOGNIZED_CLIENT_TYPE {
		t.Fatalf("unknown client: %v, want UNRECOGNIZED_CLIENT_TYPE", resp.Status)
	}
	e.telemetry("p1", producerSettings("T1"))
	for _, req := range []*v2.HeartbeatRequest{{ClientType: v2.ClientType_PRODUCER}, {}} {
		resp, err := e.c.Heartbeat(e.ctx("p1"), req)
		if err != nil {
			t.Fatal(err)
		}
		if code(resp.Status) != v2.Code_OK {
			t.Fatalf("known client heartbeat %v: %v", req, resp.Status)
		}
	}
	resp, err = e.c.Heartbeat(e.ctx(""), &v2.HeartbeatRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if code(resp.Status) != v2.Code_CLIENT_ID_REQUIRED {
		t.Fatalf("no client id: %v", resp.Status)
	}
}

func TestSilentClientsExpire(t *testing.T) {
	e := newEnv(t)
	stream, _ := e.telemetry("p1", producerSettings("T1"))
	e.telemetry("p2", producerSettings("T1"))
	if n := len(e.b.ProducerConns("T1")); n != 2 {
		t.Fatalf("%d producers of T1, want 2", n)
	}
	// p2 keeps heart-beating, p1 goes silent.
	for range 4 {
		e.clk.Advance(10 * time.Second)
		if resp, err := e.c.Heartbeat(e.ctx("p2"), &v2.HeartbeatRequest{ClientType: v2.ClientType_PRODUCER}); err != nil || code(resp.Status) != v2.Code_OK {
			t.Fatalf("p2 heartbeat: %v %v", resp, err)
		}
	}
	resp, err := e.c.Heartbeat(e.ctx("p1"), &v2.HeartbeatRequest{ClientType: v2.ClientType_PRODUCER})
	if err != nil {
		t.Fatal(err)
	}
	if code(resp.Status) != v2.Code_UNRECOGNIZED_CLIENT_TYPE {
		t.Fatalf("silent p1 after 40s: %v, want UNRECOGNIZED_CLIENT_TYPE", resp.Status)
	}
	if n := len(e.b.ProducerConns("T1")); n != 1 {
		t.Fatalf("%d producers of T1 after p1 expired, want 1", n)
	}
	// p1 comes back: Settings on its still open stream re-register it.
	e.settings(stream, producerSettings("T1"))
	if n := len(e.b.ProducerConns("T1")); n != 2 {
		t.Fatalf("%d producers after p1 re-sent its settings, want 2", n)
	}
}

func TestStreamEndDropsTheClient(t *testing.T) {
	e := newEnv(t)
	stream, _ := e.telemetry("p1", producerSettings("T1"))
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	await(t, "p1 leaves the broker's producer table", func() bool { return len(e.b.ProducerConns("T1")) == 0 })
	resp, err := e.c.Heartbeat(e.ctx("p1"), &v2.HeartbeatRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if code(resp.Status) != v2.Code_UNRECOGNIZED_CLIENT_TYPE {
		t.Fatalf("heartbeat after the stream ended: %v", resp.Status)
	}
}

func TestNotifyClientTermination(t *testing.T) {
	e := newEnv(t)
	e.telemetry("c1", consumerSettings("g1", "T1", 0))
	resp, err := e.c.NotifyClientTermination(e.ctx("c1"), &v2.NotifyClientTerminationRequest{Group: &v2.Resource{Name: "g1"}})
	if err != nil {
		t.Fatal(err)
	}
	if code(resp.Status) != v2.Code_OK || len(e.b.ConsumerIDs("g1")) != 0 {
		t.Fatalf("terminate: %v, group members %v", resp.Status, e.b.ConsumerIDs("g1"))
	}
	resp, err = e.c.NotifyClientTermination(e.ctx("c1"), &v2.NotifyClientTerminationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if code(resp.Status) != v2.Code_UNRECOGNIZED_CLIENT_TYPE {
		t.Fatalf("second terminate: %v", resp.Status)
	}
}

func TestClientLimit(t *testing.T) {
	e := newEnv(t)
	e.s.sessions.mu.Lock()
	e.s.sessions.limit = 2
	e.s.sessions.mu.Unlock()
	e.telemetry("p1", producerSettings("T1"))
	e.telemetry("p2", producerSettings("T1"))
	_, reply := e.telemetry("p3", producerSettings("T1"))
	if code(reply.Status) != v2.Code_TOO_MANY_REQUESTS || reply.GetSettings() == nil {
		t.Fatalf("third client: %v, want TOO_MANY_REQUESTS with settings", reply.Status)
	}
	if n := len(e.b.ProducerConns("T1")); n != 2 {
		t.Fatalf("%d producers registered, want 2", n)
	}
	// A known client's Settings are still answered.
	stream, _ := e.telemetry("p1", producerSettings("T1", "T2"))
	if r := e.settings(stream, producerSettings("T1")); code(r.Status) != v2.Code_OK {
		t.Fatalf("known client: %v", r.Status)
	}
}
