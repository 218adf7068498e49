package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/controller/api"
	"github.com/petrelmq/petrel/internal/controller/fsm"
	"github.com/petrelmq/petrel/internal/remoting"
)

var t0 = time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)

// rig is a Service over a FakeLog on a manual clock.
type rig struct {
	t    *testing.T
	s    *Service
	log  *FakeLog
	clk  *clock.Manual
	h    map[int16]remoting.Handler
	cfg  ServiceConfig
	incs map[int64]uint64 // replica id → incarnation (of group "g")
}

func newRig(t *testing.T, mod func(*ServiceConfig)) *rig {
	t.Helper()
	clk := clock.NewManual(t0)
	cfg := DefaultServiceConfig()
	cfg.Clock = clk
	if mod != nil {
		mod(&cfg)
	}
	log := NewFakeLog(Voter{ID: 1, Addr: "127.0.0.1:9001"})
	s := NewService(cfg, log)
	r := &rig{t: t, s: s, log: log, clk: clk, h: s.handlers(), cfg: cfg, incs: map[int64]uint64{}}
	t.Cleanup(func() { s.Close() })
	return r
}

// start runs the loop's first tick (leadership, Barrier).
func (r *rig) start() {
	r.s.Start()
	r.clk.Advance(0)
	if !r.s.Stats().Leading {
		r.t.Fatal("the service does not lead after its first tick")
	}
}

// call sends a request to the handler of code and decodes a body into out.
func (r *rig) call(code int16, req, out any) *remoting.Command {
	r.t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		r.t.Fatal(err)
	}
	resp := r.h[code](context.Background(), nil, remoting.NewRequest(code, nil, b))
	if out != nil && len(resp.Body) > 0 {
		if err := json.Unmarshal(resp.Body, out); err != nil {
			r.t.Fatalf("decode answer of code %d: %v", code, err)
		}
	}
	return resp
}

func (r *rig) mustOK(resp *remoting.Command) {
	r.t.Helper()
	if resp.Code != remoting.CodeSuccess {
		r.t.Fatalf("code %d (%s), want success", resp.Code, resp.Remark)
	}
}

func (r *rig) register(id int64, lastEpoch uint32, leo int64) api.RegisterResponse {
	r.t.Helper()
	var out api.RegisterResponse
	r.mustOK(r.call(api.CodeRegister, api.RegisterRequest{Cluster: "c", Group: "g", ReplicaID: id,
		Addr: fmt.Sprintf("127.0.0.1:%d", 10000+len(r.incs)), HAAddr: "ha", LastEpoch: lastEpoch, LEO: leo, Durable: leo}, &out))
	r.incs[out.ReplicaID] = out.Incarnation
	return out
}

func (r *rig) group() fsm.Group {
	var g fsm.Group
	r.log.Read(func(st *fsm.State) { g = *copyGroup(st.Groups["g"]) })
	return g
}

// beat sends replica id's heartbeat; master: it claims the group's
// current epoch.
func (r *rig) beat(id int64, master bool, leo int64) api.HeartbeatResponse {
	r.t.Helper()
	var out api.HeartbeatResponse
	g := r.group()
	r.mustOK(r.call(api.CodeHeartbeat, api.HeartbeatRequest{Group: "g", ReplicaID: id, Incarnation: r.incs[id],
		Master: master, Epoch: g.Epoch, LastEpoch: g.Epoch, LEO: leo, Durable: leo, HW: leo}, &out))
	return out
}

// isr makes the master's in-sync set ids (AlterISR).
func (r *rig) isr(ids ...int64) {
	r.t.Helper()
	g := r.group()
	incs := map[int64]uint64{}
	for _, id := range ids {
		incs[id] = r.incs[id]
	}
	r.mustOK(r.call(api.CodeAlterISR, api.AlterISRRequest{Group: "g", Master: g.Master, Epoch: g.Epoch,
		ISRVersion: g.ISRVersion, ISR: ids, Incarnations: incs}, nil))
}

// threeReplicas: 1 master, 2 and 3 in sync.
func (r *rig) threeReplicas() {
	r.register(0, 0, 0)
	r.register(0, 0, 0)
	r.register(0, 0, 0)
	r.isr(1, 2, 3)
}

