package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/controller/fsm"
)

// Raft timing defaults (replication.md §2.9: configurable, because fixed
// timeouts caused election churn in RocketMQ's controller, #5469).
const (
	DefaultRaftHeartbeatTimeout   = time.Second
	DefaultRaftElectionTimeout    = time.Second
	DefaultRaftLeaderLeaseTimeout = 500 * time.Millisecond
	// defaultApplyTimeout bounds Apply, VerifyLeader and Barrier when the
	// caller's context has no deadline.
	defaultApplyTimeout = 10 * time.Second
)

// RaftConfig configures NewRaft.
type RaftConfig struct {
	// ID is this voter's id (≥ 1), one of Peers.
	ID int
	// Addr is this voter's advertised address; empty takes Peers' entry
	// for ID, and a non-empty one must equal it (the peers dial that).
	Addr string
	// Peers are all voters, this one included. They are bootstrapped as
	// the cluster's configuration on the first start only (no raft state
	// in Dir yet); later starts use the persisted configuration.
	Peers []Voter
	// Dir holds the raft log (raft.db, bbolt, fsynced) and the snapshots
	// (snapshots/): <data-dir>/controller.
	Dir string
	// Stream carries raft's connections: a Mux's RaftStream in a node, or
	// any raft.StreamLayer (tests). Required; Close closes it.
	Stream raft.StreamLayer
	// HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout: raft's; 0
	// takes the defaults (1 s, 1 s, 500 ms).
	HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout time.Duration
	// SnapshotThreshold is how many log entries since the last snapshot
	// make one (0: 8192); SnapshotInterval how often raft checks (0: 2 m);
	// TrailingLogs how many entries a snapshot leaves in the log for slow
	// followers (0: 10240). Tests lower them.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
	// Logger receives raft's log through an hclog adapter (raft's Debug and
	// Trace at slog Debug); nil discards it.
	Logger *slog.Logger
}

// Raft is the Log over hashicorp/raft: every voter applies the committed
// fsm.Commands to its own fsm.State. Safe for concurrent use.
type Raft struct {
	cfg    RaftConfig
	log    *slog.Logger
	r      *raft.Raft
	m      *machine
	store  *raftboltdb.BoltStore
	trans  *raft.NetworkTransport
	voters []Voter

	// readdress: a single voter's new address, to store once it leads
	// (owned by forwardLeadership after NewRaft).
	readdress string

	leaderCh chan bool // cap 1, latest value wins
	notifyCh chan bool // raft's NotifyCh
	done     chan struct{}
	wg       sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

var _ Log = (*Raft)(nil)

// Validate checks cfg and returns the normalized peers (sorted by id).
func (cfg *RaftConfig) Validate() error {
	if cfg.ID < 1 {
		return fmt.Errorf("controller: voter id %d: give an id ≥ 1", cfg.ID)
	}
	if err := checkVoters(cfg.Peers); err != nil {
		return err
	}
	self, ok := findVoter(cfg.Peers, cfg.ID)
	if !ok {
		return fmt.Errorf("controller: voter id %d is not among the peers %s; list every voter, this one included", cfg.ID, FormatPeers(cfg.Peers))
	}
	if cfg.Addr != "" && cfg.Addr != self.Addr {
		return fmt.Errorf("controller: voter %d advertises %s but the peers list it as %s; the peers dial the listed address", cfg.ID, cfg.Addr, self.Addr)
	}
	if cfg.Dir == "" {
		return errors.New("controller: no raft data directory")
	}
	if cfg.Stream == nil {
		return errors.New("controller: no raft stream layer")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"heartbeat timeout", cfg.HeartbeatTimeout}, {"election timeout", cfg.ElectionTimeout}, {"leader lease timeout", cfg.LeaderLeaseTimeout}, {"snapshot interval", cfg.SnapshotInterval}} {
		if d.v < 0 {
			return fmt.Errorf("controller: raft %s %s is negative", d.name, d.v)
		}
	}
	hb := cmp.Or(cfg.HeartbeatTimeout, DefaultRaftHeartbeatTimeout)
	if el := cmp.Or(cfg.ElectionTimeout, DefaultRaftElectionTimeout); el < hb {
		return fmt.Errorf("controller: raft election timeout %s is below the heartbeat timeout %s", el, hb)
	}
	if lease := cmp.Or(cfg.LeaderLeaseTimeout, DefaultRaftLeaderLeaseTimeout); lease > hb {
		return fmt.Errorf("controller: raft leader lease timeout %s exceeds the heartbeat timeout %s", lease, hb)
	}
	return nil
}

