package rmq

import (
	"reflect"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting"
)

// FuzzDecodeAdminMoreHeaders covers the headers of 204, 315, 317 and 321:
// a decoder never panics, refuses only with its own errors, keeps its
// bounds, and what it accepts re-encodes to a request that decodes the
// same.
func FuzzDecodeAdminMoreHeaders(f *testing.F) {
	f.Fuzz(func(t *testing.T, which uint8, a, b, c, d, e string) {
		var err error
		switch which % 4 {
		case 0:
			var h ProducerConnectionListRequest
			if h, err = DecodeProducerConnectionListRequest(remoting.NewRequest(CodeGetProducerConnectionList, map[string]string{"producerGroup": a}, nil)); err == nil {
				if h.ProducerGroup != a || a == "" || len(a) > 255 {
					t.Fatalf("accepted %q as %+v", a, h)
				}
				if again, err := DecodeProducerConnectionListRequest(EncodeProducerConnectionListRequest(h)); err != nil || again != h {
					t.Fatalf("round trip %+v became %+v %v", h, again, err)
				}
			}
		case 1:
			var h ViewBrokerStatsRequest
			if h, err = DecodeViewBrokerStatsRequest(remoting.NewRequest(CodeViewBrokerStatsData, map[string]string{"statsName": a, "statsKey": b}, nil)); err == nil {
				if len(h.StatsName) > 255 || len(h.StatsKey) > 512 || h.StatsName == "" || h.StatsKey == "" {
					t.Fatalf("accepted %+v", h)
				}
				if again, err := DecodeViewBrokerStatsRequest(EncodeViewBrokerStatsRequest(h)); err != nil || again != h {
					t.Fatalf("round trip %+v became %+v %v", h, again, err)
				}
			}
		case 2:
			var h BrokerConsumeStatsRequest
			if h, err = DecodeBrokerConsumeStatsRequest(remoting.NewRequest(CodeGetBrokerConsumeStats, map[string]string{"isOrder": a}, nil)); err == nil {
				if a != "" && a != "true" && a != "false" {
					t.Fatalf("isOrder %q accepted", a)
				}
				if again, err := DecodeBrokerConsumeStatsRequest(EncodeBrokerConsumeStatsRequest(h)); err != nil || again != h {
					t.Fatalf("round trip %+v became %+v %v", h, again, err)
				}
			}
		case 3:
			var h QueryConsumeQueueRequest
			ext := map[string]string{"topic": a, "queueId": b, "index": c, "count": d, "consumerGroup": e}
			if h, err = DecodeQueryConsumeQueueRequest(remoting.NewRequest(CodeQueryConsumeQueue, ext, nil)); err == nil {
				if h.Topic == "" || len(h.Topic) > 255 || len(h.ConsumerGroup) > 255 || h.QueueID < 0 || h.Index < 0 || h.Count < 1 || h.Count > MaxQueryConsumeQueueCount {
					t.Fatalf("accepted %+v", h)
				}
				if again, err := DecodeQueryConsumeQueueRequest(EncodeQueryConsumeQueueRequest(h)); err != nil || again != h {
					t.Fatalf("round trip %+v became %+v %v", h, again, err)
				}
			}
		}
		if err != nil {
			checkRefusal(t, err)
		}
	})
}

// FuzzDecodeAdminMoreBodies covers the answer bodies of 204, 315, 321
// and 328: no panic, only *BodyError refusals, and what decodes
// re-encodes to a body that decodes the same.
func FuzzDecodeAdminMoreBodies(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		if p, err := DecodeProducerConnectionBody(body); err == nil {
			again, err := DecodeProducerConnectionBody(EncodeProducerConnectionBody(p))
			if err != nil || !reflect.DeepEqual(again.ConnectionSet, p.ConnectionSet) && len(p.ConnectionSet)+len(again.ConnectionSet) > 0 {
				t.Fatalf("204 round trip %+v became %+v %v", p, again, err)
			}
		} else {
			checkRefusal(t, err)
		}
		if p, err := DecodeProducerTableBody(body); err == nil {
			again, err := DecodeProducerTableBody(EncodeProducerTableBody(p))
			if err != nil || len(again.Data) != len(p.Data) {
				t.Fatalf("328 round trip %+v became %+v %v", p, again, err)
			}
		} else {
			checkRefusal(t, err)
		}
		if d, err := DecodeBrokerStatsBody(body); err == nil {
			if again, err := DecodeBrokerStatsBody(EncodeBrokerStatsBody(d)); err != nil || again != d {
				t.Fatalf("315 round trip %+v became %+v %v", d, again, err)
			}
		} else {
			checkRefusal(t, err)
		}
		if q, err := DecodeQueryConsumeQueueBody(body); err == nil {
			again, err := DecodeQueryConsumeQueueBody(EncodeQueryConsumeQueueBody(q))
			if err != nil || len(again.QueueData) != len(q.QueueData) || again.MaxQueueIndex != q.MaxQueueIndex || again.FilterData != q.FilterData {
				t.Fatalf("321 round trip %+v became %+v %v", q, again, err)
			}
		} else {
			checkRefusal(t, err)
		}
	})
}

