package txn

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
)

// System topics and the progress group (RocketMQ's TopicValidator and
// MixAll names, so admin tools recognise them).
const (
	// HalfTopic holds half messages, all in queue 0.
	HalfTopic = "RMQ_SYS_TRANS_HALF_TOPIC"
	// OpTopic holds op records, all in queue 0: "this half is done".
	OpTopic = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	// CheckMaxTimeTopic is where RocketMQ 5 moves halves checked too often.
	// Petrel only discards them (op record and a log line); the name is
	// exported so that the broker refuses client sends to it like Java.
	CheckMaxTimeTopic = "TRANS_CHECK_MAX_TIME_TOPIC"
	// ProgressGroup is the system consumer group whose offsets on HalfTopic
	// and OpTopic (queue 0) are the check progress.
	ProgressGroup = "CID_RMQ_SYS_TRANS"
	// OpTag is the TAGS value of every op record (RocketMQ's REMOVE_TAG).
	OpTag = "d"
)

// Property keys (RocketMQ's MessageConst) read or written here.
const (
	// PropertyTransactionPrepared ("TRAN_MSG" = "true") marks a message the
	// producer sends as a half; removed from the committed message.
	PropertyTransactionPrepared = message.PropertyTransactionFlag
	// PropertyProducerGroup ("PGROUP") names the producer group, set by the
	// client; End requires it to match and checks go to that group.
	PropertyProducerGroup = message.PropertyProducerGroup
	// PropertyRealTopic and PropertyRealQueueID hold the topic and queue
	// the half will be committed to.
	PropertyRealTopic   = message.PropertyRealTopic
	PropertyRealQueueID = message.PropertyRealQueueID
	// PropertyCheckTimes counts the checks of a half; written on each copy
	// of the half re-stored after a check.
	PropertyCheckTimes = "TRANSACTION_CHECK_TIMES"
	// PropertyCheckImmunitySeconds, set by the producer, delays the first
	// check: it comes no sooner than max(this, Config.Timeout) after the
	// half was stored.
	PropertyCheckImmunitySeconds = "CHECK_IMMUNITY_TIME_IN_SECONDS"
	// PropertyPreparedQueueOffset, on a re-stored copy, is the queue offset
	// of the first half of the transaction (its origin).
	PropertyPreparedQueueOffset = "TRAN_PREPARED_QUEUE_OFFSET"
	// PropertyTransactionID is the transaction id: a half's UNIQ_KEY (set
	// by Half, as RocketMQ's broker does), kept on the committed message.
	PropertyTransactionID = "__transactionId__"
	// PropertyNextCheck (Petrel's own), on a re-stored copy, is when the
	// next check is due, in ms since the epoch. Removed from the committed
	// message and from check bodies.
	PropertyNextCheck = "PETREL_TRAN_NEXT_CHECK"
)

// Transaction types: the commitOrRollback field of END_TRANSACTION and the
// transaction bits of SYSFLAG (RocketMQ's MessageSysFlag).
const (
	EndUnknown  int32 = 0  // TRANSACTION_NOT_TYPE: still undecided
	EndCommit   int32 = 8  // TRANSACTION_COMMIT_TYPE
	EndRollback int32 = 12 // TRANSACTION_ROLLBACK_TYPE
)

// Errors End returns. The front maps all of them to SYSTEM_ERROR (END is
// oneway; the answer is dropped), the cause goes to the log.
var (
	// ErrHalfNotFound: no record at the commit-log offset (removed by
	// retention, or a bad offset).
	ErrHalfNotFound = errors.New("txn: half message not found")
	// ErrNotHalf: the record at the offset is not a half message, or its
	// REAL_TOPIC / REAL_QID are unusable.
	ErrNotHalf = errors.New("txn: not a half message")
	// ErrGroupMismatch: the half belongs to another producer group (Java:
	// "The producer group wrong").
	ErrGroupMismatch = errors.New("txn: half message belongs to another producer group")
	// ErrOffsetMismatch: tranStateTableOffset or commitLogOffset do not
	// match the half's queue and commit-log offsets.
	ErrOffsetMismatch = errors.New("txn: end request offsets do not match the half message")
	// ErrBadEndType: commitOrRollback is not 0, 8 or 12.
	ErrBadEndType = errors.New("txn: commitOrRollback is not 0, 8 or 12")
	// ErrClosed: the manager is closed.
	ErrClosed = errors.New("txn: manager closed")
)

