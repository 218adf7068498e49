package rmq_test

import (
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// TestBrokerRequestsOfForwardedAndListCodes: the rules of aclfwd.go
// name the resources of each request's header or body.
func TestBrokerRequestsOfForwardedAndListCodes(t *testing.T) {
	assign := rmq.EncodeQueryAssignment(rmq.QueryAssignmentRequest{Topic: "T", ConsumerGroup: "cg", ClientID: "c"}).Body
	mode := rmq.EncodeSetMessageRequestMode(rmq.SetMessageRequestModeRequest{Topic: "T", ConsumerGroup: "cg", Mode: "POP"}).Body
	topics := rmq.EncodeCreateTopicList(rmq.CreateTopicListBody{TopicConfigList: []rmq.TopicConfig{{TopicName: "A"}, {TopicName: "B"}}}).Body
	groups := rmq.EncodeSubscriptionGroupList(rmq.SubscriptionGroupList{GroupConfigList: []rmq.SubscriptionGroupConfig{
		rmq.DefaultSubscriptionGroupConfig("g1"), rmq.DefaultSubscriptionGroupConfig("g2")}}).Body
	check := rmq.EncodeCheckClientConfig(rmq.CheckClientRequest{Group: "cg"}).Body
	for _, tc := range []struct {
		code int16
		ext  map[string]string
		body []byte
		want string
		err  string
	}{
		{307, map[string]string{"consumerGroup": "cg", "clientId": "c"}, nil, "Group:cg Get", ""},
		{307, map[string]string{"clientId": "c"}, nil, "", "names no group"},
		{309, map[string]string{"consumerGroup": "cg", "topic": "T"}, nil, "Group:cg Sub; Topic:T Sub", ""},
		{309, map[string]string{"consumerGroup": "cg"}, nil, "Group:cg Sub", ""},
		{223, map[string]string{"group": "cg", "topic": "T"}, nil, "Group:cg Get; Topic:T Get", ""},
		{303, map[string]string{"group": "cg", "topic": "T"}, nil, "Group:cg Get; Topic:T Get", ""},
		{305, nil, nil, "Cluster Get", ""},
		{224, map[string]string{"cluster": "c"}, nil, "Cluster Get|List", ""},
		{304, nil, nil, "Cluster Get", ""},
		{400, nil, assign, "Group:cg Sub; Topic:T Sub", ""},
		{400, nil, []byte(`{}`), "", "topic is missing"},
		{401, nil, mode, "Group:cg Update; Topic:T Update", ""},
		{18, nil, topics, "Topic:A Create; Topic:B Create", ""},
		{225, nil, groups, "Group:g1 Create|Update; Group:g2 Create|Update", ""},
		{46, nil, check, "Group:cg Sub", ""},
		{46, nil, nil, "Cluster Get", ""},
	} {
		cmd := remoting.NewRequest(tc.code, tc.ext, tc.body)
		got, err := rmq.BrokerRequests(int32(tc.code), cmd, tc.body)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("code %d %v: err %v, want %q", tc.code, tc.ext, err, tc.err)
			}
		case err != nil:
			t.Errorf("code %d %v: %v", tc.code, tc.ext, err)
		case reqString(got) != tc.want:
			t.Errorf("code %d %v: %q, want %q", tc.code, tc.ext, reqString(got), tc.want)
		}
	}
	for _, c := range []int16{rmq.CodeGetTopicsByCluster, rmq.CodeGetSystemTopicListFromNS} {
		if rmq.NameServerWrite(int32(c)) {
			t.Errorf("name server code %d is a read", c)
		}
	}
}
