package rmq

import (
	"errors"
	"reflect"
	"testing"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/remoting"
)

var pushReplyFields = []string{"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
	"bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "bornHost", "storeHost", "storeTimestamp"}

func samplePushReply() PushReplyRequest {
	return PushReplyRequest{ProducerGroup: "repliers", Topic: "DefaultCluster_REPLY_TOPIC", DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: 0, SysFlag: 1, BornTimestamp: 1700000000000, Flag: -3,
		Properties:     "CORRELATION_ID\x01c-1\x02REPLY_TO_CLIENT\x0110.0.0.1@1\x02MSG_TYPE\x01reply\x02PUSH_REPLY_TIME\x011700000000001",
		ReconsumeTimes: 2, UnitMode: true, BornHost: "10.0.0.2:40000", StoreHost: "10.0.0.3:10911", StoreTimestamp: 1700000000001}
}

// TestPushReplyHeaderIsJavasReplyMessageRequestHeader: every field of
// Java's ReplyMessageRequestHeader is written, under its name, as a JSON
// string, and reads back; the body travels as the command's body.
func TestPushReplyHeaderIsJavasReplyMessageRequestHeader(t *testing.T) {
	h := samplePushReply()
	c := EncodePushReply(h, []byte("answer"))
	if c.Code != CodePushReplyMessageToClient || string(c.Body) != "answer" {
		t.Fatalf("code %d body %q", c.Code, c.Body)
	}
	var keys []string
	c.EachExt(func(k, _ string) { keys = append(keys, k) })
	if !reflect.DeepEqual(keys, pushReplyFields) {
		t.Fatalf("fields %v, want %v", keys, pushReplyFields)
	}
	if c.Ext("flag") != "-3" || c.Ext("unitMode") != "true" || c.Ext("storeTimestamp") != "1700000000001" {
		t.Fatalf("flag %q unitMode %q storeTimestamp %q", c.Ext("flag"), c.Ext("unitMode"), c.Ext("storeTimestamp"))
	}
	got, err := DecodePushReply(c)
	if err != nil || got != h {
		t.Fatalf("round trip %+v (%v), want %+v", got, err, h)
	}
}

func TestPushReplyRefusalsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		field, value string
		missing      bool
	}{
		{"producerGroup", "", true},
		{"storeHost", "", true},
		{"storeTimestamp", "soon", false},
		{"queueId", "99999999999", false},
		{"unitMode", "yes", false},
	} {
		c := EncodePushReply(samplePushReply(), nil)
		ext := map[string]string{}
		c.EachExt(func(k, v string) { ext[k] = v })
		ext[tc.field] = tc.value
		_, err := DecodePushReply(remoting.NewRequest(CodePushReplyMessageToClient, ext, nil))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || fe.Missing != tc.missing {
			t.Fatalf("%s=%q: %v, want a FieldError naming it", tc.field, tc.value, err)
		}
	}
}

// TestReplyCodesNeedPubOnTheirTopic: a reply needs Pub on the topic it is
// sent to, by its V1 name (324) or V2 letter (325).
func TestReplyCodesNeedPubOnTheirTopic(t *testing.T) {
	for code, ext := range map[int16]map[string]string{
		CodeSendReplyMessage:   {"producerGroup": "repliers", "topic": "DefaultCluster_REPLY_TOPIC"},
		CodeSendReplyMessageV2: {"a": "repliers", "b": "DefaultCluster_REPLY_TOPIC"},
	} {
		reqs, err := BrokerRequests(int32(code), remoting.NewRequest(code, ext, nil), nil)
		want := []auth.Request{{Resource: auth.Resource{Type: auth.ResourceTopic, Name: "DefaultCluster_REPLY_TOPIC", Pattern: auth.Literal},
			Actions: []auth.Action{auth.ActionPub}}}
		if err != nil || !reflect.DeepEqual(reqs, want) {
			t.Fatalf("code %d: %+v (%v), want %+v", code, reqs, err, want)
		}
		if _, err := BrokerRequests(int32(code), remoting.NewRequest(code, nil, nil), nil); err == nil {
			t.Fatalf("code %d without a topic is authorized", code)
		}
	}
}

// FuzzDecodePushReply: a PUSH_REPLY_MESSAGE_TO_CLIENT header decodes and
// survives Encode then Decode unchanged, or fails with a *FieldError
// naming one of its fields (seeds in testdata/fuzz/FuzzDecodePushReply).
func FuzzDecodePushReply(f *testing.F) {
	f.Add(extBytes(map[string]string{"producerGroup": "repliers", "topic": "DefaultCluster_REPLY_TOPIC"}))
	hc := codecOf(CodePushReplyMessageToClient, DecodePushReply, noBody(EncodePushReply), pushReplyFields...)
	f.Fuzz(func(t *testing.T, data []byte) {
		ext := extFrom(data)
		for _, v := range ext {
			checkParseDecimal(t, v)
		}
		checkHeader(t, hc, ext)
	})
}
