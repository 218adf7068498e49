package rmq

import (
	"errors"
	"reflect"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting"
)

// Fuzz targets of the admin and name server decoders, for every request
// Petrel serves: a decoder never panics, refuses with a *FieldError or
// *BodyError only, and what it accepts re-encodes to a request that
// decodes the same. Seeds are in testdata/fuzz/<Target>/.

// checkRefusal fails unless err is one of the codec's own errors.
func checkRefusal(t *testing.T, err error) {
	t.Helper()
	var fe *FieldError
	var be *BodyError
	if !errors.As(err, &fe) && !errors.As(err, &be) {
		t.Fatalf("error %v (%T) is neither a *FieldError nor a *BodyError", err, err)
	}
}

func FuzzDecodeCreateTopic(f *testing.F) {
	f.Fuzz(func(t *testing.T, topic, defaultTopic, readQ, writeQ, perm, filterType, sysFlag, order, attrs string) {
		c := remoting.NewRequest(CodeUpdateAndCreateTopic, map[string]string{
			"topic": topic, "defaultTopic": defaultTopic, "readQueueNums": readQ, "writeQueueNums": writeQ, "perm": perm,
			"topicFilterType": filterType, "topicSysFlag": sysFlag, "order": order, "attributes": attrs}, nil)
		h, err := DecodeCreateTopic(c)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		again, err := DecodeCreateTopic(EncodeCreateTopic(h))
		if err != nil || !reflect.DeepEqual(again, h) {
			t.Fatalf("round trip %+v became %+v %v", h, again, err)
		}
	})
}

// FuzzDecodeRouteRequest covers 105 GET_ROUTEINFO_BY_TOPIC.
func FuzzDecodeRouteRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, topic string, present bool) {
		ext := map[string]string{}
		if present {
			ext["topic"] = topic
		}
		h, err := DecodeRouteRequest(remoting.NewRequest(CodeGetRouteInfoByTopic, ext, nil))
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if h.Topic != topic {
			t.Fatalf("topic %q decoded as %q", topic, h.Topic)
		}
		if again, err := DecodeRouteRequest(EncodeRouteRequest(h)); err != nil || again != h {
			t.Fatalf("round trip %+v became %+v %v", h, again, err)
		}
	})
}

// FuzzDecodeNameServerHeaders covers the other small requests a name
// server serves: 104 UNREGISTER_BROKER, 322 QUERY_DATA_VERSION (with its
// body), 100/101/102 KV config, 219 KV list and 216 DELETE_TOPIC_IN_NAMESRV.
// which picks the request; a, b, c and d are its fields in order.
func FuzzDecodeNameServerHeaders(f *testing.F) {
	f.Fuzz(func(t *testing.T, which uint8, a, b, c, d string, body []byte) {
		switch which % 6 {
		case 0:
			cmd := remoting.NewRequest(CodeUnregisterBroker, map[string]string{"brokerName": a, "brokerAddr": b, "clusterName": c, "brokerId": d}, nil)
			h, err := DecodeUnregisterBroker(cmd)
			if err != nil {
				checkRefusal(t, err)
				return
			}
			if h.BrokerID < 0 || h.BrokerName == "" || h.BrokerAddr == "" {
				t.Fatalf("accepted %+v", h)
			}
			if again, err := DecodeUnregisterBroker(EncodeUnregisterBroker(h)); err != nil || again != h {
				t.Fatalf("round trip %+v became %+v %v", h, again, err)
			}
		case 1:
			cmd := remoting.NewRequest(CodeQueryDataVersion, map[string]string{"brokerName": a, "brokerAddr": b, "clusterName": c, "brokerId": d}, body)
			h, err := DecodeQueryDataVersion(cmd)
			if err != nil {
				checkRefusal(t, err)
				return
			}
			if again, err := DecodeQueryDataVersion(EncodeQueryDataVersion(h)); err != nil || again != h {
				t.Fatalf("round trip %+v became %+v %v", h, again, err)
			}
		case 2, 3, 4:
			code := []int16{CodePutKVConfig, CodeGetKVConfig, CodeDeleteKVConfig}[which%6-2]
			enc := []func(KVConfigRequest) *remoting.Command{EncodePutKVConfig, EncodeGetKVConfig, EncodeDeleteKVConfig}[which%6-2]
			h, err := DecodeKVConfig(remoting.NewRequest(code, map[string]string{"namespace": a, "key": b, "value": c}, nil))
			if err != nil {
				checkRefusal(t, err)
				return
			}
			if again, err := DecodeKVConfig(enc(h)); err != nil || again != h {
				t.Fatalf("round trip %+v became %+v %v", h, again, err)
			}
		case 5:
			h, err := DecodeKVList(remoting.NewRequest(CodeGetKVListByNamespace, map[string]string{"namespace": a}, nil))
			if err == nil {
				if again, err := DecodeKVList(EncodeKVList(h)); err != nil || again != h {
					t.Fatalf("round trip %+v became %+v %v", h, again, err)
				}
			} else {
				checkRefusal(t, err)
			}
			dt, err := DecodeDeleteTopic(remoting.NewRequest(CodeDeleteTopicInNamesrv, map[string]string{"topic": b}, nil))
			if err == nil {
				if again, err := DecodeDeleteTopic(EncodeDeleteTopicInNamesrv(dt)); err != nil || again != dt {
					t.Fatalf("round trip %+v became %+v %v", dt, again, err)
				}
			} else {
				checkRefusal(t, err)
			}
		}
	})
}

