package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/petrelmq/petrel/internal/controller/fsm"
	"github.com/petrelmq/petrel/internal/logtest"
)

// Test timing: fast elections, but not so fast that a loaded 2-core
// machine under -race churns.
const (
	testHeartbeat = 500 * time.Millisecond
	testLease     = 250 * time.Millisecond
	waitLimit     = 20 * time.Second
)

// await waits until cond holds, polling (the conditions are raft's, which
// has no hook to wait on).
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, waitLimit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// testLogger collects the log and prints it when the test fails.
func testLogger(t *testing.T) *slog.Logger {
	l, _ := testLogBuffer(t)
	return l
}

func testLogBuffer(t *testing.T) (*slog.Logger, *logtest.Buffer) {
	t.Helper()
	buf := &logtest.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo})), buf
}

// cluster is n raft voters on 127.0.0.1, each over its own Mux.
type cluster struct {
	t      *testing.T
	peers  []Voter
	dirs   []string
	lns    []string // listen addresses, reused on restart
	voters []*Raft  // nil: stopped
	muxes  []*Mux
	log    *slog.Logger
	buf    *logtest.Buffer
	tune   func(*RaftConfig)
}

func newCluster(t *testing.T, n int, tune func(*RaftConfig)) *cluster {
	t.Helper()
	lg, buf := testLogBuffer(t)
	c := &cluster{t: t, log: lg, buf: buf, tune: tune, voters: make([]*Raft, n), muxes: make([]*Mux, n)}
	lns := make([]net.Listener, n)
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		c.peers = append(c.peers, Voter{ID: i + 1, Addr: ln.Addr().String()})
		c.lns = append(c.lns, ln.Addr().String())
		c.dirs = append(c.dirs, filepath.Join(t.TempDir(), fmt.Sprint("voter", i+1)))
	}
	for i := range n {
		c.startOn(i, lns[i])
	}
	t.Cleanup(c.closeAll)
	return c
}

func (c *cluster) startOn(i int, ln net.Listener) {
	c.t.Helper()
	mux := NewMux(ln, MuxConfig{Logger: c.log})
	cfg := RaftConfig{
		ID: i + 1, Peers: c.peers, Dir: c.dirs[i], Stream: mux.RaftStream(), Logger: c.log,
		HeartbeatTimeout: testHeartbeat, ElectionTimeout: testHeartbeat, LeaderLeaseTimeout: testLease,
	}
	if c.tune != nil {
		c.tune(&cfg)
	}
	r, err := NewRaft(cfg)
	if err != nil {
		c.t.Fatalf("start voter %d: %v", i+1, err)
	}
	c.voters[i], c.muxes[i] = r, mux
}

// restart starts stopped voter i again on its old address and directory.
func (c *cluster) restart(i int) {
	c.t.Helper()
	var ln net.Listener
	await(c.t, "the old port is free again", func() bool {
		var err error
		ln, err = net.Listen("tcp", c.lns[i])
		return err == nil
	})
	c.startOn(i, ln)
}

func (c *cluster) stop(i int) {
	c.t.Helper()
	if err := c.voters[i].Close(); err != nil {
		c.t.Errorf("close voter %d: %v", i+1, err)
	}
	if err := c.muxes[i].Close(); err != nil {
		c.t.Errorf("close mux %d: %v", i+1, err)
	}
	c.voters[i], c.muxes[i] = nil, nil
}

func (c *cluster) closeAll() {
	for i, v := range c.voters {
		if v != nil {
			c.stop(i)
		}
	}
}

// leader waits for exactly one running voter to lead and returns its index.
func (c *cluster) leader() int {
	c.t.Helper()
	idx := -1
	await(c.t, "one leader", func() bool {
		idx = -1
		for i, v := range c.voters {
			if v != nil && v.IsLeader() {
				if idx >= 0 {
					return false
				}
				idx = i
			}
		}
		return idx >= 0
	})
	return idx
}

// apply applies cmd on the current leader, again on the next one when
// leadership moves away under it (a loaded machine may churn).
func (c *cluster) apply(cmd fsm.Command) fsm.Result {
	c.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		li := c.leader()
		res, err := c.voters[li].Apply(ctxT(c.t), cmd)
		if err == nil {
			return res
		}
		if !errors.Is(err, ErrNotLeader) || time.Now().After(deadline) {
			c.t.Fatalf("apply %v on voter %d: %v", cmd.Kind, li+1, err)
		}
		c.t.Logf("apply on voter %d: %v; again", li+1, err)
	}
}

