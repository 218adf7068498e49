package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/remoting"
)

func ptrTo[T any](v T) *T { return &v }

// TestGroupCreateUpdateDeleteList drives the three admin requests through
// the CLI against a real broker: create refuses an existing group, update
// changes only what it names and keeps the rest (attributes as changes),
// list shows the configs, delete --clean-offset removes config and offsets.
func TestGroupCreateUpdateDeleteList(t *testing.T) {
	c := startCluster(t)
	var res GroupResult
	c.mustJSON(&res, func(cl *CLI) error {
		return cl.GroupCreate(bg, GroupSpec{Name: "orders", Orderly: ptrTo(true), RetryMax: ptrTo(int32(2)), SetAttrs: map[string]string{"team": "pay"}})
	})
	want := GroupConfig{Group: "orders", ConsumeEnable: true, Orderly: true, RetryMaxTimes: 2, Attributes: map[string]string{"team": "pay"}}
	if res.Action != "created" || len(res.Brokers) != 1 || res.Config == nil || !sameConfig(*res.Config, want) {
		t.Fatalf("create: %+v (config %+v)", res, res.Config)
	}
	g, ok := c.b.Core().Group("orders")
	if !ok || !g.ConsumeMessageOrderly || g.RetryMaxTimes != 2 || g.ConsumeBroadcastEnable || !g.ConsumeEnable || g.Attributes["team"] != "pay" {
		t.Fatalf("stored config %+v", g)
	}
	_, err := c.run(OutputTable, func(cl *CLI) error { return cl.GroupCreate(bg, GroupSpec{Name: "orders"}) })
	wantErr(t, err, ErrUsage, "already exists", "petrel group update orders")

	out := c.must(OutputTable, func(cl *CLI) error {
		return cl.GroupUpdate(bg, GroupSpec{Name: "orders", ConsumeEnable: ptrTo(false), SetAttrs: map[string]string{"tier": "1"}})
	})
	if !strings.Contains(out, "group orders updated on broker-a: consume disabled, orderly true, broadcast false, retry max 2, attributes team=pay,tier=1") {
		t.Fatalf("update output:\n%s", out)
	}
	c.must(OutputTable, func(cl *CLI) error {
		return cl.GroupUpdate(bg, GroupSpec{Name: "orders", Orderly: ptrTo(false), RemoveAttrs: []string{"team"}})
	})
	g, _ = c.b.Core().Group("orders")
	if g.ConsumeMessageOrderly || g.ConsumeEnable || g.RetryMaxTimes != 2 || g.ConsumeTimeoutMinute != 15 || len(g.Attributes) != 1 || g.Attributes["tier"] != "1" {
		t.Fatalf("after two updates %+v", g)
	}
	_, err = c.run(OutputTable, func(cl *CLI) error { return cl.GroupUpdate(bg, GroupSpec{Name: "orders"}) })
	wantErr(t, err, ErrUsage, "nothing to change")
	_, err = c.run(OutputTable, func(cl *CLI) error {
		return cl.GroupUpdate(bg, GroupSpec{Name: "orders", RemoveAttrs: []string{"nope"}})
	})
	wantErr(t, err, ErrUsage, `no attribute "nope"`)
	_, err = c.run(OutputTable, func(cl *CLI) error { return cl.GroupUpdate(bg, GroupSpec{Name: "ghost", Orderly: ptrTo(true)}) })
	wantErr(t, err, ErrNotFound, "petrel group create ghost")
	_, err = c.run(OutputTable, func(cl *CLI) error { return cl.GroupCreate(bg, GroupSpec{Name: "bad name"}) })
	wantErr(t, err, ErrUsage)
	_, err = c.run(OutputTable, func(cl *CLI) error { return cl.GroupCreate(bg, GroupSpec{Name: "x", RetryMax: ptrTo(int32(-1))}) })
	wantErr(t, err, ErrUsage, "--retry-max")

	// list shows the config; a group made by a heartbeat has the defaults.
	c.must(OutputTable, func(cl *CLI) error { return cl.TopicCreate(bg, TopicSpec{Name: "Jobs", ReadQueues: 1, WriteQueues: 1}) })
	c.heartbeat("w@host", "workers", "Jobs")
	var list struct {
		Groups []GroupInfo `json:"groups"`
	}
	c.mustJSON(&list, func(cl *CLI) error { return cl.GroupList(bg) })
	if len(list.Groups) != 2 || list.Groups[0].Group != "orders" || list.Groups[0].Config.ConsumeEnable ||
		list.Groups[1].Config.RetryMaxTimes != 16 || !list.Groups[1].Config.ConsumeEnable {
		t.Fatalf("list: %+v", list.Groups)
	}
	table := c.must(OutputTable, func(cl *CLI) error { return cl.GroupList(bg) })
	if !strings.Contains(table, "CONSUME   ORDERLY  RETRY MAX") || !strings.Contains(table, "disabled  false    2") {
		t.Fatalf("list table:\n%s", table)
	}

	// delete --clean-offset: the config and the offsets go.
	c.b.Core().UpdateConsumerOffset("orders", "Jobs", 0, 3)
	c.mustJSON(&res, func(cl *CLI) error { return cl.GroupDelete(bg, "orders", true) })
	if res.Action != "deleted" || !res.CleanOffset || len(res.Brokers) != 1 {
		t.Fatalf("delete: %+v", res)
	}
	if _, ok := c.b.Core().Group("orders"); ok {
		t.Fatal("the config is still there")
	}
	resp := c.invoke(c.b.Advertised(), remoting.NewRequest(rmq.CodeQueryConsumerOffset, map[string]string{"consumerGroup": "orders", "topic": "Jobs", "queueId": "0"}, nil))
	if resp.Code != rmq.RespSuccess || resp.ExtFields["offset"] != "0" {
		t.Fatalf("offset after delete: code %d offset %q, want the fresh-group answer 0", resp.Code, resp.ExtFields["offset"])
	}
	_, err = c.run(OutputTable, func(cl *CLI) error { return cl.GroupDelete(bg, "orders", false) })
	wantErr(t, err, ErrNotFound, "--clean-offset")
}