// FuzzDecodeAdminHeaders covers the small headers the broker serves:
// 215 DELETE_TOPIC_IN_BROKER, 207 DELETE_SUBSCRIPTIONGROUP, 202
// GET_TOPIC_STATS_INFO, 203 GET_CONSUMER_CONNECTION_LIST and 208
// GET_CONSUME_STATS.
func FuzzDecodeAdminHeaders(f *testing.F) {
	f.Fuzz(func(t *testing.T, which uint8, a, b string) {
		var err error
		switch which % 5 {
		case 0:
			var h DeleteTopicRequest
			if h, err = DecodeDeleteTopic(remoting.NewRequest(CodeDeleteTopicInBroker, map[string]string{"topic": a}, nil)); err == nil {
				if again, err := DecodeDeleteTopic(EncodeDeleteTopicInBroker(h)); err != nil || again != h {
					t.Fatalf("round trip %+v became %+v %v", h, again, err)
				}
			}
		case 1:
			var h DeleteSubscriptionGroupRequest
			if h, err = DecodeDeleteSubscriptionGroup(remoting.NewRequest(CodeDeleteSubscriptionGroup, map[string]string{"groupName": a, "cleanOffset": b}, nil)); err == nil {
				if b != "" && b != "true" && b != "false" {
					t.Fatalf("cleanOffset %q accepted", b)
				}
				if again, err := DecodeDeleteSubscriptionGroup(EncodeDeleteSubscriptionGroup(h)); err != nil || again != h {
					t.Fatalf("round trip %+v became %+v %v", h, again, err)
				}
			}
		case 2:
			var h TopicStatsRequest
			if h, err = DecodeTopicStatsRequest(remoting.NewRequest(CodeGetTopicStatsInfo, map[string]string{"topic": a}, nil)); err == nil {
				if again, err := DecodeTopicStatsRequest(EncodeTopicStatsRequest(h)); err != nil || again != h {
					t.Fatalf("round trip %+v became %+v %v", h, again, err)
				}
			}
		case 3:
			var h ConsumerConnectionListRequest
			if h, err = DecodeConsumerConnectionListRequest(remoting.NewRequest(CodeGetConsumerConnectionList, map[string]string{"consumerGroup": a}, nil)); err == nil {
				if again, err := DecodeConsumerConnectionListRequest(EncodeConsumerConnectionListRequest(h)); err != nil || again != h {
					t.Fatalf("round trip %+v became %+v %v", h, again, err)
				}
			}
		case 4:
			var h ConsumeStatsRequest
			if h, err = DecodeConsumeStatsRequest(remoting.NewRequest(CodeGetConsumeStats, map[string]string{"consumerGroup": a, "topic": b}, nil)); err == nil {
				if again, err := DecodeConsumeStatsRequest(EncodeConsumeStatsRequest(h)); err != nil || again != h {
					t.Fatalf("round trip %+v became %+v %v", h, again, err)
				}
			}
		}
		if err != nil {
			checkRefusal(t, err)
		}
	})
}

// normalGroup makes what JSON cannot tell apart equal: an empty set or
// map and none (omitempty drops both).
func normalGroup(g SubscriptionGroupConfig) SubscriptionGroupConfig {
	if len(g.SubscriptionDataSet) == 0 {
		g.SubscriptionDataSet = nil
	}
	if len(g.Attributes) == 0 {
		g.Attributes = nil
	}
	if p := g.GroupRetryPolicy; p != nil && p.Customized != nil && len(p.Customized.Next) == 0 {
		c := *p
		c.Customized = &CustomizedRetryPolicy{}
		g.GroupRetryPolicy = &c
	}
	return g
}

