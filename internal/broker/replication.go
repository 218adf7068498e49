package broker

// Replication roles and the sync-replication wait of sends.
//
// A broker group is a master (broker id 0) and slaves. The master stores
// sends; under sync replication (Config.Replicator set, ReplicationAsync
// off) a send that is durable locally is answered only once the
// Replicator says the group's commit point covers the end of its records:
// SEND_OK then, FLUSH_SLAVE_TIMEOUT (code 12) when ReplicationTimeout
// passes first, SLAVE_NOT_AVAILABLE (code 11) at once when fewer slaves
// are in sync than required. Both failures are statuses of a stored send,
// as in RocketMQ (the message is in the master's log; the producer decides
// whether to resend). The wait runs on one broker goroutine fed by the
// store's answers, so neither the commit log's writer nor a connection's
// reader ever blocks on it.
//
// A slave refuses what only a master does: sends (SERVICE_NOT_AVAILABLE,
// as RocketMQ's store answers a put on a slave), send-backs, transaction
// ends, pops and their acks, and topic/group admin writes and offset
// resets (SYSTEM_ERROR, as RocketMQ's admin processor answers on a slave).
// It serves pulls and takes consumer offset commits (RocketMQ's consumer
// manager accepts them on a slave too, so a consumer can keep its place
// while the master is away).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/ha/track"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// Role is a broker's replication role.
type Role int32

// Roles.
const (
	// RoleMaster takes writes; broker id 0.
	RoleMaster Role = iota
	// RoleSlave replicates a master's log and serves reads; broker id ≥ 1.
	RoleSlave
)

func (r Role) String() string {
	switch r {
	case RoleMaster:
		return "master"
	case RoleSlave:
		return "slave"
	}
	return fmt.Sprintf("Role(%d)", int32(r))
}

// RoleForID is RocketMQ's convention: broker id 0 is the master, any other
// a slave.
func RoleForID(id int64) Role {
	if id == 0 {
		return RoleMaster
	}
	return RoleSlave
}

// Replicator is how a master waits for its slaves (the ha package's
// tracker, adapted by the daemon). WaitReplicated returns nil once the
// commit point covers end (a commit-log offset: the end of a send's
// records); ErrNotEnoughReplicas at once when fewer slaves are in sync
// than the sync-replica count; ErrReplicationTimeout (or any other error)
// when ctx ends first. It must return nil for an end already covered even
// when ctx has ended. Safe for concurrent use.
type Replicator interface {
	WaitReplicated(ctx context.Context, end int64) error
}

// coverer is a Replicator that tells how far the commit point reaches
// (never backwards): the waiter answers every send at or below it without
// asking WaitReplicated.
type coverer interface {
	Covered() int64
}

// The Replicator's sentinel errors: ha/track's, so that a Replicator
// over a track.Tracker passes its Wait's errors on unchanged.
var (
	// ErrReplicationTimeout: the commit point did not cover the send
	// within ReplicationTimeout (FLUSH_SLAVE_TIMEOUT).
	ErrReplicationTimeout = track.ErrTimeout
	// ErrNotEnoughReplicas: fewer slaves are in sync than required
	// (SLAVE_NOT_AVAILABLE).
	ErrNotEnoughReplicas = track.ErrNotEnoughReplicas
	// ErrNotMaster is the cause of every refusal of a slave (fronts may map
	// it to their protocol's "not the master" code).
	ErrNotMaster = errors.New("broker: not the master")
)

// Role returns the broker's role now (Config.Role at start; SetRole
// changes it).
func (b *Broker) Role() Role { return Role(b.role.Load()) }

// SetRole changes the role at run time (failover promotes a slave). Sends
// already being stored finish under the role they started with.
//
// With state replication, a slave turning master first applies every
// state record readable (its tables then hold what the old master's
// commit point covered), then writes a snapshot of its own; a master
// turning slave skips its own records (its tables are their source).
func (b *Broker) SetRole(r Role) {
	if r == RoleMaster {
		b.drainState()
	}
	b.roleChanging(b.Role(), r)
	if old := Role(b.role.Swap(int32(r))); old != r {
		b.log.Info("broker role changed", "from", old.String(), "to", r.String())
		b.stateRoleChanged(r)
		b.roleChanged(old, r)
	}
}

