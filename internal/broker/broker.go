package broker

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/broker/dedup"
	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// Broker serves the RocketMQ use cases over a store. All methods are safe
// for concurrent use. See the package doc.
type Broker struct {
	cfg  Config
	st   store.MessageStore
	meta meta.Tables
	clk  clock.Clock
	log  *slog.Logger
	uniq uniqGen

	closed    atomic.Bool
	closeOnce sync.Once

	settings    runtimeSettings // settings.go
	topicHooks  hookList[func()]
	changeHooks hookList[func(TopicChange)]
	groupHooks  hookList[func(group string)]
	topicRuns   hookRuns

	// topicMu serialises create-if-missing of groups, so two concurrent
	// heartbeats create a group once. (Topics need no lock: the meta store's
	// EnsureTopic and UpdateTopic check and change in one step.)
	topicMu sync.Mutex
	sendSeq atomic.Uint32 // queue choice for sends without a queue id

	polls pollState

	clients clientTable
	conns   connTable // registered connections, conn.go

	locksMu sync.Mutex
	locks   map[lockKey]lockEntry

	reads atomic.Int64 // store reads made by Pull, for tests

	timers *timers       // delayed delivery, delay.go
	txns   transactions  // transactional messages, transaction.go
	dedup  *dedup.Window // resends answered from memory, dedup.go
	stats  stats         // traffic counters, stats.go
	pops   *popState     // pop consumption, pop.go
	jumps  offsetJumps   // logged offset jumps, offsetjump.go
	sends  sendWork      // goroutines of sends that had to wait, sendbatch.go
	faults faultHooks    // test-only faults (build tag verifyfault), faults_*.go

	role     atomic.Int32 // Role, replication.go
	brokerID atomic.Int64 // BrokerID, replication.go
	repl     *replWaiter  // nil: sends do not wait for slaves, replication.go
	state    streamState  // the state stream, state.go
	auth     authState    // users and ACLs, auth.go and authstate.go

	leaseRefusals atomic.Uint64 // sends refused for an expired lease, lease.go
	leaseLapsed   atomic.Bool   // the last lease check failed (logged once per lapse)
}

// New returns a broker over st, an open message store, and md, its metadata
// store of topics, groups and offsets (st.Meta() for a file store: the
// store reads topic attributes and offsets from it too); the caller keeps
// owning both (close the broker first, then the stores). Timer and pop
// state live in st.Config().Dir on st.Config().FS. When cfg.AutoCreateTopics
// is on it creates the TBW102 template (perm 7, cfg.DefaultTopicQueueNums
// queues) if missing; the cluster's reply topic and the message trace
// topic (systopic.go) it creates if missing in any case. It registers a store listener that wakes parked
// pulls and starts the client-expiry timer.
func New(st store.MessageStore, md meta.Tables, cfg Config) (*Broker, error) {
	cfg.fill()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if st == nil || md == nil {
		return nil, errors.New("broker: a message store and a metadata store are required")
	}
	if !cfg.StoreHost.IsValid() {
		cfg.StoreHost = st.Config().StoreHost
	}
	b := &Broker{
		cfg:   cfg,
		st:    st,
		meta:  md,
		clk:   cfg.Clock,
		log:   cfg.Logger.With("component", "broker", "broker", cfg.BrokerName),
		locks: make(map[lockKey]lockEntry),
	}
	b.uniq.init(cfg.StoreHost, cfg.Clock.Now())
	b.role.Store(int32(cfg.Role))
	b.brokerID.Store(cfg.BrokerID)
	if err := b.initFaults(); err != nil {
		return nil, err
	}
	b.initState()
	b.settings.init(cfg)
	b.polls.init(cfg.Clock, cfg.LongPollMaxTotal, cfg.LongPollMaxPerConn)
	b.clients.init()
	b.conns.init()
	if cfg.AutoCreateTopics {
		if _, ok := b.meta.Topic(TemplateTopic); !ok {
			t := meta.Topic{Name: TemplateTopic, ReadQueueNums: cfg.DefaultTopicQueueNums, WriteQueueNums: cfg.DefaultTopicQueueNums,
				Perm: meta.PermRead | meta.PermWrite | meta.PermInherit, TopicFilterType: "SINGLE_TAG"}
			if err := b.meta.PutTopic(t); err != nil {
				return nil, errorf(KindSystemError, err, "create the auto-create template topic %s", TemplateTopic)
			}
		}
	}
	// The cluster's reply topic, so that a replier's client finds its
	// route, and the trace topic, so that traced clients' trace sends are
	// stored and indexed by their keys (the traced message ids).
	if err := b.ensureSingleQueueTopic(ReplyTopic(cfg.ClusterName), "reply topic"); err != nil {
		return nil, err
	}
	if err := b.ensureSingleQueueTopic(TraceTopic, "message trace topic"); err != nil {
		return nil, err
	}
	if err := b.openTimers(); err != nil {
		return nil, errorf(KindSystemError, err, "delayed delivery cannot start")
	}
	window := cfg.DedupWindow
	if window < 0 {
		window = 0 // disabled
	}
	b.dedup = dedup.New(dedup.Options{Window: window, Clock: cfg.Clock})
	if n := b.rebuildDedup(); n > 0 {
		b.log.Info("dedup window rebuilt", "ids", n)
	}
	if err := b.openTransactions(); err != nil {
		b.closeTimers()
		return nil, errorf(KindSystemError, err, "transactional messages cannot start")
	}
	if err := b.openPops(); err != nil {
		b.closeTimers()
		b.txns.m.Close()
		return nil, errorf(KindSystemError, err, "pop consumption state cannot be loaded")
	}
	b.registerSlaveState()
	st.AddListener(b.onArrived)
	b.startReplication()
	b.startState()
	b.kickTimers(TimerTopic) // what was dispatched since the replay
	b.armExpiry()
	b.startStats()
	b.log.Info("broker started", "cluster", cfg.ClusterName, "broker_id", cfg.BrokerID, "role", cfg.Role.String(),
		"sync_replication", b.repl != nil, "state_replication", cfg.StateReplication,
		"store_host", cfg.StoreHost.String(), "auto_create_topics", cfg.AutoCreateTopics)
	return b, nil
}

