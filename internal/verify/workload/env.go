// Package workload holds the workloads `petrel verify` drives: producers
// and consumers that talk to a Petrel cluster over the real protocols
// (Petrel's own remoting and gRPC clients) and record every operation in
// the run's history (package history), so that the checker can tell
// whether an acknowledged message was lost.
//
// Each workload has a name (queue, broadcast, ordered, delay, txn, grpc)
// and goes through Setup (topics), Run (until its ctx ends, while faults
// happen), Drain (after the cluster healed: consumers catch up, then a
// separate reader reads every queue from its first offset) and Close.
// Network errors are never fatal: a client records the operation as Fail
// or InDoubt, backs off at most MaxBackoff and goes on.
package workload

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/verify/history"
)

// Defaults of Env's fields.
const (
	DefaultQueues      = 4
	DefaultProducers   = 2
	DefaultConsumers   = 2
	DefaultRate        = 50
	DefaultBodyBytes   = 256
	DefaultSendTimeout = 3 * time.Second
	// MaxBackoff bounds the pause of a client after an error.
	MaxBackoff = 200 * time.Millisecond
)

// Env is what a workload runs against and where it records.
type Env struct {
	RunID   string
	NameSrv []string // name server addresses (real ones; dial via Network)
	GRPC    string   // a gRPC endpoint ip:port (real one; dial via Network), or several, comma-separated
	// GRPCGroup, when set, is the broker group every GRPC endpoint
	// belongs to (their fronts send to that group's master): the grpc
	// workload's send lines carry it, so that its failover time is
	// measured on that group.
	GRPCGroup string
	// Network returns the network a client dials on: every connection
	// goes through the fault proxy's links from that client. Nil: the
	// real network.
	Network func(client string) netx.Network
	History *history.Writer
	Clock   clock.Clock  // default clock.Real
	Logger  *slog.Logger // default discard
	Queues  int          // queues per topic (0: DefaultQueues)
	// Producers and Consumers per workload (0: the defaults).
	Producers int
	Consumers int
	// Rate is sends per second per producer; 0 is as fast as sync sends
	// go (the lead passes DefaultRate unless told otherwise).
	Rate        int
	BodyBytes   int           // 0: DefaultBodyBytes
	SendTimeout time.Duration // bound of every request (0: DefaultSendTimeout)
	// Credentials, when set, sign every request of the workloads'
	// clients: the 4.x AccessKey/Signature fields and the 5.x
	// authorization metadata. Nil: unsigned.
	Credentials *Credentials
	// Admin, when set, signs the setup's requests instead (topic
	// creation, which a normal user may not do). Nil: Credentials.
	Admin *Credentials
	// TLS, when set, is the client TLS configuration of every connection
	// (remoting and gRPC), which then verifies the servers as it says.
	// Nil: remoting is plaintext, and gRPC accepts the front's
	// self-signed certificate.
	TLS *tls.Config
}

// Credentials are a user's access key (its name) and secret key.
type Credentials struct {
	AccessKey, SecretKey string
}

