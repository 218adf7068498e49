package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/petrelmq/petrel/internal/controller/api"
	"github.com/petrelmq/petrel/internal/controller/fsm"
	"github.com/petrelmq/petrel/internal/remoting"
)

// Register installs the handlers of every api code on srv (call it before
// srv serves). Every handler answers CodeNotLeader with the leader's
// address in api.ExtLeader when this voter does not lead.
func (s *Service) Register(srv *remoting.Server) {
	for code, h := range s.handlers() {
		srv.Handle(code, h)
	}
}

// handlers maps every api code to its handler.
func (s *Service) handlers() map[int16]remoting.Handler {
	return map[int16]remoting.Handler{
		api.CodeRegister:  s.handle(s.register),
		api.CodeHeartbeat: s.handle(s.heartbeat),
		api.CodeAlterISR:  s.handle(s.alterISR),
		api.CodeGroups:    s.handle(s.groups),
		api.CodeElect:     s.handle(s.electMaster),
		api.CodeTransfer:  s.handle(s.transfer),
		api.CodeResign:    s.handle(s.resign),
	}
}

// answer is a handler's outcome: a code, a remark and a body (marshalled
// as JSON when not nil).
type answer struct {
	code   int16
	remark string
	body   any
	leader string // CodeNotLeader: the leader's address
}

func ok(body any) answer { return answer{code: remoting.CodeSuccess, body: body} }

func refused(format string, args ...any) answer {
	return answer{code: api.CodeRefused, remark: fmt.Sprintf(format, args...)}
}

// handle adapts f to a remoting handler: the leader check, the decode of
// the body into a fresh T, the encode of the answer.
func (s *Service) handle(f func(ctx context.Context, body []byte) answer) remoting.Handler {
	return func(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		var a answer
		if !s.log.IsLeader() {
			a = s.notLeader()
		} else {
			a = f(ctx, req.Body)
		}
		resp := remoting.NewResponse(req, a.code, a.remark)
		if a.code == api.CodeNotLeader {
			resp.SetExt(api.ExtLeader, a.leader)
		}
		if a.body != nil {
			b, err := json.Marshal(a.body)
			if err != nil {
				s.lg.Error("controller: encode answer", "code", req.Code, "err", err)
				return remoting.NewResponse(req, remoting.CodeSystemError, "the controller could not encode its answer")
			}
			resp.Body = b
		}
		return resp
	}
}

func (s *Service) notLeader() answer {
	_, addr := s.log.Leader()
	remark := "this controller is not the leader and knows no leader yet; retry"
	if addr != "" {
		remark = "this controller is not the leader; the leader is " + addr
	}
	return answer{code: api.CodeNotLeader, remark: remark, leader: addr}
}

// decode unmarshals a request body; an empty body is the zero request.
func decode(body []byte, v any) error {
	if len(body) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errors.New("malformed request body")
	}
	return nil
}

// applyErr turns an Apply error into an answer: fsm refusals into
// CodeStale (with the group as now committed) or CodeRefused with a remark
// naming the request; raft trouble into CodeNotLeader or a system error
// (the cause goes to the log, not to the peer).
func (s *Service) applyErr(group string, what string, err error) answer {
	switch {
	case errors.Is(err, ErrNotLeader):
		return s.notLeader()
	case errors.Is(err, fsm.ErrStale):
		a := answer{code: api.CodeStale, remark: fmt.Sprintf("%s of group %s: stale master, epoch, in-sync set version or incarnation; the body is the group as committed", what, group)}
		if g := s.readGroup(group); g != nil {
			a.body = s.viewOf(g)
		}
		return a
	case errors.Is(err, fsm.ErrNotInISR):
		return refused("%s of group %s: the target replica is not in the in-sync set", what, group)
	case errors.Is(err, fsm.ErrUnknown):
		return refused("%s of group %s: unknown group or replica (register first)", what, group)
	case errors.Is(err, fsm.ErrInvalid):
		s.lg.Info("controller refused an invalid command", "group", group, "what", what, "err", err)
		return refused("%s of group %s: invalid request", what, group)
	}
	s.lg.Warn("controller could not commit a command", "group", group, "what", what, "err", err)
	return answer{code: remoting.CodeSystemError, remark: fmt.Sprintf("%s of group %s: the controller could not commit it; retry", what, group)}
}

