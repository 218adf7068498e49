package controller

import (
	"context"
	"errors"
	"time"

	"github.com/petrelmq/petrel/internal/controller/fsm"
)

// The liveness loop (replication.md §2.3, §2.6). Every Heartbeat it:
//   - follows the leadership: on becoming leader it forgets all soft state,
//     calls Barrier, and replaces a master it has not heard from only once
//     the lease bound has passed since ElectionSilence·(1−2·Drift) before
//     it saw itself lead (the predecessor's grants);
//   - starts the lease verification round heartbeats wait for (at most one
//     VerifyLeader per tick);
//   - as the leader, per group: a master without a heartbeat for
//     SessionTimeout (or not heard in this leadership) whose last granted
//     lease has surely expired is replaced by fsm.PickMaster's choice
//     (master-lost); a group without a master gets a live in-sync member
//     (offline).
//
// Lease safety: a heartbeat received at r is granted only after a
// VerifyLeader that started after r succeeded, so a quorum acked this
// leader after r. Every voter that elects a later leader has heard from no
// leader for raft's heartbeat timeout before it votes (and a restarted one
// waited that long before raft started), so any later leader began at
// least ElectionSilence after r and waits the lease bound
// Lease·(1+Drift)+Margin from ElectionSilence·(1−2·Drift) before its start;
// this leader records r before answering and, while an election of the
// group is in flight (fenced), grants nothing.

func (s *Service) tick() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.wg.Add(1)
	defer s.wg.Done()
	s.roundThisTick = false
	s.followLeadership()
	var r *round
	if s.next != nil && !s.roundRunning {
		r = s.startRoundLocked()
	}
	needBarrier, gen := s.leading && !s.ready, s.gen
	s.mu.Unlock()

	if r != nil {
		s.runRound(r)
	}
	if needBarrier {
		s.barrier(gen)
	}
	s.checkGroups()

	s.mu.Lock()
	if !s.closed {
		// Until it leads and its Barrier returned, the loop looks more
		// often: the wait for a predecessor's leases counts from the moment
		// it sees itself lead, so a late look is a longer failover.
		next := s.cfg.Heartbeat
		if !s.leading || !s.ready {
			next = min(next, leadershipPoll)
		}
		s.timer = s.clk.AfterFunc(next, s.tick)
	}
	s.mu.Unlock()
}

// leadershipPoll is how often the loop of a voter that does not lead (or
// whose leadership is not ready) checks its leadership: cheap, as such a
// tick decides nothing.
const leadershipPoll = 100 * time.Millisecond

// followLeadership drains LeaderCh and reconciles it with IsLeader
// (s.mu held). Any "true" seen starts a new leadership: the soft state of
// an earlier one may miss what another leader granted in between.
func (s *Service) followLeadership() {
	sawTrue := false
drain:
	for {
		select {
		case v := <-s.log.LeaderCh():
			sawTrue = sawTrue || v
		default:
			break drain
		}
	}
	now := s.log.IsLeader()
	switch {
	case now && (sawTrue || !s.leading):
		s.gen++
		s.leading, s.ready = true, false
		s.leaderSince = s.clk.Now()
		s.soft = map[string]map[int64]*softReplica{}
		s.lastGrant = map[string]time.Time{}
		s.leased = map[string]uint32{}
		s.noCandidate = map[string]uint32{}
		s.lg.Info("controller leads; a master it has not heard from is replaced once its lease has surely expired",
			"lease_bound", s.cfg.leaseBound(), "election_silence", s.cfg.ElectionSilence, "session_timeout", s.cfg.SessionTimeout)
	case !now && s.leading:
		s.leading, s.ready = false, false
		s.soft = map[string]map[int64]*softReplica{}
		s.lastGrant = map[string]time.Time{}
		s.leased = map[string]uint32{}
		id, addr := s.log.Leader()
		s.lg.Info("controller no longer leads", "leader_id", id, "leader_addr", addr)
	}
}