// withDefaults returns a copy of e with zero fields set to their defaults,
// or an error for what cannot run.
func (e *Env) withDefaults() (*Env, error) {
	if e == nil {
		return nil, errors.New("workload: no Env")
	}
	c := *e
	if c.History == nil {
		return nil, errors.New("workload: Env.History is nil")
	}
	if c.RunID == "" {
		return nil, errors.New("workload: Env.RunID is empty")
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Network == nil {
		c.Network = func(string) netx.Network { return netx.TCP }
	}
	if c.Queues <= 0 {
		c.Queues = DefaultQueues
	}
	if c.Producers <= 0 {
		c.Producers = DefaultProducers
	}
	if c.Consumers <= 0 {
		c.Consumers = DefaultConsumers
	}
	if c.Rate < 0 {
		return nil, fmt.Errorf("workload: Env.Rate %d is negative", c.Rate)
	}
	if c.BodyBytes <= 0 {
		c.BodyBytes = DefaultBodyBytes
	}
	if c.SendTimeout <= 0 {
		c.SendTimeout = DefaultSendTimeout
	}
	return &c, nil
}

// Topic is the topic of a workload: verify-<runID>-<workload>.
func (e *Env) Topic(workload string) string { return "verify-" + e.RunID + "-" + workload }

// Group is the consumer group of a workload: verify-<runID>-<workload>-g.
func (e *Env) Group(workload string) string { return e.Topic(workload) + "-g" }

// producerGroup is the producer group of a workload's producers:
// verify-<runID>-<workload>-pg.
func (e *Env) producerGroup(workload string) string { return e.Topic(workload) + "-pg" }

// record appends op to the history; a history that cannot be written is
// logged (the run goes on: the lead sees the writer's error at Close).
func (e *Env) record(op history.Op) history.Op {
	out, err := e.History.Append(op)
	if err != nil {
		e.Logger.Error("history append failed", "err", err)
	}
	return out
}

// start writes a client's Start line.
func (e *Env) start(workload, process, role string) {
	op := history.New(history.Info, history.Start)
	op.Workload, op.Process, op.Role = workload, process, role
	e.record(op)
}

// sleep waits d on the env's clock, or until ctx ends; it reports whether
// ctx is still live.
func (e *Env) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	return clock.Sleep(ctx, e.Clock, d) == nil
}

// background is goroutines that run until stop, or until the ctx they
// were started under ends.
type background struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

func newBackground(parent context.Context) *background {
	ctx, cancel := context.WithCancel(parent)
	return &background{ctx: ctx, cancel: cancel}
}

// Go runs f with the background's ctx.
func (b *background) Go(f func(ctx context.Context)) { b.wg.Go(func() { f(b.ctx) }) }

// stop ends the goroutines and waits for them; idempotent, and a nil
// background has none.
func (b *background) stop() {
	if b == nil {
		return
	}
	b.once.Do(func() {
		b.cancel()
		b.wg.Wait()
	})
}

// backoff is a client's pause after its n-th error in a row (n from 1):
// 25 ms doubling, at most MaxBackoff.
func backoff(n int) time.Duration {
	d := 25 * time.Millisecond
	for i := 1; i < n && d < MaxBackoff; i++ {
		d *= 2
	}
	return min(d, MaxBackoff)
}

// Workload is one kind of traffic with its clients.
type Workload interface {
	Name() string
	// Setup creates its topics and groups (through the name server's
	// route) and keeps env for Run and Drain.
	Setup(ctx context.Context, env *Env) error
	// Run drives producers and consumers until ctx ends; faults happen
	// meanwhile. It returns an error only for a bug or a setup problem.
	Run(ctx context.Context) error
	// Drain lets the consumers catch up to the queues' max offsets, then
	// reads every queue from its min to its max offset and records what
	// it finds; it returns when done (or ctx ends).
	Drain(ctx context.Context) error
	Close() error
}

var (
	registryMu sync.Mutex
	registry   = map[string]func() Workload{}
)

// register makes a workload known to New and Names; each workload's file
// calls it from init.
func register(name string, f func() Workload) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("workload: " + name + " registered twice")
	}
	registry[name] = f
}

// New returns a fresh workload by name.
func New(name string) (Workload, error) {
	registryMu.Lock()
	f := registry[name]
	registryMu.Unlock()
	if f == nil {
		return nil, fmt.Errorf("workload: unknown workload %q (known: %v)", name, Names())
	}
	return f(), nil
}

// order is the order Names lists the known workloads in; others follow
// by name.
var order = map[string]int{"queue": 1, "broadcast": 2, "ordered": 3, "delay": 4, "txn": 5, "grpc": 6}

// Names lists the known workloads, queue first.
func Names() []string {
	registryMu.Lock()
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	registryMu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := order[out[i]], order[out[j]]
		if a == 0 {
			a = len(order) + 1
		}
		if b == 0 {
			b = len(order) + 1
		}
		if a != b {
			return a < b
		}
		return out[i] < out[j]
	})
	return out
}
