package broker

import (
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
)

// Config configures a Broker. DefaultConfig gives every default; New fills
// zero numeric fields, a nil Clock and a nil Logger with them (booleans are
// taken as given). None of the fields can be changed after New.
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
	// StoreHost is the client-facing address. Default: the store's
	// StoreHost. Its IPv4 bytes seed the UNIQ_KEY given to batch items.
	StoreHost netip.AddrPort
	// AutoCreateTopics lets a send to an unknown topic create it from the
	// template named by the send's defaultTopic (TBW102), with
	// min(4-or-the-request's defaultTopicQueueNums, template write queues)
	// queues and the template's permission without the inherit bit (6).
	// New creates TBW102 when it is on. Default true.
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
	// ClientExpiry: a (group, client) pair not named by a heartbeat for
	// this long is dropped. Default 120 s.
	ClientExpiry time.Duration
	// LockExpiry: an orderly queue lock not renewed for this long can be
	// taken by another client. Keep it above the clients' 30 s lock
	// validity. Default 60 s.
	LockExpiry time.Duration
	// Clock drives long-poll timeouts, client expiry and lock expiry.
	// Default clock.Real.
	Clock clock.Clock
	// Logger receives lifecycle and degraded-state messages. Default: discard.
	Logger *slog.Logger
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		BrokerName:            "broker-a",
		ClusterName:           "DefaultCluster",
		AutoCreateTopics:      true,
		DefaultTopicQueueNums: 8,
		MaxMessageBytes:       4 << 20,
		LongPollMaxTotal:      100_000,
		LongPollMaxPerConn:    1_000,
		ClientExpiry:          120 * time.Second,
		LockExpiry:            60 * time.Second,
		Clock:                 clock.Real,
		Logger:                slog.New(slog.DiscardHandler),
	}
}

func (c *Config) fill() {
	d := DefaultConfig()
	if c.BrokerName == "" {
		c.BrokerName = d.BrokerName
	}
	if c.ClusterName == "" {
		c.ClusterName = d.ClusterName
	}
	if c.DefaultTopicQueueNums == 0 {
		c.DefaultTopicQueueNums = d.DefaultTopicQueueNums
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = d.MaxMessageBytes
	}
	if c.LongPollMaxTotal == 0 {
		c.LongPollMaxTotal = d.LongPollMaxTotal
	}
	if c.LongPollMaxPerConn == 0 {
		c.LongPollMaxPerConn = d.LongPollMaxPerConn
	}
	if c.ClientExpiry == 0 {
		c.ClientExpiry = d.ClientExpiry
	}
	if c.LockExpiry == 0 {
		c.LockExpiry = d.LockExpiry
	}
	if c.Clock == nil {
		c.Clock = d.Clock
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
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
	case c.ClientExpiry < time.Second:
		return fmt.Errorf("broker: ClientExpiry %v is below the minimum 1s", c.ClientExpiry)
	case c.LockExpiry < time.Second:
		return fmt.Errorf("broker: LockExpiry %v is below the minimum 1s", c.LockExpiry)
	}
	return nil
}
