package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
)

// Topic permission bits, as RocketMQ's.
const (
	permRead    = 4
	permWrite   = 2
	permInherit = 1
)

// ParsePerm reads a permission: "rw", "r", "w", "-" (none), or the
// number 0..7.
func ParsePerm(s string) (int32, error) {
	if n, err := strconv.Atoi(s); err == nil && n >= 0 && n <= 7 {
		return int32(n), nil
	}
	var p int32
	for _, r := range s {
		switch r {
		case 'r':
			p |= permRead
		case 'w':
			p |= permWrite
		case '-':
		default:
			return 0, fmt.Errorf("%w: permission %q: want rw, r, w or - (none)", ErrUsage, s)
		}
	}
	if s == "" {
		return 0, fmt.Errorf("%w: empty permission: want rw, r, w or - (none)", ErrUsage)
	}
	return p, nil
}

// FormatPerm renders perm as rw, r-, -w or --.
func FormatPerm(p int32) string {
	b := []byte("--")
	if p&permRead != 0 {
		b[0] = 'r'
	}
	if p&permWrite != 0 {
		b[1] = 'w'
	}
	return string(b)
}

// topicConfig is a broker's topic config (GET_ALL_TOPIC_CONFIG).
type topicConfig = rmq.TopicConfig

func (c *CLI) brokerTopics(ctx context.Context, addr string) (map[string]topicConfig, error) {
	resp, err := c.callOK(ctx, addr, "topic configs", remoting.NewRequest(rmq.CodeGetAllTopicConfig, nil, nil))
	if err != nil {
		return nil, err
	}
	body, err := rmq.DecodeTopicConfigBody(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: topic configs of %s are not valid JSON: %w", ErrRefused, addr, err)
	}
	return body.TopicConfigTable, nil
}

// TopicSpec is what `topic create` and `topic update` set. For update, a
// zero or nil field keeps the current value.
type TopicSpec struct {
	Name string
	// ReadQueues and WriteQueues per broker.
	ReadQueues, WriteQueues int32
	// Perm: "rw", "r", "w", "-" or 0..7; "" keeps (update) or means rw.
	Perm string
	// SetAttrs are set, RemoveAttrs removed (e.g. persistent=false keeps
	// the topic's messages in memory only).
	SetAttrs    map[string]string
	RemoveAttrs []string
	// Broker limits create to one broker name; "" means every master.
	Broker string
}

// TopicResult is the answer of create, update and delete.
type TopicResult struct {
	Topic       string            `json:"topic"`
	Action      string            `json:"action"` // created, updated, deleted
	Brokers     []string          `json:"brokers"`
	ReadQueues  int32             `json:"readQueues,omitempty"`
	WriteQueues int32             `json:"writeQueues,omitempty"`
	Perm        string            `json:"perm,omitempty"`
	Attributes  map[string]string `json:"attributes,omitempty"`
}

func attrChanges(set map[string]string, remove []string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(set)) {
		parts = append(parts, "+"+k+"="+set[k])
	}
	for _, k := range remove {
		parts = append(parts, "-"+k)
	}
	return strings.Join(parts, ",")
}

func (c *CLI) putTopic(ctx context.Context, addr string, t topicConfig, attrs string) error {
	h := rmq.CreateTopicRequest{
		Topic: t.TopicName, DefaultTopic: templateTopic, ReadQueueNums: t.ReadQueueNums, WriteQueueNums: t.WriteQueueNums,
		Perm: t.Perm, TopicFilterType: t.TopicFilterType, TopicSysFlag: t.TopicSysFlag, Order: t.Order, Attributes: attrs,
	}
	if h.TopicFilterType == "" {
		h.TopicFilterType = "SINGLE_TAG"
	}
	_, err := c.callOK(ctx, addr, "save topic "+t.TopicName, rmq.EncodeCreateTopic(h))
	return err
}

