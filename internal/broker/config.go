package broker

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
)

// Config configures a Broker. DefaultConfig gives every default; New fills
// zero numeric fields, a nil Clock and a nil Logger with them (booleans are
// taken as given). None of the fields can be changed after New; the
// settings of settings.go (AutoCreateTopics and the broker's permission)
// start from them and change at run time.
type Config struct {
	// BrokerName names this broker in routes and message queues.
	// Default "broker-a".
	BrokerName string
	// ClusterName is the cluster this broker belongs to; it is also put in
	// the CLUSTER property of every stored message (request/reply needs it).
	// Default "DefaultCluster".
	ClusterName string
	// BrokerID is 0 for a master. Default 0.
	BrokerID int64
	// Role is the replication role at start (RoleForID(BrokerID) is
	// RocketMQ's rule; SetRole changes it later). A slave refuses writes
	// (see replication.go). Default RoleMaster.
	Role Role
	// Replicator, when set on a master, makes sends wait for the slaves
	// (sync replication): a send durable locally is answered once
	// WaitReplicated(end of its records) returns, SendFlushSlaveTimeout
	// after ReplicationTimeout, SendSlaveNotAvailable when too few slaves
	// are in sync. Nil: no wait, exactly a single broker's behaviour.
	Replicator Replicator
	// ReplicationAsync answers sends after the local flush even with a
	// Replicator (async replication: the slaves catch up behind).
	ReplicationAsync bool
	// ReplicationTimeout bounds the wait for the slaves, by Clock.
	// Default 3 s.
	ReplicationTimeout time.Duration
	// Lease, when set, is the master lease of controller mode (lease.go):
	// a master refuses sends while it is not Valid (KindServiceUnavailable,
	// nothing stored) and answers a stored send whose lease ran out before
	// its answer FLUSH_SLAVE_TIMEOUT instead of SEND_OK, with sync and
	// async replication alike. Nil: no lease (a group without a
	// controller, or a single broker).
	Lease Lease
	// MasterAddr, when set, returns the remoting address ("host:port") of
	// this broker's master, or "" when none is known; a slave's remoting
	// front forwards the sends of 4.x producers to it (a demoted master
	// keeps serving the producers that have not refreshed their routes).
	// It must be quick and safe for concurrent use. Nil: a slave refuses
	// sends.
	MasterAddr func() string
	// MasterMoved, when set, returns a context that ends once the group's
	// master is no longer the one MasterAddr named when it was called
	// (call it first): a slave's forwards to a master that was replaced —
	// paused, cut off, or this broker itself promoted — end with it rather
	// than at their timeout (WhileMasterStays). It must be quick and safe
	// for concurrent use. Nil: forwards end only at their timeout.
	MasterMoved func() context.Context
	// ReplicationStatus, when set, reports the replication state
	// (replstatus.go) for runtime info and metrics; it must be quick and
	// safe for concurrent use. Default nil: not replicated.
	ReplicationStatus func() ReplicationInfo
	// SlaveReadEnable lets pull answers send consumers to a slave
	// (RocketMQ's slaveReadEnable; suggest.go): a pull reading more than
	// AccessMessageInMemoryMaxRatio percent of PhysicalMemory behind the
	// write point is told the group's whichBrokerWhenConsumeSlowly, others
	// the group's brokerId; a slave sends consumers that keep up back to
	// the master. Off, every pull answer suggests the master (slaves serve
	// pulls either way). Default false, as RocketMQ's.
	SlaveReadEnable bool
	// AccessMessageInMemoryMaxRatio is that percent, 1..100. Default 40.
	AccessMessageInMemoryMaxRatio int
	// PhysicalMemory is the memory in bytes the rule above takes a ratio
	// of. Default (0): read from the system at New: the machine's, or its
	// cgroup's limit when lower (a container); where it cannot be read, no
	// pull counts as slow.
	PhysicalMemory int64
	// StateReplication makes the broker take part in its group's state
	// stream (state.go): a master writes its topic, group and offset
	// changes (and the state other parts register) into StateTopic; a
	// slave applies them to its own tables and hands offsets committed on
	// it back to the master. The daemon sets it on every member of a
	// replicated group. Default false: a single broker writes nothing.
	StateReplication bool
	// StateFlushInterval is how often a master emits the consumer offsets
	// changed since the last time, and a slave hands its pending offsets
	// back, by Clock. Default 1 s.
	StateFlushInterval time.Duration
	// HandBackOffsets, on a slave, hands offsets committed on it to its
	// master (TakeHandedBackOffsets there) and returns the master's answer;
	// the daemon sets it. Nil: offsets committed on the slave stay pending.
	HandBackOffsets func(ctx context.Context, offs []OffsetEntry) (HandBack, error)
	// StoreHost is the client-facing address. Default: the store's
	// StoreHost. Its IPv4 bytes seed the UNIQ_KEY given to batch items.
	StoreHost netip.AddrPort
	// AutoCreateTopics lets a send to an unknown topic create it from the
	// template named by the send's defaultTopic (TBW102), with
	// min(4-or-the-request's defaultTopicQueueNums, template write queues)
	// queues and the template's permission without the inherit bit (6).
	// New creates TBW102 when it is on. Default true. This is the value at
	// start; SetAutoCreateTopics changes it at run time.
	AutoCreateTopics bool
	// DefaultTopicQueueNums is the queue count of the TBW102 template.
	// Default 8.
	DefaultTopicQueueNums int32
	// MaxMessageBytes bounds a send's body (a batch's whole body too).
	// Default 4 MiB.
	MaxMessageBytes int
	// LongPollMaxTotal bounds parked pulls in all; LongPollMaxPerConn per
	// connection. Beyond them a pull is refused with KindServiceUnavailable.
	// Defaults 100,000 and 1,000.
	LongPollMaxTotal, LongPollMaxPerConn int
	// PullMaxSuspend caps how long a 4.x pull is held when nothing is new
	// (its suspendTimeoutMillis), below the clients' 30 s request timeout.
	// Default 25 s.
	PullMaxSuspend time.Duration
	// PopMaxWait caps how long a pop (a 5.x ReceiveMessage, whose front
	// asks for the client's long-polling timeout) is held when nothing is
	// visible. Default 2 min.
	PopMaxWait time.Duration
	// ClientExpiry: a (group, client) pair not named by a heartbeat for
	// this long is dropped. Default 120 s.
	ClientExpiry time.Duration
	// LockExpiry: an orderly queue lock not renewed for this long can be
	// taken by another client. Keep it above the clients' 30 s lock
	// validity. Default 60 s.
	LockExpiry time.Duration
	// DelayLevels are the delays of the DELAY property's levels 1..n (a
	// higher level means the last one). Default RocketMQ's 18: 1s 5s 10s
	// 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h.
	DelayLevels []time.Duration
	// MaxTimerDelay caps how far ahead a delayed message may be due (the
	// 5.x timer properties); later ones are refused. Default 7 days.
	MaxTimerDelay time.Duration
	// NoTopicMessageTypeCheck turns off the check of a send's message type
	// against its topic's message.type attribute (policy.go), on every
	// front: RocketMQ's enableTopicMessageTypeCheck=false. Default false
	// (checked, as RocketMQ's default true).
	NoTopicMessageTypeCheck bool
	// DedupWindow: a resend of a message (same UNIQ_KEY, same topic) within
	// this long of the original is answered with the original's result and
	// not stored again. Negative disables. Default 10 minutes.
	DedupWindow time.Duration
	// TransactionTimeout: an undecided transaction is first checked back
	// this long after its half message was stored (or after the message's
	// CHECK_IMMUNITY_TIME_IN_SECONDS when longer). Default 6 s.
	TransactionTimeout time.Duration
	// TransactionCheckInterval separates the check-backs of a transaction.
	// Default 60 s.
	TransactionCheckInterval time.Duration
	// TransactionMaxChecks: after this many check-backs without an answer
	// the half message is discarded (and logged). Default 15.
	TransactionMaxChecks int
	// DefaultMaxReconsumeTimes is the attempts a failed message gets
	// before its dead-letter queue when the consumer names none. Default 16.
	DefaultMaxReconsumeTimes int32
	// PopMaxInFlight bounds the messages a pop (simple-consumer) group may
	// hold unacknowledged on this broker; beyond it Pop is refused with
	// KindServiceUnavailable until the group acknowledges or the messages'
	// invisible time passes. Concurrent pops may overshoot it by a batch
	// each. Default 100,000.
	PopMaxInFlight int
	// ObserveSend, when set, is called once for every send (of Send or
	// SendBatch) the broker answers (stored, deduplicated or refused) with
	// the time from the call to the answer, by Clock. It runs on the
	// answering goroutine (often the store's) and must not block.
	// Default nil.
	ObserveSend func(took time.Duration)
	// Clock drives long-poll timeouts, client expiry, lock expiry and
	// delayed delivery. Default clock.Real.
	Clock clock.Clock
	// Logger receives lifecycle and degraded-state messages. Default: discard.
	Logger *slog.Logger
}

