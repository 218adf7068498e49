package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/controller/api"
	"github.com/petrelmq/petrel/internal/controller/fsm"
)

// ServiceConfig configures the controller's service: the timing of
// liveness and leases (replication.md §2.3, §2.6, §2.9) and its clock and
// logger.
type ServiceConfig struct {
	// Heartbeat is how often brokers heartbeat (told to them at Register)
	// and how often the liveness loop ticks. Default 500 ms.
	Heartbeat time.Duration
	// SessionTimeout: a replica without a heartbeat for this long is dead;
	// a new controller leader waits this long after it starts leading
	// before it declares anyone dead. Default 4 s; at least
	// Lease·(1+Drift)+Margin.
	SessionTimeout time.Duration
	// Lease is the master lease one granted heartbeat gives, counted by
	// the broker from its own send time on its monotonic clock. Default 3 s.
	Lease time.Duration
	// Drift bounds the clock-rate difference between a broker and the
	// controller (0.05: 5 %). Default 0.05.
	Drift float64
	// Margin is added to the lease bound before a master is replaced.
	// Default 200 ms.
	Margin time.Duration
	// ElectionSilence is the least time raft puts between the last quorum
	// contact of any earlier leader and the start of a new leadership:
	// raft's heartbeat timeout, as a hashicorp/raft voter grants a vote only
	// once it has heard from no leader for that long, and a voter that
	// restarts waits that long before raft starts (NewRaft). Every lease a
	// predecessor granted was verified with a quorum before that contact,
	// so a new leader counts the lease bound of a master it has not heard
	// from ElectionSilence·(1−2·Drift) before its own start (replication.md
	// §2.6). StartNode sets it from the raft heartbeat timeout; 0 assumes no
	// silence (the bound counts from the start of the leadership).
	ElectionSilence time.Duration
	// Unclean allows elections outside the in-sync set when it has no live
	// member (and operator elections with --unclean); audited. Default off.
	Unclean bool
	// Clock: default clock.Real.
	Clock clock.Clock
	// Logger: default discard.
	Logger *slog.Logger
}

// DefaultServiceConfig returns the documented defaults (replication.md §2.9).
func DefaultServiceConfig() ServiceConfig {
	return ServiceConfig{
		Heartbeat:      500 * time.Millisecond,
		SessionTimeout: 4 * time.Second,
		Lease:          3 * time.Second,
		Drift:          0.05,
		Margin:         200 * time.Millisecond,
	}
}

// leaseBound is how long after the receipt of a master's last granted
// heartbeat its lease has surely run out: Lease·(1+Drift)+Margin.
func (c ServiceConfig) leaseBound() time.Duration {
	return time.Duration(math.Ceil(float64(c.Lease)*(1+c.Drift))) + c.Margin
}

// predecessorSilence is how long before the start of a leadership, on
// this voter's clock, every lease an earlier leader granted was surely
// verified: ElectionSilence less twice the drift (once for the voter that
// timed it, once for this one).
func (c ServiceConfig) predecessorSilence() time.Duration {
	return time.Duration(float64(c.ElectionSilence) * (1 - 2*c.Drift))
}

// Validate checks the timing rules: every duration positive, the lease
// longer than the heartbeat interval (else it lapses between renewals),
// and the session timeout at least the lease bound Lease·(1+Drift)+Margin,
// so that the wait of a new leader covers every lease its predecessor
// granted.
func (c ServiceConfig) Validate() error {
	switch {
	case c.Heartbeat <= 0:
		return fmt.Errorf("controller: the heartbeat interval must be positive (got %v)", c.Heartbeat)
	case c.Lease <= 0:
		return fmt.Errorf("controller: the master lease must be positive (got %v)", c.Lease)
	case c.SessionTimeout <= 0:
		return fmt.Errorf("controller: the session timeout must be positive (got %v)", c.SessionTimeout)
	case c.Drift < 0 || c.Drift >= 1:
		return fmt.Errorf("controller: the clock drift must be in [0, 1) (got %v)", c.Drift)
	case c.Margin < 0:
		return fmt.Errorf("controller: the lease margin must not be negative (got %v)", c.Margin)
	case c.ElectionSilence < 0:
		return fmt.Errorf("controller: the election silence must not be negative (got %v)", c.ElectionSilence)
	case c.Lease <= c.Heartbeat:
		return fmt.Errorf("controller: the master lease (%v) must be longer than the heartbeat interval (%v), else it lapses between renewals", c.Lease, c.Heartbeat)
	case c.SessionTimeout < c.leaseBound():
		return fmt.Errorf("controller: the session timeout (%v) must be at least lease·(1+drift)+margin = %v, else a new master could be elected while the old one's lease runs", c.SessionTimeout, c.leaseBound())
	}
	return nil
}

