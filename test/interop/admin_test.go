package interop

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// rawSend stores one message with a hand-made SEND_MESSAGE (code 10, V1
// header) straight at the broker and returns the answer.
func rawSend(t *testing.T, brAddr, topic string, body []byte) *remotingCommand {
	t.Helper()
	c, err := dialRaw(brAddr)
	if err != nil {
		t.Fatalf("dial broker: %v", err)
	}
	defer c.Close()
	resp, err := c.call(10, map[string]string{
		"producerGroup":         "interop_raw",
		"topic":                 topic,
		"defaultTopic":          "TBW102",
		"defaultTopicQueueNums": "4",
		"queueId":               "0",
		"sysFlag":               "0",
		"bornTimestamp":         strconv.FormatInt(time.Now().UnixMilli(), 10),
		"flag":                  "0",
		"properties":            "",
		"reconsumeTimes":        "0",
		"unitMode":              "false",
		"maxReconsumeTimes":     "0",
		"batch":                 "false",
		"bname":                 "",
	}, body, 5*time.Second)
	if err != nil {
		t.Fatalf("raw send to %s: %v", topic, err)
	}
	return resp
}

// TestAdminCreateDeleteTopic: with auto-create off, a topic exists only after
// admin CreateTopic (with the requested queue counts) and a producer can then
// use it; after DeleteTopic its route is gone and the broker refuses sends.
func TestAdminCreateDeleteTopic(t *testing.T) {
	t.Parallel()
	off := false
	p := startPetrel(t, serverOptions{autoCreateTopics: &off})
	topic := uniqueName(t, "t")

	if _, found, err := queryRoute(p.nsAddr, topic); err != nil || found {
		t.Fatalf("before CreateTopic: route of %s found=%v err=%v, want TOPIC_NOT_EXIST", topic, found, err)
	}
	if resp := rawSend(t, p.brAddr, topic, []byte("before create")); resp.Code == codeSuccess {
		t.Fatalf("with --auto-create-topics=false a send to the unknown topic %s succeeded", topic)
	}

	adm, err := admin.NewAdmin(admin.WithResolver(p.resolver()))
	if err != nil {
		t.Fatalf("new admin: %v", err)
	}
	t.Cleanup(func() { _ = adm.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = adm.CreateTopic(ctx,
		admin.WithTopicCreate(topic),
		admin.WithBrokerAddrCreate(p.brAddr),
		admin.WithReadQueueNums(3),
		admin.WithWriteQueueNums(3))
	if err != nil {
		t.Fatalf("CreateTopic %s on %s: %v", topic, p.brAddr, err)
	}
	route := waitRoute(t, p.nsAddr, topic)
	if route.writeQueues() != 3 || route.readQueues() != 3 {
		t.Fatalf("route of the created topic has %d write / %d read queues, want 3 / 3: %+v", route.writeQueues(), route.readQueues(), route)
	}

	prod := newProducer(t, p)
	want := bodies(t, "m", 30)
	results := sendAllSync(t, prod, topic, want, nil)
	used := map[int]bool{}
	for _, r := range results {
		if r.MessageQueue.QueueId < 0 || r.MessageQueue.QueueId > 2 {
			t.Fatalf("send to the 3-queue topic went to queue %d", r.MessageQueue.QueueId)
		}
		used[r.MessageQueue.QueueId] = true
	}
	if len(used) != 3 {
		t.Fatalf("30 round-robin sends used queues %v, want all 3", used)
	}
	drain(t, p, topic, want)

	err = adm.DeleteTopic(ctx,
		admin.WithTopicDelete(topic),
		admin.WithBrokerAddrDelete(p.brAddr),
		admin.WithNameSrvAddr([]string{p.nsAddr}))
	if err != nil {
		t.Fatalf("DeleteTopic %s: %v", topic, err)
	}
	waitFor(t, 20*time.Second, "the route of the deleted topic "+topic+" to be gone", func() (bool, string) {
		r, found, err := queryRoute(p.nsAddr, topic)
		if err != nil {
			return false, err.Error()
		}
		if found {
			return false, "name server still routes it: " + strconv.Itoa(r.writeQueues()) + " write queues"
		}
		return true, ""
	})
	if resp := rawSend(t, p.brAddr, topic, []byte("after delete")); resp.Code == codeSuccess {
		t.Fatalf("the broker still stores messages for the deleted topic %s", topic)
	}
	// A new producer (no cached route) cannot send to it either.
	prod2 := newProducer(t, p)
	if res, err := prod2.SendSync(context.Background(), primitive.NewMessage(topic, []byte("after delete"))); err == nil {
		t.Fatalf("send to the deleted topic %s succeeded: %v", topic, res)
	}
}

// TestAdminCreateThenDeleteAtOnce is the official Go client's own admin
// example (examples/admin/topic), 50 times in a row: CreateTopic, then at
// once DeleteTopic with neither broker nor name server address, which makes
// the client look the broker up in the new topic's route. The broker
// answers a create only once the name server routes the topic, so the route
// is there without waiting; after the delete it is gone and the broker
// refuses sends to the topic.
func TestAdminCreateThenDeleteAtOnce(t *testing.T) {
	t.Parallel()
	off := false
	p := startPetrel(t, serverOptions{autoCreateTopics: &off})
	for run := range 50 {
		topic := uniqueName(t, "t")
		adm, err := admin.NewAdmin(admin.WithResolver(p.resolver()))
		if err != nil {
			t.Fatalf("run %d: new admin: %v", run, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := adm.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(p.brAddr)); err != nil {
			t.Fatalf("run %d: CreateTopic %s: %v", run, topic, err)
		}
		if r, found, err := queryRoute(p.nsAddr, topic); err != nil || !found || r.writeQueues() != 8 {
			t.Fatalf("run %d: right after CreateTopic the route of %s: found %v err %v route %+v, want 8 write queues", run, topic, found, err, r)
		}
		if err := adm.DeleteTopic(ctx, admin.WithTopicDelete(topic)); err != nil {
			t.Fatalf("run %d: DeleteTopic %s right after its creation: %v", run, topic, err)
		}
		if _, found, err := queryRoute(p.nsAddr, topic); err != nil || found {
			t.Fatalf("run %d: right after DeleteTopic the name server still routes %s (err %v)", run, topic, err)
		}
		if resp := rawSend(t, p.brAddr, topic, []byte("after delete")); resp.Code == codeSuccess {
			t.Fatalf("run %d: the broker still stores messages for the deleted topic %s", run, topic)
		}
		cancel()
		if err := adm.Close(); err != nil {
			t.Fatalf("run %d: close admin: %v", run, err)
		}
	}
}