// applyCtx bounds an Apply: the request's ctx, the service's, and the
// session timeout.
func (s *Service) applyCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.SessionTimeout)
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

func (s *Service) register(ctx context.Context, body []byte) answer {
	var req api.RegisterRequest
	if err := decode(body, &req); err != nil {
		return refused("register: %v", err)
	}
	now := s.clk.Now()
	actx, cancel := s.applyCtx(ctx)
	res, err := s.log.Apply(actx, fsm.Command{
		Kind: fsm.KindRegister, Cluster: req.Cluster, Group: req.Group, LastEpoch: req.LastEpoch,
		Replica: fsm.Replica{ID: req.ReplicaID, Addr: req.Addr, HAAddr: req.HAAddr, GRPCAddr: req.GRPCAddr, Token: req.Token},
	})
	cancel()
	if err != nil {
		return s.applyErr(req.Group, "register", err)
	}
	s.mu.Lock()
	s.record(req.Group, res.ReplicaID, softReplica{incarnation: res.Incarnation, recv: now, lastEpoch: req.LastEpoch, leo: req.LEO, durable: req.Durable})
	v := s.view(&res.Group, s.clk.Now())
	s.mu.Unlock()
	s.lg.Info("replica registered", "group", req.Group, "replica", res.ReplicaID, "incarnation", res.Incarnation,
		"addr", req.Addr, "master", res.Group.Master, "epoch", res.Group.Epoch)
	return ok(api.RegisterResponse{
		ReplicaID: res.ReplicaID, Incarnation: res.Incarnation, Group: v,
		HeartbeatMillis: s.cfg.Heartbeat.Milliseconds(), LeaseMillis: s.cfg.Lease.Milliseconds(),
	})
}

func (s *Service) heartbeat(ctx context.Context, body []byte) answer {
	var req api.HeartbeatRequest
	if err := decode(body, &req); err != nil {
		return refused("heartbeat: %v", err)
	}
	recv := s.clk.Now()
	resp := api.HeartbeatResponse{LeaseMillis: s.cfg.Lease.Milliseconds()}
	g := s.readGroup(req.Group)
	if g == nil {
		return ok(resp) // Registered false: unknown group
	}
	r, known := g.Replica(req.ReplicaID)
	if !known || r.Incarnation != req.Incarnation {
		resp.Group = s.viewOf(g)
		return ok(resp)
	}
	resp.Registered = true
	isMaster := func(g *fsm.Group) bool {
		return req.Master && g.Master == req.ReplicaID && g.Epoch == req.Epoch
	}
	s.mu.Lock()
	s.record(req.Group, req.ReplicaID, softReplica{incarnation: req.Incarnation, recv: recv, lastEpoch: req.LastEpoch, leo: req.LEO, durable: req.Durable})
	first := s.leased[req.Group] != g.Epoch
	s.mu.Unlock()
	if !isMaster(g) {
		resp.Group = s.viewOf(g)
		return ok(resp)
	}
	err := s.awaitVerify(ctx, first)
	if errors.Is(err, ErrNotLeader) {
		return s.notLeader()
	}
	// The grant: decided under s.mu against the group as applied now, so
	// that an election decided concurrently either sees this grant or
	// this grant sees its fence.
	s.mu.Lock()
	g2 := s.readGroup(req.Group)
	if g2 != nil {
		g = g2
	}
	r2, _ := g.Replica(req.ReplicaID)
	if err == nil && g2 != nil && isMaster(g2) && r2.Incarnation == req.Incarnation &&
		s.leading && s.ready && s.fenced[req.Group] == 0 && s.log.IsLeader() {
		if recv.After(s.lastGrant[req.Group]) {
			s.lastGrant[req.Group] = recv
		}
		s.leased[req.Group] = g.Epoch
		resp.Lease = true
		s.stats.LeaseGrants++
	} else {
		s.stats.LeaseDenials++
	}
	resp.Group = s.view(g, s.clk.Now())
	s.mu.Unlock()
	return ok(resp)
}

