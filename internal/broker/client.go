package broker

// Clients: HEART_BEAT (34), GET_CONSUMER_LIST_BY_GROUP (38), connection
// close and expiry, and what NOTIFY_CONSUMER_IDS_CHANGED (40) needs.
//
// Membership is kept per connection, as Java keys it by channel: a
// (connection, group) pair is registered by every heartbeat that names the
// group and dropped when its connection closes or after ClientExpiry
// without such a heartbeat. A group's client-id set is the set of client
// ids over its member connections.

import (
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// Heartbeat is a decoded HEART_BEAT body.
type Heartbeat struct {
	ClientID  string
	Producers []string // producer group names
	Consumers []ConsumerData
}

// ConsumerData is one consumer group of a heartbeat.
type ConsumerData struct {
	Group string
	// ConsumeType is CONSUME_PASSIVELY (push) or CONSUME_ACTIVELY (pull);
	// MessageModel CLUSTERING or BROADCASTING; ConsumeFromWhere
	// CONSUME_FROM_LAST_OFFSET, CONSUME_FROM_FIRST_OFFSET or
	// CONSUME_FROM_TIMESTAMP. Kept as given.
	ConsumeType, MessageModel, ConsumeFromWhere string
	Subscriptions                               []Subscription
	// Language (RocketMQ's LanguageCode name), Version (its MQVersion
	// ordinal) and ClientAddr (host:port) describe the member's client
	// when its front knows them apart from a remoting connection (the gRPC
	// front); empty otherwise.
	Language   string
	Version    int32
	ClientAddr string
}

// Subscription is one topic subscription of a consumer group.
type Subscription struct {
	Topic string
	// Expression is subString: "*", "TagA || TagB", or SQL92 text.
	Expression string
	// ExpressionType is TAG (also when empty) or SQL92.
	ExpressionType string
	// Tags is the client's tagsSet; the broker parses Expression instead
	// and uses Tags only when Expression is empty.
	Tags       []string
	SubVersion int64
}

func sameSubscriptions(a, b []Subscription) bool {
	return slices.EqualFunc(a, b, func(x, y Subscription) bool {
		return x.Topic == y.Topic && x.Expression == y.Expression && x.ExpressionType == y.ExpressionType &&
			x.SubVersion == y.SubVersion && slices.Equal(x.Tags, y.Tags)
	})
}

// member is one connection's membership of a consumer group.
type member struct {
	conn     uint64
	clientID string
	lastSeen time.Time
	data     ConsumerData
}

type groupState struct {
	members map[uint64]*member
	// subs is derived from the members' subscriptions: per topic the one
	// with the highest SubVersion.
	subs map[string]*filterSpec
}

type connState struct {
	clientID  string
	producers map[string]time.Time // group → last heartbeat naming it
	consumers map[string]*member   // group → membership
}

type clientTable struct {
	mu        sync.Mutex
	conns     map[uint64]*connState
	groups    map[string]*groupState
	producers map[string]map[uint64]struct{} // producer group → conns
	byClient  connIndex                      // client id → conns (reply.go)
	noted     map[uint64]string              // conn → requester it was noted as (reply.go)
	notedBy   connIndex                      // requester → noted conns (reply.go)
	timer     clock.Timer                    // the pending sweep
	due       time.Time                      // when it runs
	closed    bool
}

func (c *clientTable) init() {
	c.conns = make(map[uint64]*connState)
	c.groups = make(map[string]*groupState)
	c.producers = make(map[string]map[uint64]struct{})
}

// hasClient reports whether a member other than except has clientID; mu
// is held.
func (g *groupState) hasClient(clientID string, except uint64) bool {
	for conn, m := range g.members {
		if conn != except && m.clientID == clientID {
			return true
		}
	}
	return false
}

// conns returns the members' connections, sorted; skip, if non-nil, is
// left out.
func (g *groupState) conns(skip *uint64) []uint64 {
	out := make([]uint64, 0, len(g.members))
	for conn := range g.members {
		if skip == nil || conn != *skip {
			out = append(out, conn)
		}
	}
	slices.Sort(out)
	return out
}

// rebuildSubs recomputes the group's subscriptions; mu is held.
func (g *groupState) rebuildSubs() {
	best := map[string]Subscription{}
	// Visit members in connection order so ties resolve the same way.
	for _, conn := range g.conns(nil) {
		for _, s := range g.members[conn].data.Subscriptions {
			if cur, ok := best[s.Topic]; !ok || s.SubVersion >= cur.SubVersion {
				best[s.Topic] = s
			}
		}
	}
	subs := make(map[string]*filterSpec, len(best))
	for topic, s := range best {
		expr := s.Expression
		if expr == "" && len(s.Tags) > 0 {
			expr = joinTags(s.Tags)
		}
		subs[topic] = parseSubscription(expr, s.ExpressionType)
	}
	g.subs = subs
}

func joinTags(tags []string) string { return strings.Join(tags, "||") }

// subscription returns the group's registered subscription for topic, and
// whether the group has any live member.
func (c *clientTable) subscription(group, topic string) (*filterSpec, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil {
		return nil, false
	}
	return g.subs[topic], true
}

// Heartbeat registers the producer and consumer groups of a client on
// conn, refreshing their expiry. For every consumer group it creates,
// when missing, the subscription group config (DefaultGroup) and the
// retry topic %RETRY%<group> (1 read/write queue, perm 6) — Java does so
// whatever the message model. When a group's client-id set changes, the
// registered handlers of the group's other members are told (after the
// broker's locks are released; see consumerIDsChanged).
// A heartbeat that stops naming a group does not remove the membership at
// once; it expires. A heartbeat on a connection whose registration ended
// (ConnClosed, expiry) is ignored. Failures to create configs are logged
// and do not stop the registration.
func (b *Broker) Heartbeat(conn uint64, hb Heartbeat) {
	for _, cd := range hb.Consumers {
		if !validName(cd.Group, maxGroupLen) {
			continue
		}
		if err := b.ensureGroup(cd.Group); err != nil {
			b.log.Warn("cannot create subscription group config", "group", cd.Group, "err", err)
		}
		retry := RetryGroupTopicPrefix + cd.Group
		if validName(retry, 127) {
			if _, err := b.ensureTopic(meta.Topic{Name: retry, ReadQueueNums: 1, WriteQueueNums: 1,
				Perm: meta.PermRead | meta.PermWrite, TopicFilterType: "SINGLE_TAG"}); err != nil {
				b.log.Warn("cannot create retry topic", "group", cd.Group, "topic", retry, "err", err)
			}
		}
	}
	now := b.now()
	c := &b.clients
	var changes []idsChange
	c.mu.Lock()
	// A heartbeat that raced with the end of its registration would
	// leave members behind until ClientExpiry. (Checked under mu:
	// ConnClosed and the sweep end the registration before they take mu
	// to drop its members.)
	if c.closed || b.conns.gone(conn) {
		c.mu.Unlock()
		return
	}
	cs := c.conns[conn]
	if cs == nil {
		cs = &connState{clientID: hb.ClientID, producers: map[string]time.Time{}, consumers: map[string]*member{}}
		c.setConnLocked(conn, cs)
	}
	if cs.clientID != hb.ClientID {
		// The connection now speaks for another client id: leave every
		// group under the old one first.
		changes = append(changes, c.dropConnLocked(conn, cs, nil)...)
		c.dropProducersLocked(conn, cs, nil)
		cs = &connState{clientID: hb.ClientID, producers: map[string]time.Time{}, consumers: map[string]*member{}}
		c.setConnLocked(conn, cs)
	}
	for _, g := range hb.Producers {
		if g == "" {
			continue
		}
		cs.producers[g] = now
		set := c.producers[g]
		if set == nil {
			set = map[uint64]struct{}{}
			c.producers[g] = set
		}
		set[conn] = struct{}{}
	}
	for _, cd := range hb.Consumers {
		if !validName(cd.Group, maxGroupLen) {
			continue
		}
		g := c.groups[cd.Group]
		if g == nil {
			g = &groupState{members: map[uint64]*member{}}
			c.groups[cd.Group] = g
		}
		m := g.members[conn]
		if m == nil {
			joined := !g.hasClient(hb.ClientID, conn)
			m = &member{conn: conn, clientID: hb.ClientID, lastSeen: now, data: cd}
			g.members[conn] = m
			cs.consumers[cd.Group] = m
			g.rebuildSubs()
			if joined {
				changes = append(changes, idsChange{group: cd.Group, conns: g.conns(&conn)})
			}
			continue
		}
		m.lastSeen = now
		if !sameSubscriptions(m.data.Subscriptions, cd.Subscriptions) {
			m.data = cd
			g.rebuildSubs()
		} else {
			m.data = cd
		}
	}
	c.mu.Unlock()
	b.consumerIDsChanged(changes)
}

// dropConnLocked removes conn's memberships (all when keep is nil, else
// those keep rejects) and returns the id-set changes; mu is held.
func (c *clientTable) dropConnLocked(conn uint64, cs *connState, keep func(group string, m *member) bool) []idsChange {
	var changes []idsChange
	for group, m := range cs.consumers {
		if keep != nil && keep(group, m) {
			continue
		}
		delete(cs.consumers, group)
		g := c.groups[group]
		if g == nil {
			continue
		}
		delete(g.members, conn)
		left := !g.hasClient(m.clientID, conn)
		if len(g.members) == 0 {
			delete(c.groups, group)
		} else {
			g.rebuildSubs()
		}
		if left {
			changes = append(changes, idsChange{group: group, conns: g.conns(nil)})
		}
	}
	return changes
}

func (c *clientTable) dropProducersLocked(conn uint64, cs *connState, expired func(time.Time) bool) {
	for group, seen := range cs.producers {
		if expired != nil && !expired(seen) {
			continue
		}
		delete(cs.producers, group)
		if set := c.producers[group]; set != nil {
			delete(set, conn)
			if len(set) == 0 {
				delete(c.producers, group)
			}
		}
	}
}

// ConnClosed ends the registration of conn (RegisterConn) and drops every
// client registration of it at once (notifying the groups whose client-id
// set changed) and answers the pulls parked on it with "no new message".
// Queue locks held by its client stay until they expire, as in Java.
// Idempotent; the handler's Expired is not called.
func (b *Broker) ConnClosed(conn uint64) {
	b.conns.remove(conn)
	c := &b.clients
	c.mu.Lock()
	changes := c.dropAllLocked(conn)
	c.mu.Unlock()
	b.answerConnPolls(conn)
	b.consumerIDsChanged(changes)
}

// dropAllLocked drops every client registration of conn and returns the
// id-set changes; mu is held.
func (c *clientTable) dropAllLocked(conn uint64) []idsChange {
	c.dropNoteLocked(conn)
	cs := c.conns[conn]
	if cs == nil {
		return nil
	}
	changes := c.dropConnLocked(conn, cs, nil)
	c.dropProducersLocked(conn, cs, nil)
	c.deleteConnLocked(conn)
	return changes
}

// ConsumerIDs returns the sorted, distinct client ids of a consumer
// group's live members (the answer to GET_CONSUMER_LIST_BY_GROUP); empty
// for an unknown group. The caller owns the slice.
func (b *Broker) ConsumerIDs(group string) []string {
	c := &b.clients
	c.mu.Lock()
	var ids []string
	if g := c.groups[group]; g != nil {
		for _, m := range g.members {
			ids = append(ids, m.clientID)
		}
	}
	c.mu.Unlock()
	sort.Strings(ids)
	return slices.Compact(ids)
}

// ConsumerConns returns the sorted connections of a consumer group's
// members.
func (b *Broker) ConsumerConns(group string) []uint64 {
	c := &b.clients
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.groups[group]; g != nil {
		return g.conns(nil)
	}
	return nil
}

// ProducerConns returns the sorted connections whose heartbeats name the
// producer group (where transaction checks go).
func (b *Broker) ProducerConns(group string) []uint64 {
	c := &b.clients
	c.mu.Lock()
	out := make([]uint64, 0, len(c.producers[group]))
	for conn := range c.producers[group] {
		out = append(out, conn)
	}
	c.mu.Unlock()
	slices.Sort(out)
	return out
}

// expiryInterval is how often silent clients and stale locks are swept;
// registrations with an idle timeout may need a shorter interval (see
// sweepInterval).
func (b *Broker) expiryInterval() time.Duration {
	return min(10*time.Second, max(b.cfg.ClientExpiry/4, time.Second))
}

// sweepInterval is the interval of the next sweep: expiryInterval, or the
// shorter one the registered idle timeouts need.
func (b *Broker) sweepInterval() time.Duration {
	d := b.expiryInterval()
	if i := b.conns.sweepInterval(); i > 0 && i < d {
		d = i
	}
	return d
}

func (b *Broker) armExpiry() {
	d := b.sweepInterval()
	c := &b.clients
	c.mu.Lock()
	defer c.mu.Unlock()
	b.armExpiryLocked(d)
}

// armExpiryLocked replaces the pending sweep by one d from now; mu is
// held. (Replacing, not adding: a sweep that runs while another was armed
// leaves one pending sweep behind.)
func (b *Broker) armExpiryLocked(d time.Duration) {
	c := &b.clients
	if c.closed {
		return
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	c.due = b.now().Add(d)
	c.timer = b.clk.AfterFunc(d, b.expireClients)
}

// sweepWithin makes the next sweep run no later than d from now (a new
// registration whose idle timeout needs a shorter interval than the one
// armed).
func (b *Broker) sweepWithin(d time.Duration) {
	c := &b.clients
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil && !c.due.After(b.now().Add(d)) {
		return
	}
	b.armExpiryLocked(d)
}

// expireClients drops the registrations idle for their IdleTimeout (as
// ConnClosed would, then telling their handlers), the (connection, group)
// pairs and producer registrations not refreshed for ClientExpiry, and
// queue locks not renewed for LockExpiry, then re-arms itself.
func (b *Broker) expireClients() {
	now := b.now()
	stale := func(seen time.Time) bool { return now.Sub(seen) >= b.cfg.ClientExpiry }
	gone := b.conns.expire(now)
	c := &b.clients
	var changes []idsChange
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	for _, x := range gone {
		changes = append(changes, c.dropAllLocked(x.id)...)
	}
	for conn, cs := range c.conns {
		ch := c.dropConnLocked(conn, cs, func(_ string, m *member) bool { return !stale(m.lastSeen) })
		for _, x := range ch {
			b.log.Info("consumer expired", "group", x.group, "client_id", cs.clientID, "conn", conn)
		}
		changes = append(changes, ch...)
		c.dropProducersLocked(conn, cs, stale)
		if len(cs.consumers) == 0 && len(cs.producers) == 0 {
			c.deleteConnLocked(conn)
		}
	}
	c.mu.Unlock()
	for _, x := range gone {
		b.log.Info("connection expired", "protocol", x.e.info.Protocol, "conn", x.id, "client_id", x.e.info.ClientID,
			"remote", x.e.info.Remote.String(), "idle_for", x.idle)
		b.answerConnPolls(x.id)
		if x.e.h != nil {
			x.e.h.Expired()
		}
	}
	b.expireLocks(now)
	b.consumerIDsChanged(changes)
	b.armExpiry()
}
