package rmq

// Subscription-group administration, as mqadmin updateSubGroup /
// deleteSubGroup and the dashboard send it (RocketMQ 5):
//
//	200 UPDATE_AND_CREATE_SUBSCRIPTIONGROUP  body: SubscriptionGroupConfig JSON
//	201 GET_ALL_SUBSCRIPTIONGROUP_CONFIG     answer: SubscriptionGroupWrapper JSON
//	207 DELETE_SUBSCRIPTIONGROUP             ext groupName, cleanOffset ("true"/"false")

import (
	"fmt"

	"github.com/petrelmq/petrel/internal/remoting"
)

// MaxSubscriptionGroupBytes bounds the body of 200: a config within the
// broker's limits fits easily.
const MaxSubscriptionGroupBytes = 1 << 20

// SubscriptionGroupConfig is Java's SubscriptionGroupConfig, the fields in
// the order Petrel writes them. Attributes in a 200 request are changes
// ("+k" sets, "-k" removes, a bare "k" also sets); in a 201 answer they are
// the group's attributes.
type SubscriptionGroupConfig struct {
	GroupName                      string                   `json:"groupName"`
	ConsumeEnable                  bool                     `json:"consumeEnable"`
	ConsumeFromMinEnable           bool                     `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable         bool                     `json:"consumeBroadcastEnable"`
	RetryMaxTimes                  int32                    `json:"retryMaxTimes"`
	RetryQueueNums                 int32                    `json:"retryQueueNums"`
	BrokerID                       int64                    `json:"brokerId"`
	WhichBrokerWhenConsumeSlowly   int64                    `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIDsChangedEnable bool                     `json:"notifyConsumerIdsChangedEnable"`
	ConsumeMessageOrderly          bool                     `json:"consumeMessageOrderly"`
	GroupRetryPolicy               *GroupRetryPolicy        `json:"groupRetryPolicy,omitempty"`
	GroupSysFlag                   int32                    `json:"groupSysFlag"`
	ConsumeTimeoutMinute           int32                    `json:"consumeTimeoutMinute"`
	SubscriptionDataSet            []SimpleSubscriptionData `json:"subscriptionDataSet,omitempty"`
	Attributes                     map[string]string        `json:"attributes,omitempty"`
}

// GroupRetryPolicy is RocketMQ 5's GroupRetryPolicy: Type "EXPONENTIAL"
// uses Exponential, "CUSTOMIZED" (or "") Customized.
type GroupRetryPolicy struct {
	Type        string                  `json:"type"`
	Exponential *ExponentialRetryPolicy `json:"exponentialRetryPolicy,omitempty"`
	Customized  *CustomizedRetryPolicy  `json:"customizedRetryPolicy,omitempty"`
}

// ExponentialRetryPolicy waits Initial·Multiplier^attempt, at most Max (ms).
type ExponentialRetryPolicy struct {
	Initial    int64 `json:"initial"`
	Max        int64 `json:"max"`
	Multiplier int64 `json:"multiplier"`
}

// CustomizedRetryPolicy waits Next[attempt] ms.
type CustomizedRetryPolicy struct {
	Next []int64 `json:"next"`
}

// SimpleSubscriptionData is one entry of a group's subscriptionDataSet.
type SimpleSubscriptionData struct {
	Topic          string `json:"topic"`
	ExpressionType string `json:"expressionType"`
	Expression     string `json:"expression"`
	Version        int64  `json:"version"`
}

// DefaultSubscriptionGroupConfig is Java's SubscriptionGroupConfig with
// its field defaults: what a 200 body's missing fields mean (the request
// replaces the whole config).
func DefaultSubscriptionGroupConfig(name string) SubscriptionGroupConfig {
	return SubscriptionGroupConfig{
		GroupName:                      name,
		ConsumeEnable:                  true,
		ConsumeFromMinEnable:           true,
		ConsumeBroadcastEnable:         true,
		RetryMaxTimes:                  16,
		RetryQueueNums:                 1,
		WhichBrokerWhenConsumeSlowly:   1,
		NotifyConsumerIDsChangedEnable: true,
		ConsumeTimeoutMinute:           15,
	}
}

