package namesrv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/remoting"
)

// BrokerInfo identifies the broker a Registrar registers.
type BrokerInfo struct {
	Cluster      string
	Name         string
	ID           int64  // 0 = master
	Addr         string // address clients dial, put in routes
	HAServerAddr string
}

// RegistrarOptions configure a Registrar. Zero values take the defaults.
type RegistrarOptions struct {
	// Clock drives heartbeats; default clock.Real.
	Clock clock.Clock
	// HeartbeatInterval is the period of heartbeats; default 30 s.
	HeartbeatInterval time.Duration
	// FullEvery makes every FullEvery-th heartbeat a full registration;
	// default 10 (every 5 minutes with the default interval).
	FullEvery int
	// Timeout bounds each request to a name server; default 6 s.
	Timeout time.Duration
	// CompressAboveBytes: bodies larger than this are zlib-compressed
	// (ext petrelZlib); default 64 KiB; negative: never.
	CompressAboveBytes int
	// Logger: default discard.
	Logger *slog.Logger
	// OnSent, if set, is called after each registration attempt, from the
	// name server's goroutine (for metrics and tests).
	OnSent func(Sent)
	// OnMaster, if set, is called when the master a name server names in
	// its answer to a slave's registration (its client and replication
	// addresses) differs from the one named before; from the name
	// server's goroutine, so it must not block. A master is never called.
	OnMaster func(m MasterInfo)
	// Snapshot, if set, returns the broker's whole topic table and the
	// version it was read at (atomically); it is merged (see Update)
	// before each periodic full registration, so that a change whose
	// Apply went missing is registered all the same.
	Snapshot func() (map[string]TopicConfig, DataVersion)
}

// MasterInfo is the master of a slave's broker group as the name servers
// know it (RocketMQ's RegisterBrokerResult).
type MasterInfo struct {
	Addr   string // client address
	HAAddr string // replication address (haServerAddr)
}

// Sent describes one registration attempt.
type Sent struct {
	NameServer string
	Full       bool
	BodyBytes  int   // body length on the wire
	Err        error // nil: acknowledged; wraps ErrNeedFull when refused
}

const (
	defaultHeartbeatInterval = 30 * time.Second
	defaultFullEvery         = 10
	defaultRegistrarTimeout  = 6 * time.Second
	defaultCompressAbove     = 64 << 10
)

// Registrar keeps a broker registered with every name server. Each name
// server has its own goroutine and its own acknowledged state, so a slow
// or restarted name server affects no other.
//
// Protocol (a Petrel extension of REGISTER_BROKER, see doc.go): the first
// registration is full; afterwards each heartbeat, and each change, sends a
// delta against the data version that name server last acknowledged: the
// topics changed since its last registration — empty when nothing changed.
// Every FullEvery-th heartbeat, and whenever a name server refuses a delta
// (ext petrelNeedFull, e.g. after it restarted), a full registration
// follows. Changes made while a registration is in flight go out together
// in the next one.
//
// The topic set is monotonic: every topic is held with the data version
// it was read at, and a change or table older than what is held for a
// topic is ignored, so changes and tables may be handed in in any order.
type Registrar struct {
	client *remoting.Client
	broker BrokerInfo
	opts   RegistrarOptions
	log    *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex // guards the fields below and those of every nsState
	// entries holds the topics, and the deleted topics newer than floor,
	// each with the version it was read at. A name without an entry is
	// absent at floor.
	entries map[string]entry
	floor   DataVersion // version of the newest table merged (Update)
	version DataVersion // newest version handed in
	seq     uint64      // topic changes taken in
	// published is closed and replaced whenever a name server's state
	// changes (WaitPublished).
	published chan struct{}
	timer     clock.Timer
	started   bool
	closed    bool
	ns        []*nsState

	masterMu sync.Mutex // guards master
	master   MasterInfo // a slave's master, as last named by a name server

	identMu sync.Mutex // guards me
	me      ident      // the broker id and master epoch registered (SetIdentity)

	registered     chan struct{} // closed at the first registration a name server accepts
	registeredOnce sync.Once

	cacheMu          sync.Mutex // guards the full-registration cache; held while encoding
	fullCache        *remoting.Command
	fullCacheSeq     uint64
	fullCacheVersion DataVersion
	fullCacheIdent   ident
}

