package ha

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/ha/epoch"
	"github.com/petrelmq/petrel/internal/ha/track"
	"github.com/petrelmq/petrel/internal/ha/wire"
)

// Master serves the fetches of a group's slaves from the master's store.
// Its methods are safe for concurrent use.
type Master struct {
	cfg MasterConfig
	src Source
	ln  net.Listener
	log *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// trackMu orders every change the master makes to the tracker and
	// the owner of each replica id, so that a connection that was taken
	// over can no longer ack for its id, and MasterProgress never sees
	// the source's ends out of order.
	trackMu sync.Mutex
	owners  map[int64]*mconn
	conns   map[*mconn]struct{}
	closed  bool

	// hwMu guards the published commit point and the long polls to wake
	// when it moves.
	hwMu     sync.Mutex
	hw       int64 // last value handed to OnCommit; slaves are told this one
	watchers map[*hwWatcher]struct{}
	kick     chan struct{} // cap 1: the tracker may have moved the HW

	// annMu guards annCh, closed (and dropped) when a connection has sent
	// a higher commit point while a send waits for that (awaitAnnounced).
	annMu      sync.Mutex
	annCh      chan struct{}
	annWaiters atomic.Int32 // sends in awaitAnnounced
	// delayed holds the wakes of the long polls in their HWPushDelay: a
	// send waiting for its commit point to reach the slaves ends them.
	delayed map[*hwWatcher]struct{}

	tickMu sync.Mutex
	tick   clock.Timer

	// authLogMu rate-limits the log lines of refused credentials.
	authLogMu   sync.Mutex
	authLogged  time.Time
	authSkipped int
}

type hwWatcher struct {
	seen int64
	wake func()
}

// StartMaster listens on cfg.Listen and serves fetches from src until
// Close. When cfg.Epochs is empty it appends epoch 1 starting at src's
// first byte (a master starts epoch 1 on a fresh log and keeps its last
// epoch across restarts).
func StartMaster(cfg MasterConfig, src Source) (*Master, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, ok := cfg.Epochs.Last(); !ok {
		if err := cfg.Epochs.Append(epoch.Entry{Epoch: 1, Start: src.MinOffset()}); err != nil {
			return nil, fmt.Errorf("ha: start epoch 1: %w", err)
		}
	}
	ln, err := cfg.Network.Listen(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("ha: listen on %s: %w", cfg.Listen, err)
	}
	m := &Master{
		cfg:      cfg,
		src:      src,
		ln:       ln,
		log:      cfg.Logger.With("component", "ha_master", "group", cfg.Group),
		owners:   map[int64]*mconn{},
		conns:    map[*mconn]struct{}{},
		watchers: map[*hwWatcher]struct{}{},
		delayed:  map[*hwWatcher]struct{}{},
		kick:     make(chan struct{}, 1),
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.hw = cfg.Tracker.HW()
	m.Progress()
	last, _ := cfg.Epochs.Last()
	m.log.Info("replication master started", "addr", ln.Addr().String(), "epoch", last.Epoch,
		"log_start", src.MinOffset(), "leo", src.Written())
	m.wg.Add(3)
	go m.acceptLoop()
	go m.progressLoop()
	go m.commitLoop()
	m.armTick()
	return m, nil
}

// Addr is the address the master listens on.
func (m *Master) Addr() string { return m.ln.Addr().String() }

// HW is the commit point the master has published (handed to OnCommit and
// sent to slaves).
func (m *Master) HW() int64 {
	m.hwMu.Lock()
	defer m.hwMu.Unlock()
	return m.hw
}

// Progress tells the tracker the source's current ends. The master calls
// it as the log grows and on every fetch; the daemon may call it when the
// store's durable end moves (after an fsync) so that the commit point
// follows at once.
func (m *Master) Progress() {
	m.trackMu.Lock()
	m.cfg.Tracker.MasterProgress(m.src.Written(), m.src.Durable())
	m.trackMu.Unlock()
	m.kickHW()
}

// WaitReplicated waits until the commit point covers end (a send whose
// bytes end there and are durable locally) and every connected slave that
// holds those bytes has been sent a commit point that covers them: nil, or
// track.ErrTimeout when ctx ends first, or track.ErrNotEnoughReplicas at
// once when fewer slaves than required are in sync.
//
// The second wait is what lets a slave serve every acknowledged send when
// its master dies right after answering it: a slave dispatches only up to
// the commit point it was told (nothing a failover could take away is
// visible), and without it the master could answer a send, then die before
// its next response carried the commit point, leaving the send on the
// slave's disk but unreadable there.
func (m *Master) WaitReplicated(ctx context.Context, end int64) error {
	m.Progress()
	if err := m.cfg.Tracker.Wait(ctx, end); err != nil {
		return err
	}
	return m.awaitAnnounced(ctx, end)
}

// awaitAnnounced waits until announced(end), or returns track.ErrTimeout
// when ctx ends (or the master closes) first: the send is committed but a
// slave holding it may not know, so it is in doubt.
func (m *Master) awaitAnnounced(ctx context.Context, end int64) error {
	if m.announced(end) {
		return nil
	}
	m.annWaiters.Add(1)
	defer m.annWaiters.Add(-1)
	m.wakeDelayed()
	for {
		m.annMu.Lock()
		if m.annCh == nil {
			m.annCh = make(chan struct{})
		}
		ch := m.annCh
		m.annMu.Unlock()
		if m.announced(end) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return track.ErrTimeout
		case <-m.ctx.Done():
			return track.ErrTimeout
		}
	}
}

