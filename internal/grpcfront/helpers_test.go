package grpcfront

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/storetest"
	"github.com/petrelmq/petrel/internal/vfs"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// waitLimit bounds every wait for a condition.
const waitLimit = 10 * time.Second

// env is a broker over an in-memory store with a manual clock, served by
// a plaintext gRPC front on 127.0.0.1.
type env struct {
	t    testing.TB
	clk  *clock.Manual
	st   *store.Store
	b    *broker.Broker
	s    *Server
	addr string
	conn *grpc.ClientConn
	c    v2.MessagingServiceClient
}

type envOptions struct {
	broker func(*broker.Config)
	front  func(*Config)
}

func newEnv(t testing.TB, opts ...func(*envOptions)) *env {
	t.Helper()
	var o envOptions
	for _, f := range opts {
		f(&o)
	}
	e := &env{t: t, clk: clock.NewManual(t0)}
	logger := storetest.Logger(t)
	st, err := store.Open(storetest.SmallConfig(vfs.NewMem(), e.clk, logger))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	e.st = st
	bcfg := broker.DefaultConfig()
	bcfg.Clock, bcfg.Logger = e.clk, logger
	bcfg.MaxMessageBytes = 32 << 10
	bcfg.TransactionTimeout = 6 * time.Second
	bcfg.TransactionCheckInterval = 10 * time.Second
	if o.broker != nil {
		o.broker(&bcfg)
	}
	b, err := broker.New(st, st.Meta(), bcfg)
	if err != nil {
		st.Close()
		t.Fatalf("new broker: %v", err)
	}
	e.b = b
	cfg := Config{Plaintext: true, Clock: e.clk, Logger: logger, ClientExpiry: 30 * time.Second}
	if o.front != nil {
		o.front(&cfg)
	}
	s, err := New(b, cfg)
	if err != nil {
		b.Close()
		st.Close()
		t.Fatalf("new front: %v", err)
	}
	e.s = s
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	e.addr = ln.Addr().String()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	// Serve marks the server served on its goroutine: wait for it, or a
	// test's own second Serve could win and block (it expects ErrServed).
	for deadline := time.Now().Add(waitLimit); s.listenAddr() == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("the server did not start serving within %v", waitLimit)
		}
		time.Sleep(time.Millisecond) // polling the condition: Serve signals nothing
	}
	t.Cleanup(func() {
		if e.conn != nil {
			e.conn.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve returned %v after shutdown", err)
		}
		b.Close()
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	if !cfg.Plaintext {
		return e
	}
	conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	e.conn = conn
	e.c = v2.NewMessagingServiceClient(conn)
	return e
}

// ctx is a call context of client id, deadline waitLimit.
func (e *env) ctx(clientID string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	e.t.Cleanup(cancel)
	return metadata.AppendToOutgoingContext(ctx, headerClientID, clientID)
}

// createTopic creates a topic of n queues.
func (e *env) createTopic(name string, n int32) {
	e.t.Helper()
	if err := e.b.CreateTopic(broker.TopicConfig{Name: name, ReadQueueNums: n, WriteQueueNums: n, Perm: broker.PermRead | broker.PermWrite}); err != nil {
		e.t.Fatalf("create topic %s: %v", name, err)
	}
}

// putGroup stores a subscription group config.
func (e *env) putGroup(name string, retryMaxTimes int32, attrs map[string]string) {
	e.t.Helper()
	g := broker.DefaultGroup(name)
	g.RetryMaxTimes = retryMaxTimes
	g.Attributes = attrs
	if err := e.b.UpdateGroup(g); err != nil {
		e.t.Fatalf("put group %s: %v", name, err)
	}
}

// telemetry opens a Telemetry stream for clientID, sends settings and
// returns the stream once the reply arrived.
func (e *env) telemetry(clientID string, st *v2.Settings) (v2.MessagingService_TelemetryClient, *v2.TelemetryCommand) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(context.Background(), headerClientID, clientID))
	e.t.Cleanup(cancel)
	stream, err := e.c.Telemetry(ctx)
	if err != nil {
		e.t.Fatalf("open telemetry: %v", err)
	}
	return stream, e.settings(stream, st)
}

// settings sends Settings on stream and returns the reply.
func (e *env) settings(stream v2.MessagingService_TelemetryClient, st *v2.Settings) *v2.TelemetryCommand {
	e.t.Helper()
	if err := stream.Send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: st}}); err != nil {
		e.t.Fatalf("send settings: %v", err)
	}
	reply, err := stream.Recv()
	if err != nil {
		e.t.Fatalf("settings reply: %v", err)
	}
	return reply
}