// TestAdminMoreBodiesAsJavaWritesThem: 43 and 45 key their maps by bare
// numbers, 317 nests 208's queue-keyed ConsumeStats per group, and the
// decoders refuse oversized bodies.
func TestAdminMoreBodiesAsJavaWritesThem(t *testing.T) {
	got := string(EncodeAllConsumerOffsetBody([]GroupOffsets{{Topic: "T", Group: "g", Offsets: map[int32]int64{1: 7, 0: 5}}}, DataVersion{Timestamp: 9, Counter: 2}))
	if want := `{"offsetTable":{"T@g":{0:5,1:7}},"dataVersion":{"timestamp":9,"counter":2}}`; got != want {
		t.Errorf("43 body\n got %s\nwant %s", got, want)
	}
	if got, want := string(EncodeAllDelayOffsetBody(nil, DataVersion{Timestamp: 1})), `{"offsetTable":{},"dataVersion":{"timestamp":1,"counter":0}}`; got != want {
		t.Errorf("45 body\n got %s\nwant %s", got, want)
	}
	l := ConsumeStatsList{BrokerAddr: "1.2.3.4:10911", TotalDiff: 4, TotalInflightDiff: 1, Groups: []GroupConsumeStats{
		{Group: "g", Stats: []ConsumeStats{{Offsets: []ConsumeOffset{{Topic: "T", BrokerName: "b", QueueID: 0, BrokerOffset: 5, ConsumerOffset: 1, PullOffset: 2}}}}},
		{Group: "h", Stats: []ConsumeStats{}}}}
	got = string(EncodeConsumeStatsListBody(l))
	want := `{"brokerAddr":"1.2.3.4:10911","consumeStatsList":[{"g":[{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":5,"consumerOffset":1,"pullOffset":2,"lastTimestamp":0,"inFlight":0}},"consumeTps":0}]},{"h":[]}],"totalDiff":4,"totalInflightDiff":1}`
	if got != want {
		t.Errorf("317 body\n got %s\nwant %s", got, want)
	}
	if got := string(EncodeQueryConsumeQueueBody(QueryConsumeQueueBody{MaxQueueIndex: 3})); got != `{"queueData":[],"maxQueueIndex":3,"minQueueIndex":0}` {
		t.Errorf("321 body %s", got)
	}
	big := []byte(`{"connectionSet":[` + strings.Repeat(" ", maxAdminBodyBytes) + `]}`)
	if _, err := DecodeProducerConnectionBody(big); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("an oversized body: %v", err)
	}
}

// TestAdminMoreACL: listings and stats need Get on the Cluster, cleaning
// Update, 321 Get on its topic (and group); the name server's 318 is a
// write, 319 is not.
func TestAdminMoreACL(t *testing.T) {
	for _, tc := range []struct {
		code int16
		ext  map[string]string
		want string
	}{
		{CodeGetAllConsumerOffset, nil, "Cluster Get"},
		{CodeGetAllDelayOffset, nil, "Cluster Get"},
		{CodeGetProducerConnectionList, map[string]string{"producerGroup": "pg"}, "Cluster Get"},
		{CodeCleanExpiredConsumeQueue, nil, "Cluster Update"},
		{CodeViewBrokerStatsData, nil, "Cluster Get"},
		{CodeCleanUnusedTopic, nil, "Cluster Update"},
		{CodeGetBrokerConsumeStats, nil, "Cluster Get"},
		{CodeUpdateNamesrvConfig, nil, "Cluster Update"},
		{CodeGetNamesrvConfig, nil, "Cluster Get"},
		{CodeQueryConsumeQueue, map[string]string{"topic": "T"}, "Topic:T Get"},
		{CodeQueryConsumeQueue, map[string]string{"topic": "T", "consumerGroup": "g"}, "Topic:T Get; Group:g Get"},
		{CodeGetAllProducerInfo, nil, "Cluster Get"},
		{CodeDeleteExpiredCommitLog, nil, "Cluster Update"},
	} {
		rs, err := BrokerRequests(int32(tc.code), remoting.NewRequest(tc.code, tc.ext, nil), nil)
		if err != nil {
			t.Errorf("code %d: %v", tc.code, err)
			continue
		}
		var parts []string
		for _, r := range rs {
			acts := make([]string, len(r.Actions))
			for i, a := range r.Actions {
				acts[i] = string(a)
			}
			parts = append(parts, r.Resource.String()+" "+strings.Join(acts, "|"))
		}
		if got := strings.Join(parts, "; "); got != tc.want {
			t.Errorf("code %d needs %q, want %q", tc.code, got, tc.want)
		}
	}
	if _, err := BrokerRequests(int32(CodeQueryConsumeQueue), remoting.NewRequest(CodeQueryConsumeQueue, nil, nil), nil); err == nil || !strings.Contains(err.Error(), "names no topic") {
		t.Errorf("321 without a topic: %v", err)
	}
	if !NameServerWrite(int32(CodeUpdateNamesrvConfig)) || NameServerWrite(int32(CodeGetNamesrvConfig)) {
		t.Errorf("318 must be a name server write and 319 not")
	}
}
