package brokerfront

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// mqadminBody is what mqadmin updateSubGroup -g g1 -o true -r 2 -p ...
// --attributes +a=b,-c sends (fastjson of SubscriptionGroupConfig).
const mqadminBody = `{"attributes":{"+a":"b","-c":""},"brokerId":0,"consumeBroadcastEnable":false,` +
	`"consumeEnable":true,"consumeFromMinEnable":false,"consumeMessageOrderly":true,"consumeTimeoutMinute":15,` +
	`"groupName":"g1","groupRetryPolicy":{"customizedRetryPolicy":{"next":[1000,5000,10000]},"type":"CUSTOMIZED"},` +
	`"groupSysFlag":0,"notifyConsumerIdsChangedEnable":true,"retryMaxTimes":2,"retryQueueNums":1,` +
	`"subscriptionDataSet":[{"expression":"*","expressionType":"TAG","topic":"T","version":3}],` +
	`"whichBrokerWhenConsumeSlowly":1}`

func TestDecodeGroupConfigOfMQAdmin(t *testing.T) {
	g, changes, err := decodeGroupConfig([]byte(mqadminBody))
	if err != nil {
		t.Fatal(err)
	}
	want := broker.GroupConfig{Name: "g1", ConsumeEnable: true, ConsumeMessageOrderly: true, RetryMaxTimes: 2, RetryQueueNums: 1,
		WhichBrokerWhenConsumeSlowly: 1, NotifyConsumerIDsChangedEnable: true, ConsumeTimeoutMinute: 15,
		GroupRetryPolicy:    &broker.RetryPolicy{Type: "CUSTOMIZED", Customized: &broker.CustomizedRetry{Next: []int64{1000, 5000, 10000}}},
		SubscriptionDataSet: []broker.GroupSubscription{{Topic: "T", ExpressionType: "TAG", Expression: "*", Version: 3}}}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("decoded\n %+v\nwant\n %+v", g, want)
	}
	if want := map[string]string{"+a": "b", "-c": ""}; !reflect.DeepEqual(changes, want) {
		t.Fatalf("attribute changes %v, want %v", changes, want)
	}
}

