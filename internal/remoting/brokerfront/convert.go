package brokerfront

// Conversions between the broker's config types and rmq's wire structs.

import (
	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

func versionWire(v broker.DataVersion) rmq.DataVersion {
	return rmq.DataVersion{Timestamp: v.Timestamp, Counter: v.Counter}
}

func topicWire(t broker.TopicConfig) rmq.TopicConfig {
	return rmq.TopicConfig{
		TopicName: t.Name, ReadQueueNums: t.ReadQueueNums, WriteQueueNums: t.WriteQueueNums, Perm: t.Perm,
		TopicFilterType: t.TopicFilterType, TopicSysFlag: t.TopicSysFlag, Order: t.Order, Attributes: t.Attributes,
	}
}

func groupWire(g broker.GroupConfig) rmq.SubscriptionGroupConfig {
	w := rmq.SubscriptionGroupConfig{
		GroupName:                      g.Name,
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
		w.GroupRetryPolicy = &rmq.GroupRetryPolicy{Type: p.Type}
		if e := p.Exponential; e != nil {
			w.GroupRetryPolicy.Exponential = &rmq.ExponentialRetryPolicy{Initial: e.Initial, Max: e.Max, Multiplier: e.Multiplier}
		}
		if c := p.Customized; c != nil {
			w.GroupRetryPolicy.Customized = &rmq.CustomizedRetryPolicy{Next: c.Next}
		}
	}
	for _, s := range g.SubscriptionDataSet {
		w.SubscriptionDataSet = append(w.SubscriptionDataSet, rmq.SimpleSubscriptionData{
			Topic: s.Topic, ExpressionType: s.ExpressionType, Expression: s.Expression, Version: s.Version})
	}
	return w
}

func groupFromWire(w rmq.SubscriptionGroupConfig) broker.GroupConfig {
	g := broker.GroupConfig{
		Name:                           w.GroupName,
		ConsumeEnable:                  w.ConsumeEnable,
		ConsumeFromMinEnable:           w.ConsumeFromMinEnable,
		ConsumeBroadcastEnable:         w.ConsumeBroadcastEnable,
		RetryMaxTimes:                  w.RetryMaxTimes,
		RetryQueueNums:                 w.RetryQueueNums,
		BrokerID:                       w.BrokerID,
		WhichBrokerWhenConsumeSlowly:   w.WhichBrokerWhenConsumeSlowly,
		NotifyConsumerIDsChangedEnable: w.NotifyConsumerIDsChangedEnable,
		ConsumeMessageOrderly:          w.ConsumeMessageOrderly,
		GroupSysFlag:                   w.GroupSysFlag,
		ConsumeTimeoutMinute:           w.ConsumeTimeoutMinute,
		Attributes:                     w.Attributes,
	}
	if p := w.GroupRetryPolicy; p != nil {
		g.GroupRetryPolicy = &broker.RetryPolicy{Type: p.Type}
		if e := p.Exponential; e != nil {
			g.GroupRetryPolicy.Exponential = &broker.ExponentialRetry{Initial: e.Initial, Max: e.Max, Multiplier: e.Multiplier}
		}
		if c := p.Customized; c != nil {
			g.GroupRetryPolicy.Customized = &broker.CustomizedRetry{Next: c.Next}
		}
	}
	for _, s := range w.SubscriptionDataSet {
		g.SubscriptionDataSet = append(g.SubscriptionDataSet, broker.GroupSubscription{
			Topic: s.Topic, ExpressionType: s.ExpressionType, Expression: s.Expression, Version: s.Version})
	}
	return g
}
