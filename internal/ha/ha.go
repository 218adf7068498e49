package ha

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/ha/epoch"
	"github.com/petrelmq/petrel/internal/ha/track"
	"github.com/petrelmq/petrel/internal/ha/wire"
	"github.com/petrelmq/petrel/internal/netx"
)

// Source is the master's store, as the fetch server needs it (the daemon
// adapts internal/store).
type Source interface {
	// ReadRaw returns bytes [off, min(off+max, Written())) of one segment;
	// an off below MinOffset is an error.
	ReadRaw(off int64, max int) ([]byte, error)
	Written() int64
	Durable() int64
	// MinOffset is the first retained byte.
	MinOffset() int64
	// WaitWritten returns nil once Written() > off, or ctx's error.
	WaitWritten(ctx context.Context, off int64) error
}

// RawReaderInto is a Source that reads into the caller's buffer
// (internal/store: ReadRawInto): the fetch server then reuses one buffer
// per connection instead of allocating each response's bytes.
type RawReaderInto interface {
	ReadRawInto(off int64, p []byte) (int, error)
}

// Sink is the slave's store.
type Sink interface {
	// AppendRaw appends b at off, which equals Written() (or, on an empty
	// log, the master's LogStart: the store starts its log there).
	AppendRaw(off int64, b []byte) error
	Written() int64
	Durable() int64
	// SetCommitPoint bounds what the slave's dispatcher makes visible.
	SetCommitPoint(off int64)
}

// Restarter is implemented by a Sink that can drop its whole log and start
// empty at off (store.Store.ResetAt). A slave whose log ends below the
// master's first retained byte uses it to start over; without it, the
// slave stops with Err.
type Restarter interface {
	ResetAt(off int64) error
	// CommitLogMinOffset is the first byte the log holds: a log that ends
	// there holds none (a fresh copy, or one just reset).
	CommitLogMinOffset() int64
}

// Truncater is implemented by a Sink that can cut its log back to a record
// boundary (the daemon adapts store.Store.TruncateTo). A slave whose log
// diverges from the master's (wire.Diverging: an old master rejoining)
// uses it to drop its records above the point the two logs share, then
// fetches again; without it, the slave stops with ErrNotPrefix as in
// phase 1. TruncateTo must refuse a cut below the store's commit point,
// changing nothing.
type Truncater interface {
	TruncateTo(off int64) (Truncation, error)
	// CommitPoint is the store's commit point (persisted across
	// restarts): the slave refuses to cut below it, or below the one it
	// applied itself, before it calls TruncateTo.
	CommitPoint() int64
}

// Truncation is what a Truncater dropped.
type Truncation struct {
	Bytes    int64    // bytes dropped above the cut
	Messages int      // whole records dropped
	MsgIDs   []string // their message ids, oldest first, bounded by the store
}

// Errors. The slave's Err wraps one of them.
var (
	// ErrNotPrefix: the slave's log is not a prefix of the master's (it
	// has bytes the master does not, or of an epoch the master does not
	// have there) and its store cannot truncate (no Truncater), or it is
	// no copy at all: the slave stops.
	ErrNotPrefix = errors.New("ha: slave log is not a prefix of the master's")
	// ErrRefused: the master refused the slave for a reason an operator
	// must fix (another group, a bad replica id).
	ErrRefused = errors.New("ha: master refused the slave")
	// ErrBelowLogStart: the slave's log ends below the master's first
	// retained byte and its store cannot start over (no Restarter).
	ErrBelowLogStart = errors.New("ha: slave log ends below the master's first retained byte")
	// ErrBelowCommitPoint: the master's log diverges from the slave's
	// below the slave's commit point, so the slave would have to drop
	// records it counted as committed: only a bug or an unclean election
	// does that. The slave stops (it must not ack) until an operator acts.
	ErrBelowCommitPoint = errors.New("ha: the master's log diverges below the slave's commit point")
	// ErrTruncate: the slave's store failed to cut its divergent tail;
	// what it holds is unknown until it is reopened.
	ErrTruncate = errors.New("ha: truncating the slave's log failed")
	// ErrUnauthorized: the master requires credentials (--auth) and
	// refused the slave's (none, or not a super user's). Not final: the
	// slave retries after its back-off, as the users may change.
	ErrUnauthorized = errors.New("ha: the master refused replication")
	// ErrProtocol: the master broke the fetch protocol (the slave drops
	// the connection and re-syncs from its end).
	ErrProtocol = errors.New("ha: protocol violation")
)

const (
	// maxFetchFrame bounds a Fetch frame the master reads (a Fetch is a
	// few dozen bytes and the group name).
	maxFetchFrame = 4 << 10
	// respHeadroom is the room a FetchResp needs besides its Data.
	respHeadroom = 4 << 10
	// lingerBytes is what a lingering response waits for (MasterConfig.Linger).
	lingerBytes = 256 << 10
	// maxMessage bounds the Message of an error response.
	maxMessage = 512
)