// syncBuffer is a log sink safe for the service's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestValidate(t *testing.T) {
	if err := DefaultServiceConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for name, mod := range map[string]func(*ServiceConfig){
		"heartbeat":       func(c *ServiceConfig) { c.Heartbeat = 0 },
		"lease":           func(c *ServiceConfig) { c.Lease = -1 },
		"session":         func(c *ServiceConfig) { c.SessionTimeout = 0 },
		"drift":           func(c *ServiceConfig) { c.Drift = 1 },
		"negative drift":  func(c *ServiceConfig) { c.Drift = -0.1 },
		"margin":          func(c *ServiceConfig) { c.Margin = -time.Millisecond },
		"lease<=hb":       func(c *ServiceConfig) { c.Heartbeat = 3 * time.Second },
		"session<bound":   func(c *ServiceConfig) { c.SessionTimeout = 3349 * time.Millisecond },
		"session<drifted": func(c *ServiceConfig) { c.Drift = 0.3 },
	} {
		c := DefaultServiceConfig()
		mod(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, c)
		}
	}
	c := DefaultServiceConfig()
	c.SessionTimeout = 3350 * time.Millisecond // exactly 3 s·1.05 + 200 ms
	if err := c.Validate(); err != nil {
		t.Errorf("the bound itself: %v", err)
	}
}

func TestRegister(t *testing.T) {
	r := newRig(t, nil)
	r.start()
	a := r.register(0, 0, 0)
	if a.ReplicaID != 1 || a.Incarnation == 0 || a.Group.Master != 1 || a.Group.Epoch != 1 || !slices.Equal(a.Group.ISR, []int64{1}) {
		t.Fatalf("first register: %+v", a)
	}
	if a.HeartbeatMillis != 500 || a.LeaseMillis != 3000 {
		t.Errorf("timing told: heartbeat %d ms, lease %d ms", a.HeartbeatMillis, a.LeaseMillis)
	}
	b := r.register(0, 0, 0)
	if b.ReplicaID != 2 || b.Incarnation <= a.Incarnation || b.Group.Master != 1 || len(b.Group.Replicas) != 2 {
		t.Fatalf("second register: %+v", b)
	}
	// A register is a sign of life: the view shows both alive.
	for _, rv := range b.Group.Replicas {
		if !rv.Alive || rv.HeartbeatAgoMs != 0 {
			t.Errorf("replica %d after register: alive %v, ago %d", rv.ID, rv.Alive, rv.HeartbeatAgoMs)
		}
	}
	// A restart of replica 2 gets a new incarnation; an old one's
	// heartbeat is not registered.
	old := r.incs[2]
	r.register(2, 1, 10)
	if r.incs[2] == old {
		t.Fatal("re-register kept the incarnation")
	}
	var hb api.HeartbeatResponse
	r.mustOK(r.call(api.CodeHeartbeat, api.HeartbeatRequest{Group: "g", ReplicaID: 2, Incarnation: old}, &hb))
	if hb.Registered || hb.Lease || hb.Group.Group != "g" {
		t.Errorf("heartbeat of a stale incarnation: %+v", hb)
	}
	r.mustOK(r.call(api.CodeHeartbeat, api.HeartbeatRequest{Group: "nope", ReplicaID: 1, Incarnation: 1}, &hb))
	if hb.Registered {
		t.Error("heartbeat of an unknown group answered registered")
	}
	resp := r.call(api.CodeRegister, api.RegisterRequest{Group: ""}, nil)
	if resp.Code != api.CodeRefused || strings.Contains(resp.Remark, "fsm:") {
		t.Errorf("register without a group: code %d remark %q", resp.Code, resp.Remark)
	}
	resp = r.h[api.CodeRegister](context.Background(), nil, remoting.NewRequest(api.CodeRegister, nil, []byte("{")))
	if resp.Code != api.CodeRefused {
		t.Errorf("malformed body: code %d", resp.Code)
	}
}