func register(group string) fsm.Command {
	return fsm.Command{Kind: fsm.KindRegister, Cluster: "c", Group: group, Replica: fsm.Replica{Addr: "10.0.0.1:10911", HAAddr: "10.0.0.1:10912"}}
}

func hasGroup(r *Raft, group string) bool {
	ok := false
	r.Read(func(s *fsm.State) { _, ok = s.Groups[group] })
	return ok
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

func TestThreeVotersElectApplyRefuseOnFollowersAndFailOver(t *testing.T) {
	c := newCluster(t, 3, nil)
	res := c.apply(register("g1"))
	// (A retried register may have registered a second replica; the first
	// is the master either way.)
	if res.ReplicaID < 1 || res.Group.Master != 1 || res.Group.Epoch != 1 {
		t.Fatalf("register of a fresh group: %+v, want replica 1 master at epoch 1", res)
	}
	// Every voter applies it.
	for i, v := range c.voters {
		await(t, fmt.Sprintf("voter %d applies the register", i+1), func() bool { return hasGroup(v, "g1") })
	}
	// A follower knows the leader and refuses.
	var li, fi int
	await(t, "a follower knows the leader", func() bool {
		li = c.leader()
		fi = (li + 1) % 3
		id, addr := c.voters[fi].Leader()
		return id == li+1 && addr == c.peers[li].Addr
	})
	f := c.voters[fi]
	if _, err := f.Apply(ctxT(t), register("g2")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("apply on a follower: %v, want ErrNotLeader", err)
	}
	if err := f.VerifyLeader(ctxT(t)); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("VerifyLeader on a follower: %v, want ErrNotLeader", err)
	}
	lead := c.voters[li]
	await(t, "VerifyLeader on the leader", func() bool { return lead.VerifyLeader(ctxT(t)) == nil })
	select {
	case v := <-lead.LeaderCh():
		if !v {
			t.Fatal("the leader's LeaderCh holds false")
		}
	default:
		t.Fatal("the leader's LeaderCh holds nothing")
	}
	if got := f.Voters(); len(got) != 3 || got[0] != c.peers[0] || got[2] != c.peers[2] {
		t.Fatalf("Voters = %v, want %v", got, c.peers)
	}

	// Kill the leader: a new one within a few seconds, with the state.
	killed := time.Now()
	c.stop(li)
	ni := c.leader()
	if ni == li {
		t.Fatalf("voter %d still leads after it stopped", li+1)
	}
	t.Logf("new leader voter %d after %v", ni+1, time.Since(killed))
	if d := time.Since(killed); d > 10*time.Second {
		t.Errorf("new leader after %v, want a few seconds", d)
	}
	nl := c.voters[ni]
	if err := nl.Barrier(ctxT(t)); err != nil {
		t.Fatalf("barrier on the new leader: %v", err)
	}
	if !hasGroup(nl, "g1") {
		t.Fatal("the new leader lost g1")
	}
	if res := c.apply(register("g2")); res.Group.Name != "g2" {
		t.Fatalf("apply on the new leader: %+v", res)
	}
	ni = c.leader()
	nl = c.voters[ni]
	// The fsm's refusals come back as the error, with a zero result.
	stale := fsm.Command{Kind: fsm.KindElect, Group: "g1", Epoch: 7, NewMaster: 1, Reason: fsm.ReasonOperator}
	if res, err := nl.Apply(ctxT(t), stale); !errors.Is(err, fsm.ErrStale) || res.Group.Name != "" {
		t.Fatalf("a refused command: %+v, %v; want fsm.ErrStale and a zero result", res, err)
	}
}