func sameConfig(a, b GroupConfig) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestGroupAdminRequestsAsMQAdminSendsThem: a raw 200 with mqadmin's body
// and 207 with its header, and the answers of malformed ones (remark names
// the field, no Go type or path).
func TestGroupAdminRequestsAsMQAdminSendsThem(t *testing.T) {
	c := startCluster(t)
	addr := c.b.Advertised()
	body := `{"groupName":"mq","consumeEnable":true,"consumeFromMinEnable":false,"consumeBroadcastEnable":false,` +
		`"consumeMessageOrderly":true,"retryQueueNums":1,"retryMaxTimes":5,"brokerId":0,"whichBrokerWhenConsumeSlowly":1,` +
		`"notifyConsumerIdsChangedEnable":true,"groupSysFlag":0,"consumeTimeoutMinute":15,"attributes":{"+a":"1"},` +
		`"groupRetryPolicy":{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000]}}}`
	if r := c.invoke(addr, remoting.NewRequest(rmq.CodeUpdateAndCreateSubscriptionGroup, nil, []byte(body))); r.Code != rmq.RespSuccess {
		t.Fatalf("200: code %d %s", r.Code, r.Remark)
	}
	g, ok := c.b.Core().Group("mq")
	if !ok || !g.ConsumeMessageOrderly || g.RetryMaxTimes != 5 || g.Attributes["a"] != "1" || g.GroupRetryPolicy == nil ||
		g.GroupRetryPolicy.Customized.Next[0] != 1000 {
		t.Fatalf("stored %+v", g)
	}
	for b, want := range map[string]string{
		`{"groupName":"mq","retryMaxTimes":"x"}`:     "retryMaxTimes must be a JSON number",
		`not json`:                                   "not valid JSON",
		`{"groupName":"mq","attributes":{"-zz":""}}`: `"zz" cannot be removed`,
	} {
		r := c.invoke(addr, remoting.NewRequest(rmq.CodeUpdateAndCreateSubscriptionGroup, nil, []byte(b)))
		if r.Code != 29 || !strings.Contains(r.Remark, want) || strings.Contains(r.Remark, "meta.") || strings.Contains(r.Remark, "broker:") {
			t.Errorf("200 %s: code %d %q, want INVALID_PARAMETER (29) with %q", b, r.Code, r.Remark, want)
		}
	}
	var wrapper struct {
		SubscriptionGroupTable map[string]json.RawMessage `json:"subscriptionGroupTable"`
		ForbiddenTable         map[string]json.RawMessage `json:"forbiddenTable"`
		DataVersion            struct{ Counter int64 }    `json:"dataVersion"`
	}
	r := c.invoke(addr, remoting.NewRequest(rmq.CodeGetAllSubscriptionGroup, nil, nil))
	if err := json.Unmarshal(r.Body, &wrapper); err != nil || wrapper.SubscriptionGroupTable["mq"] == nil || wrapper.ForbiddenTable == nil || wrapper.DataVersion.Counter == 0 {
		t.Fatalf("201: %s (%v)", r.Body, err)
	}
	if r := c.invoke(addr, remoting.NewRequest(rmq.CodeDeleteSubscriptionGroup, map[string]string{"groupName": "mq", "cleanOffset": "maybe"}, nil)); r.Code != 29 || !strings.Contains(r.Remark, "cleanOffset") {
		t.Fatalf("207 with a bad cleanOffset: %d %s", r.Code, r.Remark)
	}
	if r := c.invoke(addr, remoting.NewRequest(rmq.CodeDeleteSubscriptionGroup, map[string]string{"groupName": "mq", "cleanOffset": "true"}, nil)); r.Code != rmq.RespSuccess {
		t.Fatalf("207: %d %s", r.Code, r.Remark)
	}
	if _, ok := c.b.Core().Group("mq"); ok {
		t.Fatal("207 left the config")
	}
	if r := c.invoke(addr, remoting.NewRequest(rmq.CodeDeleteSubscriptionGroup, map[string]string{"groupName": "never"}, nil)); r.Code != rmq.RespSuccess {
		t.Fatalf("207 of an unknown group: %d %s, want SUCCESS as RocketMQ", r.Code, r.Remark)
	}
}
