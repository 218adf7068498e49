package remoting

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Limits.
const (
	DefaultConnReadBudgetBytes   = 64 << 20
	DefaultServerReadBudgetBytes = 512 << 20
	DefaultFrameReadTimeout      = 60 * time.Second
	// DefaultIdleTimeout is RocketMQ's channel idle time
	// (serverChannelMaxIdleTimeSeconds).
	DefaultIdleTimeout         = 120 * time.Second
	DefaultMaxConns            = 10_000
	DefaultMaxConnsPerIP       = 1_000
	DefaultConnWriteQueueBytes = 32 << 20
)

// Limits bound what the peers of a Server can make it hold: memory for
// frames being read and for answers not yet written, time for a frame to
// arrive, and connections. For every field 0 takes the default and a
// negative value turns the limit off. Each limit hit is logged at Warn (at
// most once per limitLogInterval and kind) and counted in Stats.
type Limits struct {
	// ConnReadBudgetBytes bounds the bytes one connection holds in frames
	// being read plus requests read whose handlers have not finished; at
	// the bound its reader waits for them. A frame's buffer grows as its
	// bytes arrive, so a declared length costs nothing until it is sent.
	// Default DefaultConnReadBudgetBytes (64 MiB); at least MaxFrameBytes.
	ConnReadBudgetBytes int64
	// ServerReadBudgetBytes is the same bound over all connections.
	// Default DefaultServerReadBudgetBytes (512 MiB); at least
	// ConnReadBudgetBytes.
	ServerReadBudgetBytes int64
	// FrameReadTimeout: once a frame's first byte has arrived the whole
	// frame must arrive within this long, else the connection is closed.
	// A reader that waits this long for read budget closes its connection
	// too (which frees what it held). Default DefaultFrameReadTimeout (60 s).
	FrameReadTimeout time.Duration
	// IdleTimeout: a connection that sends no frame for this long is
	// closed, and so is one that takes none of a write of its answers for
	// this long. Default DefaultIdleTimeout (120 s, RocketMQ's channel
	// idle; clients send a heartbeat every 30 s).
	IdleTimeout time.Duration
	// MaxConns bounds the open connections; one more is closed as soon as
	// it is accepted. Default DefaultMaxConns (10,000).
	MaxConns int
	// MaxConnsPerIP bounds the open connections from one source address.
	// Default DefaultMaxConnsPerIP (1,000).
	MaxConnsPerIP int
	// ConnWriteQueueBytes bounds the bytes of answers queued for one
	// connection (a peer that does not read its answers): above it the
	// connection's reader stops reading until the queue has drained to
	// half. Default DefaultConnWriteQueueBytes (32 MiB).
	ConnWriteQueueBytes int64
}

// withDefaults resolves zero fields to the defaults and negative ones to 0
// (off).
func (l Limits) withDefaults() Limits {
	pick64 := func(v, def int64) int64 {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		}
		return v
	}
	pickInt := func(v, def int) int { return int(pick64(int64(v), int64(def))) }
	pickDur := func(v, def time.Duration) time.Duration { return time.Duration(pick64(int64(v), int64(def))) }
	return Limits{
		ConnReadBudgetBytes:   pick64(l.ConnReadBudgetBytes, DefaultConnReadBudgetBytes),
		ServerReadBudgetBytes: pick64(l.ServerReadBudgetBytes, DefaultServerReadBudgetBytes),
		FrameReadTimeout:      pickDur(l.FrameReadTimeout, DefaultFrameReadTimeout),
		IdleTimeout:           pickDur(l.IdleTimeout, DefaultIdleTimeout),
		MaxConns:              pickInt(l.MaxConns, DefaultMaxConns),
		MaxConnsPerIP:         pickInt(l.MaxConnsPerIP, DefaultMaxConnsPerIP),
		ConnWriteQueueBytes:   pick64(l.ConnWriteQueueBytes, DefaultConnWriteQueueBytes),
	}
}

// Validate reports a combination of limits that cannot work with frames of
// up to maxFrame bytes (≤ 0: DefaultMaxFrameBytes): a read budget below the
// largest frame would wait for itself forever.
func (l Limits) Validate(maxFrame int) error {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrameBytes
	}
	r := l.withDefaults()
	if r.ConnReadBudgetBytes > 0 && r.ConnReadBudgetBytes < int64(maxFrame) {
		return fmt.Errorf("remoting: the connection read budget (%d bytes) is below the largest frame (%d bytes); raise it or turn it off", r.ConnReadBudgetBytes, maxFrame)
	}
	if r.ServerReadBudgetBytes > 0 && r.ServerReadBudgetBytes < max(r.ConnReadBudgetBytes, int64(maxFrame)) {
		return fmt.Errorf("remoting: the server read budget (%d bytes) is below the connection read budget or the largest frame (%d bytes); raise it or turn it off", r.ServerReadBudgetBytes, max(r.ConnReadBudgetBytes, int64(maxFrame)))
	}
	return nil
}

