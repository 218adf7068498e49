package ha

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
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
	// Truncations counts the times the local log was cut back because it
	// diverged from the master's (wire.Diverging), TruncatedBytes the
	// bytes they dropped (since the slave started).
	Truncations    int64
	TruncatedBytes int64
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
		if (errors.Is(err, errStartOver) || errors.Is(err, errTruncated)) && !startedOver {
			// At once from the new position: nothing is wrong (a second
			// one in a row waits, so that a moving log start cannot spin).
			startedOver = true
			backoff = s.cfg.BackoffMin
			continue
		}
		startedOver = false
		if errors.Is(err, ErrNotPrefix) || errors.Is(err, ErrRefused) || errors.Is(err, ErrBelowLogStart) ||
			errors.Is(err, ErrBelowCommitPoint) || errors.Is(err, ErrTruncate) {
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
		if errors.Is(err, ErrUnauthorized) {
			s.log.Error(err.Error(), "master", addr, "user", s.cfg.Credentials.AccessKey, "backoff", backoff)
		} else {
			s.log.Warn("replication interrupted; reconnecting", "master", addr, "err", err, "backoff", backoff)
		}
		if clock.Sleep(s.ctx, s.cfg.Clock, backoff) != nil {
			return
		}
		backoff = min(backoff*2, s.cfg.BackoffMax)
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

// AsyncSink is a Sink that takes the next chunk of the master's log while
// the previous one's fsync runs (internal/store: AppendRawAsync). The
// slave then writes what arrives at once and acks its durable end in an
// Ack frame as soon as each fsync ends, instead of appending one response
// at a time and acking with the next fetch. done is called once, with the
// end of the bytes appended, when they are durable under sync flush
// (written under async flush), or with the error; calls are written in the
// order they were made; b is not modified until done runs.
type AsyncSink interface {
	AppendRawAsync(off int64, b []byte, done func(end int64, err error))
}

// maxPendingAppends bounds the chunks handed to an AsyncSink and not yet
// answered: what a slave holds in memory is at most this many responses'
// Data (each ≤ MaxBytes) besides its read buffer.
const maxPendingAppends = 4

// slaveReadBuffer is the slave's read buffer on its connection.
const slaveReadBuffer = 64 << 10

// syncAppender makes a Sink an AsyncSink whose appends are answered before
// AppendRawAsync returns.
type syncAppender struct{ Sink }

func (a syncAppender) AppendRawAsync(off int64, b []byte, done func(int64, error)) {
	if err := a.AppendRaw(off, b); err != nil {
		done(0, err)
		return
	}
	done(a.Written(), nil)
}

// session is one connection's fetch protocol. The session goroutine reads
// the responses and hands their Data to the sink; the acker sends an Ack
// each time an append is answered (durable, under sync flush). Both write
// frames, under wmu, each carrying the acks it reads then, so the acks sent
// never move backwards.
type session struct {
	s     *Slave
	nc    net.Conn
	async AsyncSink
	copy  bool // the sink keeps Data past AppendRawAsync: copy it

	wmu        sync.Mutex
	f          wire.Fetch // the next fetch, its acks aside
	wbuf       []byte
	ackW, ackD int64 // the acks of the last frame sent
	werr       error // the first failed write: every later send returns it

	mu        sync.Mutex
	cond      sync.Cond // pending or appendErr changed
	pending   int
	appendErr error

	masterHW atomic.Int64  // the commit point of the last response
	answered chan struct{} // cap 1: an append was answered
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
		if n := len(es); n > 0 && es[n-1].Start > pos {
			// Entries above the log's end: a truncation that a crash cut
			// short after the log was cut (truncate).
			if err := s.cfg.Epochs.TruncateAfter(pos + 1); err != nil {
				return false, fmt.Errorf("drop the epoch entries above the log's end %d: %w", pos, err)
			}
			s.log.Info("dropped the epoch entries above the log's end", "offset", pos, "entries", es)
			es = s.cfg.Epochs.Entries()
		}
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
	ss := &session{s: s, nc: nc, ackW: pos, ackD: durable, answered: make(chan struct{}, 1),
		f: wire.Fetch{Group: s.cfg.Group, ReplicaID: s.cfg.ID, Epoch: known, LastEpoch: lastEpoch,
			MaxBytes: s.cfg.MaxBytes, MaxWait: s.cfg.MaxWait},
		wbuf: make([]byte, 0, 64+len(s.cfg.Group))}
	ss.cond.L = &ss.mu
	if a, ok := s.sink.(AsyncSink); ok {
		ss.async, ss.copy = a, true
	} else {
		ss.async = syncAppender{s.sink}
	}
	ackCtx, stopAcks := context.WithCancel(s.ctx)
	ackDone := make(chan struct{})
	go ss.acker(ackCtx, ackDone)
	defer func() {
		// No append may be answered after the session: the next one
		// starts from the sink's end.
		if aerr := ss.drain(); aerr != nil {
			err = aerr
		}
		nc.Close() // an Ack being written fails rather than waits
		stopAcks()
		<-ackDone
	}()
	if err := ss.sendAuth(); err != nil {
		return false, err
	}
	// Two fetches in flight: the master parks the second while the first
	// answer is appended here. A master that refuses the session answers
	// and closes, maybe before the fetches are written: a failed write is
	// reported only if no answer saying why can be read.
	var sendErr error
	for range 2 {
		if sendErr = ss.send(true); sendErr != nil {
			break
		}
	}
	limit := int(s.cfg.MaxBytes) + respHeadroom
	buf := make([]byte, limit)
	// Buffered: a header and a small response take one read; a payload
	// larger than the buffer is read straight into buf.
	rd := bufio.NewReaderSize(nc, slaveReadBuffer)
	expect := pos
	for {
		t := s.cfg.Clock.AfterFunc(s.cfg.MaxWait+s.cfg.ResponseTimeout, func() { nc.Close() })
		p, err := readFrameMax(rd, buf, limit)
		timedOut := !t.Stop()
		if err != nil && sendErr != nil {
			return progressed, sendErr
		}
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
			// refused may drop the local log (start over): nothing of
			// this session may still be on its way into it.
			if err := ss.drain(); err != nil {
				return progressed, err
			}
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
		if len(r.Data) > int(ss.f.MaxBytes) {
			return progressed, fmt.Errorf("%w: %d bytes of data, asked for at most %d", ErrProtocol, len(r.Data), ss.f.MaxBytes)
		}
		if err := s.recordEpoch(r); err != nil {
			return progressed, err
		}
		if len(r.Data) > 0 {
			if err := ss.append(r.Base, r.Data); err != nil {
				return progressed, err
			}
			expect += int64(len(r.Data))
		}
		ss.wmu.Lock()
		if r.Epoch > ss.f.Epoch {
			ss.f.Epoch = r.Epoch
		}
		ss.f.LastEpoch = r.Epoch
		ss.wmu.Unlock()
		ss.masterHW.Store(r.HW)
		s.applyHW(r, expect)
		if sendErr == nil {
			// A failed write ends nothing yet: what the master wrote
			// before it went away is still read (its last commit point
			// makes acknowledged sends readable here) until the read
			// fails too.
			sendErr = ss.send(true)
		}
	}
}

// append hands data, the log from base, to the sink, once fewer than
// maxPendingAppends are unanswered.
func (ss *session) append(base int64, data []byte) error {
	ss.mu.Lock()
	for ss.pending >= maxPendingAppends && ss.appendErr == nil {
		ss.cond.Wait()
	}
	if err := ss.appendErr; err != nil {
		ss.mu.Unlock()
		return err
	}
	ss.pending++
	ss.mu.Unlock()
	if ss.copy {
		data = append([]byte(nil), data...)
	}
	want := base + int64(len(data))
	ss.async.AppendRawAsync(base, data, func(end int64, err error) {
		if err == nil && end != want {
			err = fmt.Errorf("the store ends at %d after appending up to %d: re-syncing", end, want)
		} else if err != nil {
			err = fmt.Errorf("append %d bytes at %d: %w", want-base, base, err)
		}
		ss.mu.Lock()
		ss.pending--
		if err != nil && ss.appendErr == nil {
			ss.appendErr = err
			ss.nc.Close() // ends the read under way
		}
		ss.cond.Broadcast()
		ss.mu.Unlock()
		select {
		case ss.answered <- struct{}{}:
		default:
		}
	})
	ss.mu.Lock()
	err := ss.appendErr
	ss.mu.Unlock()
	return err
}

// drain waits until every append handed to the sink is answered and
// returns the first append error.
func (ss *session) drain() error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for ss.pending > 0 {
		ss.cond.Wait()
	}
	return ss.appendErr
}