// BrokerID is the broker's id in its group's routes now: Config.BrokerID,
// or what SetBrokerID last set.
func (b *Broker) BrokerID() int64 { return b.brokerID.Load() }

// SetBrokerID changes the broker's id at run time: in controller mode the
// controller decides it (0 while master, the replica id while a slave).
func (b *Broker) SetBrokerID(id int64) { b.brokerID.Store(id) }

// errSlave refuses a write on a slave: KindServiceUnavailable for data
// writes (producers retry on another broker), KindSystemError for admin
// writes, as RocketMQ answers.
func (b *Broker) errSlave(k Kind, what string) *Error {
	return errorf(k, ErrNotMaster, "broker %s is a slave (broker id %d) and does not take %s; send it to the master of %s",
		b.cfg.BrokerName, b.BrokerID(), what, b.cfg.BrokerName)
}

// ErrMasterMoved is the cause of a forward abandoned because the group's
// master changed while it waited (Config.MasterMoved).
var ErrMasterMoved = errors.New("broker: the group's master changed while the forward waited")

// WhileMasterStays returns a context that ends with ctx, or with cause
// ErrMasterMoved once moved does (a Config.MasterMoved context; nil: ctx
// alone). Call the returned cancel when done.
func WhileMasterStays(ctx, moved context.Context) (context.Context, context.CancelFunc) {
	if moved == nil {
		return context.WithCancel(ctx)
	}
	mctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(moved, func() { cancel(ErrMasterMoved) })
	return mctx, func() { stop(); cancel(nil) }
}

// refuseOnSlave returns the refusal of what on a slave, or nil on a master.
func (b *Broker) refuseOnSlave(k Kind, what string) error {
	if b.Role() == RoleSlave {
		return b.errSlave(k, what)
	}
	return nil
}

// syncReplication reports whether sends wait for the slaves.
func (b *Broker) syncReplication() bool {
	return b.repl != nil && b.Role() == RoleMaster
}

// recordsEnd is the commit-log offset just past msgs (stored).
func recordsEnd(msgs []*message.Message) int64 {
	last := msgs[len(msgs)-1]
	return last.PhysicalOffset + int64(last.EncodedLen())
}

// replicated applies the Replicator's answer to a stored send's result.
func (b *Broker) replicated(res SendResult, err error) SendResult {
	switch {
	case err == nil:
	case errors.Is(err, ErrNotEnoughReplicas):
		res.Status = SendSlaveNotAvailable
	default:
		if !errors.Is(err, ErrReplicationTimeout) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			b.log.Warn("waiting for the slaves failed; answering FLUSH_SLAVE_TIMEOUT", "err", err)
		}
		res.Status = SendFlushSlaveTimeout
	}
	return res
}

// replWait is a stored send waiting for the commit point.
type replWait struct {
	end      int64
	deadline time.Time
	answer   func(err error)
}

// replWaiter runs the waits of sync replication on one goroutine, in the
// order the store answered the sends (their ends and deadlines grow
// together, so a wait never holds up a later send beyond its own
// deadline). An end at or below one already covered is answered without
// asking the Replicator (the commit point never moves back).
type replWaiter struct {
	b       *Broker
	rep     Replicator
	timeout time.Duration

	mu     sync.Mutex
	q      []replWait
	closed bool
	wake   chan struct{}

	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	covered atomic.Int64 // highest end the Replicator said is covered; loop-owned writes
	waits   atomic.Int64 // calls of WaitReplicated, for tests
}

