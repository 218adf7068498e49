package namesrv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

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
// registration is full; afterwards each heartbeat, and each Update, sends a
// delta against the data version that name server last acknowledged — empty
// when nothing changed. Every FullEvery-th heartbeat, and whenever a name
// server refuses a delta (ext petrelNeedFull, e.g. after it restarted), a
// full registration follows.
type Registrar struct {
	client *remoting.Client
	broker BrokerInfo
	opts   RegistrarOptions
	log    *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex // guards the fields below and nsState.ticks/forceFull
	topics  map[string]TopicConfig
	version DataVersion
	timer   clock.Timer
	started bool
	closed  bool
	ns      []*nsState

	registered     chan struct{} // closed at the first registration a name server accepts
	registeredOnce sync.Once

	cacheMu          sync.Mutex // guards the full-registration cache; held while encoding
	fullCache        *remoting.Command
	fullCacheVersion DataVersion
}

type nsState struct {
	addr string
	wake chan struct{} // capacity 1: wake-ups coalesce

	// Guarded by Registrar.mu.
	ticks     int // heartbeats since the last full registration
	forceFull bool

	// Owned by the name server's goroutine.
	acked        bool
	ackedVersion DataVersion
	ackedTopics  map[string]TopicConfig
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
		topics:     map[string]TopicConfig{},
		registered: make(chan struct{}),
	}
	for _, addr := range nameServers {
		r.ns = append(r.ns, &nsState{addr: addr, wake: make(chan struct{}, 1)})
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

// Update replaces the broker's topic set and data version and sends the
// change to every name server at once. The version must change whenever
// the topics do. Update keeps topics: the caller must not modify the map
// afterwards (pass a fresh map each time).
func (r *Registrar) Update(topics map[string]TopicConfig, version DataVersion) {
	if topics == nil {
		topics = map[string]TopicConfig{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.topics, r.version = topics, version
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
			if _, err := r.client.Invoke(ctx, st.addr, remoting.NewRequest(CodeUnregisterBroker, r.identityExt(), nil)); err != nil {
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

func (r *Registrar) tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	for _, st := range r.ns {
		st.ticks++
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
	r.mu.Lock()
	topics, version := r.topics, r.version
	full := !st.acked || st.forceFull || st.ticks >= r.opts.FullEvery
	r.mu.Unlock()

	var req *remoting.Command
	if full {
		req = r.fullRequest(topics, version)
	} else {
		var changed map[string]TopicConfig
		var removed []string
		if version != st.ackedVersion {
			changed, removed = diffTopics(st.ackedTopics, topics)
		}
		req = r.deltaRequest(st.ackedVersion, version, changed, removed)
	}
	err := r.send(st.addr, req)
	r.mu.Lock()
	switch {
	case err == nil:
		st.acked, st.ackedVersion, st.ackedTopics = true, version, topics
		r.registeredOnce.Do(func() { close(r.registered) })
		if full {
			st.ticks, st.forceFull = 0, false
		}
	case errors.Is(err, ErrNeedFull):
		st.forceFull = true
	}
	r.mu.Unlock()
	if err != nil && !errors.Is(err, ErrNeedFull) && r.ctx.Err() == nil {
		r.log.Warn("registration failed", "namesrv", st.addr, "full", full, "err", err)
	}
	if f := r.opts.OnSent; f != nil {
		f(Sent{NameServer: st.addr, Full: full, BodyBytes: len(req.Body), Err: err})
	}
	return err
}

func (r *Registrar) send(addr string, req *remoting.Command) error {
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.Timeout)
	defer cancel()
	resp, err := r.client.Invoke(ctx, addr, req)
	if err != nil {
		return fmt.Errorf("register with %s: %w", addr, err)
	}
	if resp.Ext(ExtNeedFull) == "true" {
		return fmt.Errorf("register with %s: %w: %s", addr, ErrNeedFull, resp.Remark)
	}
	if resp.Code != remoting.CodeSuccess {
		return fmt.Errorf("register with %s: code %d: %s", addr, resp.Code, resp.Remark)
	}
	return nil
}

func (r *Registrar) identityExt() map[string]string {
	return map[string]string{
		extBrokerName:   r.broker.Name,
		extBrokerAddr:   r.broker.Addr,
		extClusterName:  r.broker.Cluster,
		extHAServerAddr: r.broker.HAServerAddr,
		extBrokerID:     strconv.FormatInt(r.broker.ID, 10),
	}
}

func (r *Registrar) request(ext map[string]string, body []byte) *remoting.Command {
	if r.opts.CompressAboveBytes >= 0 && len(body) > r.opts.CompressAboveBytes {
		body = deflate(body)
		ext[ExtZlib] = "true"
	}
	ext[extCompressed] = "false"
	ext[extBodyCRC32] = strconv.FormatInt(bodyCRC(body), 10)
	return remoting.NewRequest(CodeRegisterBroker, ext, body)
}

// fullRequest builds a Java-compatible full registration (plus petrelZlib
// when compressed). The encoded body is cached per data version, so that
// several name servers share one encoding (100,000 topics take ~140 ms).
func (r *Registrar) fullRequest(topics map[string]TopicConfig, v DataVersion) *remoting.Command {
	r.cacheMu.Lock()
	defer r.cacheMu.Unlock()
	if r.fullCache == nil || r.fullCacheVersion != v {
		r.fullCache = r.request(r.identityExt(), encodeRegisterBody(topics, v))
		r.fullCacheVersion = v
	}
	c := r.fullCache
	ext := make(map[string]string, len(c.ExtFields))
	for k, val := range c.ExtFields {
		ext[k] = val
	}
	return remoting.NewRequest(c.Code, ext, c.Body)
}

// deltaRequest builds a delta registration from base to v.
func (r *Registrar) deltaRequest(base, v DataVersion, changed map[string]TopicConfig, removed []string) *remoting.Command {
	ext := r.identityExt()
	ext[ExtDelta] = "true"
	ext[ExtBaseVersion] = base.String()
	return r.request(ext, encodeDeltaBody(v, changed, removed))
}

// diffTopics returns the topics of cur that are new or differ from old,
// and the names in old missing from cur (sorted).
func diffTopics(old, cur map[string]TopicConfig) (map[string]TopicConfig, []string) {
	changed := map[string]TopicConfig{}
	for name, tc := range cur {
		if o, ok := old[name]; !ok || o != tc {
			changed[name] = tc
		}
	}
	var removed []string
	for name := range old {
		if _, ok := cur[name]; !ok {
			removed = append(removed, name)
		}
	}
	slices.Sort(removed)
	return changed, removed
}