// announced reports whether every in-sync slave connection whose acked
// written end reaches end has been sent a commit point of at least end. (A
// slave out of sync does not hold sends back: a slow one could otherwise
// delay every send until its connection is dropped.)
func (m *Master) announced(end int64) bool {
	m.trackMu.Lock()
	defer m.trackMu.Unlock()
	var inSync []int64
	for _, c := range m.owners {
		if c.ackedW.Load() >= end && c.sentHW.Load() < end {
			if inSync == nil {
				inSync = m.cfg.Tracker.InSync()
			}
			if slices.Contains(inSync, c.id) {
				return false
			}
		}
	}
	return true
}

// sentCommitPoint records that c wrote a response carrying hw and wakes
// the sends waiting for that.
func (m *Master) sentCommitPoint(c *mconn, hw int64) {
	if hw <= c.sentHW.Load() {
		return
	}
	c.sentHW.Store(hw)
	if m.annWaiters.Load() == 0 {
		return
	}
	m.annMu.Lock()
	if m.annCh != nil {
		close(m.annCh)
		m.annCh = nil
	}
	m.annMu.Unlock()
}

// wakeDelayed ends every long poll's HWPushDelay now.
func (m *Master) wakeDelayed() {
	m.hwMu.Lock()
	var wake []func()
	for w := range m.delayed {
		wake = append(wake, w.wake)
		delete(m.delayed, w)
	}
	m.hwMu.Unlock()
	for _, f := range wake {
		f()
	}
}

// holdForBytes registers wake to end a long poll's HWPushDelay early (at
// once when a send waits for a commit point to reach the slaves); the
// returned func unregisters.
func (m *Master) holdForBytes(wake func()) func() {
	w := &hwWatcher{wake: wake}
	if m.annWaiters.Load() > 0 {
		wake()
		return func() {}
	}
	m.hwMu.Lock()
	m.delayed[w] = struct{}{}
	m.hwMu.Unlock()
	if m.annWaiters.Load() > 0 {
		m.wakeDelayed()
	}
	return func() {
		m.hwMu.Lock()
		delete(m.delayed, w)
		m.hwMu.Unlock()
	}
}

// Covered is how far WaitReplicated would answer nil now: the tracker's
// commit point, lowered to the commit point last sent to any slave that
// holds bytes above what it was told.
func (m *Master) Covered() int64 {
	m.trackMu.Lock()
	defer m.trackMu.Unlock()
	hw := m.cfg.Tracker.HW()
	for _, c := range m.owners {
		if sent := c.sentHW.Load(); c.ackedW.Load() > sent {
			hw = min(hw, sent)
		}
	}
	return hw
}

