package broker

import (
	"reflect"
	"testing"

	"github.com/petrelmq/petrel/internal/store/meta"
)

// TestConfigsConvertToMetaAndBack: every field survives the broker ↔ meta
// conversion (a field added to one side and not the other fails here).
func TestConfigsConvertToMetaAndBack(t *testing.T) {
	g := GroupConfig{Name: "g", ConsumeEnable: true, ConsumeFromMinEnable: true, ConsumeBroadcastEnable: true,
		RetryMaxTimes: 3, RetryQueueNums: 2, BrokerID: 1, WhichBrokerWhenConsumeSlowly: 2, NotifyConsumerIDsChangedEnable: true,
		ConsumeMessageOrderly: true, GroupSysFlag: 4, ConsumeTimeoutMinute: 9,
		GroupRetryPolicy:    &RetryPolicy{Type: "EXPONENTIAL", Exponential: &ExponentialRetry{Initial: 1, Max: 2, Multiplier: 3}, Customized: &CustomizedRetry{Next: []int64{5, 6}}},
		SubscriptionDataSet: []GroupSubscription{{Topic: "T", ExpressionType: "TAG", Expression: "a", Version: 7}},
		Attributes:          map[string]string{"k": "v"}}
	if back := groupFromMeta(g.meta()); !reflect.DeepEqual(back, g) {
		t.Fatalf("group\n %+v\nbecame\n %+v", g, back)
	}
	for _, v := range []reflect.Value{reflect.ValueOf(g), reflect.ValueOf(g.meta())} {
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Fatalf("%s.%s is zero: set it in this test", v.Type(), v.Type().Field(i).Name)
			}
		}
	}
	tc := TopicConfig{Name: "T", ReadQueueNums: 1, WriteQueueNums: 2, Perm: 6, TopicFilterType: "MULTI_TAG", TopicSysFlag: 1, Order: true,
		Attributes: map[string]string{"a": "b"}}
	if back := topicFromMeta(tc.meta()); !reflect.DeepEqual(back, tc) {
		t.Fatalf("topic %+v became %+v", tc, back)
	}
	if PermRead != meta.PermRead || PermWrite != meta.PermWrite || PermInherit != meta.PermInherit {
		t.Fatal("perm bits differ from the meta store's")
	}
}