// ident is who a registration claims to be: the broker id (0: master) and
// the master epoch (0: none, not sent).
type ident struct {
	id    int64
	epoch uint32
}

// entry is one topic as the Registrar holds it.
type entry struct {
	cfg     TopicConfig
	deleted bool
	version DataVersion
}

type nsState struct {
	addr string
	wake chan struct{} // capacity 1: wake-ups coalesce

	// Guarded by Registrar.mu.
	ticks     int // heartbeats since the last full registration
	forceFull bool
	// pending names the topics changed since the last registration sent
	// (put back when that one fails).
	pending      map[string]struct{}
	acked        bool
	ackedVersion DataVersion
	ackedSeq     uint64 // every change up to this one is acknowledged
	failedSeq    uint64 // the last attempt failed, carrying the changes up to this one
	failing      bool
}

// ErrNotPublished is returned by WaitPublished when some name server could
// not be reached with the changes, or the Registrar is closed.
var ErrNotPublished = errors.New("namesrv: not every name server has accepted the topic changes")

// TopicChange is the state of one topic, read together with the data
// version of the broker's topic table at which it holds.
type TopicChange struct {
	Name    string
	Config  TopicConfig // zero when Deleted
	Deleted bool
	Version DataVersion
}

// older reports whether version a precedes b. The counter orders the
// changes of one topic table; the timestamp breaks ties.
func older(a, b DataVersion) bool {
	return a.Counter < b.Counter || (a.Counter == b.Counter && a.Timestamp < b.Timestamp)
}

// NewRegistrar returns a Registrar for broker; nothing is sent until Start.
// The client is shared and not closed by the Registrar.
func NewRegistrar(client *remoting.Client, nameServers []string, broker BrokerInfo, opts RegistrarOptions) *Registrar {
	if opts.Clock == nil {
		opts.Clock = clock.Real
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = defaultHeartbeatInterval
	}
	if opts.FullEvery <= 0 {
		opts.FullEvery = defaultFullEvery
	}
	if opts.Timeout <= 0 {
		opts.Timeout = defaultRegistrarTimeout
	}
	if opts.CompressAboveBytes == 0 {
		opts.CompressAboveBytes = defaultCompressAbove
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Registrar{
		client:     client,
		broker:     broker,
		opts:       opts,
		log:        opts.Logger.With("component", "registrar", "broker", broker.Name, "broker_id", broker.ID),
		ctx:        ctx,
		cancel:     cancel,
		entries:    map[string]entry{},
		published:  make(chan struct{}),
		registered: make(chan struct{}),
		me:         ident{id: broker.ID},
	}
	for _, addr := range nameServers {
		r.ns = append(r.ns, &nsState{addr: addr, wake: make(chan struct{}, 1), pending: map[string]struct{}{}})
	}
	return r
}

// Start sends a full registration to every name server and starts the
// heartbeats. It does nothing after the first call or after Close.
func (r *Registrar) Start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started || r.closed {
		return
	}
	r.started = true
	for _, st := range r.ns {
		r.wg.Add(1)
		go r.run(st)
		wake(st)
	}
	r.timer = r.opts.Clock.AfterFunc(r.opts.HeartbeatInterval, r.tick)
}

// WaitRegistered returns once some name server has accepted a
// registration (so clients asking it find this broker's topics), or with
// ctx's error.
func (r *Registrar) WaitRegistered(ctx context.Context) error {
	select {
	case <-r.registered:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Update merges the broker's whole topic table, read at version, and sends
// what changed to every name server at once. For every topic the newer of
// what is held and what the table says wins: a table older than a change
// handed in before does not undo that change. Update does not keep topics.
func (r *Registrar) Update(topics map[string]TopicConfig, version DataVersion) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mergeLocked(topics, version) {
		r.wakeAllLocked()
	}
}

// mergeLocked merges a whole table read at version and reports whether
// anything changed; r.mu must be held.
func (r *Registrar) mergeLocked(topics map[string]TopicConfig, version DataVersion) bool {
	if older(version, r.floor) {
		return false // a newer table was merged: this one holds nothing newer
	}
	changed := false
	for name, tc := range topics {
		changed = r.applyLocked(TopicChange{Name: name, Config: tc, Version: version}) || changed
	}
	for name, e := range r.entries {
		if _, ok := topics[name]; !ok && !e.deleted {
			changed = r.applyLocked(TopicChange{Name: name, Deleted: true, Version: version}) || changed
		}
	}
	if older(r.version, version) {
		r.version = version
		changed = true
	}
	r.floor = version
	for name, e := range r.entries {
		if e.deleted && !older(r.floor, e.version) {
			delete(r.entries, name) // absent at floor anyway
		}
	}
	return changed
}

// Apply takes in topic changes (each the topic's state at its version) and
// sends them to every name server at once, together with other changes
// in flight. A change older than what is held for its topic is ignored.
// Cost: O(len(changes)), whatever the number of topics.
func (r *Registrar) Apply(changes ...TopicChange) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for _, c := range changes {
		changed = r.applyLocked(c) || changed
	}
	if changed {
		r.wakeAllLocked()
	}
}