// Close stops listening, drops every slave connection and waits for the
// master's goroutines. It is idempotent.
func (m *Master) Close() error {
	m.trackMu.Lock()
	if m.closed {
		m.trackMu.Unlock()
		return nil
	}
	m.closed = true
	conns := make([]*mconn, 0, len(m.conns))
	for c := range m.conns {
		conns = append(conns, c)
	}
	m.trackMu.Unlock()
	m.cancel()
	m.ln.Close()
	for _, c := range conns {
		c.nc.Close()
	}
	m.tickMu.Lock()
	if m.tick != nil {
		m.tick.Stop()
	}
	m.tickMu.Unlock()
	m.wg.Wait()
	m.log.Info("replication master stopped")
	return nil
}

func (m *Master) armTick() {
	m.tickMu.Lock()
	defer m.tickMu.Unlock()
	if m.ctx.Err() != nil {
		return
	}
	m.tick = m.cfg.Clock.AfterFunc(m.cfg.TickInterval, func() {
		m.Progress()
		m.trackMu.Lock()
		m.cfg.Tracker.Tick()
		m.trackMu.Unlock()
		m.kickHW()
		m.armTick()
	})
}

func (m *Master) kickHW() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// commitLoop publishes every rise of the tracker's HW: OnCommit, then the
// long polls that carried an older value. One goroutine, so OnCommit sees
// strictly increasing values.
func (m *Master) commitLoop() {
	defer m.wg.Done()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.kick:
		}
		hw := m.cfg.Tracker.HW()
		m.hwMu.Lock()
		if hw <= m.hw {
			m.hwMu.Unlock()
			continue
		}
		m.hwMu.Unlock()
		if m.cfg.OnCommit != nil {
			m.cfg.OnCommit(hw)
		}
		m.hwMu.Lock()
		m.hw = hw
		var wake []func()
		for w := range m.watchers {
			if w.seen < hw {
				wake = append(wake, w.wake)
				delete(m.watchers, w)
			}
		}
		m.hwMu.Unlock()
		for _, f := range wake {
			f()
		}
	}
}

// watchHW calls wake once the published HW exceeds seen (at once if it
// does already); the returned func unregisters.
func (m *Master) watchHW(seen int64, wake func()) func() {
	w := &hwWatcher{seen: seen, wake: wake}
	m.hwMu.Lock()
	if m.hw > seen {
		m.hwMu.Unlock()
		wake()
		return func() {}
	}
	m.watchers[w] = struct{}{}
	m.hwMu.Unlock()
	return func() {
		m.hwMu.Lock()
		delete(m.watchers, w)
		m.hwMu.Unlock()
	}
}

// progressLoop reports the source's growth to the tracker. Source has no
// notification for fsyncs, so while the durable end trails the written end
// it looks again every DurablePoll: the commit point follows the local
// fsync within that even when no send waits and no slave acks.
func (m *Master) progressLoop() {
	defer m.wg.Done()
	for {
		leo := m.src.Written()
		m.Progress()
		if m.src.Durable() < leo {
			if clock.Sleep(m.ctx, m.cfg.Clock, m.cfg.DurablePoll) != nil {
				return
			}
			continue
		}
		if err := m.src.WaitWritten(m.ctx, leo); err != nil {
			if m.ctx.Err() == nil {
				m.log.Error("wait for the log to grow failed; commit point updates only on fetches now", "err", err)
			}
			return
		}
	}
}

func (m *Master) acceptLoop() {
	defer m.wg.Done()
	for {
		nc, err := m.ln.Accept()
		if err != nil {
			if m.ctx.Err() == nil {
				m.log.Error("accept failed; no more slaves served", "err", err)
			}
			return
		}
		c := &mconn{m: m, nc: nc, items: make(chan item, 2), done: make(chan struct{})}
		c.sentHW.Store(-1)
		c.ctx, c.cancel = context.WithCancel(m.ctx)
		m.trackMu.Lock()
		if m.closed {
			m.trackMu.Unlock()
			nc.Close()
			return
		}
		m.conns[c] = struct{}{}
		m.wg.Add(2)
		m.trackMu.Unlock()
		go c.readLoop()
		go c.serve()
	}
}

