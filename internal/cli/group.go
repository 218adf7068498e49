package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/remoting"
)

// GroupMember is one connection of a consumer group.
type GroupMember struct {
	ClientID string `json:"clientId"`
	Address  string `json:"address"`
	Language string `json:"language"`
	Version  int    `json:"version"`
	Broker   string `json:"broker"`
}

// GroupSubscription is one topic a group subscribes to.
type GroupSubscription struct {
	Topic      string `json:"topic"`
	Expression string `json:"expression"`
	Type       string `json:"type"`
}

// GroupQueue is a group's position on one queue.
type GroupQueue struct {
	Topic          string `json:"topic"`
	Broker         string `json:"broker"`
	QueueID        int32  `json:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset"`
	// Lag is BrokerOffset − ConsumerOffset, never below 0.
	Lag int64 `json:"lag"`
	// LastConsumedTimestamp is when the last consumed message was stored
	// (ms; 0 when none was).
	LastConsumedTimestamp int64 `json:"lastConsumedTimestamp"`
	// InFlight is, for a 5.x (simple-consumer) group, the messages received
	// and neither acknowledged nor past their invisible time.
	InFlight int64 `json:"inFlight"`
}

// GroupDescription is the answer of `group describe`.
type GroupDescription struct {
	Group string `json:"group"`
	// Online is true when at least one member is connected.
	Online           bool                `json:"online"`
	ConsumeType      string              `json:"consumeType"`
	MessageModel     string              `json:"messageModel"`
	ConsumeFromWhere string              `json:"consumeFromWhere"`
	Members          []GroupMember       `json:"members"`
	Subscriptions    []GroupSubscription `json:"subscriptions"`
	Queues           []GroupQueue        `json:"queues"`
	TotalLag         int64               `json:"totalLag"`
	TotalInFlight    int64               `json:"totalInFlight"`
}