func TestRestartedVoterKeepsItsState(t *testing.T) {
	c := newCluster(t, 3, nil)
	for i := range 5 {
		c.apply(register(fmt.Sprint("g", i)))
	}
	fi := (c.leader() + 1) % 3
	await(t, "the follower applies all", func() bool { return hasGroup(c.voters[fi], "g4") })
	c.stop(fi)
	c.restart(fi)
	await(t, "the restarted voter has its groups again", func() bool {
		n := 0
		c.voters[fi].Read(func(s *fsm.State) { n = len(s.Groups) })
		return n == 5
	})

	// All three restart: bolt keeps the log and the configuration, and no
	// second bootstrap happens.
	for i := range 3 {
		c.stop(i)
	}
	for i := range 3 {
		c.restart(i)
	}
	li := c.leader()
	if err := c.voters[li].Barrier(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	n := 0
	c.voters[li].Read(func(s *fsm.State) { n = len(s.Groups) })
	if n != 5 {
		t.Fatalf("after a full restart the leader has %d groups, want 5", n)
	}
}

func TestSnapshotsCompactTheLogAndRestoreALaggingVoter(t *testing.T) {
	c := newCluster(t, 3, func(cfg *RaftConfig) {
		cfg.SnapshotThreshold = 4
		cfg.SnapshotInterval = 20 * time.Millisecond
		cfg.TrailingLogs = 1
	})
	li := c.leader()
	lag := (li + 1) % 3
	c.stop(lag)
	for i := range 30 {
		c.apply(register(fmt.Sprint("g", i)))
	}
	// The voters snapshot on their own (threshold 4) and compact their
	// logs, so the lagging voter can only catch up through InstallSnapshot.
	await(t, "the running voters compact their logs", func() bool {
		for i, v := range c.voters {
			if i == lag {
				continue
			}
			if first, err := v.store.FirstIndex(); err != nil || first <= 5 {
				return false
			}
		}
		return true
	})
	c.restart(lag)
	await(t, "the lagging voter restores the snapshot", func() bool {
		n := 0
		c.voters[lag].Read(func(s *fsm.State) { n = len(s.Groups) })
		return n == 30
	})
	if len(c.buf.Lines(fmt.Sprintf("msg=\"restored the controller state from a snapshot\" component=controller voter=%d", lag+1))) == 0 {
		t.Fatal("the lagging voter caught up without restoring a snapshot")
	}
	// A restart from its own snapshot and log gives the same state.
	var before []byte
	c.voters[lag].Read(func(s *fsm.State) { before, _ = s.Snapshot() })
	if err := c.voters[lag].Snapshot(); err != nil {
		t.Fatal(err)
	}
	c.stop(lag)
	c.restart(lag)
	await(t, "the restarted voter has the state again", func() bool {
		var after []byte
		c.voters[lag].Read(func(s *fsm.State) { after, _ = s.Snapshot() })
		return string(after) == string(before)
	})
}

func TestRaftConfigValidate(t *testing.T) {
	peers := []Voter{{1, "127.0.0.1:1"}, {2, "127.0.0.1:2"}}
	mux := NewMux(&idleListener{done: make(chan struct{})}, MuxConfig{})
	t.Cleanup(func() { mux.Close() })
	stream := mux.RaftStream()
	ok := RaftConfig{ID: 1, Peers: peers, Dir: t.TempDir(), Stream: stream}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*RaftConfig)
	}{
		{"id 0", func(c *RaftConfig) { c.ID = 0 }},
		{"id not a peer", func(c *RaftConfig) { c.ID = 3 }},
		{"other address", func(c *RaftConfig) { c.Addr = "127.0.0.1:9" }},
		{"duplicate address", func(c *RaftConfig) { c.Peers = []Voter{{1, "a:1"}, {2, "a:1"}} }},
		{"duplicate id", func(c *RaftConfig) { c.Peers = []Voter{{1, "a:1"}, {1, "a:2"}} }},
		{"no dir", func(c *RaftConfig) { c.Dir = "" }},
		{"no stream", func(c *RaftConfig) { c.Stream = nil }},
		{"election below heartbeat", func(c *RaftConfig) { c.HeartbeatTimeout, c.ElectionTimeout = 2*time.Second, time.Second }},
		{"lease above heartbeat", func(c *RaftConfig) { c.LeaderLeaseTimeout = 2 * time.Second }},
		{"negative", func(c *RaftConfig) { c.HeartbeatTimeout = -1 }},
	} {
		cfg := ok
		tc.mod(&cfg)
		if err := cfg.Validate(); err == nil {
			t.Errorf("%s: Validate accepted it", tc.name)
		}
	}
}

// idleListener accepts nothing until closed.
type idleListener struct {
	done chan struct{}
	once sync.Once
}

func (l *idleListener) Accept() (net.Conn, error) { <-l.done; return nil, net.ErrClosed }
func (l *idleListener) Close() error              { l.once.Do(func() { close(l.done) }); return nil }
func (l *idleListener) Addr() net.Addr            { return advertised("127.0.0.1:1") }