// mconn is one slave connection on the master: readLoop decodes fetches
// and applies their acks; serve answers them in order; only serve writes.
type mconn struct {
	m      *Master
	nc     net.Conn
	ctx    context.Context // ends with the connection
	cancel context.CancelFunc
	items  chan item     // fetches to answer, or the error to send last
	done   chan struct{} // closed when serve returns

	// set by readLoop; read by serve after the first item
	id    int64
	group string
	user  string // the authenticated user ("" without authentication)
	ackW  int64
	ackD  int64
	sent  atomic.Int64 // end of the bytes sent (or being sent): the cursor
	// ackedW is ackW for other goroutines, stored before the tracker sees
	// the ack; sentHW is the commit point of the last response written
	// (-1: none yet). announced compares them.
	ackedW atomic.Int64
	sentHW atomic.Int64
	idle   clock.Timer

	rbuf []byte // serve's: the log bytes of the response being sent (RawReaderInto)
}

type item struct {
	f    wire.Fetch
	fail *wire.FetchResp // non-nil: send this error and close
}

func (c *mconn) remote() string { return c.nc.RemoteAddr().String() }

// readLoop reads the slave's fetches, checks them and applies their acks
// when they arrive, then queues them for serve.
func (c *mconn) readLoop() {
	defer c.m.wg.Done()
	defer close(c.items)
	defer func() {
		if c.idle != nil {
			c.idle.Stop()
		}
	}()
	buf := make([]byte, maxFetchFrame)
	// Buffered: a fetch and the acks behind it arrive in one read.
	rd := bufio.NewReaderSize(c.nc, maxFetchFrame)
	first := true
	authSeen := false // an Auth frame came (and was accepted)
	for {
		c.resetIdle()
		p, err := readFrameMax(rd, buf, maxFetchFrame)
		if err != nil {
			if errors.Is(err, wire.ErrFrameTooLarge) || errors.Is(err, wire.ErrChecksum) || errors.Is(err, wire.ErrEmptyFrame) {
				c.push(item{fail: c.errResp(wire.InvalidRequest, "bad frame: "+err.Error())})
			} else {
				if c.ctx.Err() == nil && !errors.Is(err, io.EOF) {
					c.m.log.Debug("slave connection read failed", "remote", c.remote(), "replica_id", c.id, "err", err)
				}
				c.cancel() // the connection is dead: end a parked long poll now
			}
			return
		}
		k, _ := wire.KindOf(p)
		if k == wire.KindAuth {
			if !first || authSeen {
				c.push(item{fail: c.errResp(wire.InvalidRequest, "credentials (an Auth frame) may only open a connection")})
				return
			}
			authSeen = true
			if r := c.authenticate(p); r != nil {
				c.push(item{fail: r})
				return
			}
			continue
		}
		if first && !authSeen && c.m.cfg.Authenticate != nil {
			_ = c.m.cfg.Authenticate("", nil, nil) // counts the attempt; refused whatever it says
			c.push(item{fail: c.authResp("", "this master requires authentication (--auth) and the slave sent no credentials")})
			return
		}
		if k == wire.KindAck && !first {
			// An ack between fetches: applied at once, answered by nothing.
			a, err := wire.DecodeAck(p)
			if err != nil {
				c.push(item{fail: c.errResp(wire.InvalidRequest, "bad ack: "+err.Error())})
				return
			}
			f := wire.Fetch{Group: c.group, ReplicaID: c.id, Offset: a.Offset, Durable: a.Durable}
			if r := c.checkAck(f); r != nil {
				c.push(item{fail: r})
				return
			}
			if r := c.ack(f); r != nil {
				c.push(item{fail: r})
				return
			}
			continue
		}
		f, err := wire.DecodeFetch(p)
		if err != nil {
			c.push(item{fail: c.errResp(wire.InvalidRequest, "bad fetch: "+err.Error())})
			return
		}
		if first {
			if r := c.handshake(f); r != nil {
				c.push(item{fail: r})
				return
			}
			first = false
		} else if r := c.checkAck(f); r != nil {
			c.push(item{fail: r})
			return
		}
		if r := c.ack(f); r != nil {
			c.push(item{fail: r})
			return
		}
		if !c.push(item{f: f}) {
			return
		}
	}
}

