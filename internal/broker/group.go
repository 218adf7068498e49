package broker

// Subscription-group administration (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
// 200 and DELETE_SUBSCRIPTIONGROUP 207; mqadmin updateSubGroup and
// deleteSubGroup, the dashboard, `petrel group create|update|delete`).
//
// A group's config decides, for running members too:
//   - ConsumeEnable false: pulls and pops of the group are refused with
//     NO_PERMISSION, parked ones included once they wake;
//   - RetryMaxTimes: a 4.x send-back without its own maxReconsumeTimes
//     dead-letters after that many re-deliveries; 5.x members get
//     RetryMaxTimes+1 max attempts in their settings and the broker's
//     pops dead-letter after that many deliveries;
//   - ConsumeMessageOrderly: 5.x members get fifo in their settings and
//     the group's pops hold a queue while a message of it is in flight.
//
// The fronts read the config on every request; a change is also announced
// to the hooks registered with OnGroupChanged, through which the gRPC front
// pushes the new settings to the group's connected 5.x clients.

import (
	"context"
	"maps"
	"strings"

	"github.com/petrelmq/petrel/internal/store/meta"
)

// Bounds of a group config, so a peer cannot make the broker keep (and
// rewrite on every change) an unbounded table entry.
const (
	// MaxGroupAttributes bounds Group.Attributes.
	MaxGroupAttributes = 64
	// MaxGroupAttributeLen bounds an attribute key or value, in bytes.
	MaxGroupAttributeLen = 1024
	// MaxGroupSubscriptions bounds Group.SubscriptionDataSet.
	MaxGroupSubscriptions = 1024
	// MaxGroupRetrySteps bounds a customized retry policy's steps.
	MaxGroupRetrySteps = 64
	// MaxGroupRetryMaxTimes bounds RetryMaxTimes (RocketMQ has no limit;
	// more than this many attempts is a typo).
	MaxGroupRetryMaxTimes = 1000
	// MaxGroupRetryDelayMS bounds a retry policy's delays and the
	// exponential multiplier (a year of milliseconds), so that they fit a
	// time.Duration.
	MaxGroupRetryDelayMS = 365 * 24 * 3600 * 1000
)

// OnGroupChanged registers fn, called after a subscription group config
// was created, changed or deleted by UpdateGroup or DeleteGroup (not for
// the defaults a first heartbeat creates). fn runs on the caller's
// goroutine with no broker lock held; it must not block for long.
func (b *Broker) OnGroupChanged(fn func(group string)) {
	b.groupHooks.add(fn)
}

func (b *Broker) groupChanged(group string) {
	b.stateGroupChanged(group)
	for _, fn := range b.groupHooks.list() {
		fn(group)
	}
}

