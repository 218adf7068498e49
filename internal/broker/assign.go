package broker

import (
	"slices"
	"strings"
)

// Server-side load balancing (RocketMQ 5's QueryAssignmentProcessor):
// the broker computes a 4.x member's share of a topic's queues with the
// strategy the member names, over the group's live members, so that
// members that cannot agree on the member list still split the queues.

// Allocation strategies QueryAssignment knows (RocketMQ's names).
const (
	StrategyAvg         = "AVG"
	StrategyAvgByCircle = "AVG_BY_CIRCLE"
)

// Allocate returns cid's share of mqAll among cidAll (both sorted by the
// caller) under strategy, and false for a strategy it does not know. A
// cid not in cidAll, or empty lists, get an empty share, as RocketMQ's
// strategies' check.
func Allocate[T any](strategy, cid string, mqAll []T, cidAll []string) ([]T, bool) {
	if strategy != StrategyAvg && strategy != StrategyAvgByCircle {
		return nil, false
	}
	out := []T{}
	index := slices.Index(cidAll, cid)
	if index < 0 || len(mqAll) == 0 {
		return out, true
	}
	n, m := len(cidAll), len(mqAll)
	if strategy == StrategyAvgByCircle {
		for i := index; i < m; i++ {
			if i%n == index {
				out = append(out, mqAll[i])
			}
		}
		return out, true
	}
	mod := m % n
	size := m / n
	switch {
	case m <= n:
		size = 1
	case mod > 0 && index < mod:
		size++
	}
	start := index*size + mod
	if mod > 0 && index < mod {
		start = index * size
	}
	for i := 0; i < min(size, m-start); i++ {
		out = append(out, mqAll[start+i])
	}
	return out, true
}

// allocatePop is RocketMQ's allocate4Pop: every queue (each as queue id
// -1, "any queue") when popShare is 0 or covers the other members; else
// the member's share plus those of the popShare members after it; with
// more members than queues, one queue each, round robin.
func allocatePop(strategy, cid string, mqAll []int32, cidAll []string, popShare int32) ([]int32, bool) {
	if popShare <= 0 || int(popShare) >= len(cidAll)-1 {
		return []int32{-1}, true
	}
	if len(cidAll) > len(mqAll) {
		i := slices.Index(cidAll, cid)
		if i < 0 || len(mqAll) == 0 {
			return []int32{}, true
		}
		return []int32{mqAll[i%len(mqAll)]}, true
	}
	out, ok := Allocate(strategy, cid, mqAll, cidAll)
	if !ok {
		return nil, false
	}
	if i := slices.Index(cidAll, cid); i >= 0 {
		for range popShare {
			i = (i + 1) % len(cidAll)
			more, _ := Allocate(strategy, cidAll[i], mqAll, cidAll)
			out = append(out, more...)
		}
	}
	return out, true
}

// AssignmentRequest is a member's QUERY_ASSIGNMENT.
type AssignmentRequest struct {
	Topic, Group, ClientID string
	Strategy               string // StrategyAvg or StrategyAvgByCircle
	Broadcasting           bool   // messageModel BROADCASTING
}

// Assignment is the answer: the queue ids of this broker assigned to
// the member (-1: any queue, a POP member's), under Mode. Valid false is
// RocketMQ's null answer: the topic is unknown, the group has no live
// member, or the strategy is unknown; the member keeps what it has.
type Assignment struct {
	QueueIDs []int32
	Mode     RequestMode
	Valid    bool
}

// QueryAssignment answers a member's QUERY_ASSIGNMENT over this broker's
// read queues of the topic and the group's live members here.
func (b *Broker) QueryAssignment(r AssignmentRequest) Assignment {
	mode, ok := b.MessageRequestMode(r.Topic, r.Group)
	if !ok || strings.HasPrefix(r.Topic, RetryGroupTopicPrefix) {
		mode = RequestMode{Mode: RequestModePull} // RocketMQ's defaultMessageRequestMode; retry topics always pull
	}
	tc, ok := b.Topic(r.Topic)
	if !ok {
		return Assignment{Mode: mode}
	}
	mqAll := make([]int32, tc.ReadQueueNums)
	for i := range mqAll {
		mqAll[i] = int32(i)
	}
	if r.Broadcasting {
		return Assignment{QueueIDs: mqAll, Mode: mode, Valid: true}
	}
	cidAll := b.ConsumerIDs(r.Group)
	if len(cidAll) == 0 {
		return Assignment{Mode: mode}
	}
	cidAll = slices.Clone(cidAll)
	slices.Sort(cidAll)
	var qs []int32
	if mode.Mode == RequestModePop {
		qs, ok = allocatePop(r.Strategy, r.ClientID, mqAll, cidAll, mode.PopShareQueueNum)
	} else {
		qs, ok = Allocate(r.Strategy, r.ClientID, mqAll, cidAll)
	}
	if !ok {
		return Assignment{Mode: mode}
	}
	return Assignment{QueueIDs: qs, Mode: mode, Valid: true}
}