// describeGroup gathers members and positions from every master; known
// reports whether any broker knows the group.
func (c *CLI) describeGroup(ctx context.Context, ms []masterBroker, group string) (d GroupDescription, known bool, err error) {
	d = GroupDescription{Group: group, Members: []GroupMember{}, Subscriptions: []GroupSubscription{}, Queues: []GroupQueue{}}
	subs := map[string]GroupSubscription{}
	for _, m := range ms {
		resp, err := c.call(ctx, m.addr, rmq.EncodeConsumerConnectionListRequest(rmq.ConsumerConnectionListRequest{ConsumerGroup: group}))
		if err != nil {
			return d, false, err
		}
		switch resp.Code {
		case rmq.RespSuccess:
			cl, err := rmq.DecodeConsumerConnectionBody(resp.Body)
			if err != nil {
				return d, false, fmt.Errorf("%w: members of %s from %s: %w", ErrRefused, group, m.addr, err)
			}
			known, d.Online = true, true
			d.ConsumeType, d.MessageModel, d.ConsumeFromWhere = cl.ConsumeType, cl.MessageModel, cl.ConsumeFromWhere
			for _, cn := range cl.ConnectionSet {
				d.Members = append(d.Members, GroupMember{ClientID: cn.ClientID, Address: cn.ClientAddr, Language: cn.Language, Version: int(cn.Version), Broker: m.name})
			}
			for topic, s := range cl.SubscriptionTable {
				subs[topic] = GroupSubscription{Topic: topic, Expression: s.SubString, Type: s.ExpressionType}
			}
		case rmq.RespConsumerNotOnline:
		default:
			return d, false, c.refused(m.addr, "members of group "+group, resp)
		}
		resp, err = c.call(ctx, m.addr, rmq.EncodeConsumeStatsRequest(rmq.ConsumeStatsRequest{ConsumerGroup: group}))
		if err != nil {
			return d, false, err
		}
		switch resp.Code {
		case rmq.RespSuccess:
			known = true
			stats, err := rmq.DecodeConsumeStatsBody(resp.Body)
			if err != nil {
				return d, false, fmt.Errorf("%w: consume stats of %s from %s: %w", ErrRefused, group, m.addr, err)
			}
			for _, o := range stats.Offsets {
				q := GroupQueue{Topic: o.Topic, Broker: m.name, QueueID: o.QueueID, BrokerOffset: o.BrokerOffset,
					ConsumerOffset: o.ConsumerOffset, Lag: max(0, o.BrokerOffset-o.ConsumerOffset), LastConsumedTimestamp: o.LastTimestamp,
					InFlight: o.InFlight}
				d.Queues = append(d.Queues, q)
				d.TotalLag += q.Lag
				d.TotalInFlight += q.InFlight
			}
		case rmq.RespSubscriptionGroupNotExist:
		default:
			return d, false, c.refused(m.addr, "consume stats of group "+group, resp)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(subs)) {
		d.Subscriptions = append(d.Subscriptions, subs[k])
	}
	sort.Slice(d.Members, func(i, j int) bool { return d.Members[i].ClientID < d.Members[j].ClientID })
	sort.Slice(d.Queues, func(i, j int) bool {
		a, b := d.Queues[i], d.Queues[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		if a.Broker != b.Broker {
			return a.Broker < b.Broker
		}
		return a.QueueID < b.QueueID
	})
	return d, known, nil
}

func errUnknownGroup(group string) error {
	return fmt.Errorf("%w: consumer group %q is unknown: no broker has members, offsets or a config for it; list groups with `petrel group list`", ErrNotFound, group)
}

// GroupDescribe writes a group's members, subscriptions and lag per queue.
func (c *CLI) GroupDescribe(ctx context.Context, group string) error {
	if group == "" {
		return fmt.Errorf("%w: name the consumer group", ErrUsage)
	}
	ms, err := c.masters(ctx)
	if err != nil {
		return err
	}
	d, known, err := c.describeGroup(ctx, ms, group)
	if err != nil {
		return err
	}
	if !known {
		return errUnknownGroup(group)
	}
	if c.json() {
		return c.writeJSON(d)
	}
	w := c.cfg.Out
	fmt.Fprintf(w, "Group:        %s\nOnline:       %v\nModel:        %s\nConsume type: %s\nStart from:   %s\n\n",
		d.Group, d.Online, dash(d.MessageModel), dash(d.ConsumeType), dash(d.ConsumeFromWhere))
	fmt.Fprintln(w, "Members:")
	if len(d.Members) == 0 {
		fmt.Fprintln(w, "  none connected")
	} else {
		t := newTable("CLIENT ID", "ADDRESS", "LANGUAGE", "VERSION", "BROKER")
		for _, m := range d.Members {
			t.add(m.ClientID, m.Address, m.Language, m.Version, m.Broker)
		}
		if err := t.write(w); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "\nSubscriptions:")
	if len(d.Subscriptions) == 0 {
		fmt.Fprintln(w, "  none (no member connected)")
	} else {
		t := newTable("TOPIC", "EXPRESSION", "TYPE")
		for _, s := range d.Subscriptions {
			t.add(s.Topic, s.Expression, s.Type)
		}
		if err := t.write(w); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "\nLag:")
	if d.ConsumeType == consumePop || d.TotalInFlight > 0 {
		// A 5.x group: what its simple consumers hold unacknowledged.
		t := newTable("TOPIC", "BROKER", "QUEUE", "BROKER OFFSET", "CONSUMER OFFSET", "LAG", "IN FLIGHT", "LAST CONSUMED")
		for _, q := range d.Queues {
			t.add(q.Topic, q.Broker, q.QueueID, q.BrokerOffset, q.ConsumerOffset, q.Lag, q.InFlight, formatTime(q.LastConsumedTimestamp))
		}
		t.add("TOTAL", "", "", "", "", d.TotalLag, d.TotalInFlight, "")
		return t.write(w)
	}
	t := newTable("TOPIC", "BROKER", "QUEUE", "BROKER OFFSET", "CONSUMER OFFSET", "LAG", "LAST CONSUMED")
	for _, q := range d.Queues {
		t.add(q.Topic, q.Broker, q.QueueID, q.BrokerOffset, q.ConsumerOffset, q.Lag, formatTime(q.LastConsumedTimestamp))
	}
	t.add("TOTAL", "", "", "", "", d.TotalLag, "")
	return t.write(w)
}

// consumePop is the consume type the gRPC front registers 5.x simple
// consumers with.
const consumePop = "CONSUME_POP"

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// GroupInfo is one group of `group list`.
type GroupInfo struct {
	Group        string   `json:"group"`
	Members      int      `json:"members"`
	MessageModel string   `json:"messageModel"`
	Topics       []string `json:"topics"`
	TotalLag     int64    `json:"totalLag"`
	// Config is the group's subscription group config (of the first
	// master that has one).
	Config GroupConfig `json:"config"`
}

// GroupList writes every subscription group the masters know, with its
// connected members, total lag and config.
func (c *CLI) GroupList(ctx context.Context) error {
	ms, err := c.masters(ctx)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, m := range ms {
		resp, err := c.callOK(ctx, m.addr, "subscription groups", remoting.NewRequest(rmq.CodeGetAllSubscriptionGroup, nil, nil))
		if err != nil {
			return err
		}
		body, err := rmq.DecodeSubscriptionGroupTableBody(resp.Body)
		if err != nil {
			return fmt.Errorf("%w: subscription groups of %s are not valid JSON: %w", ErrRefused, m.addr, err)
		}
		for g := range body.SubscriptionGroupTable {
			names[g] = true
		}
	}
	cfgs, err := c.groupConfigs(ctx, ms)
	if err != nil {
		return err
	}
	out := []GroupInfo{}
	for _, g := range slices.Sorted(maps.Keys(names)) {
		d, _, err := c.describeGroup(ctx, ms, g)
		if err != nil {
			return err
		}
		gi := GroupInfo{Group: g, Members: len(d.Members), MessageModel: d.MessageModel, Topics: []string{}, TotalLag: d.TotalLag, Config: cfgs[g]}
		seen := map[string]bool{}
		for _, s := range d.Subscriptions {
			seen[s.Topic] = true
		}
		for _, q := range d.Queues {
			seen[q.Topic] = true
		}
		for _, t := range slices.Sorted(maps.Keys(seen)) {
			if !strings.HasPrefix(t, "%RETRY%") {
				gi.Topics = append(gi.Topics, t)
			}
		}
		out = append(out, gi)
	}
	if c.json() {
		return c.writeJSON(struct {
			Groups []GroupInfo `json:"groups"`
		}{out})
	}
	t := newTable("GROUP", "MEMBERS", "MODEL", "TOPICS", "LAG", "CONSUME", "ORDERLY", "RETRY MAX")
	for _, g := range out {
		t.add(g.Group, g.Members, g.MessageModel, strings.Join(g.Topics, ","), g.TotalLag,
			onOff(g.Config.ConsumeEnable), g.Config.Orderly, g.Config.RetryMaxTimes)
	}
	return t.write(c.cfg.Out)
}

// ResetTarget is where reset-offset moves a group: exactly one of Time,
// Earliest, Latest.
type ResetTarget struct {
	Time     time.Time
	Earliest bool
	Latest   bool
}

// ResetResult is the answer of `group reset-offset`.
type ResetResult struct {
	Group string `json:"group"`
	Topic string `json:"topic"`
	// Timestamp is the time reset to (ms); 0 for earliest, -1 for latest.
	Timestamp int64        `json:"timestamp"`
	Queues    []ResetQueue `json:"queues"`
}

// ResetQueue is one queue's new offset.
type ResetQueue struct {
	Broker  string `json:"broker"`
	QueueID int32  `json:"queueId"`
	Offset  int64  `json:"offset"`
}

// GroupResetOffset moves the group's offsets on topic. The brokers store
// the new offsets and tell running members, which re-consume from there.
func (c *CLI) GroupResetOffset(ctx context.Context, group, topic string, to ResetTarget) error {
	n := 0
	for _, b := range []bool{!to.Time.IsZero(), to.Earliest, to.Latest} {
		if b {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("%w: give exactly one of --to-time, --to-earliest and --to-latest", ErrUsage)
	}
	if group == "" || topic == "" {
		return fmt.Errorf("%w: name the group and the topic (--topic)", ErrUsage)
	}
	// A time before 1970 means the earliest: a negative timestamp would
	// ask the broker for the latest.
	ts := max(0, to.Time.UnixMilli())
	switch {
	case to.Earliest:
		ts = 0
	case to.Latest:
		ts = -1
	}
	rt, err := c.route(ctx, topic)
	if err != nil {
		return err
	}
	res := ResetResult{Group: group, Topic: topic, Timestamp: ts, Queues: []ResetQueue{}}
	unknown := 0
	for _, b := range rt {
		resp, err := c.call(ctx, b.addr, rmq.EncodeResetOffsetRequest(rmq.ResetOffsetRequest{Topic: topic, Group: group, Timestamp: ts, IsForce: true}))
		if err != nil {
			return err
		}
		switch resp.Code {
		case rmq.RespSuccess:
		case rmq.RespSubscriptionGroupNotExist:
			unknown++
			continue
		default:
			return c.refused(b.addr, "reset offsets of group "+group, resp)
		}
		table, err := rmq.DecodeResetOffsetResponse(resp)
		if err != nil {
			return fmt.Errorf("%w: reset answer from %s: %w", ErrRefused, b.addr, err)
		}
		for q, off := range table {
			res.Queues = append(res.Queues, ResetQueue{Broker: b.name, QueueID: q.QueueID, Offset: off})
		}
	}
	if unknown == len(rt) {
		return errUnknownGroup(group)
	}
	sort.Slice(res.Queues, func(i, j int) bool {
		if res.Queues[i].Broker != res.Queues[j].Broker {
			return res.Queues[i].Broker < res.Queues[j].Broker
		}
		return res.Queues[i].QueueID < res.Queues[j].QueueID
	})
	if c.json() {
		return c.writeJSON(res)
	}
	t := newTable("TOPIC", "BROKER", "QUEUE", "NEW OFFSET")
	for _, q := range res.Queues {
		t.add(topic, q.Broker, q.QueueID, q.Offset)
	}
	if err := t.write(c.cfg.Out); err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.cfg.Out, "group %s reset on topic %s; running members re-consume from these offsets\n", group, topic)
	return err
}