func TestHeartbeatLease(t *testing.T) {
	r := newRig(t, nil)
	// Before the first tick (no Barrier yet) no lease is granted.
	r.register(0, 0, 0)
	r.register(0, 0, 0)
	if hb := r.beat(1, true, 0); hb.Lease || !hb.Registered {
		t.Fatalf("lease before the barrier: %+v", hb)
	}
	r.start()
	if hb := r.beat(1, true, 0); !hb.Lease || hb.LeaseMillis != 3000 || hb.Group.Master != 1 {
		t.Fatalf("master heartbeat: %+v", hb)
	}
	r.clk.Advance(r.cfg.Heartbeat)
	if hb := r.beat(2, true, 0); hb.Lease {
		t.Fatal("lease for a replica that is not the master")
	}
	if hb := r.beat(1, false, 0); hb.Lease {
		t.Fatal("lease for a master heartbeat that does not claim it")
	}
	var hb api.HeartbeatResponse
	r.mustOK(r.call(api.CodeHeartbeat, api.HeartbeatRequest{Group: "g", ReplicaID: 1, Incarnation: r.incs[1], Master: true, Epoch: 7}, &hb))
	if hb.Lease {
		t.Fatal("lease for the master of another epoch")
	}
	r.mustOK(r.call(api.CodeHeartbeat, api.HeartbeatRequest{Group: "g", ReplicaID: 1, Incarnation: r.incs[1] + 100, Master: true, Epoch: 1}, &hb))
	if hb.Lease || hb.Registered {
		t.Fatalf("lease for a stale incarnation: %+v", hb)
	}
	// A failed VerifyLeader: no lease.
	r.clk.Advance(r.cfg.Heartbeat)
	r.log.FailNextVerify(errors.New("no quorum"))
	if hb := r.beat(1, true, 0); hb.Lease {
		t.Fatal("lease after a failed VerifyLeader")
	}
	r.clk.Advance(r.cfg.Heartbeat)
	if hb := r.beat(1, true, 0); !hb.Lease {
		t.Fatal("no lease once VerifyLeader succeeds again")
	}
	// Not the leader: CodeNotLeader naming the leader.
	r.log.SetLeaderAddr("127.0.0.1:9002")
	r.log.SetLeader(false)
	resp := r.call(api.CodeHeartbeat, api.HeartbeatRequest{Group: "g", ReplicaID: 1, Incarnation: r.incs[1], Master: true, Epoch: 1}, nil)
	if resp.Code != api.CodeNotLeader || resp.Ext(api.ExtLeader) != "127.0.0.1:9002" {
		t.Fatalf("not leader: code %d ext %q", resp.Code, resp.Ext(api.ExtLeader))
	}
	st := r.s.Stats()
	if st.LeaseGrants != 2 || st.LeaseDenials < 2 {
		t.Errorf("stats: %+v", st)
	}
	// A new leadership whose Barrier failed grants nothing until a
	// Barrier returns.
	r.log.SetLeader(true)
	r.log.FailNextBarrier(errors.New("barrier timed out"))
	r.clk.Advance(r.cfg.Heartbeat)
	if hb := r.beat(1, true, 0); hb.Lease {
		t.Fatal("lease before the new leadership's barrier returned")
	}
	r.clk.Advance(r.cfg.Heartbeat)
	if hb := r.beat(1, true, 0); !hb.Lease {
		t.Fatal("no lease after the barrier")
	}
	if st := r.s.Stats(); st.LeaseGrants != 3 {
		t.Errorf("stats: %+v", st)
	}
}

func (r *rig) leaderSince() time.Time {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return r.s.leaderSince
}

// TestLeaseVerifyBatched: at most one VerifyLeader per tick for renewals;
// a heartbeat received after a round started waits for the next tick's
// round, which all heartbeats waiting share.
func TestLeaseVerifyBatched(t *testing.T) {
	r := newRig(t, nil)
	beat := r.soleMasters("g1", "g2", "g3", "g4")
	// Each master's first grant (TestAMastersFirstGrantDoesNotWait).
	for _, g := range []string{"g1", "g2", "g3", "g4"} {
		if !beat(g).Lease {
			t.Fatalf("%s: no first lease", g)
		}
	}
	r.clk.Advance(r.cfg.Heartbeat)
	_, v0, _ := r.log.Stats()
	if !beat("g1").Lease {
		t.Fatal("first heartbeat of the tick: no lease")
	}
	if _, v, _ := r.log.Stats(); v != v0+1 {
		t.Fatalf("verifies after the first heartbeat: %d, want %d", v, v0+1)
	}
	var wg sync.WaitGroup
	leases := make(chan bool, 3)
	for _, g := range []string{"g2", "g3", "g4"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			leases <- beat(g).Lease
		}()
	}
	waitFor(t, "three heartbeats waiting for the next round", func() bool {
		return r.waiting() == 3
	})
	if _, v, _ := r.log.Stats(); v != v0+1 {
		t.Fatalf("a second VerifyLeader ran within the tick (%d)", v-v0)
	}
	r.clk.Advance(r.cfg.Heartbeat)
	wg.Wait()
	close(leases)
	for l := range leases {
		if !l {
			t.Error("a batched heartbeat got no lease")
		}
	}
	if _, v, _ := r.log.Stats(); v != v0+2 {
		t.Fatalf("verifies: %d, want 2 (one per tick)", v-v0)
	}
}