// FuzzDecodeSubscriptionGroup covers the body of 200
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP.
func FuzzDecodeSubscriptionGroup(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		g, err := DecodeSubscriptionGroupBody(body)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		again, err := DecodeSubscriptionGroupBody(EncodeSubscriptionGroup(g).Body)
		if err != nil || !reflect.DeepEqual(normalGroup(again), normalGroup(g)) {
			t.Fatalf("round trip\n %+v\nbecame\n %+v %v", g, again, err)
		}
	})
}

// FuzzDecodeRegisterBroker covers 103 REGISTER_BROKER: the header, and the
// body it announces (full or delta, zlib or not; inflation bounded).
func FuzzDecodeRegisterBroker(f *testing.F) {
	f.Fuzz(func(t *testing.T, name, addr, brokerID, crc, delta, base, zlib string, body []byte) {
		c := remoting.NewRequest(CodeRegisterBroker, map[string]string{
			"brokerName": name, "brokerAddr": addr, "clusterName": "c", "haServerAddr": "h", "brokerId": brokerID,
			"compressed": "false", "bodyCrc32": crc, ExtDelta: delta, ExtBaseVersion: base, ExtZlib: zlib}, body)
		h, err := DecodeRegisterBroker(c)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		again, err := DecodeRegisterBroker(EncodeRegisterBroker(h, body))
		h.BodyCRC32 = BodyCRC(body)
		if err != nil || again != h {
			t.Fatalf("round trip %+v became %+v %v", h, again, err)
		}
		if h.Zlib {
			if body, err = Inflate(body, 1<<20); err != nil {
				checkRefusal(t, err)
				return
			}
		}
		if h.Delta {
			d, err := DecodeDeltaRegisterBody(body)
			if err != nil {
				checkRefusal(t, err)
				return
			}
			d2, err := DecodeDeltaRegisterBody(EncodeDeltaRegisterBody(d))
			if err != nil || len(d2.TopicConfigTable) != len(d.TopicConfigTable) || len(d2.RemovedTopics) != len(d.RemovedTopics) || d2.DataVersion != d.DataVersion {
				t.Fatalf("delta round trip %+v became %+v %v", d, d2, err)
			}
			return
		}
		b, err := DecodeRegisterBrokerBody(body)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		b2, err := DecodeRegisterBrokerBody(EncodeRegisterBrokerBody(b.Wrapper.TopicConfigTable, b.Wrapper.DataVersion))
		if err != nil || len(b2.Wrapper.TopicConfigTable) != len(b.Wrapper.TopicConfigTable) || b2.Wrapper.DataVersion != b.Wrapper.DataVersion {
			t.Fatalf("full round trip %+v became %+v %v", b, b2, err)
		}
		for k, v := range b.Wrapper.TopicConfigTable {
			if b2.Wrapper.TopicConfigTable[k] != v {
				t.Fatalf("topic %q: %+v became %+v", k, v, b2.Wrapper.TopicConfigTable[k])
			}
		}
	})
}

// FuzzDecodeStatsBodies covers the queue-keyed answers of 202 and 208
// (read by the CLI; the scanner of non-JSON object keys is hand-written).
func FuzzDecodeStatsBodies(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		if s, err := DecodeConsumeStatsBody(body); err == nil {
			again, err := DecodeConsumeStatsBody(EncodeConsumeStatsBody(s))
			if err != nil || !reflect.DeepEqual(again.Offsets, s.Offsets) && len(s.Offsets)+len(again.Offsets) > 0 || again.ConsumeTps != s.ConsumeTps {
				t.Fatalf("208 round trip %+v became %+v %v", s, again, err)
			}
		} else {
			checkRefusal(t, err)
		}
		if s, err := DecodeTopicStatsBody(body); err == nil {
			again, err := DecodeTopicStatsBody(EncodeTopicStatsBody(s))
			if err != nil || !reflect.DeepEqual(again.Offsets, s.Offsets) && len(s.Offsets)+len(again.Offsets) > 0 || again.TopicPutTps != s.TopicPutTps {
				t.Fatalf("202 round trip %+v became %+v %v", s, again, err)
			}
		} else {
			checkRefusal(t, err)
		}
	})
}