// CheckGroup returns the reason g is not a valid group config, or nil:
// the name (as a topic name, at most 255 characters), the counts (none
// negative, RetryMaxTimes at most MaxGroupRetryMaxTimes), the retry
// policy's type and steps, and the bounds above. Errors are
// KindMessageIllegal and name the field.
func CheckGroup(g GroupConfig) error {
	switch {
	case g.Name == "":
		return errorf(KindMessageIllegal, nil, "the group name is empty; name the group")
	case !validName(g.Name, maxGroupLen):
		return errorf(KindMessageIllegal, nil, "group name %q is not valid: at most %d characters of ^[%%|a-zA-Z0-9_-]+$", g.Name, maxGroupLen)
	case strings.HasPrefix(g.Name, RetryGroupTopicPrefix) || strings.HasPrefix(g.Name, DLQGroupTopicPrefix):
		return errorf(KindMessageIllegal, nil, "group name %q starts with a reserved prefix (%s or %s)", g.Name, RetryGroupTopicPrefix, DLQGroupTopicPrefix)
	case g.RetryMaxTimes < 0 || g.RetryMaxTimes > MaxGroupRetryMaxTimes:
		return errorf(KindMessageIllegal, nil, "retryMaxTimes %d is outside 0..%d", g.RetryMaxTimes, MaxGroupRetryMaxTimes)
	case g.RetryQueueNums < 0:
		return errorf(KindMessageIllegal, nil, "retryQueueNums %d is negative", g.RetryQueueNums)
	case g.BrokerID < 0 || g.WhichBrokerWhenConsumeSlowly < 0:
		return errorf(KindMessageIllegal, nil, "brokerId %d / whichBrokerWhenConsumeSlowly %d is negative", g.BrokerID, g.WhichBrokerWhenConsumeSlowly)
	case g.ConsumeTimeoutMinute < 0:
		return errorf(KindMessageIllegal, nil, "consumeTimeoutMinute %d is negative", g.ConsumeTimeoutMinute)
	case len(g.Attributes) > MaxGroupAttributes:
		return errorf(KindMessageIllegal, nil, "the group has %d attributes, more than the limit of %d", len(g.Attributes), MaxGroupAttributes)
	case len(g.SubscriptionDataSet) > MaxGroupSubscriptions:
		return errorf(KindMessageIllegal, nil, "subscriptionDataSet has %d entries, more than the limit of %d", len(g.SubscriptionDataSet), MaxGroupSubscriptions)
	}
	for k, v := range g.Attributes {
		if k == "" || len(k) > MaxGroupAttributeLen || len(v) > MaxGroupAttributeLen {
			return errorf(KindMessageIllegal, nil, "attribute %.64q: keys must be 1..%d bytes and values at most %d", k, MaxGroupAttributeLen, MaxGroupAttributeLen)
		}
	}
	for _, s := range g.SubscriptionDataSet {
		if len(s.Topic) > maxGroupLen*2 || len(s.Expression) > MaxGroupAttributeLen || len(s.ExpressionType) > 16 {
			return errorf(KindMessageIllegal, nil, "subscriptionDataSet entry for topic %.64q is too long", s.Topic)
		}
	}
	if p := g.GroupRetryPolicy; p != nil {
		switch p.Type {
		case "", "CUSTOMIZED", "EXPONENTIAL":
		default:
			return errorf(KindMessageIllegal, nil, "groupRetryPolicy type %.32q is neither CUSTOMIZED nor EXPONENTIAL", p.Type)
		}
		if e := p.Exponential; e != nil && (e.Initial < 0 || e.Max < 0 || e.Multiplier < 0 ||
			e.Initial > MaxGroupRetryDelayMS || e.Max > MaxGroupRetryDelayMS || e.Multiplier > MaxGroupRetryDelayMS) {
			return errorf(KindMessageIllegal, nil, "exponentialRetryPolicy values must be within 0..%d (ms)", MaxGroupRetryDelayMS)
		}
		if c := p.Customized; c != nil {
			if len(c.Next) > MaxGroupRetrySteps {
				return errorf(KindMessageIllegal, nil, "customizedRetryPolicy has %d steps, more than the limit of %d", len(c.Next), MaxGroupRetrySteps)
			}
			for _, d := range c.Next {
				if d < 0 || d > MaxGroupRetryDelayMS {
					return errorf(KindMessageIllegal, nil, "customizedRetryPolicy step %d is outside 0..%d (ms)", d, MaxGroupRetryDelayMS)
				}
			}
		}
	}
	return nil
}

// UpdateGroup creates the subscription group g.Name or replaces its
// config with g, and returns once the change is durable. Attributes
// replace the stored ones as given (the front applies RocketMQ's +key /
// -key changes first, see GroupAttributes). Running members follow the
// new config from their next request; the OnGroupChanged hooks are told.
// Errors: KindMessageIllegal (CheckGroup), KindSystemError (the write
// failed; the change is kept in memory and written by the next change),
// KindServiceUnavailable (closed).
func (b *Broker) UpdateGroup(gc GroupConfig) error {
	if b.closed.Load() {
		return b.errClosed()
	}
	if err := b.refuseOnSlave(KindSystemError, "group changes"); err != nil {
		return err
	}
	if err := CheckGroup(gc); err != nil {
		return err
	}
	g := gc.meta()
	b.topicMu.Lock()
	old, existed := b.meta.Group(g.Name)
	err := b.meta.PutGroup(g)
	b.topicMu.Unlock()
	if err != nil {
		return errorf(KindSystemError, err, "storing subscription group %q failed; retry", g.Name)
	}
	if existed {
		b.log.Info("subscription group updated", "group", g.Name, "consume_enable", g.ConsumeEnable,
			"orderly", g.ConsumeMessageOrderly, "retry_max_times", g.RetryMaxTimes, "was_orderly", old.ConsumeMessageOrderly,
			"was_retry_max_times", old.RetryMaxTimes)
	} else {
		b.log.Info("subscription group created", "group", g.Name, "consume_enable", g.ConsumeEnable,
			"orderly", g.ConsumeMessageOrderly, "retry_max_times", g.RetryMaxTimes)
	}
	b.groupChanged(g.Name)
	return nil
}