// Service is the controller's front: it answers the api codes over a Log
// and runs the liveness loop of the leader. Soft state (heartbeat times,
// reported progress, lease grants) lives here only, never in the log.
type Service struct {
	cfg ServiceConfig
	log Log
	clk clock.Clock
	lg  *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	started bool
	closed  bool
	timer   clock.Timer
	// leading is the leadership the loop acts on; ready is set once the
	// Barrier after becoming leader returned. leaderSince is when the loop
	// saw this voter become leader; gen counts leaderships.
	leading     bool
	ready       bool
	leaderSince time.Time
	gen         uint64
	soft        map[string]map[int64]*softReplica // group → replica id
	lastGrant   map[string]time.Time              // group → receipt of the last granted heartbeat
	leased      map[string]uint32                 // group → the epoch of the last grant in this leadership
	fenced      map[string]int                    // group → elections in flight (no lease grants)
	noCandidate map[string]uint32                 // group → the epoch "no candidate" was logged for
	// Lease verification rounds: at most one VerifyLeader starts per tick;
	// a heartbeat needs a round started after its receipt.
	roundThisTick bool
	roundRunning  bool
	next          *round
	stats         ServiceStats
}

// softReplica is what the leader heard last from one replica.
type softReplica struct {
	incarnation uint64
	recv        time.Time
	lastEpoch   uint32
	leo         int64
	durable     int64
}

// round is one VerifyLeader shared by the heartbeats waiting for it.
type round struct {
	done    chan struct{}
	err     error
	waiters int  // heartbeats that joined it
	urgent  bool // one of them is a master's first grant: start it without waiting for the next tick
}

// ServiceStats are the service's counters since it started.
type ServiceStats struct {
	// Elections counts committed elections by reason (fsm.Reason*).
	Elections map[string]uint64
	// LeaseGrants and LeaseDenials count master heartbeats answered with
	// and without a lease.
	LeaseGrants, LeaseDenials uint64
	// Verifies counts VerifyLeader rounds.
	Verifies uint64
	// Leading: the liveness loop acts as the leader (after its Barrier).
	Leading bool
}

// NewService returns a Service over log. Validate cfg first; nil Clock and
// Logger take their defaults. Register its handlers on a remoting server,
// then Start it.
func NewService(cfg ServiceConfig, log Log) *Service {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Service{
		cfg:         cfg,
		log:         log,
		clk:         cfg.Clock,
		lg:          lg.With("component", "controller"),
		ctx:         ctx,
		cancel:      cancel,
		soft:        map[string]map[int64]*softReplica{},
		lastGrant:   map[string]time.Time{},
		leased:      map[string]uint32{},
		fenced:      map[string]int{},
		noCandidate: map[string]uint32{},
		stats:       ServiceStats{Elections: map[string]uint64{}},
	}
}

// Start runs the liveness loop: a tick at once, then every Heartbeat on
// the service clock. It is idempotent.
func (s *Service) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return
	}
	s.started = true
	s.timer = s.clk.AfterFunc(0, s.tick)
}

// Close stops the liveness loop, waits for a tick in progress, and fails
// heartbeats waiting for a lease. It does not close the Log.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	if r := s.next; r != nil {
		s.next = nil
		r.err = errServiceClosed
		close(r.done)
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return nil
}

var errServiceClosed = errors.New("controller: service closed")

// Stats returns a copy of the counters.
func (s *Service) Stats() ServiceStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Elections = maps.Clone(s.stats.Elections)
	st.Leading = s.leading && s.ready
	return st
}

// record stores a sign of life of a replica of group (called with s.mu).
func (s *Service) record(group string, id int64, sr softReplica) {
	m := s.soft[group]
	if m == nil {
		m = map[int64]*softReplica{}
		s.soft[group] = m
	}
	if old := m[id]; old != nil && old.incarnation == sr.incarnation && old.recv.After(sr.recv) {
		return // a late answer of an older heartbeat
	}
	m[id] = &sr
}

// alive returns the replica's soft state when it heartbeated with its
// registered incarnation within the session timeout (called with s.mu).
func (s *Service) alive(group string, r fsm.Replica, now time.Time) (*softReplica, bool) {
	sr := s.soft[group][r.ID]
	if sr == nil || sr.incarnation != r.Incarnation || now.Sub(sr.recv) >= s.cfg.SessionTimeout {
		return nil, false
	}
	return sr, true
}