// TestAMastersFirstGrantDoesNotWait: renewals share one VerifyLeader per
// tick, but a master's first grant of its epoch in a leadership starts a
// round at once (it acks nothing until then), and only the first.
func TestAMastersFirstGrantDoesNotWait(t *testing.T) {
	r := newRig(t, nil)
	beat := r.soleMasters("g1", "g2")
	_, v0, _ := r.log.Stats()
	if !beat("g1").Lease {
		t.Fatal("the first heartbeat got no lease")
	}
	second := make(chan bool, 1)
	go func() { second <- beat("g2").Lease }()
	var granted bool
	waitFor(t, "g2's first grant without a tick", func() bool {
		select {
		case granted = <-second:
			return true
		default:
			return false
		}
	})
	if !granted {
		t.Fatal("g2's first heartbeat got no lease")
	}
	if _, v, _ := r.log.Stats(); v != v0+2 {
		t.Fatalf("verifies for two first grants in one tick: %d, want 2", v-v0)
	}
	done := make(chan bool, 1)
	go func() { done <- beat("g1").Lease }()
	waitFor(t, "the renewal waiting for the next round", func() bool { return r.waiting() == 1 })
	r.clk.Advance(r.cfg.Heartbeat)
	if !<-done {
		t.Fatal("the renewal got no lease")
	}
	if _, v, _ := r.log.Stats(); v != v0+3 {
		t.Fatalf("verifies: %d, want 3 (the renewal waited for the next tick)", v-v0)
	}
}

// electedAt: while only slaves 2 and 3 heartbeat (every 100 ms) the
// group keeps epoch 1 until end, and one heartbeat interval later it has
// elected replica 2 in epoch 2; times are reported from since, the event
// the text names.
func (r *rig) electedAt(since, end time.Time, after string) {
	r.t.Helper()
	for r.clk.Now().Before(end) {
		if r.group().Epoch != 1 {
			r.t.Fatalf("elected %v after %s", r.clk.Now().Sub(since), after)
		}
		r.beat(2, false, 90)
		r.beat(3, false, 80)
		r.clk.Advance(100 * time.Millisecond)
	}
	r.beat(2, false, 90)
	r.clk.Advance(r.cfg.Heartbeat)
	if g := r.group(); g.Epoch != 2 || g.Master != 2 {
		r.t.Fatalf("%v after %s: master %d epoch %d, want 2, 2", r.clk.Now().Sub(since), after, g.Master, g.Epoch)
	}
}

// soleMasters registers each group with one replica (id 1), starts the
// service and returns a heartbeat of that replica as the master of epoch 1.
func (r *rig) soleMasters(groups ...string) func(g string) api.HeartbeatResponse {
	for _, g := range groups {
		var out api.RegisterResponse
		r.mustOK(r.call(api.CodeRegister, api.RegisterRequest{Group: g, Addr: "a"}, &out))
	}
	r.start()
	return func(g string) api.HeartbeatResponse {
		var out api.HeartbeatResponse
		r.mustOK(r.call(api.CodeHeartbeat, api.HeartbeatRequest{Group: g, ReplicaID: 1, Incarnation: r.incOf(g), Master: true, Epoch: 1}, &out))
		return out
	}
}

func (r *rig) incOf(group string) uint64 {
	var inc uint64
	r.log.Read(func(st *fsm.State) { inc = st.Groups[group].Replicas[0].Incarnation })
	return inc
}

// waiting counts heartbeats parked for the next verification round.
func (r *rig) waiting() int {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if r.s.next == nil {
		return 0
	}
	return r.s.next.waiters
}