func checkTopicName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: name the topic", ErrUsage)
	}
	if !message.ValidTopic(name) {
		return fmt.Errorf("%w: topic name %q may only hold letters, digits, %%, |, _ and -", ErrUsage, name)
	}
	return nil
}

// TopicCreate creates a topic on every master (or spec.Broker). It fails
// with ErrUsage when the topic exists already.
func (c *CLI) TopicCreate(ctx context.Context, spec TopicSpec) error {
	if err := checkTopicName(spec.Name); err != nil {
		return err
	}
	if spec.ReadQueues <= 0 || spec.WriteQueues <= 0 {
		return fmt.Errorf("%w: --queues must be at least 1", ErrUsage)
	}
	permText := spec.Perm
	if permText == "" {
		permText = "rw"
	}
	perm, err := ParsePerm(permText)
	if err != nil {
		return err
	}
	ms, err := c.masters(ctx)
	if err != nil {
		return err
	}
	if spec.Broker != "" {
		ms = slices.DeleteFunc(ms, func(m masterBroker) bool { return m.name != spec.Broker })
		if len(ms) == 0 {
			return fmt.Errorf("%w: no live master named %q; see `petrel cluster list`", ErrNotFound, spec.Broker)
		}
	}
	for _, m := range ms {
		ts, err := c.brokerTopics(ctx, m.addr)
		if err != nil {
			return err
		}
		if _, ok := ts[spec.Name]; ok {
			return fmt.Errorf("%w: topic %q already exists on broker %s; change it with `petrel topic update %s`", ErrUsage, spec.Name, m.name, spec.Name)
		}
	}
	res := TopicResult{Topic: spec.Name, Action: "created", ReadQueues: spec.ReadQueues, WriteQueues: spec.WriteQueues,
		Perm: FormatPerm(perm), Attributes: spec.SetAttrs}
	for _, m := range ms {
		t := topicConfig{TopicName: spec.Name, ReadQueueNums: spec.ReadQueues, WriteQueueNums: spec.WriteQueues, Perm: perm}
		if err := c.putTopic(ctx, m.addr, t, attrChanges(spec.SetAttrs, nil)); err != nil {
			return err
		}
		res.Brokers = append(res.Brokers, m.name)
	}
	// Brokers publish topic changes to the name servers in the background;
	// wait until clients can find the topic.
	if err := c.waitRoute(ctx, spec.Name, func(rt []routeBroker) bool { return len(rt) >= len(ms) }); err != nil {
		return err
	}
	return c.writeTopicResult(res)
}

// routePoll is how often waitRoute asks the name servers again.
const routePoll = 50 * time.Millisecond

// waitRoute asks for the route of topic until done accepts it (a missing
// route is nil), for at most the request timeout.
func (c *CLI) waitRoute(ctx context.Context, topic string, done func([]routeBroker) bool) error {
	deadline := time.NewTimer(c.cfg.Timeout)
	defer deadline.Stop()
	for {
		rt, err := c.route(ctx, topic)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if done(rt) {
			return nil
		}
		tick := time.NewTimer(routePoll)
		select {
		case <-ctx.Done():
			tick.Stop()
			return ctx.Err()
		case <-deadline.C:
			tick.Stop()
			return fmt.Errorf("%w: the brokers saved topic %s but the name servers did not show the change within %v; check the brokers' logs for registration errors", ErrRefused, topic, c.cfg.Timeout)
		case <-tick.C:
		}
	}
}