func producerSettings(topics ...string) *v2.Settings {
	var rs []*v2.Resource
	for _, t := range topics {
		rs = append(rs, &v2.Resource{Name: t})
	}
	return &v2.Settings{ClientType: ptr(v2.ClientType_PRODUCER),
		PubSub: &v2.Settings_Publishing{Publishing: &v2.Publishing{Topics: rs}}}
}

func consumerSettings(group, topic string, longPoll time.Duration) *v2.Settings {
	sub := &v2.Subscription{Group: &v2.Resource{Name: group}}
	if topic != "" {
		sub.Subscriptions = []*v2.SubscriptionEntry{{Topic: &v2.Resource{Name: topic},
			Expression: &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "*"}}}
	}
	if longPoll > 0 {
		sub.LongPollingTimeout = durpb(longPoll)
	}
	return &v2.Settings{ClientType: ptr(v2.ClientType_SIMPLE_CONSUMER), PubSub: &v2.Settings_Subscription{Subscription: sub}}
}

// msg builds a message as the Go client does.
func msg(topic, id string, body string) *v2.Message {
	return &v2.Message{Topic: &v2.Resource{Name: topic}, Body: []byte(body),
		SystemProperties: &v2.SystemProperties{MessageId: id, MessageType: v2.MessageType_NORMAL, BodyEncoding: v2.Encoding_IDENTITY,
			BornTimestamp: tspb(t0), BornHost: "test-host"}}
}

// send sends one message and returns its entry (failing the test on a
// transport error only).
func (e *env) send(clientID string, m *v2.Message) *v2.SendResultEntry {
	e.t.Helper()
	resp, err := e.c.SendMessage(e.ctx(clientID), &v2.SendMessageRequest{Messages: []*v2.Message{m}})
	if err != nil {
		e.t.Fatalf("send: %v", err)
	}
	if len(resp.Entries) != 1 {
		e.t.Fatalf("send: %d entries, want 1 (status %v)", len(resp.Entries), resp.Status)
	}
	if resp.Status.GetCode() != resp.Entries[0].Status.GetCode() {
		e.t.Fatalf("send: top-level status %v differs from the entry's %v", resp.Status, resp.Entries[0].Status)
	}
	return resp.Entries[0]
}

// records returns the records of a queue.
// dispatched waits until the store's queues hold every durable record
// (sends are answered once durable; their queue entries follow).
func (e *env) dispatched() {
	e.t.Helper()
	if err := e.st.WaitDispatched(context.Background()); err != nil {
		e.t.Fatalf("wait for dispatch: %v", err)
	}
}

func (e *env) records(topic string, q int32) []message.Record {
	e.t.Helper()
	var out []message.Record
	for off := int64(0); off < e.st.MaxOffset(topic, q); {
		res, err := e.st.GetMessages(topic, q, off, 64, 1<<20, nil)
		if err != nil {
			e.t.Fatalf("read %s/%d at %d: %v", topic, q, off, err)
		}
		for b := res.Body; len(b) > 0; {
			n := message.Record(b).TotalSize()
			out = append(out, message.Record(bytes.Clone(b[:n])))
			b = b[n:]
		}
		if res.NextOffset <= off {
			res.Release()
			break
		}
		off = res.NextOffset
		res.Release()
	}
	return out
}

// awaitRecords waits until the topic's queues hold n records in all and
// returns them queue by queue.
func (e *env) awaitRecords(topic string, n int) map[int32][]message.Record {
	e.t.Helper()
	var got map[int32][]message.Record
	await(e.t, "topic "+topic+" holds the records", func() bool {
		got = map[int32][]message.Record{}
		total := 0
		for _, q := range e.st.QueueIDs(topic) {
			got[q] = e.records(topic, q)
			total += len(got[q])
		}
		return total >= n
	})
	return got
}

// await polls cond until it holds or waitLimit passes.
func await(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", waitLimit, what)
		}
		<-tick.C
	}
}

// prop returns a record's property.
func prop(r message.Record, key string) string {
	v, _ := r.Property(key)
	return string(v)
}

func code(st *v2.Status) v2.Code { return st.GetCode() }

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func durpb(d time.Duration) *durationpb.Duration { return durationpb.New(d) }
func tspb(t time.Time) *timestamppb.Timestamp    { return timestamppb.New(t) }