// MasterConfig configures StartMaster.
type MasterConfig struct {
	// Group is the broker name; fetches of another group are refused.
	Group string
	// Listen is the replication address ("host:port"; the daemon's
	// --ha-listen, default ":10912").
	Listen string
	// Network listens; nil means TCP.
	Network netx.Network
	// Tracker computes the commit point; required.
	Tracker *track.Tracker
	// Epochs is the master's epoch history; required. StartMaster appends
	// epoch 1 at the log's first byte when it is empty.
	Epochs *epoch.History
	// OnCommit is called, from one goroutine, with every new commit point
	// (strictly increasing); the daemon wires it to Store.SetCommitPoint.
	OnCommit func(hw int64)
	// OnStale, when set, is called when a slave's handshake carries a
	// newer master epoch than this master's (answered wire.NewerEpoch):
	// this master is stale, and the daemon fences it. It runs on the
	// connection's goroutine and must not block.
	OnStale func(slaveEpoch uint32)
	// Authenticate, when set, makes every connection open with a valid
	// wire.Auth frame: it is called with the frame's access key, the
	// content its signature covers (wire.AuthContent of this master's
	// Group, the frame's time and nonce) and the signature, and returns
	// nil when the user may replicate (the daemon: a super user), else an
	// error whose text goes to the slave (it names the user and what is
	// missing, never a secret). A connection whose first frame is no Auth
	// is refused too, after Authenticate("", nil, nil) (which must refuse:
	// it counts the attempt). Refusals answer wire.Unauthorized and close.
	// Nil: no authentication, and an Auth frame is accepted and ignored.
	Authenticate func(accessKey string, content, sig []byte) error
	// MaxBytes caps the Data of one response (default 1 MiB; at most
	// wire.MaxFrame minus room for the header).
	MaxBytes int32
	// MaxWait caps a fetch's long poll (default 1 s).
	MaxWait time.Duration
	// IdleTimeout closes a connection that sends no fetch for this long
	// (default 30 s): how a master notices a partitioned slave.
	IdleTimeout time.Duration
	// TickInterval is how often the tracker re-evaluates lag by time
	// (default 500 ms).
	TickInterval time.Duration
	// Linger, when positive, lets a response whose fetch was woken by new
	// bytes wait up to this long for lingerBytes of them, so that a slave
	// fed by many small writes gets fewer, larger responses (fewer frames,
	// syscalls and wake-ups on both ends). For async replication, where no
	// send waits for the slaves; 0 (the default) answers at once.
	Linger time.Duration
	// HWPushDelay, when positive, holds a long poll that only a commit
	// point move woke for up to this long, for new bytes to send with it:
	// under load every slave ack moves the commit point, and answering each
	// move alone costs a response and a fetch more per ack. 0 (the default)
	// pushes every move at once.
	HWPushDelay time.Duration
	// DurablePoll is how often the master looks at the source's durable
	// end while it trails the written end (default 1 ms).
	DurablePoll time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// Clock; nil means clock.Real.
	Clock clock.Clock
}