// TopicUpdate changes a topic on every broker that has it.
func (c *CLI) TopicUpdate(ctx context.Context, spec TopicSpec) error {
	if err := checkTopicName(spec.Name); err != nil {
		return err
	}
	rt, err := c.route(ctx, spec.Name)
	if err != nil {
		return err
	}
	res := TopicResult{Topic: spec.Name, Action: "updated"}
	want := map[string]rmq.QueueData{}
	for _, b := range rt {
		ts, err := c.brokerTopics(ctx, b.addr)
		if err != nil {
			return err
		}
		t, ok := ts[spec.Name]
		if !ok {
			continue
		}
		if spec.ReadQueues > 0 {
			t.ReadQueueNums = spec.ReadQueues
		}
		if spec.WriteQueues > 0 {
			t.WriteQueueNums = spec.WriteQueues
		}
		if spec.Perm != "" {
			if t.Perm, err = ParsePerm(spec.Perm); err != nil {
				return err
			}
		}
		if err := c.putTopic(ctx, b.addr, t, attrChanges(spec.SetAttrs, spec.RemoveAttrs)); err != nil {
			return err
		}
		after, err := c.brokerTopics(ctx, b.addr)
		if err != nil {
			return err
		}
		t = after[spec.Name]
		res.Brokers = append(res.Brokers, b.name)
		res.ReadQueues, res.WriteQueues, res.Perm, res.Attributes = t.ReadQueueNums, t.WriteQueueNums, FormatPerm(t.Perm), t.Attributes
		want[b.name] = rmq.QueueData{BrokerName: b.name, ReadQueueNums: t.ReadQueueNums, WriteQueueNums: t.WriteQueueNums, Perm: t.Perm, TopicSysFlag: t.TopicSysFlag}
	}
	err = c.waitRoute(ctx, spec.Name, func(rt []routeBroker) bool {
		n := 0
		for _, b := range rt {
			if w, ok := want[b.name]; ok && w == b.q {
				n++
			}
		}
		return n == len(want)
	})
	if err != nil {
		return err
	}
	return c.writeTopicResult(res)
}

func (c *CLI) writeTopicResult(res TopicResult) error {
	if c.json() {
		return c.writeJSON(res)
	}
	if res.Action == "deleted" {
		_, err := fmt.Fprintf(c.cfg.Out, "topic %s deleted on %s\n", res.Topic, strings.Join(res.Brokers, ", "))
		return err
	}
	_, err := fmt.Fprintf(c.cfg.Out, "topic %s %s on %s: %d read / %d write queues, perm %s, attributes %s\n",
		res.Topic, res.Action, strings.Join(res.Brokers, ", "), res.ReadQueues, res.WriteQueues, res.Perm, formatAttrs(res.Attributes))
	return err
}