// applyLocked takes in one change and reports whether it changed the held
// topic or version; r.mu must be held.
func (r *Registrar) applyLocked(c TopicChange) bool {
	cur, ok := r.entries[c.Name]
	held := r.floor
	if ok {
		held = cur.version
	}
	if older(c.Version, held) {
		return false
	}
	if c.Deleted {
		c.Config = TopicConfig{}
	}
	r.entries[c.Name] = entry{cfg: c.Config, deleted: c.Deleted, version: c.Version}
	changed := false
	if older(r.version, c.Version) {
		r.version = c.Version
		changed = true
	}
	wasLive := ok && !cur.deleted
	if wasLive != !c.Deleted || (wasLive && cur.cfg != c.Config) {
		r.seq++
		for _, st := range r.ns {
			st.pending[c.Name] = struct{}{}
		}
		changed = true
	}
	return changed
}

// WaitPublished returns once every name server has acknowledged the topic
// changes taken in before the call (nil), once each that has not has
// failed a registration carrying them (ErrNotPublished), or with ctx's
// error.
func (r *Registrar) WaitPublished(ctx context.Context) error {
	r.mu.Lock()
	target := r.seq
	for {
		if r.closed {
			r.mu.Unlock()
			return fmt.Errorf("%w: the registrar is closed", ErrNotPublished)
		}
		behind, failed := 0, 0
		for _, st := range r.ns {
			switch {
			case st.ackedSeq >= target:
			case st.failing && st.failedSeq >= target:
				failed++
			default:
				behind++
			}
		}
		if behind == 0 {
			r.mu.Unlock()
			if failed > 0 {
				return fmt.Errorf("%w: %d of %d name servers did not answer", ErrNotPublished, failed, len(r.ns))
			}
			return nil
		}
		ch := r.published
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		r.mu.Lock()
	}
}

// notifyLocked wakes WaitPublished callers; r.mu must be held.
func (r *Registrar) notifyLocked() {
	close(r.published)
	r.published = make(chan struct{})
}

func (r *Registrar) wakeAllLocked() {
	if r.started && !r.closed {
		for _, st := range r.ns {
			wake(st)
		}
	}
}

// Close stops the heartbeats, waits for the name server goroutines and
// then unregisters the broker from every name server (best effort, each
// bounded by Timeout). It is idempotent.
func (r *Registrar) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.notifyLocked()
	started := r.started
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	if !started {
		return
	}
	var wg sync.WaitGroup
	for _, st := range r.ns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), r.opts.Timeout)
			defer cancel()
			if _, err := r.client.Invoke(ctx, st.addr, rmq.EncodeUnregisterBroker(rmq.UnregisterBrokerRequest{BrokerIdentity: r.identity(r.ident()), HAServerAddr: r.broker.HAServerAddr})); err != nil {
				r.log.Debug("unregister failed", "namesrv", st.addr, "err", err)
			}
		}()
	}
	wg.Wait()
}

