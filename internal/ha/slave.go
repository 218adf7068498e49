package ha

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/ha/epoch"
	"github.com/petrelmq/petrel/internal/ha/wire"
)

// SlaveStatus is a slave's replication state, for the CLI and metrics.
type SlaveStatus struct {
	Master    string        // the address last dialed
	Connected bool          // a session with the master is up
	Written   int64         // local LEO
	Durable   int64         // local durable end
	HW        int64         // the commit point last applied locally
	MasterHW  int64         // the commit point the master last sent
	MasterLEO int64         // the master's LEO last seen
	Epoch     uint32        // the newest master epoch seen
	LagBytes  int64         // MasterLEO − Written (0 when caught up)
	LagTime   time.Duration // how long the slave has been behind the master's LEO (0: caught up)
	Sessions  int64         // connections that reached the master
	LastError string        // the last error of a session ("" when none)
	Stopped   bool          // replication stopped for good; Err says why
	// Restarts counts the times the local log started over from the
	// master's first retained byte because it ended below it (since the
	// slave started); the last one dropped the log from RestartFrom (its
	// end then) and started it at RestartTo, at RestartAt.
	Restarts               int64
	RestartFrom, RestartTo int64
	RestartAt              time.Time
}

// Slave copies the master's log into its Sink. Its methods are safe for
// concurrent use.
type Slave struct {
	cfg  SlaveConfig
	sink Sink
	log  *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	st         SlaveStatus
	err        error // fatal: replication stopped
	behindFrom time.Time
	// startAt: where an empty log starts copying (the master's LogStart
	// after OffsetOutOfRange); 0 otherwise.
	startAt int64
	cp      int64 // the commit point applied to the sink
}

// StartSlave starts the fetch loop; it runs until Close or until the
// master shows that the local log is not a prefix of its own (Err).
func StartSlave(cfg SlaveConfig, sink Sink) (*Slave, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Slave{
		cfg:  cfg,
		sink: sink,
		log:  cfg.Logger.With("component", "ha_slave", "group", cfg.Group, "replica_id", cfg.ID),
		done: make(chan struct{}),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if last, ok := cfg.Epochs.Last(); ok {
		s.st.Epoch = last.Epoch
	}
	go s.run()
	return s, nil
}

// Close stops the fetch loop and waits for it. Idempotent.
func (s *Slave) Close() error {
	s.cancel()
	<-s.done
	return nil
}

// Err is why replication stopped for good (wrapping ErrNotPrefix,
// ErrRefused or ErrBelowLogStart), or nil while it runs or after Close.
func (s *Slave) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Status is a snapshot of the slave's state.
func (s *Slave) Status() SlaveStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.Written, st.Durable = s.sink.Written(), s.sink.Durable()
	st.LagBytes = max(0, st.MasterLEO-st.Written)
	if st.LagBytes > 0 && !s.behindFrom.IsZero() {
		st.LagTime = s.cfg.Clock.Now().Sub(s.behindFrom)
	}
	return st
}

func (s *Slave) run() {
	defer close(s.done)
	backoff := s.cfg.BackoffMin
	startedOver := false
	for s.ctx.Err() == nil {
		addr := s.cfg.Master()
		var err error
		progressed := false
		if addr == "" {
			err = errors.New("the master's replication address is not known yet")
		} else {
			s.mu.Lock()
			s.st.Master = addr
			s.mu.Unlock()
			var nc net.Conn
			nc, err = s.cfg.Network.Dial(s.ctx, addr)
			if err == nil {
				progressed, err = s.session(nc)
			}
		}
		if s.ctx.Err() != nil {
			return
		}
		if errors.Is(err, errStartOver) && !startedOver {
			// At once from the new position: nothing is wrong (a second
			// one in a row waits, so that a moving log start cannot spin).
			startedOver = true
			backoff = s.cfg.BackoffMin
			continue
		}
		startedOver = false
		if errors.Is(err, ErrNotPrefix) || errors.Is(err, ErrRefused) || errors.Is(err, ErrBelowLogStart) {
			s.mu.Lock()
			s.err = err
			s.st.Stopped, s.st.LastError = true, err.Error()
			s.mu.Unlock()
			s.log.Error("replication stopped", "master", addr, "err", err)
			return
		}
		s.mu.Lock()
		s.st.LastError = err.Error()
		s.mu.Unlock()
		if progressed {
			backoff = s.cfg.BackoffMin
		}
		s.log.Warn("replication interrupted; reconnecting", "master", addr, "err", err, "backoff", backoff)
		if !s.sleep(backoff) {
			return
		}
		backoff = min(backoff*2, s.cfg.BackoffMax)
	}
}

