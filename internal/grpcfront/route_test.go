package grpcfront

import (
	"testing"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/petrelmq/petrel/internal/broker"
)

func TestQueryRouteListsEveryQueueAtTheAdvertisedEndpoint(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.front = func(c *Config) { c.Advertise = "10.1.2.3:8081" } })
	e.createTopic("T1", 4)
	resp, err := e.c.QueryRoute(e.ctx("c1"), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "T1"},
		Endpoints: parseEndpoint("127.0.0.1:9")})
	if err != nil {
		t.Fatal(err)
	}
	if code(resp.Status) != v2.Code_OK || len(resp.MessageQueues) != 4 {
		t.Fatalf("status %v, %d queues; want OK and 4", resp.Status, len(resp.MessageQueues))
	}
	for i, q := range resp.MessageQueues {
		if q.Id != int32(i) || q.Permission != v2.Permission_READ_WRITE || q.Topic.GetName() != "T1" {
			t.Errorf("queue %d: id %d perm %v topic %v", i, q.Id, q.Permission, q.Topic)
		}
		a := q.GetBroker().GetEndpoints().GetAddresses()
		if len(a) != 1 || a[0].Host != "10.1.2.3" || a[0].Port != 8081 || q.Broker.Name != "broker-a" {
			t.Errorf("queue %d: broker %v, want broker-a at 10.1.2.3:8081", i, q.Broker)
		}
		if len(q.AcceptMessageTypes) != 4 {
			t.Errorf("queue %d accepts %v, want all four types", i, q.AcceptMessageTypes)
		}
	}
}

func TestQueryRouteEchoesTheClientsEndpointWithoutAdvertise(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 2)
	resp, err := e.c.QueryRoute(e.ctx("c1"), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "T1"},
		Endpoints: parseEndpoint("localhost:8081")})
	if err != nil {
		t.Fatal(err)
	}
	a := resp.MessageQueues[0].Broker.Endpoints.Addresses[0]
	if a.Host != "localhost" || a.Port != 8081 {
		t.Fatalf("endpoint %v, want the client's localhost:8081", a)
	}
	// Without any endpoint in the request: the listener's address.
	resp, err = e.c.QueryRoute(e.ctx("c1"), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "T1"}})
	if err != nil {
		t.Fatal(err)
	}
	a = resp.MessageQueues[0].Broker.Endpoints.Addresses[0]
	if got := a.Host + ":" + itoa(a.Port); got != e.addr {
		t.Fatalf("endpoint %s, want the listener %s", got, e.addr)
	}
}

// TestQueryRouteNeverCreates: as RocketMQ's proxy, a route query of an
// unknown topic answers TOPIC_NOT_FOUND with RocketMQ's text even when the
// broker auto-creates topics, and creates nothing; a send still creates
// the topic, after which the route is there.
func TestQueryRouteNeverCreates(t *testing.T) {
	e := newEnv(t)
	if !e.b.Config().AutoCreateTopics {
		t.Fatal("the test broker does not auto-create topics")
	}
	resp, err := e.c.QueryRoute(e.ctx("c1"), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "Fresh"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "CODE: 17  DESC: No topic route info in name server for the topic: Fresh\nFor more information, please visit the url, https://rocketmq.apache.org/docs/bestPractice/06FAQ"
	if code(resp.Status) != v2.Code_TOPIC_NOT_FOUND || resp.Status.Message != want || len(resp.MessageQueues) != 0 {
		t.Fatalf("route of an unknown topic: %v with %d queues; want TOPIC_NOT_FOUND %q", resp.Status, len(resp.MessageQueues), want)
	}
	as, err := e.c.QueryAssignment(e.ctx("c1"), &v2.QueryAssignmentRequest{Topic: &v2.Resource{Name: "Fresh"}, Group: &v2.Resource{Name: "g1"}})
	if err != nil {
		t.Fatal(err)
	}
	if code(as.Status) != v2.Code_TOPIC_NOT_FOUND {
		t.Fatalf("assignment of an unknown topic: %v, want TOPIC_NOT_FOUND", as.Status)
	}
	if _, ok := e.b.Topic("Fresh"); ok {
		t.Fatal("a route query created the topic")
	}
	if got := e.send("p1", msg("Fresh", "ID-F", "creates it")); code(got.Status) != v2.Code_OK {
		t.Fatalf("send to an unknown topic with auto-create on: %v", got.Status)
	}
	resp, err = e.c.QueryRoute(e.ctx("c1"), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "Fresh"}})
	if err != nil {
		t.Fatal(err)
	}
	if code(resp.Status) != v2.Code_OK || len(resp.MessageQueues) != autoCreateQueues {
		t.Fatalf("route after the send: %v with %d queues, want OK and %d", resp.Status, len(resp.MessageQueues), autoCreateQueues)
	}
	for _, c := range []struct {
		topic *v2.Resource
		want  v2.Code
	}{
		{nil, v2.Code_ILLEGAL_TOPIC},
		{&v2.Resource{Name: "bad topic!"}, v2.Code_ILLEGAL_TOPIC},
		{&v2.Resource{Name: broker.DLQGroupTopicPrefix + "nobody"}, v2.Code_TOPIC_NOT_FOUND},
	} {
		resp, err := e.c.QueryRoute(e.ctx("c1"), &v2.QueryRouteRequest{Topic: c.topic})
		if err != nil {
			t.Fatal(err)
		}
		if code(resp.Status) != c.want || resp.Status.Message == "" {
			t.Errorf("topic %v: %v, want %v with a message", c.topic, resp.Status, c.want)
		}
	}
}