// resetIdle (re)arms the timer that closes a connection whose slave sends
// nothing for IdleTimeout.
func (c *mconn) resetIdle() {
	if c.idle != nil {
		c.idle.Stop()
	}
	c.idle = c.m.cfg.Clock.AfterFunc(c.m.cfg.IdleTimeout, func() {
		c.m.log.Warn("slave connection idle; closing it", "remote", c.remote(), "replica_id", c.id,
			"idle_timeout", c.m.cfg.IdleTimeout)
		c.nc.Close()
	})
}

func (c *mconn) push(it item) bool {
	select {
	case c.items <- it:
		return true
	case <-c.done:
		return false
	}
}

// errResp builds an error response, also logged: the message goes to the
// slave's log, so it says what happened and what to do, with offsets and
// epochs but no internal causes.
func (c *mconn) errResp(code wire.Code, msg string) *wire.FetchResp {
	r := c.resp(code, msg)
	c.m.log.Warn("slave fetch refused", "remote", c.remote(), "replica_id", c.id, "code", code.String(), "reason", msg)
	return r
}

// resp builds an error response without logging it.
func (c *mconn) resp(code wire.Code, msg string) *wire.FetchResp {
	last, _ := c.m.cfg.Epochs.Last()
	return &wire.FetchResp{Err: code, Epoch: last.Epoch, EpochStart: last.Start, HW: c.m.HW(),
		LEO: c.m.src.Written(), LogStart: c.m.src.MinOffset(), Base: max(c.sent.Load(), 0), Message: clip(msg, maxMessage)}
}

// authenticate checks the Auth frame p that opens a connection (nothing
// when the master has no Authenticate).
func (c *mconn) authenticate(p []byte) *wire.FetchResp {
	m := c.m
	a, err := wire.DecodeAuth(p)
	if err != nil {
		return c.errResp(wire.InvalidRequest, "bad credentials frame: "+err.Error())
	}
	if m.cfg.Authenticate == nil {
		return nil
	}
	if a.Group != m.cfg.Group {
		return c.errResp(wire.WrongGroup, fmt.Sprintf("this is the master of group %q, not %q: check --broker-name and --ha-master", m.cfg.Group, a.Group))
	}
	now := m.cfg.Clock.Now()
	if skew := now.Sub(time.UnixMilli(a.TimeMs)); skew > maxAuthSkew || skew < -maxAuthSkew {
		return c.authResp(a.AccessKey, fmt.Sprintf("the credentials of user %q are dated %s, %v off this master's clock (%s; at most %v allowed): synchronise the brokers' clocks",
			clip(a.AccessKey, 64), time.UnixMilli(a.TimeMs).UTC().Format(time.RFC3339), skew.Abs().Round(time.Second), now.UTC().Format(time.RFC3339), maxAuthSkew))
	}
	content := wire.AuthContent(make([]byte, 0, 64+len(m.cfg.Group)), m.cfg.Group, a.TimeMs, a.Nonce)
	if err := m.cfg.Authenticate(a.AccessKey, content, a.Sig); err != nil {
		return c.authResp(a.AccessKey, err.Error())
	}
	c.user = a.AccessKey
	return nil
}

// authResp is an Unauthorized answer, logged at most once a second (a
// peer that dials in a loop cannot flood the log).
func (c *mconn) authResp(user, msg string) *wire.FetchResp {
	r := c.resp(wire.Unauthorized, msg)
	m := c.m
	now := m.cfg.Clock.Now()
	m.authLogMu.Lock()
	log := m.authLogged.IsZero() || now.Sub(m.authLogged) >= time.Second
	skipped := m.authSkipped
	if log {
		m.authLogged, m.authSkipped = now, 0
	} else {
		m.authSkipped++
	}
	m.authLogMu.Unlock()
	if log {
		m.log.Warn("slave connection refused: authentication", "remote", c.remote(), "user", clip(user, 128),
			"reason", msg, "refusals_not_logged", skipped)
	}
	return r
}