// DecodeSubscriptionGroupBody reads the body of 200 over Java's defaults
// (DefaultSubscriptionGroupConfig). A missing, oversized or malformed
// body is a *BodyError naming the field; the values are not checked here
// (the broker does).
func DecodeSubscriptionGroupBody(body []byte) (SubscriptionGroupConfig, error) {
	if len(body) == 0 {
		return SubscriptionGroupConfig{}, &BodyError{Body: "SubscriptionGroupConfig", Problem: "the request has no SubscriptionGroupConfig JSON body"}
	}
	if len(body) > MaxSubscriptionGroupBytes {
		return SubscriptionGroupConfig{}, &BodyError{Body: "SubscriptionGroupConfig",
			Problem: fmt.Sprintf("the body is %d bytes, more than the limit of %d", len(body), MaxSubscriptionGroupBytes)}
	}
	g := DefaultSubscriptionGroupConfig("")
	if err := decodeJSON(body, "SubscriptionGroupConfig", &g); err != nil {
		return SubscriptionGroupConfig{}, err
	}
	return g, nil
}

// EncodeSubscriptionGroup is a 200 request.
func EncodeSubscriptionGroup(g SubscriptionGroupConfig) *remoting.Command {
	return remoting.NewRequest(CodeUpdateAndCreateSubscriptionGroup, nil, mustJSON(g))
}

// SubscriptionGroupTable is Java's SubscriptionGroupWrapper, the answer
// of 201. ForbiddenTable (RocketMQ's per-topic consume bans; Petrel has
// none) is written as {}.
type SubscriptionGroupTable struct {
	SubscriptionGroupTable map[string]SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	ForbiddenTable         map[string]map[string]int          `json:"forbiddenTable"`
	DataVersion            DataVersion                        `json:"dataVersion"`
}

// EncodeSubscriptionGroupTableBody writes the answer body of 201 (nil
// tables as {}).
func EncodeSubscriptionGroupTableBody(t SubscriptionGroupTable) []byte {
	if t.SubscriptionGroupTable == nil {
		t.SubscriptionGroupTable = map[string]SubscriptionGroupConfig{}
	}
	if t.ForbiddenTable == nil {
		t.ForbiddenTable = map[string]map[string]int{}
	}
	return mustJSON(t)
}

// DecodeSubscriptionGroupTableBody reads the answer body of 201.
func DecodeSubscriptionGroupTableBody(body []byte) (SubscriptionGroupTable, error) {
	var t SubscriptionGroupTable
	err := decodeJSON(body, "SubscriptionGroupWrapper", &t)
	return t, err
}

// DeleteSubscriptionGroupRequest is the header of 207: groupName
// (required) and cleanOffset ("true" or "false"; absent is false).
type DeleteSubscriptionGroupRequest struct {
	GroupName   string
	CleanOffset bool
}

// DecodeDeleteSubscriptionGroup reads the header of 207.
func DecodeDeleteSubscriptionGroup(c *remoting.Command) (DeleteSubscriptionGroupRequest, error) {
	f := fields{c: c}
	h := DeleteSubscriptionGroupRequest{GroupName: f.need("groupName"), CleanOffset: f.strictBool("cleanOffset")}
	return h, f.result()
}

// EncodeDeleteSubscriptionGroup is a 207 request.
func EncodeDeleteSubscriptionGroup(h DeleteSubscriptionGroupRequest) *remoting.Command {
	return remoting.NewRequest(CodeDeleteSubscriptionGroup, map[string]string{"groupName": h.GroupName, "cleanOffset": btoa(h.CleanOffset)}, nil)
}
