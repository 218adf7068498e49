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

// RouteQueue is one queue of a topic's route: a broker's name and a
// queue id (-1 in an assignment: any queue of the broker, a POP
// member's). Sorted as RocketMQ's MessageQueue: by broker, then queue.
type RouteQueue struct {
	BrokerName string
	QueueID    int32
}

func compareRouteQueues(a, b RouteQueue) int {
	if c := strings.Compare(a.BrokerName, b.BrokerName); c != 0 {
		return c
	}
	return int(a.QueueID) - int(b.QueueID)
}

// allocatePop is RocketMQ's allocate4Pop: every broker's queues (each
// broker once, as queue id -1, "any queue") when popShare is 0 or covers
// the other members; else the member's share plus those of the popShare
// members after it; with more members than queues, one queue each, round
// robin.
func allocatePop(strategy, cid string, mqAll []RouteQueue, cidAll []string, popShare int32) ([]RouteQueue, bool) {
	if popShare <= 0 || int(popShare) >= len(cidAll)-1 {
		out := []RouteQueue{}
		for _, q := range mqAll {
			if len(out) == 0 || out[len(out)-1].BrokerName != q.BrokerName {
				out = append(out, RouteQueue{BrokerName: q.BrokerName, QueueID: -1})
			}
		}
		return out, true
	}
	if len(cidAll) > len(mqAll) {
		i := slices.Index(cidAll, cid)
		if i < 0 || len(mqAll) == 0 {
			return []RouteQueue{}, true
		}
		return []RouteQueue{mqAll[i%len(mqAll)]}, true
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
	// Route is the readable queues of every broker of the topic's route,
	// as the name servers list them (RocketMQ assigns over the whole
	// route: a member asks one broker for its share of all); nil: this
	// broker's read queues of the topic alone.
	Route []RouteQueue
}

// Assignment is the answer: the queues assigned to the member, under
// Mode. Valid false is RocketMQ's null answer: the topic is unknown (no
// route, and not here), the group has no live member, or the strategy is
// unknown; the member keeps what it has.
type Assignment struct {
	Queues []RouteQueue
	Mode   RequestMode
	Valid  bool
}

// QueryAssignment answers a member's QUERY_ASSIGNMENT over the topic's
// route (r.Route, else this broker's read queues) and the group's live
// members here (members heartbeat to every broker of their topics).
func (b *Broker) QueryAssignment(r AssignmentRequest) Assignment {
	mode, ok := b.MessageRequestMode(r.Topic, r.Group)
	if !ok || strings.HasPrefix(r.Topic, RetryGroupTopicPrefix) {
		mode = RequestMode{Mode: RequestModePull} // RocketMQ's defaultMessageRequestMode; retry topics always pull
	}
	mqAll := slices.Clone(r.Route)
	if r.Route == nil {
		tc, ok := b.Topic(r.Topic)
		if !ok {
			return Assignment{Mode: mode}
		}
		mqAll = make([]RouteQueue, tc.ReadQueueNums)
		for i := range mqAll {
			mqAll[i] = RouteQueue{BrokerName: b.cfg.BrokerName, QueueID: int32(i)}
		}
	}
	slices.SortFunc(mqAll, compareRouteQueues)
	mqAll = slices.Compact(mqAll)
	if r.Broadcasting {
		return Assignment{Queues: mqAll, Mode: mode, Valid: true}
	}
	cidAll := b.ConsumerIDs(r.Group)
	if len(cidAll) == 0 {
		return Assignment{Mode: mode}
	}
	cidAll = slices.Clone(cidAll)
	slices.Sort(cidAll)
	var qs []RouteQueue
	if mode.Mode == RequestModePop {
		qs, ok = allocatePop(r.Strategy, r.ClientID, mqAll, cidAll, mode.PopShareQueueNum)
	} else {
		qs, ok = Allocate(r.Strategy, r.ClientID, mqAll, cidAll)
	}
	if !ok {
		return Assignment{Mode: mode}
	}
	return Assignment{Queues: qs, Mode: mode, Valid: true}
}