// barrier waits for every earlier command to be applied, then marks the
// leadership gen ready.
func (s *Service) barrier(gen uint64) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.SessionTimeout)
	err := s.log.Barrier(ctx)
	cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.lg.Warn("controller barrier failed; retrying at the next tick", "err", err)
		return
	}
	if s.gen == gen && s.leading {
		s.ready = true
	}
}

// startRoundLocked takes the pending round and marks it running (s.mu held).
func (s *Service) startRoundLocked() *round {
	r := s.next
	s.next = nil
	s.roundRunning, s.roundThisTick = true, true
	return r
}

// runRound runs one VerifyLeader for the heartbeats of r. A round that
// found more heartbeats waiting starts theirs at once unless one already
// started this tick (the next tick does).
func (s *Service) runRound(r *round) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Lease)
	err := s.log.VerifyLeader(ctx)
	cancel()
	s.mu.Lock()
	s.stats.Verifies++
	s.roundRunning = false
	r.err = err
	close(r.done)
	var next *round
	if s.next != nil && (!s.roundThisTick || s.next.urgent) && !s.closed {
		next = s.startRoundLocked()
		s.wg.Add(1)
	}
	s.mu.Unlock()
	if next != nil {
		go func() {
			defer s.wg.Done()
			s.runRound(next)
		}()
	}
}

// awaitVerify returns once a VerifyLeader that started after this call
// has finished, with its error. The first heartbeat of a tick starts it
// at once; others join the round the next tick starts, unless urgent (a
// master's first grant of its epoch in this leadership: it takes no
// writes until then), which starts its round as soon as none runs. Urgent
// rounds are bounded by the elections and leaderships, one per master.
func (s *Service) awaitVerify(ctx context.Context, urgent bool) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errServiceClosed
	}
	var r *round
	run := false
	if s.next == nil {
		s.next = &round{done: make(chan struct{})}
	}
	r = s.next
	r.waiters++
	r.urgent = r.urgent || urgent
	if !s.roundRunning && (!s.roundThisTick || urgent) {
		s.startRoundLocked()
		run = true
	}
	s.mu.Unlock()
	if run {
		s.runRound(r)
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	case <-s.ctx.Done():
		return errServiceClosed
	}
}

// election is one decision of the loop.
type election struct {
	group     string
	oldMaster int64
	epoch     uint32
	isrVer    uint64
	newMaster int64
	newInc    uint64 // the incarnation PickMaster saw alive
	unclean   bool
	reason    string
	silent    time.Duration // master-lost: how long the master was silent
}

// checkGroups makes the leader's per-group decisions and commits them.
func (s *Service) checkGroups() {
	s.mu.Lock()
	if !s.leading || !s.ready || s.closed {
		s.mu.Unlock()
		return
	}
	now := s.clk.Now()
	var todo []election
	for _, g := range s.sortedGroups() {
		if s.fenced[g.Name] > 0 {
			continue // an operator election or a resignation is in flight
		}
		if e, ok := s.decide(g, now); ok {
			s.fenced[g.Name]++
			todo = append(todo, e)
		}
	}
	s.mu.Unlock()
	for _, e := range todo {
		s.elect(e)
	}
}