func wake(st *nsState) {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// tick is a heartbeat: it wakes every name server's goroutine, after
// merging a fresh table from Snapshot when a full registration is due.
func (r *Registrar) tick() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	due := false
	for _, st := range r.ns {
		st.ticks++
		due = due || st.ticks >= r.opts.FullEvery
	}
	r.mu.Unlock()
	var topics map[string]TopicConfig
	var v DataVersion
	if due && r.opts.Snapshot != nil {
		topics, v = r.opts.Snapshot()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if topics != nil {
		r.mergeLocked(topics, v)
	}
	for _, st := range r.ns {
		wake(st)
	}
	r.timer = r.opts.Clock.AfterFunc(r.opts.HeartbeatInterval, r.tick)
}

func (r *Registrar) run(st *nsState) {
	defer r.wg.Done()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-st.wake:
		}
		// A refused delta is followed at once by a full registration.
		if err := r.sync(st); errors.Is(err, ErrNeedFull) && r.ctx.Err() == nil {
			_ = r.sync(st)
		}
	}
}

// sync sends one registration to st and records what it acknowledged.
func (r *Registrar) sync(st *nsState) error {
	me := r.ident()
	r.mu.Lock()
	full := !st.acked || st.forceFull || st.ticks >= r.opts.FullEvery
	seq, version, base := r.seq, r.version, st.ackedVersion
	names := st.pending
	st.pending = map[string]struct{}{}
	var topics, changed map[string]TopicConfig
	var removed []string
	if full {
		topics = r.liveTopicsLocked()
	} else {
		changed, removed = r.deltaLocked(names)
	}
	r.mu.Unlock()

	var req *remoting.Command
	if full {
		req = r.fullRequest(me, topics, seq, version)
	} else {
		req = r.deltaRequest(me, base, version, changed, removed)
	}
	err := r.send(st.addr, req, me)
	r.mu.Lock()
	switch {
	case err == nil:
		st.acked, st.ackedVersion, st.failing = true, version, false
		st.ackedSeq = max(st.ackedSeq, seq)
		r.registeredOnce.Do(func() { close(r.registered) })
		if full {
			st.ticks, st.forceFull = 0, false
		}
	case errors.Is(err, ErrNeedFull):
		st.forceFull = true // the full registration carries every topic
	default:
		st.failing, st.failedSeq = true, seq
		for name := range names {
			st.pending[name] = struct{}{}
		}
	}
	r.notifyLocked()
	r.mu.Unlock()
	if err != nil && !errors.Is(err, ErrNeedFull) && r.ctx.Err() == nil {
		r.log.Warn("registration failed", "namesrv", st.addr, "full", full, "err", err)
	}
	if f := r.opts.OnSent; f != nil {
		f(Sent{NameServer: st.addr, Full: full, BodyBytes: len(req.Body), Err: err})
	}
	return err
}

// liveTopicsLocked returns the topics held (not deleted); r.mu must be held.
func (r *Registrar) liveTopicsLocked() map[string]TopicConfig {
	out := make(map[string]TopicConfig, len(r.entries))
	for name, e := range r.entries {
		if !e.deleted {
			out[name] = e.cfg
		}
	}
	return out
}

// deltaLocked returns the current state of the named topics: those held,
// and the others (sorted) as removed; r.mu must be held.
func (r *Registrar) deltaLocked(names map[string]struct{}) (map[string]TopicConfig, []string) {
	changed := make(map[string]TopicConfig, len(names))
	var removed []string
	for name := range names {
		if e, ok := r.entries[name]; ok && !e.deleted {
			changed[name] = e.cfg
		} else {
			removed = append(removed, name)
		}
	}
	slices.Sort(removed)
	return changed, removed
}

func (r *Registrar) send(addr string, req *remoting.Command, me ident) error {
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.Timeout)
	defer cancel()
	resp, err := r.client.Invoke(ctx, addr, req)
	if err != nil {
		return fmt.Errorf("register with %s: %w", addr, err)
	}
	if rmq.NeedFullRegistration(resp) {
		return fmt.Errorf("register with %s: %w: %s", addr, ErrNeedFull, resp.Remark)
	}
	if resp.Code != remoting.CodeSuccess {
		return fmt.Errorf("register with %s: code %d: %s", addr, resp.Code, resp.Remark)
	}
	if me.id != MasterID {
		addr, haAddr := rmq.RegisterBrokerMaster(resp)
		r.learnMaster(me, addr, haAddr)
	}
	return nil
}