func (s *Service) alterISR(ctx context.Context, body []byte) answer {
	var req api.AlterISRRequest
	if err := decode(body, &req); err != nil {
		return refused("alter in-sync set: %v", err)
	}
	if len(req.ISR) > fsm.MaxReplicas || len(req.Incarnations) > fsm.MaxReplicas {
		return refused("alter in-sync set of group %s: more than %d replicas", req.Group, fsm.MaxReplicas)
	}
	actx, cancel := s.applyCtx(ctx)
	res, err := s.log.Apply(actx, fsm.Command{
		Kind: fsm.KindAlterISR, Group: req.Group, Master: req.Master, Epoch: req.Epoch,
		ISRVersion: req.ISRVersion, ISR: req.ISR, Incarnations: req.Incarnations,
	})
	cancel()
	if err != nil {
		return s.applyErr(req.Group, "alter in-sync set", err)
	}
	s.lg.Info("in-sync set changed", "group", req.Group, "master", req.Master, "epoch", req.Epoch,
		"isr", res.Group.ISR, "isr_version", res.Group.ISRVersion)
	return ok(s.viewOf(&res.Group))
}

func (s *Service) groups(_ context.Context, body []byte) answer {
	var req api.GroupsRequest
	if err := decode(body, &req); err != nil {
		return refused("groups: %v", err)
	}
	var gs []*fsm.Group
	if req.Group != "" {
		g := s.readGroup(req.Group)
		if g == nil {
			return refused("groups: unknown group %s", req.Group)
		}
		gs = []*fsm.Group{g}
	} else {
		gs = s.sortedGroups()
	}
	lid, laddr := s.log.Leader()
	resp := api.GroupsResponse{Leader: api.ControllerView{ID: lid, Addr: laddr, Leader: true}, Groups: make([]api.GroupView, 0, len(gs))}
	for _, v := range s.log.Voters() {
		resp.Controllers = append(resp.Controllers, api.ControllerView{ID: v.ID, Addr: v.Addr, Leader: v.ID == lid})
	}
	now := s.clk.Now()
	s.mu.Lock()
	for _, g := range gs {
		resp.Groups = append(resp.Groups, s.view(g, now))
	}
	s.mu.Unlock()
	return ok(resp)
}

// awaitLeaseExpiry fences group's grants (the returned func lifts the
// fence) and waits until every lease its master may hold has surely run
// out: those this controller granted and, for a new leader, those its
// predecessor did.
func (s *Service) awaitLeaseExpiry(ctx context.Context, group string) (func(), error) {
	unfence := s.fence(group)
	for {
		now := s.clk.Now()
		s.mu.Lock()
		if !s.leading {
			s.mu.Unlock()
			unfence()
			return nil, ErrNotLeader
		}
		expired := s.leaseExpired(group, now)
		wait := s.leaseRef(group).Add(s.cfg.leaseBound()).Sub(now)
		s.mu.Unlock()
		if expired {
			return unfence, nil
		}
		if wait <= 0 {
			wait = time.Millisecond
		}
		if err := s.sleep(ctx, wait); err != nil {
			unfence()
			return nil, err
		}
	}
}

func (s *Service) electMaster(ctx context.Context, body []byte) answer {
	var req api.ElectRequest
	if err := decode(body, &req); err != nil {
		return refused("elect master: %v", err)
	}
	if req.Unclean && !s.cfg.Unclean {
		return refused("elect master of group %s: unclean elections are off on this controller (--controller-unclean-election)", req.Group)
	}
	g := s.readGroup(req.Group)
	if g == nil {
		return refused("elect master: unknown group %s", req.Group)
	}
	now := s.clk.Now()
	s.mu.Lock()
	live := s.liveProgress(g, now)
	s.mu.Unlock()
	target, unclean := req.ReplicaID, false
	if target == 0 {
		id, u, found := fsm.PickMaster(g, live, req.Unclean)
		if !found {
			return refused("elect master of group %s: no live replica other than the master can take over", req.Group)
		}
		target, unclean = id, u
	} else {
		if target == g.Master {
			return refused("elect master of group %s: replica %d is the master already", req.Group, target)
		}
		if _, known := g.Replica(target); !known {
			return refused("elect master of group %s: unknown replica %d", req.Group, target)
		}
		if _, alive := live[target]; !alive {
			return refused("elect master of group %s: replica %d is not alive (no heartbeat within the session timeout)", req.Group, target)
		}
		if !g.InISR(target) {
			if !req.Unclean {
				return refused("elect master of group %s: replica %d is not in the in-sync set (use --unclean if the controller allows it)", req.Group, target)
			}
			unclean = true
		}
	}
	unfence, err := s.awaitLeaseExpiry(ctx, req.Group)
	if err != nil {
		return s.applyErr(req.Group, "elect master", err)
	}
	defer unfence()
	res, err := s.applyElection(ctx, fsm.Command{
		Kind: fsm.KindElect, Group: req.Group, Master: g.Master, Epoch: g.Epoch, ISRVersion: g.ISRVersion,
		NewMaster: target, Incarnation: live[target].Incarnation, Unclean: unclean, Reason: fsm.ReasonOperator,
	})
	if err != nil {
		return s.applyErr(req.Group, "elect master", err)
	}
	s.countElection(fsm.ReasonOperator)
	s.logElection(req.Group, g.Master, res.Group, fsm.ReasonOperator, unclean)
	return ok(s.viewOf(&res.Group))
}