// TestMasterLost: the master stops heartbeating; the best live in-sync
// replica is elected once the session timeout has passed, not before.
func TestMasterLost(t *testing.T) {
	var logs syncBuffer
	r := newRig(t, func(c *ServiceConfig) { c.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	r.start()
	r.threeReplicas()
	var last time.Time
	for i := 0; i < 4; i++ {
		r.clk.Advance(r.cfg.Heartbeat)
		if !r.beat(1, true, 100).Lease {
			t.Fatal("master lease not granted")
		}
		last = r.clk.Now()
		r.beat(2, false, 90)
		r.beat(3, false, 95)
	}
	for r.clk.Now().Before(last.Add(r.cfg.SessionTimeout)) {
		if g := r.group(); g.Master != 1 || g.Epoch != 1 {
			t.Fatalf("elected at %v, %v after the master's last heartbeat (session timeout %v)", r.clk.Now(), r.clk.Now().Sub(last), r.cfg.SessionTimeout)
		}
		r.clk.Advance(r.cfg.Heartbeat)
		r.beat(2, false, 90)
		r.beat(3, false, 95)
	}
	g := r.group()
	if g.Master != 3 || g.Epoch != 2 || !slices.Equal(g.ISR, []int64{2, 3}) {
		t.Fatalf("after the session timeout: master %d epoch %d isr %v; want 3 (largest LEO), 2, [2 3]", g.Master, g.Epoch, g.ISR)
	}
	if n := r.s.Stats().Elections[fsm.ReasonMasterLost]; n != 1 {
		t.Errorf("master-lost elections: %d", n)
	}
	if l := logs.String(); !strings.Contains(l, `"msg":"elected a new master"`) || !strings.Contains(l, `"reason":"master-lost"`) ||
		!strings.Contains(l, `"new_master":3`) || !strings.Contains(l, `"silent_for":4000000000`) {
		t.Errorf("election log:\n%s", l)
	}
	// The old master is no longer granted a lease.
	var hb api.HeartbeatResponse
	r.mustOK(r.call(api.CodeHeartbeat, api.HeartbeatRequest{Group: "g", ReplicaID: 1, Incarnation: r.incs[1], Master: true, Epoch: 1}, &hb))
	if hb.Lease || hb.Group.Master != 3 {
		t.Fatalf("old master's heartbeat: %+v", hb)
	}
}

// TestMasterLostWaitsForLease: even past the session timeout (a config
// Validate refuses, built here to separate the two rules) no election
// happens before the last granted lease has surely expired.
func TestMasterLostWaitsForLease(t *testing.T) {
	r := newRig(t, func(c *ServiceConfig) { c.SessionTimeout = 2 * time.Second })
	if r.cfg.Validate() == nil {
		t.Fatal("the config of this test should be invalid")
	}
	r.start()
	r.threeReplicas()
	r.clk.Advance(r.cfg.Heartbeat)
	if !r.beat(1, true, 100).Lease {
		t.Fatal("no lease")
	}
	granted := r.clk.Now()
	bound := granted.Add(3150*time.Millisecond + 200*time.Millisecond)
	for r.clk.Now().Before(bound) {
		if r.group().Epoch != 1 {
			t.Fatalf("elected %v after the last grant, before the lease bound %v", r.clk.Now().Sub(granted), bound.Sub(granted))
		}
		r.clk.Advance(100 * time.Millisecond)
		r.beat(2, false, 90)
		r.beat(3, false, 90)
	}
	r.clk.Advance(r.cfg.Heartbeat)
	if g := r.group(); g.Epoch != 2 || g.Master != 2 {
		t.Fatalf("after the lease bound: %+v", g)
	}
}

// TestNewLeaderWaitsThePredecessorsLease: a voter that becomes leader
// forgets what it heard before; a master it does not hear from is replaced
// once the lease bound has passed since ElectionSilence·(1−2·Drift) before
// it began leading (what a predecessor granted), not before, and with no
// silence only a whole lease bound after it began.
func TestNewLeaderWaitsThePredecessorsLease(t *testing.T) {
	for _, silence := range []time.Duration{0, time.Second} {
		t.Run(silence.String(), func(t *testing.T) {
			r := newRig(t, func(c *ServiceConfig) { c.ElectionSilence = silence })
			r.start()
			r.threeReplicas()
			r.log.SetLeader(false)
			r.clk.Advance(r.cfg.Heartbeat)
			if r.s.Stats().Leading {
				t.Fatal("still leading after SetLeader(false)")
			}
			// While not leading nothing is decided, however long.
			r.clk.Advance(10 * r.cfg.SessionTimeout)
			if r.group().Epoch != 1 {
				t.Fatal("a follower elected")
			}
			r.log.SetLeader(true)
			r.clk.Advance(leadershipPoll)
			if !r.s.Stats().Leading {
				t.Fatalf("not leading %v after SetLeader(true)", leadershipPoll)
			}
			since := r.leaderSince()
			_, _, barriers := r.log.Stats()
			if barriers < 2 {
				t.Errorf("barriers: %d, want one per leadership", barriers)
			}
			// 3 s·1.05 + 200 ms from 1 s·0.9 before the leadership began.
			wait := 3350*time.Millisecond - time.Duration(float64(silence)*0.9)
			// The master (1) stays silent in this leadership.
			r.electedAt(since, since.Add(wait), "the leadership began (its predecessor's leases run "+wait.String()+")")
		})
	}
}

// TestNewLeaderGivesAHeardMasterItsSession: a master that heartbeats the
// new leader once and then falls silent is replaced a session timeout
// after that heartbeat, as under any leader, not when its predecessor's
// lease bound ends.
func TestNewLeaderGivesAHeardMasterItsSession(t *testing.T) {
	r := newRig(t, func(c *ServiceConfig) { c.ElectionSilence = time.Second })
	r.start()
	r.threeReplicas()
	r.log.SetLeader(false)
	r.clk.Advance(r.cfg.Heartbeat)
	r.log.SetLeader(true)
	r.clk.Advance(r.cfg.Heartbeat)
	if !r.beat(1, true, 100).Lease {
		t.Fatal("the new leader granted no lease")
	}
	last := r.clk.Now()
	r.electedAt(last, last.Add(r.cfg.SessionTimeout), "the master's heartbeat to this leader (session timeout "+r.cfg.SessionTimeout.String()+")")
}

// TestNoCandidate: with every in-sync replica dead the group keeps its
// master (no unclean election by default); with unclean on, a live
// replica outside the in-sync set is elected and audited.
func TestNoCandidate(t *testing.T) {
	for _, unclean := range []bool{false, true} {
		r := newRig(t, func(c *ServiceConfig) { c.Unclean = unclean })
		r.start()
		r.register(0, 0, 0)
		r.register(0, 0, 0) // not in the ISR
		for i := 0; i < 20; i++ {
			r.clk.Advance(r.cfg.Heartbeat)
			r.beat(2, false, 50)
		}
		g := r.group()
		switch {
		case !unclean && (g.Master != 1 || g.Epoch != 1):
			t.Fatalf("unclean off: %+v", g)
		case unclean && (g.Master != 2 || g.Epoch != 2):
			t.Fatalf("unclean on: %+v", g)
		}
		if unclean {
			var audit []fsm.Audit
			r.log.Read(func(st *fsm.State) { audit = slices.Clone(st.Audit) })
			if len(audit) != 1 || !audit[0].Unclean {
				t.Fatalf("audit: %+v", audit)
			}
		}
	}
}

// TestOfflineRecovery: a group without a master gets a live member of its
// in-sync set as soon as one heartbeats.
func TestOfflineRecovery(t *testing.T) {
	r := newRig(t, nil)
	r.start()
	r.threeReplicas()
	// Everybody silent: the master is lost but nobody can take over.
	r.clk.Advance(r.cfg.SessionTimeout + r.cfg.Heartbeat)
	if g := r.group(); g.Master != 1 || g.Epoch != 1 {
		t.Fatalf("elected without a live replica: %+v", g)
	}
	// No command leaves a group without a master today; a state restored
	// from an older snapshot may: build it in place.
	r.log.Read(func(st *fsm.State) {
		g := st.Groups["g"]
		g.Master, g.ISR = 0, []int64{2, 3}
	})
	r.clk.Advance(r.cfg.Heartbeat)
	if g := r.group(); g.Master != 0 {
		t.Fatalf("elected without a live replica: %+v", g)
	}
	r.beat(3, false, 10)
	r.clk.Advance(r.cfg.Heartbeat)
	if g := r.group(); g.Master != 3 || g.Epoch != 2 {
		t.Fatalf("offline group: %+v", g)
	}
	if n := r.s.Stats().Elections[fsm.ReasonOffline]; n != 1 {
		t.Errorf("offline elections: %d", n)
	}
}

func TestAlterISRCompareAndSet(t *testing.T) {
	r := newRig(t, nil)
	r.start()
	r.register(0, 0, 0)
	r.register(0, 0, 0)
	g := r.group()
	req := api.AlterISRRequest{Group: "g", Master: 1, Epoch: 1, ISRVersion: g.ISRVersion, ISR: []int64{1, 2},
		Incarnations: map[int64]uint64{1: r.incs[1], 2: r.incs[2]}}
	var v api.GroupView
	r.mustOK(r.call(api.CodeAlterISR, req, &v))
	if !slices.Equal(v.ISR, []int64{1, 2}) || v.ISRVersion != g.ISRVersion+1 {
		t.Fatalf("alter: %+v", v)
	}
	// The same request again: its version is stale; the answer carries the
	// group as committed.
	v = api.GroupView{}
	resp := r.call(api.CodeAlterISR, req, &v)
	if resp.Code != api.CodeStale || v.ISRVersion != g.ISRVersion+1 || !slices.Equal(v.ISR, []int64{1, 2}) {
		t.Fatalf("stale alter: code %d view %+v", resp.Code, v)
	}
	// A stale incarnation of a member.
	req.ISRVersion, req.ISR = v.ISRVersion, []int64{1}
	req.Incarnations = map[int64]uint64{1: r.incs[1] + 9}
	if resp := r.call(api.CodeAlterISR, req, nil); resp.Code != api.CodeStale {
		t.Fatalf("stale incarnation: code %d", resp.Code)
	}
	// Without the master: refused.
	req.Incarnations, req.ISR = nil, []int64{2}
	if resp := r.call(api.CodeAlterISR, req, nil); resp.Code != api.CodeRefused {
		t.Fatalf("ISR without master: code %d", resp.Code)
	}
}

func TestTransferAndResign(t *testing.T) {
	r := newRig(t, nil)
	r.start()
	r.threeReplicas()
	r.clk.Advance(r.cfg.Heartbeat)
	r.beat(1, true, 100)
	r.beat(2, false, 100)
	r.beat(3, false, 90)
	var v api.GroupView
	r.mustOK(r.call(api.CodeTransfer, api.TransferRequest{Group: "g"}, &v))
	if v.TransferTo != 2 || v.Master != 1 {
		t.Fatalf("transfer to the best: %+v", v)
	}
	if resp := r.call(api.CodeTransfer, api.TransferRequest{Group: "g", ReplicaID: 7}, nil); resp.Code != api.CodeRefused {
		t.Errorf("transfer to an unknown replica: code %d", resp.Code)
	}
	res := api.ResignRequest{Group: "g", ReplicaID: 1, Incarnation: r.incs[1], Epoch: 1, Target: 3, LEO: 100}
	if resp := r.call(api.CodeResign, res, nil); resp.Code != api.CodeRefused {
		t.Errorf("resign to another target: code %d", resp.Code)
	}
	res.Target, res.Epoch = 2, 5
	if resp := r.call(api.CodeResign, res, &v); resp.Code != api.CodeStale || v.Epoch != 1 {
		t.Errorf("resign of another epoch: code %d", resp.Code)
	}
	res.Epoch, res.ReplicaID = 1, 3
	if resp := r.call(api.CodeResign, res, nil); resp.Code != api.CodeStale {
		t.Errorf("resign by a slave: code %d", resp.Code)
	}
	res.ReplicaID = 1
	v = api.GroupView{} // transferTo is omitted when 0
	r.mustOK(r.call(api.CodeResign, res, &v))
	if v.Master != 2 || v.Epoch != 2 || v.TransferTo != 0 || !slices.Equal(v.ISR, []int64{1, 2, 3}) {
		t.Fatalf("after resign: %+v (the ISR is kept on a transfer)", v)
	}
	if n := r.s.Stats().Elections[fsm.ReasonTransfer]; n != 1 {
		t.Errorf("transfer elections: %d", n)
	}
	r.clk.Advance(r.cfg.Heartbeat)
	var hb api.HeartbeatResponse
	r.mustOK(r.call(api.CodeHeartbeat, api.HeartbeatRequest{Group: "g", ReplicaID: 1, Incarnation: r.incs[1], Master: true, Epoch: 1}, &hb))
	if hb.Lease {
		t.Fatal("lease for the resigned master")
	}
	if !r.beat(2, true, 100).Lease {
		t.Fatal("no lease for the new master")
	}
}

// TestElectMasterWaitsOutLease: an operator election fences the master's
// grants and commits only once its lease has surely expired.
func TestElectMasterWaitsOutLease(t *testing.T) {
	r := newRig(t, nil)
	r.start()
	r.threeReplicas()
	r.clk.Advance(r.cfg.Heartbeat)
	if !r.beat(1, true, 100).Lease {
		t.Fatal("no lease")
	}
	granted := r.clk.Now()
	r.beat(2, false, 100)
	r.beat(3, false, 100)
	if resp := r.call(api.CodeElect, api.ElectRequest{Group: "g", ReplicaID: 3, Unclean: true}, nil); resp.Code != api.CodeRefused {
		t.Fatalf("unclean with unclean off: code %d", resp.Code)
	}
	if resp := r.call(api.CodeElect, api.ElectRequest{Group: "g", ReplicaID: 1}, nil); resp.Code != api.CodeRefused {
		t.Fatalf("elect the master: code %d", resp.Code)
	}
	done := make(chan api.GroupView, 1)
	go func() {
		var v api.GroupView
		r.mustOK(r.call(api.CodeElect, api.ElectRequest{Group: "g", ReplicaID: 3}, &v))
		done <- v
	}()
	waitFor(t, "the election to fence the group", func() bool {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		return r.s.fenced["g"] > 0
	})
	bound := granted.Add(3350 * time.Millisecond)
	for r.clk.Now().Before(bound) {
		select {
		case v := <-done:
			t.Fatalf("elected %v after the last grant (bound %v): %+v", r.clk.Now().Sub(granted), bound.Sub(granted), v)
		default:
		}
		if g := r.group(); g.Epoch != 1 {
			t.Fatalf("committed before the lease bound: %+v", g)
		}
		r.clk.Advance(r.cfg.Heartbeat)
		if r.beat(1, true, 100).Lease {
			t.Fatal("lease granted while an election is fenced")
		}
		r.beat(2, false, 100)
		r.beat(3, false, 100)
	}
	v := <-done
	if v.Master != 3 || v.Epoch != 2 {
		t.Fatalf("operator election: %+v", v)
	}
	var audit []fsm.Audit
	r.log.Read(func(st *fsm.State) { audit = slices.Clone(st.Audit) })
	if len(audit) != 1 || audit[0].Reason != fsm.ReasonOperator {
		t.Fatalf("audit: %+v", audit)
	}
}

func TestGroupsView(t *testing.T) {
	r := newRig(t, nil)
	r.log.SetVoters([]Voter{{1, "127.0.0.1:9001"}, {2, "127.0.0.1:9002"}})
	r.start()
	r.threeReplicas()
	r.clk.Advance(r.cfg.Heartbeat)
	r.beat(2, false, 42)
	r.clk.Advance(r.cfg.SessionTimeout)
	r.beat(2, false, 43)
	var out api.GroupsResponse
	r.mustOK(r.call(api.CodeGroups, api.GroupsRequest{}, &out))
	if out.Leader.ID != 1 || len(out.Controllers) != 2 || !out.Controllers[0].Leader || out.Controllers[1].Leader {
		t.Fatalf("controllers: %+v %+v", out.Leader, out.Controllers)
	}
	if len(out.Groups) != 1 {
		t.Fatalf("groups: %+v", out.Groups)
	}
	g := out.Groups[0]
	byID := map[int64]api.ReplicaView{}
	for _, rv := range g.Replicas {
		byID[rv.ID] = rv
	}
	if rv := byID[2]; !rv.Alive || rv.LEO != 43 || rv.HeartbeatAgoMs != 0 {
		t.Errorf("replica 2: %+v", rv)
	}
	if rv := byID[3]; rv.Alive || rv.HeartbeatAgoMs < r.cfg.SessionTimeout.Milliseconds() {
		t.Errorf("replica 3 (silent): %+v", rv)
	}
	if resp := r.call(api.CodeGroups, api.GroupsRequest{Group: "nope"}, nil); resp.Code != api.CodeRefused {
		t.Errorf("unknown group: code %d", resp.Code)
	}
}

func TestEveryCodeNotLeader(t *testing.T) {
	r := newRig(t, nil)
	r.log.SetVoters([]Voter{{1, "127.0.0.1:9001"}, {2, "127.0.0.1:9002"}})
	r.log.SetLeader(false)
	for _, addr := range []string{"", "127.0.0.1:9002"} {
		r.log.SetLeaderAddr(addr)
		if len(r.h) != 7 {
			t.Fatalf("%d handlers, want 7", len(r.h))
		}
		for code, h := range r.h {
			resp := h(context.Background(), nil, remoting.NewRequest(code, nil, []byte("{}")))
			if resp.Code != api.CodeNotLeader || resp.Ext(api.ExtLeader) != addr {
				t.Errorf("code %d: answer %d ext %q, want %d %q", code, resp.Code, resp.Ext(api.ExtLeader), api.CodeNotLeader, addr)
			}
		}
	}
}

func TestCloseReleasesWaiters(t *testing.T) {
	r := newRig(t, nil)
	r.register(0, 0, 0)
	r.start()
	r.beat(1, true, 0) // the tick's round
	done := make(chan struct{})
	go func() {
		defer close(done)
		var hb api.HeartbeatResponse
		r.call(api.CodeHeartbeat, api.HeartbeatRequest{Group: "g", ReplicaID: 1, Incarnation: r.incs[1], Master: true, Epoch: 1}, &hb)
		if hb.Lease {
			t.Error("lease after Close")
		}
	}()
	waitFor(t, "a waiting heartbeat", func() bool { return r.waiting() == 1 })
	r.s.Close()
	<-done
}

// TestElectionOfUnknownOutcome: an election whose Apply timed out (it may
// still commit) keeps the group fenced until a Barrier settles it; the
// next tick elects again.
func TestElectionOfUnknownOutcome(t *testing.T) {
	r := newRig(t, nil)
	r.start()
	r.threeReplicas()
	r.log.FailNext(context.DeadlineExceeded)
	r.log.FailNextBarrier(errors.New("no quorum yet"))
	_, _, b0 := r.log.Stats()
	for r.group().Epoch == 1 && r.clk.Now().Before(t0.Add(time.Minute)) {
		r.clk.Advance(r.cfg.Heartbeat)
		r.beat(2, false, 10)
		r.beat(3, false, 10)
		if st := r.s.Stats(); st.Elections[fsm.ReasonMasterLost] == 0 {
			if _, _, b := r.log.Stats(); b != b0 && b != b0+2 {
				t.Fatalf("barriers after the failed election: %d, want 2 (one failed, one settling)", b-b0)
			}
		}
	}
	if _, _, b := r.log.Stats(); b != b0+2 {
		t.Fatalf("barriers: %d, want 2", b-b0)
	}
	if g := r.group(); g.Epoch != 2 || g.Master != 2 {
		t.Fatalf("after the retry: %+v", g)
	}
	r.s.mu.Lock()
	fenced := len(r.s.fenced)
	r.s.mu.Unlock()
	if fenced != 0 {
		t.Fatalf("fences left: %d", fenced)
	}
}