// handshake checks the first fetch of a connection and sets the cursor.
func (c *mconn) handshake(f wire.Fetch) *wire.FetchResp {
	m := c.m
	if f.Group != m.cfg.Group {
		return c.errResp(wire.WrongGroup, fmt.Sprintf("this is the master of group %q, not %q: check --broker-name and --ha-master", m.cfg.Group, f.Group))
	}
	if f.ReplicaID < 1 {
		return c.errResp(wire.UnknownReplica, fmt.Sprintf("replica id %d: a slave's --broker-id must be ≥ 1", f.ReplicaID))
	}
	c.id, c.group = f.ReplicaID, f.Group
	es := m.cfg.Epochs.Entries()
	cur := es[len(es)-1]
	if f.Durable > f.Offset {
		return c.errResp(wire.InvalidRequest, fmt.Sprintf("durable end %d above written end %d", f.Durable, f.Offset))
	}
	if f.Epoch > cur.Epoch {
		// Before any look at the slave's log: a stale master must not
		// make a slave of the new one cut anything.
		if m.cfg.OnStale != nil {
			m.cfg.OnStale(f.Epoch)
		}
		return c.errResp(wire.NewerEpoch, fmt.Sprintf("the slave knows epoch %d, this master is at epoch %d: it is stale", f.Epoch, cur.Epoch))
	}
	leo, logStart := m.src.Written(), m.src.MinOffset()
	if f.Offset > leo && f.LastEpoch == 0 {
		return c.errResp(wire.NotPrefix, fmt.Sprintf("the slave's log ends at %d, beyond this master's end %d, and has no epoch: it is not a copy of this master; wipe the slave's store to copy the master again", f.Offset, leo))
	}
	if f.Offset > leo {
		return c.diverging(f, es, leo)
	}
	if f.Offset < logStart {
		return c.errResp(wire.OffsetOutOfRange, fmt.Sprintf("the slave's log ends at %d, below this master's first retained byte %d: start over from there", f.Offset, logStart))
	}
	switch {
	case f.LastEpoch == 0:
		// No bytes on the slave: it may start at 0 or at the first
		// retained byte, nowhere else.
		if f.Offset != 0 && f.Offset != logStart {
			return c.errResp(wire.NotPrefix, fmt.Sprintf("the slave claims bytes up to %d but no epoch: it is not a copy of this master", f.Offset))
		}
	default:
		if e, ok := epochOf(es, f.Offset-1); !ok || e.Epoch != f.LastEpoch {
			return c.diverging(f, es, leo)
		}
	}
	c.sent.Store(f.Offset)
	m.trackMu.Lock()
	if m.closed {
		m.trackMu.Unlock()
		return c.errResp(wire.Unavailable, "the master is stopping")
	}
	old := m.owners[f.ReplicaID]
	m.owners[f.ReplicaID] = c
	if old != nil {
		m.cfg.Tracker.SlaveGone(f.ReplicaID)
	}
	m.trackMu.Unlock()
	if old != nil {
		m.log.Warn("slave reconnected; dropping its previous connection", "replica_id", f.ReplicaID, "remote", c.remote())
		old.nc.Close()
	}
	m.log.Info("slave connected", "replica_id", f.ReplicaID, "remote", c.remote(), "user", c.user, "offset", f.Offset,
		"durable", f.Durable, "last_epoch", f.LastEpoch, "leo", leo)
	return nil
}

// diverging answers a handshake whose log is not a prefix of the master's
// (replication.md §2.7): the largest epoch both have, and where the slave
// must cut (epoch.DivergencePoint); a slave that can truncate cuts there
// and fetches again, one that cannot stops as on NotPrefix.
func (c *mconn) diverging(f wire.Fetch, es []epoch.Entry, leo int64) *wire.FetchResp {
	e, end := epoch.DivergencePoint(es, leo, f.LastEpoch, f.Offset)
	r := c.errResp(wire.Diverging, fmt.Sprintf("the slave's log (ending at %d in epoch %d) diverges from this master's after epoch %d: cut it at %d (or below, where its own epoch %d ends) and fetch again",
		f.Offset, f.LastEpoch, e, end, e))
	r.Epoch, r.EpochStart, r.Base = e, 0, end
	for _, x := range es {
		if x.Epoch == e {
			r.EpochStart = x.Start
		}
	}
	return r
}