func (s *Service) countElection(reason string) {
	s.mu.Lock()
	s.stats.Elections[reason]++
	s.mu.Unlock()
}

func (s *Service) transfer(ctx context.Context, body []byte) answer {
	var req api.TransferRequest
	if err := decode(body, &req); err != nil {
		return refused("transfer: %v", err)
	}
	g := s.readGroup(req.Group)
	if g == nil {
		return refused("transfer: unknown group %s", req.Group)
	}
	if g.Master == 0 {
		return refused("transfer of group %s: the group has no master", req.Group)
	}
	now := s.clk.Now()
	s.mu.Lock()
	live := s.liveProgress(g, now)
	s.mu.Unlock()
	target := req.ReplicaID
	if target == 0 {
		id, _, found := fsm.PickMaster(g, live, false)
		if !found {
			return refused("transfer of group %s: no live in-sync replica other than the master", req.Group)
		}
		target = id
	} else if _, alive := live[target]; !alive {
		return refused("transfer of group %s: replica %d is not alive (no heartbeat within the session timeout)", req.Group, target)
	}
	actx, cancel := s.applyCtx(ctx)
	res, err := s.log.Apply(actx, fsm.Command{Kind: fsm.KindTransfer, Group: req.Group, Epoch: g.Epoch, NewMaster: target})
	cancel()
	if err != nil {
		return s.applyErr(req.Group, "transfer", err)
	}
	s.lg.Info("transfer asked", "group", req.Group, "master", g.Master, "epoch", g.Epoch, "transfer_to", target)
	return ok(s.viewOf(&res.Group))
}

func (s *Service) resign(ctx context.Context, body []byte) answer {
	var req api.ResignRequest
	if err := decode(body, &req); err != nil {
		return refused("resign: %v", err)
	}
	unfence := s.fence(req.Group)
	defer unfence()
	g := s.readGroup(req.Group)
	if g == nil {
		return refused("resign: unknown group %s", req.Group)
	}
	r, known := g.Replica(req.ReplicaID)
	if !known || g.Master != req.ReplicaID || g.Epoch != req.Epoch || r.Incarnation != req.Incarnation {
		return answer{code: api.CodeStale, remark: fmt.Sprintf("resign of group %s: replica %d (incarnation %d) is not the master of epoch %d; the body is the group as committed",
			req.Group, req.ReplicaID, req.Incarnation, req.Epoch), body: s.viewOf(g)}
	}
	if g.TransferTo == 0 || req.Target != g.TransferTo {
		return refused("resign of group %s: no transfer to replica %d is pending (pending: %d)", req.Group, req.Target, g.TransferTo)
	}
	res, err := s.applyElection(ctx, fsm.Command{
		Kind: fsm.KindElect, Group: req.Group, Master: g.Master, Epoch: g.Epoch, ISRVersion: g.ISRVersion,
		NewMaster: req.Target, Reason: fsm.ReasonTransfer,
	})
	if err != nil {
		return s.applyErr(req.Group, "resign", err)
	}
	s.countElection(fsm.ReasonTransfer)
	s.logElection(req.Group, g.Master, res.Group, fsm.ReasonTransfer, false)
	return ok(s.viewOf(&res.Group))
}