// liveProgress is PickMaster's input: the live replicas of g (s.mu held).
func (s *Service) liveProgress(g *fsm.Group, now time.Time) map[int64]fsm.Progress {
	live := map[int64]fsm.Progress{}
	for _, r := range g.Replicas {
		if sr, ok := s.alive(g.Name, r, now); ok {
			live[r.ID] = fsm.Progress{Incarnation: sr.incarnation, LastEpoch: sr.lastEpoch, LEO: sr.leo, Durable: sr.durable}
		}
	}
	return live
}

// leaseRef is the receipt time the lease bound of group's master counts
// from: its last heartbeat this controller granted, or, when later, the
// start of this leadership less the election's silence (covering what a
// predecessor granted) (s.mu held).
func (s *Service) leaseRef(group string) time.Time {
	ref := s.leaderSince.Add(-s.cfg.predecessorSilence())
	if t := s.lastGrant[group]; t.After(ref) {
		ref = t
	}
	return ref
}

// leaseExpired applies fsm.LeaseSurelyExpired to group's last grant
// (s.mu held).
func (s *Service) leaseExpired(group string, now time.Time) bool {
	return fsm.LeaseSurelyExpired(s.leaseRef(group), now, s.cfg.Lease, s.cfg.Drift, s.cfg.Margin)
}

// fence stops lease grants for group while an election is in flight;
// the returned func lifts it.
func (s *Service) fence(group string) func() {
	s.mu.Lock()
	s.fenced[group]++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.fenced[group]--; s.fenced[group] <= 0 {
			delete(s.fenced, group)
		}
		s.mu.Unlock()
	}
}

// readGroup returns a copy of the named group as applied here (nil when
// unknown).
func (s *Service) readGroup(name string) *fsm.Group {
	var g *fsm.Group
	s.log.Read(func(st *fsm.State) {
		if x := st.Groups[name]; x != nil {
			g = copyGroup(x)
		}
	})
	return g
}

func copyGroup(g *fsm.Group) *fsm.Group {
	c := *g
	c.ISR = append([]int64(nil), g.ISR...)
	c.Replicas = append([]fsm.Replica(nil), g.Replicas...)
	return &c
}

// view is the api form of g with this controller's soft state (s.mu held).
func (s *Service) view(g *fsm.Group, now time.Time) api.GroupView {
	v := api.GroupView{
		Cluster:    g.Cluster,
		Group:      g.Name,
		Master:     g.Master,
		Epoch:      g.Epoch,
		ISR:        append([]int64{}, g.ISR...),
		ISRVersion: g.ISRVersion,
		TransferTo: g.TransferTo,
		Replicas:   make([]api.ReplicaView, 0, len(g.Replicas)),
	}
	for _, r := range g.Replicas {
		rv := api.ReplicaView{ID: r.ID, Addr: r.Addr, HAAddr: r.HAAddr, GRPCAddr: r.GRPCAddr, Incarnation: r.Incarnation, HeartbeatAgoMs: -1}
		if sr := s.soft[g.Name][r.ID]; sr != nil && sr.incarnation == r.Incarnation {
			rv.Alive = now.Sub(sr.recv) < s.cfg.SessionTimeout
			rv.LastEpoch, rv.LEO, rv.Durable = sr.lastEpoch, sr.leo, sr.durable
			rv.HeartbeatAgoMs = now.Sub(sr.recv).Milliseconds()
		}
		v.Replicas = append(v.Replicas, rv)
	}
	return v
}

// viewOf locks s.mu around view.
func (s *Service) viewOf(g *fsm.Group) api.GroupView {
	now := s.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view(g, now)
}

// sleep waits d on the service clock, or until ctx or the service ends.
func (s *Service) sleep(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.ctx, func() { cancel(errServiceClosed) })
	defer stop()
	err := clock.Sleep(ctx, s.clk, d)
	if err != nil && errors.Is(context.Cause(ctx), errServiceClosed) {
		return errServiceClosed
	}
	return err
}

// sortedGroups returns copies of every group, by name.
func (s *Service) sortedGroups() []*fsm.Group {
	var gs []*fsm.Group
	s.log.Read(func(st *fsm.State) {
		gs = make([]*fsm.Group, 0, len(st.Groups))
		for _, g := range st.Groups {
			gs = append(gs, copyGroup(g))
		}
	})
	sort.Slice(gs, func(i, j int) bool { return gs[i].Name < gs[j].Name })
	return gs
}