// checkVoters: ids ≥ 1 and addresses unique and non-empty.
func checkVoters(vs []Voter) error {
	if len(vs) == 0 {
		return errors.New("controller: no voters")
	}
	ids := map[int]bool{}
	addrs := map[string]int{}
	for _, v := range vs {
		if v.ID < 1 {
			return fmt.Errorf("controller: voter id %d: give ids ≥ 1", v.ID)
		}
		if v.Addr == "" {
			return fmt.Errorf("controller: voter %d has no address", v.ID)
		}
		if ids[v.ID] {
			return fmt.Errorf("controller: voter id %d is listed twice", v.ID)
		}
		if other, dup := addrs[v.Addr]; dup {
			return fmt.Errorf("controller: voters %d and %d share the address %s", other, v.ID, v.Addr)
		}
		ids[v.ID] = true
		addrs[v.Addr] = v.ID
	}
	return nil
}

func findVoter(vs []Voter, id int) (Voter, bool) {
	for _, v := range vs {
		if v.ID == id {
			return v, true
		}
	}
	return Voter{}, false
}

// NewRaft opens (or creates) the raft state in cfg.Dir and starts the
// voter. On the first start it bootstraps cfg.Peers as the configuration.
// On an error nothing keeps running, and cfg.Stream is closed.
func NewRaft(cfg RaftConfig) (_ *Raft, err error) {
	if cfg.Stream != nil {
		defer func() {
			if err != nil {
				_ = cfg.Stream.Close()
			}
		}()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	peers := slices.Clone(cfg.Peers)
	slices.SortFunc(peers, func(a, b Voter) int { return cmp.Compare(a.ID, b.ID) })
	self, _ := findVoter(peers, cfg.ID)
	cfg.Addr = self.Addr
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	hl := newHCLogger(lg.With("component", "raft", "voter", cfg.ID))
	lg = lg.With("component", "controller", "voter", cfg.ID)

	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("controller: create raft dir: %w", err)
	}
	dbPath := filepath.Join(cfg.Dir, "raft.db")
	// A second process on the same directory would wait for bbolt's file
	// lock forever; fail instead.
	store, err := raftboltdb.New(raftboltdb.Options{Path: dbPath, BoltOptions: &bbolt.Options{Timeout: 2 * time.Second}})
	if err != nil {
		return nil, fmt.Errorf("controller: open raft log %s (is another controller using this --data-dir?): %w", dbPath, err)
	}
	defer func() {
		if err != nil {
			_ = store.Close()
		}
	}()
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 2, hl)
	if err != nil {
		return nil, fmt.Errorf("controller: open raft snapshots in %s: %w", cfg.Dir, err)
	}
	logs, err := raft.NewLogCache(512, store)
	if err != nil {
		return nil, fmt.Errorf("controller: raft log cache: %w", err)
	}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  cfg.Stream,
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  hl,
	})
	defer func() {
		if err != nil {
			_ = trans.Close()
		}
	}()

	rc := raft.DefaultConfig()
	rc.LocalID = voterID(cfg.ID)
	rc.HeartbeatTimeout = cmp.Or(cfg.HeartbeatTimeout, DefaultRaftHeartbeatTimeout)
	rc.ElectionTimeout = cmp.Or(cfg.ElectionTimeout, DefaultRaftElectionTimeout)
	rc.LeaderLeaseTimeout = cmp.Or(cfg.LeaderLeaseTimeout, DefaultRaftLeaderLeaseTimeout)
	if cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = cfg.SnapshotThreshold
	}
	if cfg.SnapshotInterval > 0 {
		rc.SnapshotInterval = cfg.SnapshotInterval
	}
	if cfg.TrailingLogs > 0 {
		rc.TrailingLogs = cfg.TrailingLogs
	}
	rc.Logger = hl
	rc.NoLegacyTelemetry = true
	notify := make(chan bool, 16)
	rc.NotifyCh = notify
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, fmt.Errorf("controller: raft config: %w", err)
	}

	existing, err := raft.HasExistingState(logs, store, snaps)
	if err != nil {
		return nil, fmt.Errorf("controller: read raft state in %s: %w", cfg.Dir, err)
	}
	if !existing {
		var conf raft.Configuration
		for _, p := range peers {
			conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: voterID(p.ID), Address: raft.ServerAddress(p.Addr)})
		}
		if err := raft.BootstrapCluster(rc, logs, store, snaps, trans, conf); err != nil {
			return nil, fmt.Errorf("controller: bootstrap the voters %s: %w", FormatPeers(peers), err)
		}
		lg.Info("bootstrapped the controller voters", "peers", FormatPeers(peers), "dir", cfg.Dir)
	}
	if existing && len(peers) > 1 {
		// A restarted voter may have acked a leader's heartbeat just before
		// it stopped, and hashicorp/raft grants a vote at once when it knows
		// no leader, as after a start. Waiting one heartbeat timeout here
		// keeps the rule every other vote follows: no vote within a
		// heartbeat timeout of the voter's last contact with a leader, on
		// which a new leader's lease wait rests (ServiceConfig.
		// ElectionSilence). A fresh voter acked nobody; a single voter
		// elects itself only after its own heartbeat timeout.
		lg.Info("controller voter restarted; waiting one raft heartbeat timeout before it may vote", "wait", rc.HeartbeatTimeout)
		_ = clock.Sleep(context.Background(), clock.Real, rc.HeartbeatTimeout) // no ctx: it cannot fail
	}
	m := &machine{st: fsm.NewState(), log: lg}
	r, err := raft.NewRaft(rc, m, logs, store, snaps, trans)
	if err != nil {
		return nil, fmt.Errorf("controller: start raft: %w", err)
	}
	out := &Raft{
		cfg:      cfg,
		log:      lg,
		r:        r,
		m:        m,
		store:    store,
		trans:    trans,
		voters:   peers,
		leaderCh: make(chan bool, 1),
		notifyCh: notify,
		done:     make(chan struct{}),
	}
	out.wg.Add(1)
	go out.forwardLeadership()
	out.useStoredVoters()
	return out, nil
}