// acker sends an Ack whenever an answered append moved the durable end
// past what the last frame said, and applies the commit point the new
// durable end allows.
func (ss *session) acker(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ss.answered:
		}
		if err := ss.send(false); err != nil {
			// The session goroutine reads on until the connection fails
			// and its own next write returns this error.
			return
		}
		ss.s.raiseCP(ss.masterHW.Load())
	}
}

// send writes a Fetch (fetch) or an Ack with the sink's ends now, never
// below those of the last frame; an Ack with nothing new is not sent. (The
// fetch after a response goes out before that response's bytes are
// written, so the Ack carries the written end too: under async flush it is
// what the commit point follows.)
func (ss *session) send(fetch bool) error {
	ss.wmu.Lock()
	defer ss.wmu.Unlock()
	if ss.werr != nil {
		return ss.werr
	}
	w, d := ss.s.sink.Written(), ss.s.sink.Durable()
	off := max(w, ss.ackW)
	dur := max(min(d, off), ss.ackD)
	if !fetch && off == ss.ackW && dur == ss.ackD {
		return nil
	}
	ss.ackW, ss.ackD = off, dur
	if fetch {
		f := ss.f
		f.Offset, f.Durable = off, dur
		ss.wbuf = wire.AppendFetch(ss.wbuf[:0], f)
	} else {
		ss.wbuf = wire.AppendAck(ss.wbuf[:0], wire.Ack{Offset: off, Durable: dur})
	}
	ss.werr = wire.WriteFrame(ss.nc, ss.wbuf)
	return ss.werr
}