// decide returns the election group g needs now, if any (s.mu held).
func (s *Service) decide(g *fsm.Group, now time.Time) (election, bool) {
	e := election{group: g.Name, oldMaster: g.Master, epoch: g.Epoch, isrVer: g.ISRVersion}
	if g.Master != 0 {
		// A master heard in this leadership is dead once silent for a
		// session. One not heard at all (it died with the last leader, or
		// cannot reach this one) takes no writes once every lease a
		// predecessor may have granted has surely run out, so it is
		// replaced then: a live master renews with a new leader within a
		// heartbeat or two, long before.
		last, heard := s.leaderSince, false
		if r, ok := g.Replica(g.Master); ok {
			if sr := s.soft[g.Name][g.Master]; sr != nil && sr.incarnation == r.Incarnation && !sr.recv.Before(last) {
				last, heard = sr.recv, true
			}
		}
		if (heard && now.Sub(last) < s.cfg.SessionTimeout) || !s.leaseExpired(g.Name, now) {
			return e, false
		}
		e.reason, e.silent = fsm.ReasonMasterLost, now.Sub(last)
	} else {
		e.reason = fsm.ReasonOffline
	}
	live := s.liveProgress(g, now)
	id, unclean, ok := fsm.PickMaster(g, live, s.cfg.Unclean)
	if !ok {
		if g.Master != 0 && s.noCandidate[g.Name] != g.Epoch {
			s.noCandidate[g.Name] = g.Epoch
			s.lg.Warn("master lost and no live in-sync replica can take over: the group takes no writes until one returns",
				"group", g.Name, "master", g.Master, "epoch", g.Epoch, "isr", g.ISR, "unclean_allowed", s.cfg.Unclean)
		}
		return e, false
	}
	e.newMaster, e.newInc, e.unclean = id, live[id].Incarnation, unclean
	return e, true
}

// elect commits e (the group is fenced by the caller; elect lifts it).
func (s *Service) elect(e election) {
	res, err := s.applyElection(s.ctx, fsm.Command{
		Kind: fsm.KindElect, Group: e.group, Master: e.oldMaster, Epoch: e.epoch, ISRVersion: e.isrVer,
		NewMaster: e.newMaster, Incarnation: e.newInc, Unclean: e.unclean, Reason: e.reason,
	})
	s.mu.Lock()
	if s.fenced[e.group]--; s.fenced[e.group] <= 0 {
		delete(s.fenced, e.group)
	}
	if err == nil {
		s.stats.Elections[e.reason]++
	}
	s.mu.Unlock()
	if err != nil {
		lvl := s.lg.Warn
		if errors.Is(err, fsm.ErrStale) || errors.Is(err, ErrNotLeader) {
			lvl = s.lg.Info
		}
		lvl("election not committed", "group", e.group, "epoch", e.epoch, "new_master", e.newMaster, "reason", e.reason, "err", err)
		return
	}
	s.logElection(e.group, e.oldMaster, res.Group, e.reason, e.unclean, "silent_for", e.silent)
}

// refusal reports whether err is the fsm's answer (the command was
// applied and refused: nothing changed), as opposed to raft trouble,
// after which the command may still commit.
func refusal(err error) bool {
	return errors.Is(err, fsm.ErrStale) || errors.Is(err, fsm.ErrNotInISR) ||
		errors.Is(err, fsm.ErrUnknown) || errors.Is(err, fsm.ErrInvalid)
}

// applyElection applies an Elect whose group the caller has fenced. When
// the outcome is unknown (a timeout: the entry may still commit) it
// returns only once a Barrier has settled it, or this voter stopped
// leading, or the service closed: lifting the fence earlier could grant
// the old master a lease just before the new one's election lands.
func (s *Service) applyElection(ctx context.Context, cmd fsm.Command) (fsm.Result, error) {
	actx, cancel := s.applyCtx(ctx)
	res, err := s.log.Apply(actx, cmd)
	cancel()
	if err == nil || refusal(err) {
		return res, err
	}
	for s.ctx.Err() == nil && s.log.IsLeader() {
		bctx, cancel := context.WithTimeout(s.ctx, s.cfg.SessionTimeout)
		berr := s.log.Barrier(bctx)
		cancel()
		if berr == nil {
			break
		}
		s.lg.Warn("controller barrier after an election of unknown outcome failed; the group stays fenced", "group", cmd.Group, "err", berr)
	}
	return res, err
}

// logElection logs a committed election.
func (s *Service) logElection(group string, oldMaster int64, g fsm.Group, reason string, unclean bool, extra ...any) {
	lvl := s.lg.Info
	if unclean {
		lvl = s.lg.Warn
	}
	args := append([]any{"group", group, "old_master", oldMaster, "new_master", g.Master,
		"epoch", g.Epoch, "isr", g.ISR, "reason", reason, "unclean", unclean}, extra...)
	lvl("elected a new master", args...)
}