// useStoredVoters makes Voters the membership raft uses: the one stored in
// Dir, which after the first start wins over cfg.Peers (a changed peers
// list is not a membership change); a difference is logged.
func (r *Raft) useStoredVoters() {
	f := r.r.GetConfiguration()
	if err := f.Error(); err != nil {
		r.log.Warn("could not read the stored controller membership; reporting the configured peers", "err", err)
		return
	}
	var stored []Voter
	for _, s := range f.Configuration().Servers {
		id, err := strconv.Atoi(string(s.ID))
		if err != nil || s.Suffrage != raft.Voter {
			continue
		}
		stored = append(stored, Voter{ID: id, Addr: string(s.Address)})
	}
	slices.SortFunc(stored, func(a, b Voter) int { return cmp.Compare(a.ID, b.ID) })
	if len(stored) == 0 || slices.Equal(stored, r.voters) {
		return
	}
	if len(stored) == 1 && len(r.voters) == 1 && stored[0].ID == r.voters[0].ID {
		// A single voter (petrel server listens on a new port each start):
		// it moves its stored address once it leads (forwardLeadership).
		r.readdress = r.voters[0].Addr
		return
	}
	r.log.Warn("the stored controller membership differs from the configured peers; raft uses the stored one",
		"stored", FormatPeers(stored), "configured", FormatPeers(r.voters), "dir", r.cfg.Dir)
	r.voters = stored
}

func voterID(id int) raft.ServerID { return raft.ServerID(strconv.Itoa(id)) }

// forwardLeadership moves raft's notifications (which raft blocks on) to
// leaderCh, where only the latest value is kept.
func (r *Raft) forwardLeadership() {
	defer r.wg.Done()
	for {
		select {
		case <-r.done:
			return
		case v := <-r.notifyCh:
			if v {
				r.log.Info("became the controller leader")
			} else {
				r.log.Info("stopped leading the controller")
			}
			select {
			case <-r.leaderCh: // drop the stale value
			default:
			}
			r.leaderCh <- v // the only sender; cap 1, just drained
			if v && r.readdress != "" {
				r.moveSingleVoter()
			}
		}
	}
}

// moveSingleVoter stores the single voter's new address in the raft
// membership (AddVoter of an existing id changes its address).
func (r *Raft) moveSingleVoter() {
	f := r.r.AddVoter(voterID(r.cfg.ID), raft.ServerAddress(r.readdress), 0, defaultApplyTimeout)
	if err := f.Error(); err != nil {
		r.log.Warn("could not store the single controller voter's new address; it retries when it next leads", "addr", r.readdress, "err", err)
		return
	}
	r.log.Info("stored the single controller voter's new address", "addr", r.readdress)
	r.readdress = ""
}

// wait waits for a raft future within ctx (defaultApplyTimeout when ctx
// has no deadline). The future's goroutine ends when raft answers it,
// which raft does at the latest on its own timeout or at shutdown.
func wait(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func timeoutOf(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return max(dl.Sub(clock.Real.Now()), time.Millisecond)
	}
	return defaultApplyTimeout
}

// mapErr turns raft's leadership errors into ErrNotLeader.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return ErrNotLeader
	case errors.Is(err, raft.ErrLeadershipLost):
		// The entry may still commit under the next leader; the commands
		// are compare-and-set, so a retry there is safe.
		return fmt.Errorf("%w: leadership lost while committing (the command may have been applied)", ErrNotLeader)
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: the voter is shut down", ErrNotLeader)
	}
	return fmt.Errorf("controller: raft: %w", err)
}