// sendAuth writes the Auth frame of the slave's credentials (nothing
// without).
func (ss *session) sendAuth() error {
	cr := ss.s.cfg.Credentials
	if cr.AccessKey == "" {
		return nil
	}
	var nonce [wire.NonceLen]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return fmt.Errorf("credentials for the master: random nonce: %w", err)
	}
	ms := max(ss.s.cfg.Clock.Now().UnixMilli(), 0)
	a := wire.SignAuth(ss.s.cfg.Group, cr.AccessKey, cr.SecretKey, ms, nonce)
	ss.wmu.Lock()
	defer ss.wmu.Unlock()
	return wire.WriteFrame(ss.nc, wire.AppendAuth(nil, a))
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

// applyHW updates the status from r and applies its commit point
// (raiseCP); written is where the local log ends once the appends handed
// to the sink are done.
func (s *Slave) applyHW(r wire.FetchResp, written int64) {
	s.mu.Lock()
	s.st.MasterHW, s.st.MasterLEO = r.HW, r.LEO
	now := s.cfg.Clock.Now()
	if written >= r.LEO {
		s.behindFrom = time.Time{}
	} else if s.behindFrom.IsZero() {
		s.behindFrom = now
	}
	s.mu.Unlock()
	s.raiseCP(r.HW)
}

// raiseCP applies min(the master's commit point hw, the local durable
// end), never backwards.
func (s *Slave) raiseCP(hw int64) {
	cp := min(hw, s.sink.Durable())
	s.mu.Lock()
	defer s.mu.Unlock()
	if cp > s.cp {
		s.cp = cp
		s.sink.SetCommitPoint(cp)
	}
	s.st.HW = s.cp
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
	case wire.Diverging:
		return s.truncate(r)
	case wire.Unauthorized:
		return fmt.Errorf("%w: %s; give this broker the cluster's --auth-init-user (a super user)", ErrUnauthorized, r.Message)
	}
	return fmt.Errorf("the master answered %s: %s", r.Err, r.Message)
}

// errTruncated ends a session after the local log was cut back to where
// it is a prefix of the master's: the next one fetches from there.
var errTruncated = errors.New("fetching again after the truncation")

// truncate cuts the local log where the master's Diverging answer r says
// it stops being a prefix of the master's — lower where the local history
// ends the shared epoch earlier (epoch.CutPoint) — and drops the epoch
// entries above the cut (the log first: a crash between leaves entries
// above the log's end, which the next session drops). A cut below the
// commit point is refused: the slave stops, acking nothing more.
func (s *Slave) truncate(r wire.FetchResp) error {
	tr, ok := s.sink.(Truncater)
	if !ok {
		return fmt.Errorf("%w: %s (this slave's store cannot truncate its log)", ErrNotPrefix, r.Message)
	}
	written := s.sink.Written()
	es := s.cfg.Epochs.Entries()
	cut := epoch.CutPoint(es, written, r.Epoch, r.Base)
	s.mu.Lock()
	cp := max(s.cp, tr.CommitPoint())
	s.mu.Unlock()
	if cut < cp {
		return fmt.Errorf("%w: the master shares this log up to %d (epoch %d) only, but %d of it is committed: refusing to truncate; only a bug or an unclean election does this — keep this store for inspection and copy the master into a fresh one",
			ErrBelowCommitPoint, cut, r.Epoch, cp)
	}
	if cut >= written && (len(es) == 0 || es[len(es)-1].Start < cut) {
		return fmt.Errorf("%w: the master's diverging answer (epoch %d, cut at %d) cuts nothing of this log ending at %d", ErrNotPrefix, r.Epoch, r.Base, written)
	}
	res, err := tr.TruncateTo(cut)
	if err != nil {
		return fmt.Errorf("%w: cut at %d: %w", ErrTruncate, cut, err)
	}
	if err := s.cfg.Epochs.TruncateAfter(cut); err != nil {
		return fmt.Errorf("drop the epoch entries above the cut at %d: %w", cut, err)
	}
	s.log.Info(fmt.Sprintf("truncated %d bytes (%d messages) above %d diverging from the master's epoch %d", res.Bytes, res.Messages, cut, r.Epoch),
		"bytes", res.Bytes, "messages", res.Messages, "offset", cut, "epoch", r.Epoch, "msg_ids", res.MsgIDs,
		"msg_ids_not_listed", res.Messages-len(res.MsgIDs))
	s.mu.Lock()
	s.st.Truncations++
	s.st.TruncatedBytes += res.Bytes
	s.mu.Unlock()
	return errTruncated
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