func TestAVoterKeepsTheStoredMembershipOverChangedPeers(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.apply(register("g1"))
	stored := slices.Clone(c.peers)
	c.stop(0)
	// Voter 1 restarts with a peers list that moved voter 3: raft keeps
	// the stored membership (a flag is no membership change) and says so.
	c.peers = slices.Clone(c.peers)
	c.peers[2].Addr = "127.0.0.1:1"
	c.restart(0)
	if got := c.voters[0].Voters(); !slices.Equal(got, stored) {
		t.Fatalf("Voters = %v, want the stored %v", got, stored)
	}
	if len(c.buf.Lines(`msg="the stored controller membership differs from the configured peers; raft uses the stored one"`)) == 0 {
		t.Fatal("no warning about the changed peers")
	}
	await(t, "voter 1 catches up through the stored membership", func() bool { return hasGroup(c.voters[0], "g1") })
}

func TestRaftLeadershipErrorsBecomeErrNotLeader(t *testing.T) {
	for _, err := range []error{raft.ErrNotLeader, raft.ErrLeadershipTransferInProgress, raft.ErrLeadershipLost, raft.ErrRaftShutdown} {
		if got := mapErr(err); !errors.Is(got, ErrNotLeader) {
			t.Errorf("mapErr(%v) = %v, want ErrNotLeader", err, got)
		}
	}
	if got := mapErr(raft.ErrEnqueueTimeout); errors.Is(got, ErrNotLeader) || !errors.Is(got, raft.ErrEnqueueTimeout) {
		t.Errorf("mapErr(enqueue timeout) = %v, want it wrapped, not ErrNotLeader", got)
	}
	if mapErr(nil) != nil {
		t.Error("mapErr(nil) is not nil")
	}
}

// TestANewLeaderStartsAHeartbeatTimeoutAfterItsPredecessorsLastVerify
// checks the raft property ServiceConfig.ElectionSilence rests on, with
// hashicorp/raft itself: a leader stopped while it verifies its
// leadership in a loop (as lease grants do) is succeeded only a heartbeat
// timeout after the start of its last successful VerifyLeader, because a
// voter grants no vote while it knows a leader. The bound is a lower one,
// so a slow machine cannot break it; a raft release that votes sooner
// would.
func TestANewLeaderStartsAHeartbeatTimeoutAfterItsPredecessorsLastVerify(t *testing.T) {
	c := newCluster(t, 3, nil)
	for round := range 3 {
		li := c.leader()
		old := c.voters[li]
		var mu sync.Mutex
		var lastOK time.Time
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				err := old.VerifyLeader(ctx)
				cancel()
				if err == nil {
					mu.Lock()
					lastOK = start
					mu.Unlock()
				}
			}
		}()
		// Let a few verifications succeed, then stop the leader while one
		// is in flight.
		await(t, "a verification succeeds", func() bool { mu.Lock(); defer mu.Unlock(); return !lastOK.IsZero() })
		time.Sleep(50 * time.Millisecond)
		c.stop(li)
		close(stop)
		<-done
		var next int
		var since time.Time
		await(t, "another voter leads", func() bool {
			for i, v := range c.voters {
				if v != nil && v.IsLeader() {
					next, since = i, time.Now()
					return true
				}
			}
			return false
		})
		mu.Lock()
		gap := since.Sub(lastOK)
		mu.Unlock()
		if min := time.Duration(float64(testHeartbeat) * 0.9); gap < min {
			t.Fatalf("round %d: voter %d leads %v after the start of voter %d's last successful VerifyLeader, below the heartbeat timeout's %v", round, next+1, gap, li+1, min)
		}
		t.Logf("round %d: voter %d leads %v after voter %d's last verified contact", round, next+1, gap, li+1)
		c.restart(li)
	}
}

// TestARestartedVoterWaitsAHeartbeatTimeoutBeforeRaftStarts: NewRaft on
// existing state of a multi-voter cluster returns only a heartbeat
// timeout after it was called (the restarted voter must not vote sooner
// after its last contact); a fresh voter starts at once.
func TestARestartedVoterWaitsAHeartbeatTimeoutBeforeRaftStarts(t *testing.T) {
	c := newCluster(t, 3, func(cfg *RaftConfig) { cfg.HeartbeatTimeout, cfg.ElectionTimeout = time.Second, time.Second })
	li := c.leader()
	c.apply(register("g"))
	fi := (li + 1) % 3
	c.stop(fi)
	start := time.Now()
	c.restart(fi)
	if took := time.Since(start); took < time.Second {
		t.Fatalf("the restarted voter started raft after %v, within its heartbeat timeout of 1s", took)
	}
	await(t, "the restarted voter follows", func() bool { return hasGroup(c.voters[fi], "g") })
}