// learnMaster keeps the master a name server named, unless it named none
// or the answer was to a registration under an identity given up since.
func (r *Registrar) learnMaster(me ident, addr, haAddr string) {
	if addr == "" && haAddr == "" {
		return
	}
	m := MasterInfo{Addr: addr, HAAddr: haAddr}
	r.masterMu.Lock()
	if r.ident() != me {
		r.masterMu.Unlock()
		return
	}
	changed := r.master != m
	r.master = m
	r.masterMu.Unlock()
	if changed {
		r.log.Info("master of the broker group learned from a name server", "master_addr", addr, "ha_addr", haAddr)
		if r.opts.OnMaster != nil {
			r.opts.OnMaster(m)
		}
	}
}

// SetIdentity changes the broker id the Registrar registers and the master
// epoch it sends (ext petrelMasterEpoch, when epoch > 0), and registers
// again at once with every name server (a full registration). Controller
// mode calls it on every role change: id 0 with the new epoch on
// promotion, the replica id on demotion.
func (r *Registrar) SetIdentity(brokerID int64, epoch uint32) {
	me := ident{id: brokerID, epoch: epoch}
	r.masterMu.Lock() // learnMaster checks the identity under masterMu
	r.identMu.Lock()
	old := r.me
	r.me = me
	r.identMu.Unlock()
	if old != me {
		r.master = MasterInfo{} // a master names none; a slave learns its new one
	}
	r.masterMu.Unlock()
	if old == me {
		return
	}
	r.log.Info("registration identity changed", "from_broker_id", old.id, "to_broker_id", me.id, "master_epoch", me.epoch)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.ns {
		st.forceFull = true
	}
	r.wakeAllLocked()
}

// ident is the identity registrations carry now.
func (r *Registrar) ident() ident {
	r.identMu.Lock()
	defer r.identMu.Unlock()
	return r.me
}

// Master is the master of a slave's broker group as the name servers last
// named it (the zero MasterInfo before any did, and always for a master).
func (r *Registrar) Master() MasterInfo {
	r.masterMu.Lock()
	defer r.masterMu.Unlock()
	return r.master
}

func (r *Registrar) identity(me ident) rmq.BrokerIdentity {
	return rmq.BrokerIdentity{ClusterName: r.broker.Cluster, BrokerName: r.broker.Name, BrokerAddr: r.broker.Addr, BrokerID: me.id}
}

// request builds a registration of body, deflated when it is larger than
// CompressAboveBytes.
func (r *Registrar) request(me ident, h rmq.RegisterBrokerRequest, body []byte) *remoting.Command {
	h.BrokerIdentity, h.HAServerAddr, h.MasterEpoch = r.identity(me), r.broker.HAServerAddr, me.epoch
	if r.opts.CompressAboveBytes >= 0 && len(body) > r.opts.CompressAboveBytes {
		body, h.Zlib = rmq.Deflate(body), true
	}
	return rmq.EncodeRegisterBroker(h, body)
}

// fullRequest builds a Java-compatible full registration (plus petrelZlib
// when compressed). The encoded body is cached per topic set, so that
// several name servers share one encoding (100,000 topics take ~140 ms).
func (r *Registrar) fullRequest(me ident, topics map[string]TopicConfig, seq uint64, v DataVersion) *remoting.Command {
	r.cacheMu.Lock()
	defer r.cacheMu.Unlock()
	if r.fullCache == nil || r.fullCacheSeq != seq || r.fullCacheVersion != v || r.fullCacheIdent != me {
		r.fullCache = r.request(me, rmq.RegisterBrokerRequest{}, rmq.EncodeRegisterBrokerBody(topics, v))
		r.fullCacheSeq, r.fullCacheVersion, r.fullCacheIdent = seq, v, me
	}
	c := r.fullCache
	ext := make(map[string]string, len(c.ExtFields))
	for k, val := range c.ExtFields {
		ext[k] = val
	}
	return remoting.NewRequest(c.Code, ext, c.Body)
}

// deltaRequest builds a delta registration from base to v.
func (r *Registrar) deltaRequest(me ident, base, v DataVersion, changed map[string]TopicConfig, removed []string) *remoting.Command {
	return r.request(me, rmq.RegisterBrokerRequest{Delta: true, BaseVersion: base},
		rmq.EncodeDeltaRegisterBody(rmq.DeltaRegisterBody{DataVersion: v, TopicConfigTable: changed, RemovedTopics: removed}))
}