func (c *MasterConfig) setDefaults() {
	if c.DurablePoll == 0 {
		c.DurablePoll = time.Millisecond
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = 1 << 20
	}
	if c.MaxWait == 0 {
		c.MaxWait = time.Second
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 30 * time.Second
	}
	if c.TickInterval == 0 {
		c.TickInterval = 500 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	c.Network = netx.Or(c.Network)
}

// Validate names the first bad field.
func (c *MasterConfig) Validate() error {
	switch {
	case c.Tracker == nil:
		return errors.New("ha: MasterConfig.Tracker is required")
	case c.Epochs == nil:
		return errors.New("ha: MasterConfig.Epochs is required")
	case c.Listen == "":
		return errors.New("ha: MasterConfig.Listen is required")
	case c.MaxBytes <= 0 || int64(c.MaxBytes) > wire.MaxFrame-respHeadroom:
		return fmt.Errorf("ha: MasterConfig.MaxBytes %d out of range [1, %d]", c.MaxBytes, wire.MaxFrame-respHeadroom)
	case c.MaxWait < 0:
		return fmt.Errorf("ha: MasterConfig.MaxWait %v is negative", c.MaxWait)
	case c.IdleTimeout <= c.MaxWait:
		return fmt.Errorf("ha: MasterConfig.IdleTimeout %v must exceed MaxWait %v", c.IdleTimeout, c.MaxWait)
	case c.Linger < 0 || c.Linger >= c.MaxWait && c.Linger > 0:
		return fmt.Errorf("ha: MasterConfig.Linger %v must be in [0, MaxWait %v)", c.Linger, c.MaxWait)
	case c.HWPushDelay < 0 || c.HWPushDelay >= c.IdleTimeout-c.MaxWait && c.HWPushDelay > 0:
		return fmt.Errorf("ha: MasterConfig.HWPushDelay %v must be in [0, IdleTimeout-MaxWait)", c.HWPushDelay)
	case c.DurablePoll < 0:
		return fmt.Errorf("ha: MasterConfig.DurablePoll %v is negative", c.DurablePoll)
	case c.TickInterval <= 0:
		return fmt.Errorf("ha: MasterConfig.TickInterval %v must be positive", c.TickInterval)
	}
	return nil
}

// SlaveConfig configures StartSlave.
type SlaveConfig struct {
	// Group is the broker name.
	Group string
	// ID is the slave's broker id (≥ 1).
	ID int64
	// Master returns the master's current replication address ("" while
	// unknown); it is asked again before every connection attempt.
	Master func() string
	// Network dials; nil means TCP.
	Network netx.Network
	// Epochs is the slave's epoch history; required.
	Epochs *epoch.History
	// Credentials, when set, are sent (signed) in a wire.Auth frame first
	// on every connection: a master with authentication on wants those of
	// a super user (the cluster's --auth-init-user).
	Credentials Credentials
	// MaxBytes asks for at most this much Data per response (default 1 MiB).
	MaxBytes int32
	// MaxWait is the long poll asked of the master (default 500 ms).
	MaxWait time.Duration
	// ResponseTimeout: a response later than MaxWait plus this drops the
	// connection (default 5 s): how a slave notices a partition.
	ResponseTimeout time.Duration
	// OnRestart, when set, is called after the local log started over
	// (Restarter.ResetAt) from the master's first retained byte to: from
	// was its end. It runs on the fetch goroutine before the next fetch.
	OnRestart func(from, to int64)
	// BackoffMin and BackoffMax bound the reconnect back-off, which doubles
	// from BackoffMin after each failed attempt (defaults 100 ms, 5 s).
	BackoffMin, BackoffMax time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// Clock; nil means clock.Real.
	Clock clock.Clock
}

func (c *SlaveConfig) setDefaults() {
	if c.MaxBytes == 0 {
		c.MaxBytes = 1 << 20
	}
	if c.MaxWait == 0 {
		c.MaxWait = 500 * time.Millisecond
	}
	if c.ResponseTimeout == 0 {
		c.ResponseTimeout = 5 * time.Second
	}
	if c.BackoffMin == 0 {
		c.BackoffMin = 100 * time.Millisecond
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	c.Network = netx.Or(c.Network)
}

// Validate names the first bad field.
func (c *SlaveConfig) Validate() error {
	switch {
	case c.ID < 1:
		return fmt.Errorf("ha: SlaveConfig.ID %d must be ≥ 1", c.ID)
	case c.Master == nil:
		return errors.New("ha: SlaveConfig.Master is required")
	case c.Epochs == nil:
		return errors.New("ha: SlaveConfig.Epochs is required")
	case c.MaxBytes <= 0 || int64(c.MaxBytes) > wire.MaxFrame-respHeadroom:
		return fmt.Errorf("ha: SlaveConfig.MaxBytes %d out of range [1, %d]", c.MaxBytes, wire.MaxFrame-respHeadroom)
	case c.MaxWait < 0 || c.ResponseTimeout < 0:
		return errors.New("ha: SlaveConfig.MaxWait and ResponseTimeout must not be negative")
	case c.BackoffMin <= 0 || c.BackoffMax < c.BackoffMin:
		return fmt.Errorf("ha: SlaveConfig back-off [%v, %v] is not a range", c.BackoffMin, c.BackoffMax)
	case c.Credentials.AccessKey == "" && c.Credentials.SecretKey != "":
		return errors.New("ha: SlaveConfig.Credentials has a SecretKey but no AccessKey")
	case len(c.Credentials.AccessKey) > wire.MaxAccessKey:
		return fmt.Errorf("ha: SlaveConfig.Credentials.AccessKey is %d bytes, at most %d", len(c.Credentials.AccessKey), wire.MaxAccessKey)
	}
	return nil
}

// Credentials are a user's access key (name) and secret.
type Credentials struct {
	AccessKey, SecretKey string
}

// maxAuthSkew bounds how far an Auth frame's time may be from the
// master's clock: a captured frame replays on a plaintext connection
// for at most this long.
const maxAuthSkew = 5 * time.Minute

// epochOf returns the entry whose range holds off in es (sorted by Start):
// the last entry starting at or before off.
func epochOf(es []epoch.Entry, off int64) (epoch.Entry, bool) {
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Start <= off {
			return es[i], true
		}
	}
	return epoch.Entry{}, false
}

// endOf returns where epoch entry e of es ends: the start of the first
// later-starting entry, or leo.
func endOf(es []epoch.Entry, e epoch.Entry, leo int64) int64 {
	for _, x := range es {
		if x.Start > e.Start {
			return x.Start
		}
	}
	return leo
}

// clip shortens s to at most n bytes (for messages sent to a peer).
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
