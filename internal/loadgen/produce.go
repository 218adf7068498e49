package loadgen

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/remoting"
)

// Defaults of ProduceConfig and ConsumeConfig.
const (
	DefaultTopic         = "BenchTopic"
	DefaultProducerGroup = "BenchProducerGroup"
	DefaultConsumerGroup = "BenchConsumerGroup"
	DefaultBodyBytes     = 1024
	DefaultInFlight      = 64
	DefaultQueues        = 8
	DefaultCount         = 100_000
	DefaultDuration      = 10 * time.Minute
	DefaultGracePeriod   = 10 * time.Second
	DefaultMaxErrors     = 1000
	DefaultPullBatch     = 32
	DefaultRouteWait     = 10 * time.Second
	// MaxInFlight bounds ProduceConfig.InFlight (the broker runs at most
	// 256 requests of one connection at a time).
	MaxInFlight = 4096
	// MaxConns bounds ProduceConfig.Conns.
	MaxConns = 64
	// MaxBodyBytes bounds ProduceConfig.BodyBytes, and BodyBytes × Batch
	// (the broker's default message limit).
	MaxBodyBytes = 4 << 20
	// MaxBatch bounds ProduceConfig.Batch.
	MaxBatch = 1024
	// CountUnlimited as a Count runs until Duration ends (or the context).
	CountUnlimited = math.MaxInt64
	// DefaultProgressInterval is the default of the configs'
	// ProgressInterval.
	DefaultProgressInterval = time.Second
	minBodyBytes            = 8 // room for the sequence number
)

// Mode is how Produce sends.
type Mode string

// Send modes.
const (
	// ModeAsync keeps InFlight requests outstanding over the connection,
	// each answer's callback sending the next (an async producer).
	ModeAsync Mode = "async"
	// ModeSync runs InFlight workers, each sending and waiting for its
	// answer before the next (InFlight sync producer threads).
	ModeSync Mode = "sync"
	// ModeOneway sends without asking for answers, as a oneway producer:
	// the broker stores but does not reply, so a refused send is not
	// seen. Latency is the time until the request was written to the
	// socket; InFlight bounds the requests queued for writing.
	ModeOneway Mode = "oneway"
)

// ParseMode parses "sync", "async" or "oneway".
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeSync, ModeAsync, ModeOneway:
		return m, nil
	}
	return "", fmt.Errorf("%w: mode %q; want sync, async or oneway", ErrConfig, s)
}

// ProduceConfig configures Produce. Zero values take the defaults.
type ProduceConfig struct {
	// NameServers to ask for the route (host:port); required unless GRPC
	// is set.
	NameServers []string
	// GRPC, when set, is the host:port of a RocketMQ 5.x gRPC front: the
	// run then sends with SendMessage there instead of over remoting (see
	// the package doc). Queues, ProducerGroup, Conns-per-broker and
	// ModeOneway do not apply; Conns is the number of gRPC connections.
	GRPC string
	// GRPCPlaintext dials GRPC without TLS (default: TLS accepting any
	// certificate).
	GRPCPlaintext bool
	// Security: credentials and TLS (see Security).
	Security
	// Topic to send to; default DefaultTopic. Created with Queues read and
	// write queues on every master when the name servers have no route.
	Topic  string
	Queues int
	// ProducerGroup named in the send header; default DefaultProducerGroup.
	ProducerGroup string
	// BodyBytes is the body size, 8..MaxBodyBytes; default 1024.
	BodyBytes int
	// InFlight is the number of requests outstanding at once (1..4096);
	// default 64. In ModeSync it is the number of sending workers.
	InFlight int
	// Mode is how sends are made; default ModeAsync.
	Mode Mode
	// Batch is the number of messages per send (1..MaxBatch); above 1 each
	// send is a SEND_BATCH_MESSAGE of Batch messages. Default 1.
	Batch int
	// Serialize is the remoting header format of the sends: "json"
	// (default; what the official Go client sends) or "rocketmq" (the
	// binary ROCKETMQ layout, which Java clients use with
	// -Drocketmq.serialize.type=ROCKETMQ). The broker answers in the same.
	Serialize string
	// Conns is the number of connections per broker the InFlight workers
	// are spread over (1..64); default 1, like the real clients.
	Conns int
	// Count is the number of messages to send; default DefaultCount;
	// CountUnlimited sends until Duration ends.
	Count int64
	// Duration stops sending earlier; default DefaultDuration.
	Duration time.Duration
	// Rate paces the sends at this many messages per second overall; 0
	// sends as fast as the window allows.
	Rate float64
	// GracePeriod bounds the wait for answers once sending stopped;
	// default DefaultGracePeriod.
	GracePeriod time.Duration
	// MaxErrors stops the run after that many failed sends; default
	// DefaultMaxErrors.
	MaxErrors int64
	// RouteWait bounds the wait for a broker and the route to appear;
	// default DefaultRouteWait.
	RouteWait time.Duration
	// AllowRemote permits non-loopback addresses.
	AllowRemote bool
	// Scenario names the run in the result line; default "produce".
	Scenario string
	// Progress, when set, is called every ProgressInterval while the run
	// lasts with the figures so far, on a goroutine of its own (one call
	// at a time). Default interval DefaultProgressInterval.
	Progress         func(Progress)
	ProgressInterval time.Duration
}