// DefaultDelayLevels are RocketMQ's delay levels 1..18.
var DefaultDelayLevels = []time.Duration{
	time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 3 * time.Minute, 4 * time.Minute, 5 * time.Minute,
	6 * time.Minute, 7 * time.Minute, 8 * time.Minute, 9 * time.Minute, 10 * time.Minute,
	20 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour,
}

// ParseDelayLevels parses delay levels written as Go durations separated
// by spaces ("1s 5s 10s"), the form of the --delay-levels flag.
func ParseDelayLevels(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Fields(s) {
		d, err := time.ParseDuration(f)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("delay level %d %q is not a positive duration like 5s or 2m", len(out)+1, f)
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no delay levels in %q; give durations separated by spaces, like \"1s 5s 10s\"", s)
	}
	return out, nil
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return withReadDefaults(Config{
		BrokerName:               "broker-a",
		ClusterName:              "DefaultCluster",
		AutoCreateTopics:         true,
		DefaultTopicQueueNums:    8,
		MaxMessageBytes:          4 << 20,
		LongPollMaxTotal:         100_000,
		LongPollMaxPerConn:       1_000,
		PullMaxSuspend:           25 * time.Second,
		PopMaxWait:               2 * time.Minute,
		ClientExpiry:             120 * time.Second,
		LockExpiry:               60 * time.Second,
		DelayLevels:              slices.Clone(DefaultDelayLevels),
		MaxTimerDelay:            7 * 24 * time.Hour,
		DefaultMaxReconsumeTimes: 16,
		DedupWindow:              10 * time.Minute,
		PopMaxInFlight:           100_000,
		ReplicationTimeout:       3 * time.Second,
		StateFlushInterval:       time.Second,
		Clock:                    clock.Real,
		Logger:                   slog.New(slog.DiscardHandler),
	})
}