func (b *Broker) startReplication() {
	if b.cfg.Replicator == nil || b.cfg.ReplicationAsync {
		return
	}
	w := &replWaiter{b: b, rep: b.cfg.Replicator, timeout: b.cfg.ReplicationTimeout,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	w.covered.Store(-1)
	w.ctx, w.cancel = context.WithCancel(context.Background())
	b.repl = w
	go w.run()
}

// wait queues a wait for end; answer runs on the waiter's goroutine (or
// the caller's, after close) and must not block.
func (w *replWaiter) wait(end int64, answer func(err error)) {
	if end <= w.covered.Load() {
		answer(nil)
		return
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		answer(ErrReplicationTimeout)
		return
	}
	w.q = append(w.q, replWait{end: end, deadline: w.b.clk.Now().Add(w.timeout), answer: answer})
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *replWaiter) run() {
	defer close(w.done)
	var batch []replWait
	for {
		w.mu.Lock()
		batch, w.q = w.q, batch[:0]
		closed := w.closed
		w.mu.Unlock()
		for i := range batch {
			w.one(&batch[i])
			batch[i] = replWait{}
		}
		if len(batch) > 0 {
			continue
		}
		if closed {
			return
		}
		select {
		case <-w.wake:
		case <-w.ctx.Done():
			w.mu.Lock()
			w.closed = true
			w.mu.Unlock()
		}
	}
}

// one waits for p until its deadline (by the broker's clock) or close.
func (w *replWaiter) one(p *replWait) {
	if p.end <= w.covered.Load() {
		p.answer(nil)
		return
	}
	ctx, cancel := context.WithCancel(w.ctx)
	left := p.deadline.Sub(w.b.clk.Now())
	if left <= 0 {
		cancel()
	}
	t := w.b.clk.AfterFunc(max(left, 0), cancel)
	w.waits.Add(1)
	err := w.rep.WaitReplicated(ctx, p.end)
	t.Stop()
	cancel()
	if err == nil {
		// The commit point may cover more than p: the sends queued behind
		// p that it covers are answered without another wait.
		c := p.end
		if cv, ok := w.rep.(coverer); ok {
			c = max(c, cv.Covered())
		}
		if c > w.covered.Load() {
			w.covered.Store(c)
		}
	}
	p.answer(err)
}

// close ends the waits under way (their sends are answered
// FLUSH_SLAVE_TIMEOUT: stored, not known replicated) and returns once all
// are answered; later waits are answered at once the same way.
func (w *replWaiter) close() {
	w.cancel()
	<-w.done
}

// replicatedTopic is, on a slave, a topic its metadata does not know but
// whose queues its store holds (records replicated from the master): a
// read-only topic of those queues, so that the slave serves pulls before
// (or without) the master's topic table. On a master: none.
func (b *Broker) replicatedTopic(name string) (meta.Topic, bool) {
	if b.Role() != RoleSlave || name == StateTopic {
		return meta.Topic{}, false
	}
	qs := b.st.QueueIDs(name)
	if len(qs) == 0 {
		return meta.Topic{}, false
	}
	n := qs[len(qs)-1] + 1
	return meta.Topic{Name: name, ReadQueueNums: n, WriteQueueNums: n, Perm: meta.PermRead, TopicFilterType: "SINGLE_TAG"}, true
}

// awaitReplicated blocks, under sync replication, until the commit point
// covers msgs (stored), for the writes answered on a request goroutine
// rather than through SendBatch (a consumer's send-back). A failed wait is
// KindSystemError, as RocketMQ answers a send-back whose put was not
// PUT_OK: the consumer then sends the retry itself, a duplicate rather
// than a loss.
func (b *Broker) awaitReplicated(msgs []*message.Message, what string) error {
	if !b.syncReplication() {
		return nil
	}
	ch := make(chan error, 1)
	b.repl.wait(recordsEnd(msgs), func(err error) { ch <- err })
	err := <-ch
	if err == nil {
		return nil
	}
	if res := b.replicated(SendResult{}, err); res.Status == SendSlaveNotAvailable {
		return errorf(KindSystemError, err, "%s was stored on broker %s but too few slaves are in sync to replicate it (SLAVE_NOT_AVAILABLE)", what, b.cfg.BrokerName)
	}
	return errorf(KindSystemError, err, "%s was stored on broker %s but its slaves did not confirm it in time (FLUSH_SLAVE_TIMEOUT)", what, b.cfg.BrokerName)
}