func (c *ProduceConfig) fill() error {
	if err := c.Security.check(); err != nil {
		return err
	}
	if len(c.NameServers) == 0 && c.GRPC == "" {
		return fmt.Errorf("%w: no name server given", ErrConfig)
	}
	if c.GRPC != "" && c.Mode == ModeOneway {
		return fmt.Errorf("%w: oneway sends do not exist over gRPC; use async or sync", ErrConfig)
	}
	setDefault(&c.Topic, DefaultTopic)
	setDefault(&c.ProducerGroup, DefaultProducerGroup)
	setDefault(&c.Queues, DefaultQueues)
	setDefault(&c.BodyBytes, DefaultBodyBytes)
	setDefault(&c.InFlight, DefaultInFlight)
	setDefault(&c.Conns, 1)
	setDefault(&c.Count, DefaultCount)
	setDefault(&c.Duration, DefaultDuration)
	setDefault(&c.GracePeriod, DefaultGracePeriod)
	setDefault(&c.MaxErrors, DefaultMaxErrors)
	setDefault(&c.RouteWait, DefaultRouteWait)
	setDefault(&c.Scenario, "produce")
	setDefault(&c.Mode, ModeAsync)
	setDefault(&c.Batch, 1)
	setDefault(&c.ProgressInterval, DefaultProgressInterval)
	setDefault(&c.Serialize, SerializeJSON)
	if _, err := ParseMode(string(c.Mode)); err != nil {
		return err
	}
	if c.Serialize != SerializeJSON && c.Serialize != SerializeRocketMQ {
		return fmt.Errorf("%w: header format %q is neither %s nor %s", ErrConfig, c.Serialize, SerializeJSON, SerializeRocketMQ)
	}
	switch {
	case c.BodyBytes < minBodyBytes || c.BodyBytes > MaxBodyBytes:
		return fmt.Errorf("%w: body size %d is outside %d..%d bytes", ErrConfig, c.BodyBytes, minBodyBytes, MaxBodyBytes)
	case c.Batch < 1 || c.Batch > MaxBatch:
		return fmt.Errorf("%w: batch %d is outside 1..%d messages", ErrConfig, c.Batch, MaxBatch)
	case c.Batch*c.BodyBytes > MaxBodyBytes:
		return fmt.Errorf("%w: a batch of %d × %d bytes exceeds the %d-byte limit of one send; lower the batch or the size", ErrConfig, c.Batch, c.BodyBytes, MaxBodyBytes)
	case c.ProgressInterval < 0:
		return fmt.Errorf("%w: progress interval %v is negative", ErrConfig, c.ProgressInterval)
	case c.InFlight < 1 || c.InFlight > MaxInFlight:
		return fmt.Errorf("%w: in-flight %d is outside 1..%d", ErrConfig, c.InFlight, MaxInFlight)
	case c.Conns < 1 || c.Conns > MaxConns:
		return fmt.Errorf("%w: connections %d is outside 1..%d", ErrConfig, c.Conns, MaxConns)
	case c.Queues < 1 || c.Queues > 1024:
		return fmt.Errorf("%w: queues %d is outside 1..1024", ErrConfig, c.Queues)
	case c.Count < 1, c.Duration < 0, c.Rate < 0, c.MaxErrors < 1:
		return fmt.Errorf("%w: count must be ≥ 1, duration and rate ≥ 0, max errors ≥ 1", ErrConfig)
	}
	return nil
}

// Header formats of ProduceConfig.Serialize.
const (
	SerializeJSON     = "json"
	SerializeRocketMQ = "rocketmq"
)

func setDefault[T comparable](p *T, d T) {
	var zero T
	if *p == zero {
		*p = d
	}
}

// Produce sends messages as ProduceConfig describes and returns the
// result. Sends that fail (transport error or a code other than SUCCESS,
// FLUSH_DISK_TIMEOUT, SLAVE_NOT_AVAILABLE and FLUSH_SLAVE_TIMEOUT) count in
// Result.Errors; the last two count in Result.NotReplicated (stored, not
// confirmed replicated); the first failure's text is
// in Result.FirstError. It returns an error, with no result, when the
// route cannot be had or the connections cannot be opened, and an error
// wrapping ErrTooManyErrors, with the result so far, when MaxErrors sends
// failed. When ctx ends, sending stops and the result so far is returned
// without error.
func Produce(ctx context.Context, cfg ProduceConfig) (*Result, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if cfg.GRPC != "" {
		return produceGRPC(ctx, &cfg)
	}
	clients := make([]*remoting.Client, cfg.Conns)
	for i := range clients {
		// Sends read only the code and remark of their answers.
		clients[i] = remoting.NewClient(cfg.Security.clientOptions(remoting.ClientOptions{Handler: ignoreRequests, LazyResponses: true}))
	}
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	rt, err := resolve(ctx, clients[0], resolveConfig{
		nameServers: cfg.NameServers, topic: cfg.Topic, create: true, queues: int32(cfg.Queues),
		write: true, allowRemote: cfg.AllowRemote, wait: cfg.RouteWait,
	})
	if err != nil {
		return nil, err
	}
	// Dial up front so that connecting is not measured.
	conns := make([][]*remoting.Conn, cfg.Conns)
	for i, cl := range clients {
		for _, a := range rt.addrs {
			dctx, cancel := context.WithTimeout(ctx, defaultControlTimeout)
			c, err := cl.Conn(dctx, a)
			cancel()
			if err != nil {
				return nil, err
			}
			conns[i] = append(conns[i], c)
		}
	}
	p := &producer{cfg: &cfg, rt: rt, clients: clients, uniqPrefix: uniqPrefix(),
		offReader: cfg.Security.AccessKey != "" && cfg.Rate == 0 && cfg.Mode == ModeAsync}
	return p.run(ctx, conns)
}

// ignoreRequests drops requests a broker sends us (all are oneway).
func ignoreRequests(context.Context, *remoting.Conn, *remoting.Command) *remoting.Command { return nil }

// uniqPrefix is the first 20 hex digits of this run's UNIQ_KEYs.
func uniqPrefix() string {
	var b [10]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return strings.ToUpper(hex.EncodeToString(b[:]))
}