func (c *Config) fill() {
	d := DefaultConfig()
	c.BrokerName = cmp.Or(c.BrokerName, d.BrokerName)
	c.ClusterName = cmp.Or(c.ClusterName, d.ClusterName)
	c.DefaultTopicQueueNums = cmp.Or(c.DefaultTopicQueueNums, d.DefaultTopicQueueNums)
	c.MaxMessageBytes = cmp.Or(c.MaxMessageBytes, d.MaxMessageBytes)
	c.LongPollMaxTotal = cmp.Or(c.LongPollMaxTotal, d.LongPollMaxTotal)
	c.LongPollMaxPerConn = cmp.Or(c.LongPollMaxPerConn, d.LongPollMaxPerConn)
	c.PullMaxSuspend = cmp.Or(c.PullMaxSuspend, d.PullMaxSuspend)
	c.PopMaxWait = cmp.Or(c.PopMaxWait, d.PopMaxWait)
	c.ClientExpiry = cmp.Or(c.ClientExpiry, d.ClientExpiry)
	c.LockExpiry = cmp.Or(c.LockExpiry, d.LockExpiry)
	if len(c.DelayLevels) == 0 {
		c.DelayLevels = d.DelayLevels
	}
	c.MaxTimerDelay = cmp.Or(c.MaxTimerDelay, d.MaxTimerDelay)
	c.DedupWindow = cmp.Or(c.DedupWindow, d.DedupWindow)
	c.DefaultMaxReconsumeTimes = cmp.Or(c.DefaultMaxReconsumeTimes, d.DefaultMaxReconsumeTimes)
	c.PopMaxInFlight = cmp.Or(c.PopMaxInFlight, d.PopMaxInFlight)
	c.ReplicationTimeout = cmp.Or(c.ReplicationTimeout, d.ReplicationTimeout)
	c.AccessMessageInMemoryMaxRatio = cmp.Or(c.AccessMessageInMemoryMaxRatio, d.AccessMessageInMemoryMaxRatio)
	if c.PhysicalMemory == 0 {
		c.PhysicalMemory = physicalMemory()
	}
	c.StateFlushInterval = cmp.Or(c.StateFlushInterval, d.StateFlushInterval)
	c.Clock = cmp.Or(c.Clock, d.Clock)
	c.Logger = cmp.Or(c.Logger, d.Logger)
}