// checkAck checks a later fetch against the connection's session.
func (c *mconn) checkAck(f wire.Fetch) *wire.FetchResp {
	sent := c.sent.Load()
	switch {
	case f.Group != c.group || f.ReplicaID != c.id:
		return c.errResp(wire.InvalidRequest, "group or replica id changed on the connection")
	case f.Offset > sent:
		return c.errResp(wire.InvalidRequest, fmt.Sprintf("ack of written end %d beyond the %d bytes sent (the master's log ends at %d)", f.Offset, sent, c.m.src.Written()))
	case f.Offset < c.ackW || f.Durable < c.ackD:
		return c.errResp(wire.InvalidRequest, fmt.Sprintf("ack moved backwards (written %d→%d, durable %d→%d)", c.ackW, f.Offset, c.ackD, f.Durable))
	case f.Durable > f.Offset:
		return c.errResp(wire.InvalidRequest, fmt.Sprintf("durable end %d above written end %d", f.Durable, f.Offset))
	}
	return nil
}

// ack hands the fetch's acks to the tracker (after the master's own
// progress, which covers every byte sent).
func (c *mconn) ack(f wire.Fetch) *wire.FetchResp {
	m := c.m
	m.trackMu.Lock()
	if m.owners[c.id] != c {
		m.trackMu.Unlock()
		return c.errResp(wire.Unavailable, "another connection of this replica took over")
	}
	m.cfg.Tracker.MasterProgress(m.src.Written(), m.src.Durable())
	// Before the tracker: a send its ack commits must find the bytes held
	// here (announced). A refused ack ends the connection.
	c.ackedW.Store(f.Offset)
	err := m.cfg.Tracker.SlaveProgress(c.id, f.Offset, f.Durable)
	m.trackMu.Unlock()
	if err != nil {
		return c.errResp(wire.InvalidRequest, "ack refused: "+err.Error())
	}
	c.ackW, c.ackD = f.Offset, f.Durable
	m.kickHW()
	return nil
}

// serve answers the queued fetches in order, then tears the connection
// down.
func (c *mconn) serve() {
	m := c.m
	defer m.wg.Done()
	defer c.teardown()
	head := make([]byte, 0, respHeadroom)
	sentHW := int64(-1)
	for it := range c.items {
		if it.fail != nil {
			head = wire.AppendFetchRespHeader(head[:0], *it.fail)
			_ = wire.WriteFrameParts(c.nc, head, nil)
			return
		}
		r, ok := c.answer(it.f, sentHW)
		if !ok {
			return
		}
		sentHW = r.HW
		head = wire.AppendFetchRespHeader(head[:0], r)
		if err := wire.WriteFrameParts(c.nc, head, r.Data); err != nil {
			if c.ctx.Err() == nil {
				m.log.Debug("slave connection write failed", "replica_id", c.id, "err", err)
			}
			return
		}
		if r.Err != wire.OK {
			return
		}
		m.sentCommitPoint(c, r.HW)
	}
}