// Stats are a Server's limit counters since it started, and the read
// budget in use.
type Stats struct {
	// RefusedConns counts connections closed at accept because MaxConns
	// were open; RefusedConnsPerIP because MaxConnsPerIP were open from
	// the same address.
	RefusedConns, RefusedConnsPerIP uint64
	// ConnReadBudgetWaits and ServerReadBudgetWaits count the times a
	// reader waited for read budget.
	ConnReadBudgetWaits, ServerReadBudgetWaits uint64
	// FrameTimeouts counts connections closed because a started frame did
	// not arrive in FrameReadTimeout (or read budget did not come free in
	// that time); IdleTimeouts those closed after IdleTimeout without a
	// frame.
	FrameTimeouts, IdleTimeouts uint64
	// WriteQueuePauses counts the times a reader stopped reading because
	// its connection's queued answers exceeded ConnWriteQueueBytes.
	WriteQueuePauses uint64
	// ReadBudgetBytes is the read budget in use now, over all connections.
	ReadBudgetBytes int64
}

// Kinds of limit hits: the index into limitState.counts and the "limit"
// attribute of the Warn line.
const (
	hitMaxConns = iota
	hitMaxConnsPerIP
	hitConnReadBudget
	hitServerReadBudget
	hitFrameTimeout
	hitIdleTimeout
	hitWriteQueue
	numHits
)

var hitNames = [numHits]string{
	hitMaxConns:         "max_conns",
	hitMaxConnsPerIP:    "max_conns_per_ip",
	hitConnReadBudget:   "conn_read_budget",
	hitServerReadBudget: "server_read_budget",
	hitFrameTimeout:     "frame_timeout",
	hitIdleTimeout:      "idle_timeout",
	hitWriteQueue:       "conn_write_queue",
}

// limitLogInterval spaces the Warn lines of one kind of limit hit.
const limitLogInterval = 10 * time.Second

// limitState is a server's resolved limits, counters and read budget.
type limitState struct {
	Limits
	budget *budget // nil when ServerReadBudgetBytes is off
	counts [numHits]atomic.Uint64
	// lastLog[k] is the Unix nanosecond time of the last Warn of kind k;
	// quiet[k] counts the hits not logged since.
	lastLog [numHits]atomic.Int64
	quiet   [numHits]atomic.Uint64
}

func newLimitState(l Limits) *limitState {
	ls := &limitState{Limits: l.withDefaults()}
	if ls.ServerReadBudgetBytes > 0 {
		ls.budget = &budget{limit: ls.ServerReadBudgetBytes}
	}
	return ls
}

// hit counts a limit hit and logs it at Warn unless one of its kind was
// logged less than limitLogInterval ago; the line then reports how many
// were not logged.
func (ls *limitState) hit(kind int, log *slog.Logger, msg string, args ...any) {
	ls.counts[kind].Add(1)
	now := time.Now().UnixNano()
	last := ls.lastLog[kind].Load()
	if now-last < int64(limitLogInterval) || !ls.lastLog[kind].CompareAndSwap(last, now) {
		ls.quiet[kind].Add(1)
		return
	}
	args = append(args, "limit", hitNames[kind], "not_logged", ls.quiet[kind].Swap(0))
	log.Warn(msg, args...)
}

func (ls *limitState) stats() Stats {
	s := Stats{
		RefusedConns:          ls.counts[hitMaxConns].Load(),
		RefusedConnsPerIP:     ls.counts[hitMaxConnsPerIP].Load(),
		ConnReadBudgetWaits:   ls.counts[hitConnReadBudget].Load(),
		ServerReadBudgetWaits: ls.counts[hitServerReadBudget].Load(),
		FrameTimeouts:         ls.counts[hitFrameTimeout].Load(),
		IdleTimeouts:          ls.counts[hitIdleTimeout].Load(),
		WriteQueuePauses:      ls.counts[hitWriteQueue].Load(),
	}
	if ls.budget != nil {
		s.ReadBudgetBytes = ls.budget.used.Load()
	}
	return s
}

// budget is a count of bytes with a bound; acquire waits while taking more
// would pass it. The fast path is one compare-and-swap.
type budget struct {
	limit int64
	used  atomic.Int64

	waiting atomic.Int32 // acquirers in the slow path
	mu      sync.Mutex
	wake    chan struct{} // closed by release when someone waits
}

func (b *budget) tryAcquire(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.limit && u > 0 {
			return false
		}
		// A single reservation larger than the whole budget goes through
		// on an empty budget, so that it cannot wait for itself.
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// acquire takes n bytes, waiting for releases while they do not fit. It
// reports whether it had to wait, and false for ok when stop was closed or
// timeout (> 0) passed first.
func (b *budget) acquire(n int64, stop <-chan struct{}, timeout time.Duration) (ok, waited bool) {
	if b.tryAcquire(n) {
		return true, false
	}
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	b.waiting.Add(1)
	defer b.waiting.Add(-1)
	for {
		b.mu.Lock()
		if b.tryAcquire(n) {
			b.mu.Unlock()
			return true, true
		}
		if b.wake == nil {
			b.wake = make(chan struct{})
		}
		wake := b.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-stop:
			return false, true
		case <-deadline:
			return false, true
		}
	}
}

func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.used.Add(-n)
	if b.waiting.Load() == 0 {
		return
	}
	b.mu.Lock()
	if b.wake != nil {
		close(b.wake)
		b.wake = nil
	}
	b.mu.Unlock()
}

// remoteIP is the source address of a connection, for MaxConnsPerIP.
func remoteIP(a net.Addr) netip.Addr {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort().Addr().Unmap()
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}
