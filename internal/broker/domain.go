package broker

// The broker's own types for topic and subscription-group configs, the
// ones its public methods take and return. The meta store keeps its
// persisted structs (meta.Topic, meta.Group) and the fronts their wire
// structs (rmq, protobuf): a change to either format does not ripple
// through the other, and the broker converts at its edge.

import "github.com/petrelmq/petrel/internal/store/meta"

// Topic perm bits (RocketMQ's PermName).
const (
	PermRead    int32 = 4
	PermWrite   int32 = 2
	PermInherit int32 = 1
)

// TopicConfig is a topic's configuration.
type TopicConfig struct {
	Name           string
	ReadQueueNums  int32
	WriteQueueNums int32
	// Perm is a sum of PermRead, PermWrite and PermInherit.
	Perm            int32
	TopicFilterType string // "SINGLE_TAG" or "MULTI_TAG"
	TopicSysFlag    int32
	Order           bool
	// Attributes are free-form settings, e.g. "persistent"="false" for a
	// topic whose messages are kept in memory only. Maps the broker
	// returns are shared and must not be modified.
	Attributes map[string]string
}

// GroupConfig is a subscription group's configuration, as RocketMQ's
// SubscriptionGroupConfig.
type GroupConfig struct {
	Name                   string
	ConsumeEnable          bool
	ConsumeFromMinEnable   bool
	ConsumeBroadcastEnable bool
	// RetryMaxTimes is how often a message is re-delivered before it goes
	// to the group's dead-letter queue.
	RetryMaxTimes  int32
	RetryQueueNums int32
	// BrokerID is the broker (0 = master) consumers pull from.
	BrokerID int64
	// WhichBrokerWhenConsumeSlowly is the broker id to redirect slow
	// consumers to.
	WhichBrokerWhenConsumeSlowly   int64
	NotifyConsumerIDsChangedEnable bool
	// ConsumeMessageOrderly: the group consumes in order.
	ConsumeMessageOrderly bool
	// GroupRetryPolicy is the back-off between a 5.x push consumer's
	// attempts; nil is RocketMQ's default (customized, 1 s 5 s 10 s ...).
	GroupRetryPolicy *RetryPolicy
	GroupSysFlag     int32
	// ConsumeTimeoutMinute is how long a push consumer may take for one
	// message (RocketMQ's default 15).
	ConsumeTimeoutMinute int32
	// SubscriptionDataSet is the group's declared subscriptions;
	// informational. Slices and maps the broker returns are shared and
	// must not be modified.
	SubscriptionDataSet []GroupSubscription
	// Attributes: see TopicConfig.Attributes.
	Attributes map[string]string
}

// RetryPolicy is RocketMQ 5's GroupRetryPolicy: Type "EXPONENTIAL" uses
// Exponential, "CUSTOMIZED" (or "") Customized; a nil policy of the type
// chosen means RocketMQ's default of that type.
type RetryPolicy struct {
	Type        string
	Exponential *ExponentialRetry
	Customized  *CustomizedRetry
}

// ExponentialRetry waits Initial·Multiplier^attempt, at most Max (ms).
type ExponentialRetry struct {
	Initial, Max, Multiplier int64
}

// CustomizedRetry waits Next[attempt] ms (the last one beyond its end).
type CustomizedRetry struct {
	Next []int64
}

// GroupSubscription is one entry of GroupConfig.SubscriptionDataSet.
type GroupSubscription struct {
	Topic          string
	ExpressionType string
	Expression     string
	Version        int64
}

// DataVersion identifies a state of the topic or group table: every change
// sets Timestamp to the clock's time (ms) and adds 1 to Counter.
type DataVersion struct {
	Timestamp int64
	Counter   int64
}

func topicFromMeta(t meta.Topic) TopicConfig { return TopicConfig(t) }

func (t TopicConfig) meta() meta.Topic { return meta.Topic(t) }

func topicsFromMeta(ts []meta.Topic) []TopicConfig {
	out := make([]TopicConfig, len(ts))
	for i, t := range ts {
		out[i] = TopicConfig(t)
	}
	return out
}

func versionFromMeta(v meta.DataVersion) DataVersion { return DataVersion(v) }

func groupFromMeta(g meta.Group) GroupConfig {
	out := GroupConfig{
		Name:                           g.Name,
		ConsumeEnable:                  g.ConsumeEnable,
		ConsumeFromMinEnable:           g.ConsumeFromMinEnable,
		ConsumeBroadcastEnable:         g.ConsumeBroadcastEnable,
		RetryMaxTimes:                  g.RetryMaxTimes,
		RetryQueueNums:                 g.RetryQueueNums,
		BrokerID:                       g.BrokerID,
		WhichBrokerWhenConsumeSlowly:   g.WhichBrokerWhenConsumeSlowly,
		NotifyConsumerIDsChangedEnable: g.NotifyConsumerIDsChangedEnable,
		ConsumeMessageOrderly:          g.ConsumeMessageOrderly,
		GroupSysFlag:                   g.GroupSysFlag,
		ConsumeTimeoutMinute:           g.ConsumeTimeoutMinute,
		Attributes:                     g.Attributes,
	}
	if p := g.GroupRetryPolicy; p != nil {
		out.GroupRetryPolicy = &RetryPolicy{Type: p.Type}
		if e := p.Exponential; e != nil {
			out.GroupRetryPolicy.Exponential = &ExponentialRetry{Initial: e.Initial, Max: e.Max, Multiplier: e.Multiplier}
		}
		if c := p.Customized; c != nil {
			out.GroupRetryPolicy.Customized = &CustomizedRetry{Next: c.Next}
		}
	}
	for _, s := range g.SubscriptionDataSet {
		out.SubscriptionDataSet = append(out.SubscriptionDataSet, GroupSubscription(s))
	}
	return out
}

func (g GroupConfig) meta() meta.Group {
	out := meta.Group{
		Name:                           g.Name,
		ConsumeEnable:                  g.ConsumeEnable,
		ConsumeFromMinEnable:           g.ConsumeFromMinEnable,
		ConsumeBroadcastEnable:         g.ConsumeBroadcastEnable,
		RetryMaxTimes:                  g.RetryMaxTimes,
		RetryQueueNums:                 g.RetryQueueNums,
		BrokerID:                       g.BrokerID,
		WhichBrokerWhenConsumeSlowly:   g.WhichBrokerWhenConsumeSlowly,
		NotifyConsumerIDsChangedEnable: g.NotifyConsumerIDsChangedEnable,
		ConsumeMessageOrderly:          g.ConsumeMessageOrderly,
		GroupSysFlag:                   g.GroupSysFlag,
		ConsumeTimeoutMinute:           g.ConsumeTimeoutMinute,
		Attributes:                     g.Attributes,
	}
	if p := g.GroupRetryPolicy; p != nil {
		out.GroupRetryPolicy = &meta.RetryPolicy{Type: p.Type}
		if e := p.Exponential; e != nil {
			out.GroupRetryPolicy.Exponential = &meta.ExponentialRetry{Initial: e.Initial, Max: e.Max, Multiplier: e.Multiplier}
		}
		if c := p.Customized; c != nil {
			out.GroupRetryPolicy.Customized = &meta.CustomizedRetry{Next: c.Next}
		}
	}
	for _, s := range g.SubscriptionDataSet {
		out.SubscriptionDataSet = append(out.SubscriptionDataSet, meta.SimpleSubscription(s))
	}
	return out
}

func groupsFromMeta(gs []meta.Group) []GroupConfig {
	out := make([]GroupConfig, len(gs))
	for i, g := range gs {
		out[i] = groupFromMeta(g)
	}
	return out
}