// Checker asks one live producer connection of group for the state of a
// half (the broker sends CHECK_TRANSACTION_STATE; see CheckRequest for the
// header and body). half is the stored half record, the checker's to keep;
// queueOffset is its offset in HalfTopic. It returns false when no producer
// of the group is online: the check is then not counted and is tried again
// one CheckInterval later. It is called from the manager's check round,
// one half at a time, and must not block for long (a oneway send); it may
// call End.
type Checker func(group string, half message.Record, queueOffset int64) bool

// Config configures a Manager. Zero fields take the defaults of
// DefaultConfig.
type Config struct {
	// Clock drives the check rounds. Default clock.Real.
	Clock clock.Clock
	// Timeout is how long after it was stored a half is first checked
	// (RocketMQ's transactionTimeOut); a half's CHECK_IMMUNITY_TIME_IN_SECONDS
	// can only lengthen it. Default 6 s.
	Timeout time.Duration
	// CheckInterval is the least time between two checks of one half, and
	// the longest between two check rounds (RocketMQ's
	// transactionCheckInterval). Default 60 s.
	CheckInterval time.Duration
	// MaxChecks: a half checked this many times without an answer is
	// discarded one CheckInterval after its last check (RocketMQ's
	// transactionCheckMax). Default 15.
	MaxChecks int
	// Logger gets lifecycle lines (Info), discards and store failures
	// (Warn). Default: discard.
	Logger *slog.Logger
	// Standby, when set and true, holds the rounds to reading: the state
	// follows the half and op records the log brings (a slave's, from its
	// master), but nothing is checked back, re-stored or discarded — the
	// master does that and its records arrive by replication. Asked at
	// each round; Kick runs one at once when it turns false.
	Standby func() bool
}

// DefaultConfig returns RocketMQ's defaults.
func DefaultConfig() Config {
	return Config{
		Clock:         clock.Real,
		Timeout:       6 * time.Second,
		CheckInterval: 60 * time.Second,
		MaxChecks:     15,
		Logger:        slog.New(slog.DiscardHandler),
	}
}

func (c *Config) fill() {
	d := DefaultConfig()
	c.Clock = cmp.Or(c.Clock, d.Clock)
	c.Timeout = cmp.Or(c.Timeout, d.Timeout)
	c.CheckInterval = cmp.Or(c.CheckInterval, d.CheckInterval)
	c.MaxChecks = cmp.Or(c.MaxChecks, d.MaxChecks)
	c.Logger = cmp.Or(c.Logger, d.Logger)
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	switch {
	case c.Timeout < 0:
		return fmt.Errorf("txn: Timeout %v is negative", c.Timeout)
	case c.CheckInterval < time.Millisecond:
		return fmt.Errorf("txn: CheckInterval %v is below 1ms", c.CheckInterval)
	case c.MaxChecks < 1:
		return fmt.Errorf("txn: MaxChecks %d is below 1", c.MaxChecks)
	}
	return nil
}

// IsHalfTopic reports whether topic is the half topic.
func IsHalfTopic(topic string) bool { return topic == HalfTopic }

// IsSystemTopic reports whether topic is one of the transaction system
// topics (half, op, check-max). Clients may not send to them, and they are
// never registered with name servers or offered in routes.
func IsSystemTopic(topic string) bool {
	return topic == HalfTopic || topic == OpTopic || topic == CheckMaxTimeTopic
}

// EndRequest is a decoded END_TRANSACTION (code 37) header.
type EndRequest struct {
	ProducerGroup string
	// TranStateTableOffset is the half's queue offset in HalfTopic.
	TranStateTableOffset int64
	// CommitLogOffset is the half's commit-log offset.
	CommitLogOffset int64
	// CommitOrRollback is EndCommit, EndRollback or EndUnknown.
	CommitOrRollback     int32
	FromTransactionCheck bool
	// MsgID and TransactionID are only logged (Java does not check them).
	MsgID         string
	TransactionID string
}