// Close answers every parked pull with "no new message", stops the timers
// and refuses further sends and pulls with KindServiceUnavailable. It does
// not close the store. Idempotent; always returns nil.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.closed.Store(true)
		if b.repl != nil {
			b.repl.cancel() // waits for the slaves end now: their sends are answered
		}
		b.sends.close() // before the timers and transactions its sends use
		b.closeState()
		if b.repl != nil {
			b.repl.close()
		}
		b.closePolls()
		b.closePops()
		b.closeTimers()
		b.stopStats()
		if err := b.txns.m.Close(); err != nil {
			b.log.Warn("closing the transaction manager failed", "err", err)
		}
		b.clients.mu.Lock()
		b.clients.closed = true
		if b.clients.timer != nil {
			b.clients.timer.Stop()
		}
		b.clients.mu.Unlock()
		b.log.Info("broker closed")
	})
	return nil
}

// Config returns the configuration in force (defaults filled in).
func (b *Broker) Config() Config { return b.cfg }

func (b *Broker) errClosed() *Error {
	return errorf(KindServiceUnavailable, nil, "broker %s is shutting down; retry on another broker", b.cfg.BrokerName)
}

// OnTopicsChanged registers fn, called after a topic is created, changed or
// deleted (by CreateTopic, DeleteTopic, auto-creation on send or the
// %RETRY% topic a heartbeat creates), once the change is durable. fn runs
// on the goroutine of one of the changing callers with no broker lock held;
// it must not block for long. Runs are never concurrent, and are shared: a
// change returns after a run that began after it ended, and all the
// changes that end while one run is under way share the next run. (A hook
// that reads the whole topic table thus costs O(topics) per batch of
// concurrent changes, not per change.)
func (b *Broker) OnTopicsChanged(fn func()) {
	b.topicHooks.add(fn)
}

// topicsChanged runs the hooks after a change of topic name has become
// durable: the OnTopicChanged hooks with that change, then the
// OnTopicsChanged hooks, or a wait for a run of them that begins after this
// call (see OnTopicsChanged).
func (b *Broker) topicsChanged(name string) {
	b.stateTopicChanged(name)
	if changeHooks := b.changeHooks.list(); len(changeHooks) > 0 {
		t, ok, v := b.meta.TopicAt(name)
		c := TopicChange{Name: name, Topic: topicFromMeta(t), Deleted: !ok, Version: versionFromMeta(v)}
		for _, fn := range changeHooks {
			fn(c)
		}
	}
	r := &b.topicRuns
	r.mu.Lock()
	want := r.started + 1 // the first run that starts after this call
	for r.finished < want {
		if r.running {
			done := r.done
			r.waiting++
			r.mu.Unlock()
			<-done
			r.mu.Lock()
			r.waiting--
			continue
		}
		r.running = true
		r.started++
		run, done := r.started, make(chan struct{})
		r.done = done
		r.mu.Unlock()
		b.runTopicHooks(run, done)
		r.mu.Lock()
	}
	r.mu.Unlock()
}

// runTopicHooks runs the OnTopicsChanged hooks as run number run, and marks it ended even
// if a hook panics (a front that recovers must not leave later changes
// waiting for it).
func (b *Broker) runTopicHooks(run uint64, done chan struct{}) {
	r := &b.topicRuns
	defer func() {
		r.mu.Lock()
		r.running = false
		r.finished = run
		close(done)
		r.mu.Unlock()
	}()
	for _, fn := range b.topicHooks.list() {
		fn()
	}
}

// hookRuns numbers the runs of the topic hooks, for topicsChanged.
type hookRuns struct {
	mu       sync.Mutex
	running  bool
	done     chan struct{} // closed when the running run ends
	started  uint64        // runs begun
	finished uint64        // the number of the last run that ended
	waiting  int           // callers parked on done (tests watch it)
}

// idsChange is a change of a consumer group's client-id set: conns are
// the connections to send NOTIFY_CONSUMER_IDS_CHANGED (code 40) to: on a
// join, every member's connection except the joiner's (it rebalances after
// its own heartbeat anyway); on a departure, every remaining member's.
type idsChange struct {
	group string
	conns []uint64
}

// consumerIDsChanged routes each change to the handlers of its conns (a
// conn nobody registered is skipped), unless the group's config has
// NotifyConsumerIDsChangedEnable false. No broker lock is held.
func (b *Broker) consumerIDsChanged(changes []idsChange) {
	for _, c := range changes {
		if len(c.conns) == 0 {
			continue
		}
		if g, ok := b.meta.Group(c.group); ok && !g.NotifyConsumerIDsChangedEnable {
			continue
		}
		for _, conn := range c.conns {
			if h := b.conns.handler(conn); h != nil {
				h.NotifyConsumerIDsChanged(c.group)
			}
		}
	}
}

// now is the clock's time; a helper so call sites read well.
func (b *Broker) now() time.Time { return b.clk.Now() }