// Validate names the first bad field and its limit.
func (c *Config) Validate() error {
	switch {
	case !validName(c.BrokerName, 127):
		return fmt.Errorf("broker: BrokerName %q must be 1..127 characters of [%%|a-zA-Z0-9_-]", c.BrokerName)
	case c.BrokerID < 0:
		return fmt.Errorf("broker: BrokerID %d is negative", c.BrokerID)
	case c.DefaultTopicQueueNums < 1 || c.DefaultTopicQueueNums > maxQueueNums:
		return fmt.Errorf("broker: DefaultTopicQueueNums %d must lie in 1..%d", c.DefaultTopicQueueNums, maxQueueNums)
	case c.MaxMessageBytes < 1:
		return fmt.Errorf("broker: MaxMessageBytes %d must be positive", c.MaxMessageBytes)
	case c.LongPollMaxTotal < 1 || c.LongPollMaxPerConn < 1:
		return fmt.Errorf("broker: LongPollMaxTotal %d and LongPollMaxPerConn %d must be positive", c.LongPollMaxTotal, c.LongPollMaxPerConn)
	case c.PullMaxSuspend < 0 || c.PopMaxWait < 0:
		return fmt.Errorf("broker: PullMaxSuspend %v and PopMaxWait %v must not be negative", c.PullMaxSuspend, c.PopMaxWait)
	case c.ClientExpiry < time.Second:
		return fmt.Errorf("broker: ClientExpiry %v is below the minimum 1s", c.ClientExpiry)
	case c.LockExpiry < time.Second:
		return fmt.Errorf("broker: LockExpiry %v is below the minimum 1s", c.LockExpiry)
	case c.MaxTimerDelay < time.Second:
		return fmt.Errorf("broker: MaxTimerDelay %v is below the minimum 1s", c.MaxTimerDelay)
	case c.PopMaxInFlight < 1:
		return fmt.Errorf("broker: PopMaxInFlight %d must be positive", c.PopMaxInFlight)
	case c.Role != RoleMaster && c.Role != RoleSlave:
		return fmt.Errorf("broker: Role %v is neither master nor slave", c.Role)
	case c.ReplicationTimeout < time.Millisecond:
		return fmt.Errorf("broker: ReplicationTimeout %v is below the minimum 1ms", c.ReplicationTimeout)
	case c.AccessMessageInMemoryMaxRatio < 1 || c.AccessMessageInMemoryMaxRatio > 100:
		return fmt.Errorf("broker: AccessMessageInMemoryMaxRatio %d must lie in 1..100 (percent of physical memory)", c.AccessMessageInMemoryMaxRatio)
	case c.PhysicalMemory < 0:
		return fmt.Errorf("broker: PhysicalMemory %d is negative", c.PhysicalMemory)
	case c.StateFlushInterval < time.Millisecond:
		return fmt.Errorf("broker: StateFlushInterval %v is below the minimum 1ms", c.StateFlushInterval)
	case c.DefaultMaxReconsumeTimes < 1:
		return fmt.Errorf("broker: DefaultMaxReconsumeTimes %d must be positive", c.DefaultMaxReconsumeTimes)
	}
	for i, d := range c.DelayLevels {
		if d <= 0 {
			return fmt.Errorf("broker: delay level %d is %v; every level must be positive", i+1, d)
		}
	}
	return nil
}