// sleep waits d on the injected clock; false when the slave is closed.
func (s *Slave) sleep(d time.Duration) bool {
	ch := make(chan struct{})
	t := s.cfg.Clock.AfterFunc(d, func() { close(ch) })
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// position is where the local log ends for the fetch protocol: Written(),
// or the master's LogStart that an empty log starts at.
func (s *Slave) position() (written, durable int64) {
	written, durable = s.sink.Written(), s.sink.Durable()
	s.mu.Lock()
	at := s.startAt
	s.mu.Unlock()
	if written == 0 && at > 0 {
		return at, at
	}
	return written, durable
}

// session runs the fetch protocol on nc until it fails; progressed tells
// whether the master answered at least once with OK.
func (s *Slave) session(nc net.Conn) (progressed bool, err error) {
	stop := context.AfterFunc(s.ctx, func() { nc.Close() })
	defer stop()
	defer nc.Close()
	defer func() {
		s.mu.Lock()
		s.st.Connected = false
		s.mu.Unlock()
	}()

	pos, durable := s.position()
	var lastEpoch uint32
	if !s.holdsBytes() {
		// An empty log has no epoch: a history left by a reset that a
		// crash cut short describes bytes that are gone.
		if rs, ok := s.sink.(Restarter); ok && s.sink.Written() == rs.CommitLogMinOffset() && s.sink.Written() > 0 {
			if es := s.cfg.Epochs.Entries(); len(es) > 0 {
				if err := s.cfg.Epochs.TruncateAfter(0); err != nil {
					return false, fmt.Errorf("drop the epoch history of an empty log: %w", err)
				}
				s.log.Info("dropped the epoch history of the empty log", "entries", len(es), "offset", pos)
			}
		}
	} else if pos > 0 {
		es := s.cfg.Epochs.Entries()
		e, ok := epochOf(es, pos-1)
		switch {
		case ok:
			lastEpoch = e.Epoch
		case len(es) > 0 && pos <= es[0].Start:
			// The log starts where its first epoch does and holds no byte
			// yet (a copy begun at the master's log start, cut back to
			// nothing by a crash): it has no last epoch.
		default:
			return false, fmt.Errorf("%w: the local log ends at %d but no epoch history covers it: it is not a copy of a master; wipe the store to replicate", ErrNotPrefix, pos)
		}
	}
	known := uint32(0)
	if last, ok := s.cfg.Epochs.Last(); ok {
		known = last.Epoch
	}
	f := wire.Fetch{Group: s.cfg.Group, ReplicaID: s.cfg.ID, Epoch: known, Offset: pos, Durable: durable,
		LastEpoch: lastEpoch, MaxBytes: s.cfg.MaxBytes, MaxWait: s.cfg.MaxWait}
	wbuf := make([]byte, 0, 64+len(s.cfg.Group))
	send := func() error {
		wbuf = wire.AppendFetch(wbuf[:0], f)
		return wire.WriteFrame(nc, wbuf)
	}
	// Two fetches in flight: the master parks the second while the first
	// answer is appended here.
	for range 2 {
		if err := send(); err != nil {
			return false, err
		}
	}
	limit := int(s.cfg.MaxBytes) + respHeadroom
	buf := make([]byte, limit)
	expect := pos
	for {
		t := s.cfg.Clock.AfterFunc(s.cfg.MaxWait+s.cfg.ResponseTimeout, func() { nc.Close() })
		p, err := readFrameMax(nc, buf, limit)
		timedOut := !t.Stop()
		if err != nil {
			if timedOut && s.ctx.Err() == nil {
				return progressed, fmt.Errorf("no answer from the master within %v: %w", s.cfg.MaxWait+s.cfg.ResponseTimeout, err)
			}
			return progressed, err
		}
		r, err := wire.DecodeFetchResp(p)
		if err != nil {
			return progressed, fmt.Errorf("%w: %w", ErrProtocol, err)
		}
		if r.Err != wire.OK {
			return progressed, s.refused(r)
		}
		if !progressed {
			progressed = true
			s.mu.Lock()
			s.st.Connected = true
			s.st.Sessions++
			s.st.LastError = ""
			s.mu.Unlock()
			s.log.Info("replicating from the master", "offset", pos, "master_leo", r.LEO, "epoch", r.Epoch)
		}
		if r.Base != expect {
			return progressed, fmt.Errorf("%w: data at %d, the local log ends at %d: re-syncing", ErrProtocol, r.Base, expect)
		}
		if len(r.Data) > int(f.MaxBytes) {
			return progressed, fmt.Errorf("%w: %d bytes of data, asked for at most %d", ErrProtocol, len(r.Data), f.MaxBytes)
		}
		if err := s.recordEpoch(r); err != nil {
			return progressed, err
		}
		if len(r.Data) > 0 {
			if err := s.sink.AppendRaw(r.Base, r.Data); err != nil {
				return progressed, fmt.Errorf("append %d bytes at %d: %w", len(r.Data), r.Base, err)
			}
			expect += int64(len(r.Data))
			if w := s.sink.Written(); w != expect {
				return progressed, fmt.Errorf("the store ends at %d after appending up to %d: re-syncing", w, expect)
			}
		}
		if r.Epoch > f.Epoch {
			f.Epoch = r.Epoch
		}
		f.LastEpoch = r.Epoch
		f.Offset, f.Durable = expect, min(s.sink.Durable(), expect)
		if f.Durable < durable {
			f.Durable = durable // an empty log that starts at LogStart
		}
		s.applyHW(r, expect)
		if err := send(); err != nil {
			return progressed, err
		}
	}
}

// recordEpoch appends the epoch of r's bytes to the local history before
// they are appended, so the history always covers the log.
func (s *Slave) recordEpoch(r wire.FetchResp) error {
	last, ok := s.cfg.Epochs.Last()
	if ok && r.Epoch <= last.Epoch {
		if r.Epoch < last.Epoch && len(r.Data) > 0 {
			return fmt.Errorf("%w: data of epoch %d after local epoch %d", ErrProtocol, r.Epoch, last.Epoch)
		}
		return nil
	}
	if r.Epoch == 0 {
		return fmt.Errorf("%w: response without an epoch", ErrProtocol)
	}
	if err := s.cfg.Epochs.Append(epoch.Entry{Epoch: r.Epoch, Start: r.EpochStart}); err != nil {
		return fmt.Errorf("record epoch %d starting at %d: %w", r.Epoch, r.EpochStart, err)
	}
	s.log.Info("new master epoch", "epoch", r.Epoch, "epoch_start", r.EpochStart)
	s.mu.Lock()
	s.st.Epoch = r.Epoch
	s.mu.Unlock()
	return nil
}

// applyHW applies min(the master's commit point, the local durable end),
// never backwards, and updates the status.
func (s *Slave) applyHW(r wire.FetchResp, written int64) {
	cp := min(r.HW, s.sink.Durable())
	s.mu.Lock()
	apply := cp > s.cp
	if apply {
		s.cp = cp
	}
	s.st.HW, s.st.MasterHW, s.st.MasterLEO = s.cp, r.HW, r.LEO
	now := s.cfg.Clock.Now()
	if written >= r.LEO {
		s.behindFrom = time.Time{}
	} else if s.behindFrom.IsZero() {
		s.behindFrom = now
	}
	s.mu.Unlock()
	if apply {
		s.sink.SetCommitPoint(cp)
	}
}

// refused turns an error response into the session's error.
func (s *Slave) refused(r wire.FetchResp) error {
	switch r.Err {
	case wire.NotPrefix:
		return fmt.Errorf("%w: %s", ErrNotPrefix, r.Message)
	case wire.WrongGroup, wire.UnknownReplica:
		return fmt.Errorf("%w: %s: %s", ErrRefused, r.Err, r.Message)
	case wire.OffsetOutOfRange:
		return s.startOver(r.LogStart, r.Message)
	}
	return fmt.Errorf("the master answered %s: %s", r.Err, r.Message)
}

// errStartOver ends a session so that the next one fetches from the
// master's first retained byte.
var errStartOver = errors.New("starting over at the master's log start")

// holdsBytes reports whether the local log holds any byte: a Restarter's
// from its CommitLogMinOffset, another sink's from 0.
func (s *Slave) holdsBytes() bool {
	w := s.sink.Written()
	if rs, ok := s.sink.(Restarter); ok {
		return w > rs.CommitLogMinOffset()
	}
	return w > 0
}

// startOver makes the next session copy from the master's first retained
// byte: at once when the local log is empty and at 0 (a fresh slave), else
// through Restarter, which drops the local log (then the epoch history
// goes too: the new log holds no byte of any epoch yet).
func (s *Slave) startOver(logStart int64, why string) error {
	written := s.sink.Written()
	if written == 0 {
		s.mu.Lock()
		s.startAt = logStart
		s.mu.Unlock()
		s.log.Info("the local log is empty: starting over from the master's first retained byte", "log_start", logStart)
		return errStartOver
	}
	rs, ok := s.sink.(Restarter)
	if !ok {
		return fmt.Errorf("%w: the local log ends at %d, the master's starts at %d (%s); wipe the store to copy the master again",
			ErrBelowLogStart, written, logStart, why)
	}
	s.log.Warn(fmt.Sprintf("the slave's log ends at %d, the master's starts at %d: starting over from %d, the older records are gone from the master", written, logStart, logStart),
		"written", written, "log_start", logStart)
	if err := rs.ResetAt(logStart); err != nil {
		return fmt.Errorf("start over at the master's log start %d: %w", logStart, err)
	}
	if err := s.cfg.Epochs.TruncateAfter(0); err != nil {
		// The next session drops it (an empty log has no epoch).
		s.log.Warn("cannot drop the epoch history of the reset log yet", "err", err)
	}
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	s.startAt = 0
	s.st.Restarts++
	s.st.RestartFrom, s.st.RestartTo, s.st.RestartAt = written, logStart, now
	s.cp = 0
	s.mu.Unlock()
	if s.cfg.OnRestart != nil {
		s.cfg.OnRestart(written, logStart)
	}
	return errStartOver
}