func formatAttrs(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

// IsSystemTopic reports whether a topic is one the brokers keep for
// themselves: the auto-create template, retry and dead-letter topics, the
// timer and transaction topics, the cluster's reply topic.
func IsSystemTopic(name string) bool {
	return name == templateTopic || strings.HasPrefix(name, "%RETRY%") || strings.HasPrefix(name, "%DLQ%") ||
		strings.HasPrefix(name, "rmq_sys_") || strings.HasPrefix(name, "RMQ_SYS_") || strings.HasPrefix(name, "SCHEDULE_TOPIC_") ||
		name == "TRANS_CHECK_MAX_TIME_TOPIC" || strings.HasSuffix(name, "_REPLY_TOPIC")
}

// TopicInfo is one topic of `topic list` and the head of `topic describe`.
type TopicInfo struct {
	Topic string `json:"topic"`
	// Brokers that host the topic; queue counts are summed over them.
	Brokers     []string          `json:"brokers"`
	ReadQueues  int32             `json:"readQueues"`
	WriteQueues int32             `json:"writeQueues"`
	Perm        string            `json:"perm"`
	Order       bool              `json:"order"`
	Attributes  map[string]string `json:"attributes"`
}

// TopicList writes every topic of every master; system topics only with
// all.
func (c *CLI) TopicList(ctx context.Context, all bool) error {
	ms, err := c.masters(ctx)
	if err != nil {
		return err
	}
	byName := map[string]*TopicInfo{}
	for _, m := range ms {
		ts, err := c.brokerTopics(ctx, m.addr)
		if err != nil {
			return err
		}
		for name, t := range ts {
			if !all && IsSystemTopic(name) {
				continue
			}
			ti := byName[name]
			if ti == nil {
				ti = &TopicInfo{Topic: name, Perm: FormatPerm(t.Perm), Order: t.Order, Attributes: t.Attributes}
				byName[name] = ti
			}
			ti.Brokers = append(ti.Brokers, m.name)
			ti.ReadQueues += t.ReadQueueNums
			ti.WriteQueues += t.WriteQueueNums
		}
	}
	out := make([]TopicInfo, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		ti := byName[name]
		if ti.Attributes == nil {
			ti.Attributes = map[string]string{}
		}
		out = append(out, *ti)
	}
	if c.json() {
		return c.writeJSON(struct {
			Topics []TopicInfo `json:"topics"`
		}{out})
	}
	t := newTable("TOPIC", "READ", "WRITE", "PERM", "BROKERS", "ATTRIBUTES")
	for _, ti := range out {
		t.add(ti.Topic, ti.ReadQueues, ti.WriteQueues, ti.Perm, strings.Join(ti.Brokers, ","), formatAttrs(ti.Attributes))
	}
	return t.write(c.cfg.Out)
}

// QueueInfo is one queue of `topic describe`.
type QueueInfo struct {
	Broker    string `json:"broker"`
	QueueID   int32  `json:"queueId"`
	MinOffset int64  `json:"minOffset"`
	MaxOffset int64  `json:"maxOffset"`
	// Messages is MaxOffset − MinOffset: what the queue holds now.
	Messages int64 `json:"messages"`
	// LastStoreTimestamp is when the queue's last message was stored (ms;
	// 0 when empty), LastStoreTime the same as RFC 3339 ("" when empty).
	LastStoreTimestamp int64  `json:"lastStoreTimestamp"`
	LastStoreTime      string `json:"lastStoreTime"`
}

// TopicDescription is the answer of `topic describe`.
type TopicDescription struct {
	TopicInfo
	Queues []QueueInfo `json:"queues"`
	// RemovedUnconsumed counts, per group, the messages of the topic that
	// retention removed before their reserve time (disk above the
	// high-water mark) while the group had not consumed them, summed over
	// the brokers since they started; empty when none.
	RemovedUnconsumed map[string]uint64 `json:"removedUnconsumed"`
}

// TopicDescribe writes a topic's config and its queues.
func (c *CLI) TopicDescribe(ctx context.Context, name string) error {
	rt, err := c.route(ctx, name)
	if err != nil {
		return err
	}
	d := TopicDescription{TopicInfo: TopicInfo{Topic: name, Attributes: map[string]string{}}, Queues: []QueueInfo{}, RemovedUnconsumed: map[string]uint64{}}
	for _, b := range rt {
		ts, err := c.brokerTopics(ctx, b.addr)
		if err != nil {
			return err
		}
		t, ok := ts[name]
		if !ok {
			continue
		}
		d.Brokers = append(d.Brokers, b.name)
		d.ReadQueues += t.ReadQueueNums
		d.WriteQueues += t.WriteQueueNums
		d.Perm, d.Order = FormatPerm(t.Perm), t.Order
		maps.Copy(d.Attributes, t.Attributes)
		resp, err := c.call(ctx, b.addr, rmq.EncodeTopicStatsRequest(rmq.TopicStatsRequest{Topic: name}))
		if err != nil {
			return err
		}
		if resp.Code == rmq.RespTopicNotExist {
			continue
		}
		if resp.Code != rmq.RespSuccess {
			return c.refused(b.addr, "topic stats of "+name, resp)
		}
		stats, err := rmq.DecodeTopicStatsBody(resp.Body)
		if err != nil {
			return fmt.Errorf("%w: topic stats of %s from %s: %w", ErrRefused, name, b.addr, err)
		}
		for g, n := range stats.RemovedUnconsumed {
			d.RemovedUnconsumed[g] += n
		}
		for _, o := range stats.Offsets {
			d.Queues = append(d.Queues, QueueInfo{Broker: b.name, QueueID: o.QueueID, MinOffset: o.MinOffset, MaxOffset: o.MaxOffset,
				Messages: o.MaxOffset - o.MinOffset, LastStoreTimestamp: o.LastUpdateTimestamp, LastStoreTime: jsonTime(o.LastUpdateTimestamp)})
		}
	}
	if len(d.Brokers) == 0 {
		return fmt.Errorf("%w: topic %q does not exist; list topics with `petrel topic list`", ErrNotFound, name)
	}
	sort.Slice(d.Queues, func(i, j int) bool {
		if d.Queues[i].Broker != d.Queues[j].Broker {
			return d.Queues[i].Broker < d.Queues[j].Broker
		}
		return d.Queues[i].QueueID < d.Queues[j].QueueID
	})
	if c.json() {
		return c.writeJSON(d)
	}
	fmt.Fprintf(c.cfg.Out, "Topic:       %s\nBrokers:     %s\nQueues:      %d read / %d write\nPerm:        %s\nOrder:       %v\nAttributes:  %s\nRemoved:     %s\n\n",
		d.Topic, strings.Join(d.Brokers, ", "), d.ReadQueues, d.WriteQueues, d.Perm, d.Order, formatAttrs(d.Attributes), formatRemoved(d.RemovedUnconsumed))
	t := newTable("BROKER", "QUEUE", "MIN OFFSET", "MAX OFFSET", "MESSAGES", "LAST STORED")
	for _, q := range d.Queues {
		t.add(q.Broker, q.QueueID, q.MinOffset, q.MaxOffset, q.Messages, formatTime(q.LastStoreTimestamp))
	}
	return t.write(c.cfg.Out)
}

// formatRemoved renders the unconsumed messages removed early: "0
// unconsumed messages" or "15 unconsumed messages early (billing 10,
// audit 5)", largest first.
func formatRemoved(m map[string]uint64) string {
	var total uint64
	groups := make([]string, 0, len(m))
	for g, n := range m {
		total += n
		groups = append(groups, g)
	}
	if total == 0 {
		return "0 unconsumed messages"
	}
	sort.Slice(groups, func(i, j int) bool {
		if m[groups[i]] != m[groups[j]] {
			return m[groups[i]] > m[groups[j]]
		}
		return groups[i] < groups[j]
	})
	parts := make([]string, 0, len(groups))
	for _, g := range groups {
		if m[g] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", g, m[g]))
		}
	}
	return fmt.Sprintf("%d unconsumed messages early (%s)", total, strings.Join(parts, ", "))
}

// TopicDelete deletes a topic on its brokers and the name servers.
func (c *CLI) TopicDelete(ctx context.Context, name string) error {
	rt, err := c.route(ctx, name)
	if err != nil {
		return err
	}
	res := TopicResult{Topic: name, Action: "deleted"}
	for _, b := range rt {
		if _, err := c.callOK(ctx, b.addr, "delete topic "+name, rmq.EncodeDeleteTopicInBroker(rmq.DeleteTopicRequest{Topic: name})); err != nil {
			return err
		}
		res.Brokers = append(res.Brokers, b.name)
	}
	// A registration sent before the brokers deleted the topic may put the
	// route back; delete it in the name servers until it stays away.
	err = c.waitRoute(ctx, name, func(rt []routeBroker) bool {
		if len(rt) == 0 {
			return true
		}
		for _, ns := range c.cfg.NameServers {
			_, _ = c.call(ctx, ns, rmq.EncodeDeleteTopicInNamesrv(rmq.DeleteTopicRequest{Topic: name}))
		}
		return false
	})
	if err != nil {
		return err
	}
	return c.writeTopicResult(res)
}