// Apply commits cmd through raft and returns this voter's result of it.
func (r *Raft) Apply(ctx context.Context, cmd fsm.Command) (fsm.Result, error) {
	b, err := fsm.EncodeCommand(cmd)
	if err != nil {
		return fsm.Result{}, err
	}
	if !r.IsLeader() {
		return fsm.Result{}, ErrNotLeader
	}
	f := r.r.Apply(b, timeoutOf(ctx))
	if err := wait(ctx, f); err != nil {
		return fsm.Result{}, mapErr(err)
	}
	res, ok := f.Response().(applied)
	if !ok {
		return fsm.Result{}, fmt.Errorf("controller: raft answered %T", f.Response())
	}
	if res.err != nil {
		return fsm.Result{}, res.err // Log's contract, as FakeLog
	}
	return res.res, nil
}

// Read calls f with the applied state under a read lock.
func (r *Raft) Read(f func(*fsm.State)) {
	r.m.mu.RLock()
	defer r.m.mu.RUnlock()
	f(r.m.st)
}

// IsLeader reports whether this voter leads now.
func (r *Raft) IsLeader() bool { return r.r.State() == raft.Leader }

// Leader is the leader's id and address ("" and 0 when unknown).
func (r *Raft) Leader() (int, string) {
	addr, id := r.r.LeaderWithID()
	n, err := strconv.Atoi(string(id))
	if err != nil {
		return 0, string(addr)
	}
	return n, string(addr)
}

// LeaderCh: see Log. There is one channel; give it one reader.
func (r *Raft) LeaderCh() <-chan bool { return r.leaderCh }

// VerifyLeader confirms leadership with a quorum.
func (r *Raft) VerifyLeader(ctx context.Context) error {
	return mapErr(wait(ctx, r.r.VerifyLeader()))
}

// Barrier waits until everything committed before it is applied here.
func (r *Raft) Barrier(ctx context.Context) error {
	return mapErr(wait(ctx, r.r.Barrier(timeoutOf(ctx))))
}

// Voters are the voters raft uses (stored in Dir; on the first start the
// configured peers), sorted by id.
func (r *Raft) Voters() []Voter { return slices.Clone(r.voters) }

// Snapshot makes a raft snapshot now (operators and tests).
func (r *Raft) Snapshot() error {
	if err := r.r.Snapshot().Error(); err != nil {
		return fmt.Errorf("controller: snapshot: %w", err)
	}
	return nil
}

// AppliedIndex is the index of the last entry applied to the state.
func (r *Raft) AppliedIndex() uint64 { return r.r.AppliedIndex() }

// Close shuts the voter down (raft, its transport and stream, the log
// store). It is idempotent.
func (r *Raft) Close() error {
	r.closeOnce.Do(func() {
		var errs []error
		if err := r.r.Shutdown().Error(); err != nil {
			errs = append(errs, fmt.Errorf("controller: raft shutdown: %w", err))
		}
		close(r.done)
		r.wg.Wait()
		if err := r.trans.Close(); err != nil {
			errs = append(errs, fmt.Errorf("controller: raft transport: %w", err))
		}
		if err := r.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("controller: raft log: %w", err))
		}
		r.closeErr = errors.Join(errs...)
	})
	return r.closeErr
}

// applied is what machine.Apply returns to the Apply future.
type applied struct {
	res fsm.Result
	err error
}

// machine is raft's FSM: the fsm.State, applied on raft's FSM goroutine;
// readers take mu.
type machine struct {
	mu  sync.RWMutex
	st  *fsm.State
	log *slog.Logger
}

func (m *machine) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	cmd, err := fsm.DecodeCommand(l.Data)
	if err != nil {
		// Deterministic: every voter refuses the same entry.
		m.log.Error("undecodable controller command in the raft log; skipped", "index", l.Index, "err", err)
		return applied{err: fmt.Errorf("controller: undecodable command: %w", err)}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	res, err := m.st.Apply(cmd)
	return applied{res: res, err: err}
}

func (m *machine) Snapshot() (raft.FSMSnapshot, error) {
	m.mu.RLock()
	b, err := m.st.Snapshot()
	m.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("controller: encode snapshot: %w", err)
	}
	return snapshot(b), nil
}

func (m *machine) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, fsm.MaxSnapshotBytes+1))
	if err != nil {
		return fmt.Errorf("controller: read snapshot: %w", err)
	}
	if len(b) > fsm.MaxSnapshotBytes {
		return fmt.Errorf("controller: snapshot larger than %d bytes", fsm.MaxSnapshotBytes)
	}
	st, err := fsm.Restore(b)
	if err != nil {
		return fmt.Errorf("controller: decode snapshot: %w", err)
	}
	m.mu.Lock()
	m.st = st
	m.mu.Unlock()
	m.log.Info("restored the controller state from a snapshot", "bytes", len(b), "groups", len(st.Groups))
	return nil
}

// snapshot is an encoded state; Persist writes it.
type snapshot []byte

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("controller: write snapshot: %w", err)
	}
	return sink.Close()
}

func (snapshot) Release() {}