func TestQueryRouteUnknownTopicWithoutAutoCreate(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.broker = func(c *broker.Config) { c.AutoCreateTopics = false } })
	resp, err := e.c.QueryRoute(e.ctx("c1"), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "Nope"}})
	if err != nil {
		t.Fatal(err)
	}
	if code(resp.Status) != v2.Code_TOPIC_NOT_FOUND || len(resp.MessageQueues) != 0 {
		t.Fatalf("%v, %d queues; want TOPIC_NOT_FOUND and none", resp.Status, len(resp.MessageQueues))
	}
}

func TestTopicTypeAttributeLimitsAcceptedTypes(t *testing.T) {
	e := newEnv(t)
	if err := e.b.CreateTopic(broker.TopicConfig{Name: "OnlyFIFO", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6,
		Attributes: map[string]string{broker.TopicTypeAttribute: "FIFO"}}); err != nil {
		t.Fatal(err)
	}
	resp, err := e.c.QueryRoute(e.ctx("c1"), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "OnlyFIFO"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.MessageQueues[0].AcceptMessageTypes; len(got) != 1 || got[0] != v2.MessageType_FIFO {
		t.Fatalf("accepts %v, want [FIFO]", got)
	}
	if got := e.send("p1", msg("OnlyFIFO", "ID-NORMAL", "x")); code(got.Status) != v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE {
		t.Fatalf("normal send to a FIFO topic: %v, want MESSAGE_PROPERTY_CONFLICT_WITH_TYPE", got.Status)
	}
}

func TestQueryAssignment(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 3)
	e.putGroup("ordered", 2, map[string]string{FIFOAttribute: "true"})
	for _, c := range []struct {
		group string
		want  []int32
	}{{"plain", []int32{-1}}, {"ordered", []int32{0, 1, 2}}} {
		resp, err := e.c.QueryAssignment(e.ctx("c1"), &v2.QueryAssignmentRequest{Topic: &v2.Resource{Name: "T1"},
			Group: &v2.Resource{Name: c.group}, Endpoints: parseEndpoint("127.0.0.1:8081")})
		if err != nil {
			t.Fatal(err)
		}
		var ids []int32
		for _, a := range resp.Assignments {
			ids = append(ids, a.MessageQueue.Id)
		}
		if code(resp.Status) != v2.Code_OK || len(ids) != len(c.want) || ids[0] != c.want[0] || ids[len(ids)-1] != c.want[len(c.want)-1] {
			t.Errorf("group %s: %v queues %v, want %v", c.group, resp.Status, ids, c.want)
		}
	}
}

func TestNamespacedNamesRoundTrip(t *testing.T) {
	r := &v2.Resource{ResourceNamespace: "ns1", Name: "T"}
	if got := storedName(r); got != "ns1%T" {
		t.Fatalf("stored name %q", got)
	}
	back := resourceOf("ns1%T", "ns1")
	if back.ResourceNamespace != "ns1" || back.Name != "T" {
		t.Fatalf("resource %v", back)
	}
	if got := resourceOf("%DLQ%g", ""); got.Name != "%DLQ%g" || got.ResourceNamespace != "" {
		t.Fatalf("resource without namespace %v", got)
	}
}

// TestTopicMessageTypeCheckOff: with the broker's NoTopicMessageTypeCheck
// (--topic-message-type-check=false) producers are told not to validate
// message types (Publishing.validate_message_type, true by default) and a
// normal message to a FIFO topic is stored.
func TestTopicMessageTypeCheckOff(t *testing.T) {
	for _, off := range []bool{false, true} {
		e := newEnv(t, func(o *envOptions) { o.broker = func(c *broker.Config) { c.NoTopicMessageTypeCheck = off } })
		if err := e.b.CreateTopic(broker.TopicConfig{Name: "OnlyFIFO", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6,
			Attributes: map[string]string{broker.TopicTypeAttribute: "FIFO"}}); err != nil {
			t.Fatal(err)
		}
		_, pushed := e.telemetry("p1", producerSettings("OnlyFIFO"))
		if got := pushed.GetSettings().GetPublishing().GetValidateMessageType(); got == off {
			t.Errorf("check off %v: settings say validate_message_type %v", off, got)
		}
		got := e.send("p1", msg("OnlyFIFO", "ID-NORMAL", "x"))
		if want := map[bool]v2.Code{false: v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, true: v2.Code_OK}[off]; code(got.Status) != want {
			t.Errorf("check off %v: normal send to a FIFO topic: %v, want %v", off, got.Status, want)
		}
	}
}