// GroupAttributes applies RocketMQ's attribute changes to cur and returns
// the new map (nil when empty): a key "+k" sets k, "-k" removes k (an
// error if k is not set), and a bare key "k" sets k too, so a config read
// with GET_ALL_SUBSCRIPTIONGROUP_CONFIG can be sent back as it is (the
// dashboard does). cur is not modified. Errors are KindMessageIllegal.
func GroupAttributes(cur, changes map[string]string) (map[string]string, error) {
	out := maps.Clone(cur)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range changes {
		switch {
		case strings.HasPrefix(k, "+") && len(k) > 1:
			out[k[1:]] = v
		case strings.HasPrefix(k, "-") && len(k) > 1:
			if _, ok := cur[k[1:]]; !ok {
				return nil, errorf(KindMessageIllegal, nil, "attribute %.64q cannot be removed: the group does not have it", k[1:])
			}
			delete(out, k[1:])
		case k == "" || k == "+" || k == "-":
			return nil, errorf(KindMessageIllegal, nil, "an attribute has an empty key; write +key=value or -key")
		default:
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// DeleteGroup removes the subscription group config of name and returns
// once that is durable; with cleanOffset it also removes the group's
// committed offsets on every topic and its simple consumers' positions and
// in-flight messages, so a group created again under the name starts
// afresh. Deleting a group without a config is not an error (RocketMQ
// answers success too); its offsets still go with cleanOffset. Members
// still connected keep consuming; their next heartbeat creates the
// default config again. Errors: KindMessageIllegal (empty name),
// KindSystemError, KindServiceUnavailable (closed).
func (b *Broker) DeleteGroup(name string, cleanOffset bool) error {
	if b.closed.Load() {
		return b.errClosed()
	}
	if err := b.refuseOnSlave(KindSystemError, "group changes"); err != nil {
		return err
	}
	if name == "" {
		return errorf(KindMessageIllegal, nil, "the group name is empty; name the group")
	}
	b.topicMu.Lock()
	_, existed := b.meta.Group(name)
	err := b.meta.DeleteGroup(name)
	b.topicMu.Unlock()
	if err != nil {
		return errorf(KindSystemError, err, "deleting subscription group %q failed; retry", name)
	}
	if cleanOffset {
		b.deleteOffsets(name, "")
		if err := b.meta.SyncOffsets(context.Background()); err != nil {
			return errorf(KindSystemError, err, "removing the offsets of group %q failed; retry", name)
		}
		t, err := b.pops.st.ForgetGroup(name)
		b.emitPopOps()
		if err == nil {
			err = b.pops.st.Sync(t)
		}
		if err != nil {
			return errorf(KindSystemError, err, "forgetting the simple consumers' positions of group %q failed; retry", name)
		}
	}
	b.stats.forget("", name)
	b.log.Info("subscription group deleted", "group", name, "had_config", existed, "clean_offset", cleanOffset)
	b.groupChanged(name)
	return nil
}

// groupConsumable reports whether the group may consume: it has no config
// (the first heartbeat creates one), or its config has ConsumeEnable.
func (b *Broker) groupConsumable(group string) bool {
	g, ok := b.meta.Group(group)
	return !ok || g.ConsumeEnable
}

func (b *Broker) errConsumeDisabled(group string) *Error {
	return errorf(KindNoPermission, nil, "consumer group %q may not consume (consumeEnable is false); enable it with `petrel group update %s --consume-enable=true`", group, group)
}

// groupRetryMaxTimes is the re-deliveries a failed 4.x message of group
// gets: the group config's RetryMaxTimes, else the broker's default.
func (b *Broker) groupRetryMaxTimes(group string) int32 {
	if g, ok := b.meta.Group(group); ok {
		return g.RetryMaxTimes
	}
	return b.cfg.DefaultMaxReconsumeTimes
}

// broadcastRefused reports whether the pull of conn for group must be
// refused because the connection's member consumes by broadcast and the
// group's config has ConsumeBroadcastEnable false (as RocketMQ's pull
// processor). Groups without a config, and connections without a
// heartbeat for the group, are not refused.
func (b *Broker) broadcastRefused(g meta.Group, conn uint64) bool {
	if g.ConsumeBroadcastEnable {
		return false
	}
	c := &b.clients
	c.mu.Lock()
	defer c.mu.Unlock()
	gs := c.groups[g.Name]
	if gs == nil {
		return false
	}
	m := gs.members[conn]
	return m != nil && m.data.MessageModel == "BROADCASTING"
}