// TestDecodeGroupConfigMissingFieldsAreJavaDefaults: the request replaces
// the whole config, so what it leaves out is SubscriptionGroupConfig's
// default, not the stored value.
func TestDecodeGroupConfigMissingFieldsAreJavaDefaults(t *testing.T) {
	g, changes, err := decodeGroupConfig([]byte(`{"groupName":"g2"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := broker.DefaultGroup("g2")
	if !reflect.DeepEqual(g, want) || changes != nil {
		t.Fatalf("decoded %+v %v, want %+v", g, changes, want)
	}
	if !g.ConsumeEnable || g.ConsumeMessageOrderly || g.RetryMaxTimes != 16 || g.ConsumeTimeoutMinute != 15 || g.WhichBrokerWhenConsumeSlowly != 1 {
		t.Fatalf("defaults are not Java's: %+v", g)
	}
}

func TestDecodeGroupConfigRefusalsNameTheField(t *testing.T) {
	for body, want := range map[string]string{
		``:                                       "no SubscriptionGroupConfig",
		`{`:                                      "not valid JSON",
		`[]`:                                     "the body must be a JSON object",
		`{"groupName":""}`:                       "group name is empty",
		`{"groupName":"a b"}`:                    "is not valid",
		`{"groupName":"%RETRY%x"}`:               "reserved prefix",
		`{"groupName":"g","retryMaxTimes":-1}`:   "retryMaxTimes -1",
		`{"groupName":"g","retryMaxTimes":"2"}`:  "retryMaxTimes must be a JSON number",
		`{"groupName":"g","retryMaxTimes":1e10}`: "retryMaxTimes must be a JSON number in range",
		`{"groupName":"g","consumeEnable":"no"}`: "consumeEnable must be a JSON boolean",
		`{"groupName":"g","groupRetryPolicy":{"type":"LINEAR"}}`:                                                               "neither CUSTOMIZED nor EXPONENTIAL",
		`{"groupName":"g","groupRetryPolicy":{"customizedRetryPolicy":{"next":[-1]}}}`:                                         "step -1 is outside",
		`{"groupName":"g","attributes":{"` + strings.Repeat("k", 2000) + `":"v"}}`:                                             "keys must be",
		`{"groupName":"g","subscriptionDataSet":[{"topic":"` + strings.Repeat("t", 600) + `"}]}`:                               "too long",
		`{"groupName":"g","brokerId":-1}`:                                                                                      "negative",
		`{"groupName":"g","groupRetryPolicy":{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":9223372036854775807}}}`: "within 0..",
	} {
		_, _, err := decodeGroupConfig([]byte(body))
		if !errors.Is(err, errGroupConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("body %.80s: error %v, want one containing %q", body, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "meta.Group") {
			t.Errorf("body %.80s: the remark %q names a Go type", body, err)
		}
	}
	big := `{"groupName":"g","attributes":{` + strings.Repeat(`"+k":"v",`, 10) + `"+z":"v"}}`
	many := map[string]string{}
	for i := range broker.MaxGroupAttributes + 1 {
		many["+k"+strings.Repeat("x", i)] = "v"
	}
	body, _ := json.Marshal(map[string]any{"groupName": "g", "attributes": many})
	if _, _, err := decodeGroupConfig(body); err == nil || !strings.Contains(err.Error(), "attribute changes") {
		t.Errorf("%d attribute changes: %v", len(many), err)
	}
	if _, _, err := decodeGroupConfig([]byte(big)); err != nil {
		t.Errorf("a repeated attribute key: %v", err)
	}
	if _, _, err := decodeGroupConfig(make([]byte, rmq.MaxSubscriptionGroupBytes+1)); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("an oversized body: %v", err)
	}
}

func TestGroupAttributesChanges(t *testing.T) {
	cur := map[string]string{"a": "1", "b": "2"}
	got, err := broker.GroupAttributes(cur, map[string]string{"+c": "3", "-a": "", "b": "20"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"b": "20", "c": "3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if cur["a"] != "1" || len(cur) != 2 {
		t.Fatalf("the current map was modified: %v", cur)
	}
	if _, err := broker.GroupAttributes(cur, map[string]string{"-missing": ""}); err == nil {
		t.Fatal("removing a missing attribute: no error")
	}
	if got, err := broker.GroupAttributes(map[string]string{"a": "1"}, map[string]string{"-a": ""}); err != nil || got != nil {
		t.Fatalf("removing the last attribute: %v %v", got, err)
	}
}

// TestEncodeGroupTableIsSubscriptionGroupWrapper: the shape RocketMQ's
// SubscriptionGroupWrapper has, which Java and Go admin clients decode.
func TestEncodeGroupTableIsSubscriptionGroupWrapper(t *testing.T) {
	g := broker.DefaultGroup("g1")
	g.ConsumeMessageOrderly = true
	body := rmq.EncodeSubscriptionGroupTableBody(rmq.SubscriptionGroupTable{
		SubscriptionGroupTable: map[string]rmq.SubscriptionGroupConfig{"g1": groupWire(g)}, DataVersion: versionWire(broker.DataVersion{Timestamp: 5, Counter: 2})})
	want := `{"subscriptionGroupTable":{"g1":{"groupName":"g1","consumeEnable":true,"consumeFromMinEnable":true,` +
		`"consumeBroadcastEnable":true,"retryMaxTimes":16,"retryQueueNums":1,"brokerId":0,"whichBrokerWhenConsumeSlowly":1,` +
		`"notifyConsumerIdsChangedEnable":true,"consumeMessageOrderly":true,"groupSysFlag":0,"consumeTimeoutMinute":15}},` +
		`"forbiddenTable":{},"dataVersion":{"timestamp":5,"counter":2}}`
	if string(body) != want {
		t.Fatalf("body\n got %s\nwant %s", body, want)
	}
	if w, d := groupWire(broker.DefaultGroup("g")), rmq.DefaultSubscriptionGroupConfig("g"); !reflect.DeepEqual(w, d) {
		t.Fatalf("the broker's default group\n %+v\nis not Java's\n %+v", w, d)
	}
}

// FuzzDecodeGroupConfig: the decoder never panics; what it accepts passes
// the broker's check and re-encodes to a body that decodes the same.
func FuzzDecodeGroupConfig(f *testing.F) {
	for _, s := range []string{mqadminBody, `{"groupName":"g"}`, `{"groupName":"g","attributes":{"-a":""}}`,
		`{"groupName":"g","groupRetryPolicy":{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":1,"max":2,"multiplier":3}}}`,
		`{"groupName":"g","retryMaxTimes":1000}`, `null`, `{"groupName":"g","subscriptionDataSet":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		g, changes, err := decodeGroupConfig(body)
		if err != nil {
			if !errors.Is(err, errGroupConfig) {
				t.Fatalf("error %v does not wrap errGroupConfig", err)
			}
			return
		}
		check := g
		check.Attributes = changes
		if err := broker.CheckGroup(check); err != nil {
			t.Fatalf("accepted a config the broker refuses: %v", err)
		}
		again, err := json.Marshal(groupWire(check))
		if err != nil {
			t.Fatal(err)
		}
		g2, changes2, err := decodeGroupConfig(again)
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", again, err)
		}
		if !reflect.DeepEqual(normal(g), normal(g2)) || !reflect.DeepEqual(changes, changes2) && len(changes)+len(changes2) > 0 {
			t.Fatalf("round trip\n %+v %v\n %+v %v", g, changes, g2, changes2)
		}
	})
}

// normal makes empty slices nil, as the store does.
func normal(g broker.GroupConfig) broker.GroupConfig {
	if len(g.SubscriptionDataSet) == 0 {
		g.SubscriptionDataSet = nil
	}
	if p := g.GroupRetryPolicy; p != nil && p.Customized != nil && len(p.Customized.Next) == 0 {
		c := *p
		c.Customized = &broker.CustomizedRetry{}
		g.GroupRetryPolicy = &c
	}
	return g
}