// answer waits (long poll) and builds the response to f; false when the
// connection ended meanwhile.
func (c *mconn) answer(f wire.Fetch, sentHW int64) (wire.FetchResp, bool) {
	m := c.m
	cursor := c.sent.Load()
	wait := min(f.MaxWait, m.cfg.MaxWait)
	if m.src.Written() <= cursor && wait > 0 {
		ctx, cancel := context.WithCancel(c.ctx)
		var byHW atomic.Bool
		unwatch := m.watchHW(sentHW, func() { byHW.Store(true); cancel() })
		t := m.cfg.Clock.AfterFunc(wait, cancel)
		_ = m.src.WaitWritten(ctx, cursor) // nil, or the poll ended: answer what there is
		t.Stop()
		unwatch()
		cancel()
		if d := m.cfg.HWPushDelay; d > 0 && byHW.Load() && m.src.Written() <= cursor {
			// Only the commit point moved: give the bytes that usually
			// follow a moment to come, so one response carries both.
			// A send waiting for the move to reach the slaves ends it.
			ctx, cancel := context.WithCancel(c.ctx)
			t := m.cfg.Clock.AfterFunc(d, cancel)
			release := m.holdForBytes(cancel)
			_ = m.src.WaitWritten(ctx, cursor)
			release()
			t.Stop()
			cancel()
		}
	}
	if l := m.cfg.Linger; l > 0 {
		if n := m.src.Written() - cursor; n > 0 && n < lingerBytes {
			ctx, cancel := context.WithCancel(c.ctx)
			t := m.cfg.Clock.AfterFunc(l, cancel)
			_ = m.src.WaitWritten(ctx, cursor+lingerBytes-1)
			t.Stop()
			cancel()
		}
	}
	if c.ctx.Err() != nil {
		return wire.FetchResp{}, false
	}
	leo, logStart, hw := m.src.Written(), m.src.MinOffset(), m.HW()
	if cursor < logStart {
		return *c.errResp(wire.OffsetOutOfRange, fmt.Sprintf("the master's log now starts at %d, beyond the slave's position %d: start over from there", logStart, cursor)), true
	}
	es := m.cfg.Epochs.Entries()
	e, ok := epochOf(es, cursor)
	if !ok {
		m.log.Error("no epoch holds a fetch position", "offset", cursor, "epochs", len(es))
		return *c.errResp(wire.Unavailable, "the master cannot serve this position now"), true
	}
	n := min(int64(f.MaxBytes), int64(m.cfg.MaxBytes), endOf(es, e, leo)-cursor)
	var data []byte
	if ri, ok := m.src.(RawReaderInto); ok && n > 0 {
		// serve writes the bytes before it asks for the next answer.
		if int64(cap(c.rbuf)) < n {
			c.rbuf = make([]byte, n)
		}
		k, err := ri.ReadRawInto(cursor, c.rbuf[:n])
		if err != nil {
			m.log.Error("read for a slave failed", "replica_id", c.id, "offset", cursor, "err", err)
			return *c.errResp(wire.Unavailable, "the master cannot read its log now; retry later"), true
		}
		data = c.rbuf[:k]
	} else if n > 0 {
		var err error
		data, err = m.src.ReadRaw(cursor, int(n))
		if err != nil {
			m.log.Error("read for a slave failed", "replica_id", c.id, "offset", cursor, "err", err)
			return *c.errResp(wire.Unavailable, "the master cannot read its log now; retry later"), true
		}
		if int64(len(data)) > n {
			data = data[:n]
		}
	}
	c.sent.Store(cursor + int64(len(data)))
	if len(data) > 0 {
		m.kickHW()
	}
	return wire.FetchResp{Err: wire.OK, Epoch: e.Epoch, EpochStart: e.Start, HW: hw, LEO: max(leo, cursor+int64(len(data))),
		LogStart: logStart, Base: cursor, Data: data}, true
}

// teardown forgets the slave first (so that, once the peer sees the
// connection close, it no longer counts), then closes the connection.
func (c *mconn) teardown() {
	m := c.m
	m.trackMu.Lock()
	delete(m.conns, c)
	gone := c.id != 0 && m.owners[c.id] == c
	if gone {
		delete(m.owners, c.id)
		m.cfg.Tracker.SlaveGone(c.id)
	}
	m.trackMu.Unlock()
	close(c.done)
	c.cancel()
	c.nc.Close()
	if gone {
		m.log.Info("slave disconnected", "replica_id", c.id, "remote", c.remote(), "sent", c.sent.Load())
		m.kickHW()
	}
}

// readFrameMax reads one frame whose payload is at most limit bytes,
// refusing a longer one before reading its payload.
func readFrameMax(r io.Reader, buf []byte, limit int) ([]byte, error) {
	var h [wire.FrameHeader]byte
	if n, err := io.ReadFull(r, h[:]); err != nil {
		if err == io.EOF && n == 0 {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("ha: read frame header: %w", err)
	}
	n := binary.BigEndian.Uint32(h[0:4])
	if n > uint32(limit) {
		return nil, fmt.Errorf("%w: frame of %d bytes, at most %d here", wire.ErrFrameTooLarge, n, limit)
	}
	return wire.ReadFrame(io.MultiReader(bytes.NewReader(h[:]), io.LimitReader(r, int64(n))), buf)
}
