package rmq

import (
	"reflect"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting"
)

// FuzzDecodeClientFwdBodies covers the JSON bodies of 18, 46, 225, 400,
// 401 and the consumer-status bodies of 221/223: no panic, only the
// codec's own errors, and what decodes re-encodes to the same value.
func FuzzDecodeClientFwdBodies(f *testing.F) {
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		switch which % 7 {
		case 0:
			r, err := DecodeQueryAssignment(body)
			if err != nil {
				checkRefusal(t, err)
				return
			}
			again, err := DecodeQueryAssignment(EncodeQueryAssignment(r).Body)
			if err != nil || again != r {
				t.Fatalf("round trip %+v became %+v %v", r, again, err)
			}
		case 1:
			r, err := DecodeSetMessageRequestMode(body)
			if err != nil {
				checkRefusal(t, err)
				return
			}
			again, err := DecodeSetMessageRequestMode(EncodeSetMessageRequestMode(r).Body)
			if err != nil || again != r {
				t.Fatalf("round trip %+v became %+v %v", r, again, err)
			}
		case 2:
			if _, err := DecodeCheckClientConfig(body); err != nil {
				checkRefusal(t, err)
			}
		case 3:
			b, err := DecodeCreateTopicList(body)
			if err != nil {
				checkRefusal(t, err)
				return
			}
			if len(b.TopicConfigList) > MaxListEntries {
				t.Fatalf("%d topics accepted, over the limit", len(b.TopicConfigList))
			}
			again, err := DecodeCreateTopicList(EncodeCreateTopicList(b).Body)
			if err != nil || !reflect.DeepEqual(again, b) {
				t.Fatalf("round trip %+v became %+v %v", b, again, err)
			}
		case 4:
			l, err := DecodeSubscriptionGroupList(body)
			if err != nil {
				checkRefusal(t, err)
				return
			}
			if len(l.GroupConfigList) > MaxListEntries {
				t.Fatalf("%d groups accepted, over the limit", len(l.GroupConfigList))
			}
		case 5:
			tab, err := DecodeClientConsumerStatus(body)
			if err != nil {
				checkRefusal(t, err)
				return
			}
			again, err := DecodeConsumerStatusBody(EncodeConsumerStatusBody(map[string]OffsetTable{"c": tab}))
			if err != nil || len(again["c"]) != len(tab) {
				t.Fatalf("round trip of %d queues became %v %v", len(tab), again, err)
			}
		case 6:
			m, err := DecodeConsumerStatusBody(body)
			if err != nil {
				checkRefusal(t, err)
				return
			}
			again, err := DecodeConsumerStatusBody(EncodeConsumerStatusBody(m))
			if err != nil || !reflect.DeepEqual(again, m) {
				t.Fatalf("round trip %v became %v %v", m, again, err)
			}
		}
	})
}

// FuzzDecodeClientFwdHeaders covers the headers of 307, 309, 223, 303
// and 224.
func FuzzDecodeClientFwdHeaders(f *testing.F) {
	f.Fuzz(func(t *testing.T, which uint8, a, b, c string, flag bool) {
		switch which % 5 {
		case 0:
			cmd := remoting.NewRequest(CodeGetConsumerRunningInfo, map[string]string{"consumerGroup": a, "clientId": b, "jstackEnable": btoa(flag)}, nil)
			h, err := DecodeGetConsumerRunningInfo(cmd)
			if err != nil {
				checkRefusal(t, err)
				return
			}
			if again, err := DecodeGetConsumerRunningInfo(EncodeGetConsumerRunningInfo(h)); err != nil || again != h {
				t.Fatalf("round trip %+v became %+v %v", h, again, err)
			}
		case 1:
			cmd := remoting.NewRequest(CodeConsumeMessageDirectly, map[string]string{"consumerGroup": a, "clientId": b, "msgId": c}, nil)
			h, err := DecodeConsumeMessageDirectly(cmd)
			if err != nil {
				checkRefusal(t, err)
				return
			}
			if again, err := DecodeConsumeMessageDirectly(EncodeConsumeMessageDirectly(h)); err != nil || again != h {
				t.Fatalf("round trip %+v became %+v %v", h, again, err)
			}
		case 2:
			cmd := remoting.NewRequest(CodeInvokeBrokerToGetConsumerStatus, map[string]string{"topic": a, "group": b, "clientAddr": c}, nil)
			h, err := DecodeGetConsumerStatus(cmd)
			if err != nil {
				checkRefusal(t, err)
				return
			}
			if again, err := DecodeGetConsumerStatus(EncodeGetConsumerStatus(h)); err != nil || again != h {
				t.Fatalf("round trip %+v became %+v %v", h, again, err)
			}
		case 3:
			h, err := DecodeQueryConsumeTimeSpan(remoting.NewRequest(CodeQueryConsumeTimeSpan, map[string]string{"topic": a, "group": b}, nil))
			if err != nil {
				checkRefusal(t, err)
				return
			}
			if again, err := DecodeQueryConsumeTimeSpan(EncodeQueryConsumeTimeSpan(h)); err != nil || again != h {
				t.Fatalf("round trip %+v became %+v %v", h, again, err)
			}
		case 4:
			h, err := DecodeGetTopicsByCluster(remoting.NewRequest(CodeGetTopicsByCluster, map[string]string{"cluster": a}, nil))
			if err != nil {
				checkRefusal(t, err)
				return
			}
			if again, err := DecodeGetTopicsByCluster(EncodeGetTopicsByCluster(h)); err != nil || again != h {
				t.Fatalf("round trip %+v became %+v %v", h, again, err)
			}
		}
	})
}
