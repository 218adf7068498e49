package loadgen

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	// MaxBodyBytes bounds ProduceConfig.BodyBytes (the broker's default
	// message limit).
	MaxBodyBytes = 4 << 20
	minBodyBytes = 8 // room for the sequence number
)

// ProduceConfig configures Produce. Zero values take the defaults.
type ProduceConfig struct {
	// NameServers to ask for the route (host:port); required.
	NameServers []string
	// Topic to send to; default DefaultTopic. Created with Queues read and
	// write queues on every master when the name servers have no route.
	Topic  string
	Queues int
	// ProducerGroup named in the send header; default DefaultProducerGroup.
	ProducerGroup string
	// BodyBytes is the body size, 8..MaxBodyBytes; default 1024.
	BodyBytes int
	// InFlight is the number of requests outstanding at once (1..4096);
	// default 64.
	InFlight int
	// Conns is the number of connections per broker the InFlight workers
	// are spread over (1..64); default 1, like the real clients.
	Conns int
	// Count is the number of messages to send; default DefaultCount.
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
}

func (c *ProduceConfig) fill() error {
	if len(c.NameServers) == 0 {
		return fmt.Errorf("%w: no name server given", ErrConfig)
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
	switch {
	case c.BodyBytes < minBodyBytes || c.BodyBytes > MaxBodyBytes:
		return fmt.Errorf("%w: body size %d is outside %d..%d bytes", ErrConfig, c.BodyBytes, minBodyBytes, MaxBodyBytes)
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

func setDefault[T comparable](p *T, d T) {
	var zero T
	if *p == zero {
		*p = d
	}
}

// Produce sends messages as ProduceConfig describes and returns the
// result. Sends that fail (transport error or a code other than SUCCESS
// and FLUSH_DISK_TIMEOUT) count in Result.Errors; the first one's text is
// in Result.FirstError. It returns an error, with no result, when the
// route cannot be had or the connections cannot be opened, and an error
// wrapping ErrTooManyErrors, with the result so far, when MaxErrors sends
// failed. When ctx ends, sending stops and the result so far is returned
// without error.
func Produce(ctx context.Context, cfg ProduceConfig) (*Result, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	clients := make([]*remoting.Client, cfg.Conns)
	for i := range clients {
		clients[i] = remoting.NewClient(remoting.ClientOptions{Handler: ignoreRequests})
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
	p := &producer{cfg: &cfg, rt: rt, clients: clients, uniqPrefix: uniqPrefix()}
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

type producer struct {
	cfg        *ProduceConfig
	rt         *route
	clients    []*remoting.Client
	uniqPrefix string

	next    atomic.Int64 // next sequence number to claim
	sent    atomic.Int64
	errs    atomic.Int64
	errOnce sync.Once
	first   string
	start   time.Time
}

func (p *producer) run(ctx context.Context, conns [][]*remoting.Conn) (*Result, error) {
	issueCtx, stopIssue := context.WithTimeout(ctx, p.cfg.Duration)
	defer stopIssue()
	// callCtx ends a grace period after issuing stopped, bounding the wait
	// for answers that never come.
	callCtx, stopCalls := context.WithCancel(context.Background())
	defer stopCalls()
	go func() {
		select {
		case <-issueCtx.Done():
		case <-callCtx.Done():
			return
		}
		t := time.NewTimer(p.cfg.GracePeriod)
		defer t.Stop()
		select {
		case <-t.C:
			stopCalls()
		case <-callCtx.Done():
		}
	}()
	hists := make([]*Histogram, p.cfg.InFlight)
	for i := range hists {
		hists[i] = NewHistogram()
	}
	var wg sync.WaitGroup
	p.start = time.Now()
	for w := range p.cfg.InFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.worker(issueCtx, callCtx, stopIssue, conns[w%len(conns)], p.clients[w%len(p.clients)], hists[w])
		}()
	}
	wg.Wait()
	elapsed := time.Since(p.start)
	h := hists[0]
	for _, o := range hists[1:] {
		h.Merge(o)
	}
	res := &Result{
		Scenario: p.cfg.Scenario, BodyBytes: p.cfg.BodyBytes, Msgs: p.sent.Load(),
		Bytes: p.sent.Load() * int64(p.cfg.BodyBytes), Elapsed: elapsed,
		Errors: p.errs.Load(), FirstError: p.first, Latency: h,
	}
	if res.Errors >= p.cfg.MaxErrors {
		return res, fmt.Errorf("%w: %d sends failed (limit %d); first: %s", ErrTooManyErrors, res.Errors, p.cfg.MaxErrors, p.first)
	}
	return res, nil
}

func (p *producer) fail(stop context.CancelFunc, msg string) {
	p.errOnce.Do(func() { p.first = msg })
	if p.errs.Add(1) >= p.cfg.MaxErrors {
		stop()
	}
}

// worker sends one message at a time until the count is reached or
// issuing stops. It reuses one request, one body and one ext map: Invoke
// encodes the request before it returns, and a body written from our slice
// (over 8 KiB) has been read by the broker once its answer is here.
func (p *producer) worker(issueCtx, callCtx context.Context, stop context.CancelFunc, conns []*remoting.Conn, cl *remoting.Client, h *Histogram) {
	cfg := p.cfg
	body := make([]byte, cfg.BodyBytes)
	fillBody(body)
	ext := map[string]string{
		"a": cfg.ProducerGroup, "b": cfg.Topic, "c": "TBW102", "d": "4", "f": "0", "h": "0",
		"j": "0", "k": "false", "l": "16", "m": "false",
	}
	req := remoting.NewRequest(codeSendMessageV2, ext, body)
	props := make([]byte, 0, 64)
	var interval float64
	var timer *time.Timer
	if cfg.Rate > 0 {
		interval = float64(time.Second) / cfg.Rate
		timer = time.NewTimer(time.Hour)
		timer.Stop()
		defer timer.Stop()
	}
	nq := int64(len(p.rt.queues))
	for {
		if issueCtx.Err() != nil {
			return
		}
		i := p.next.Add(1) - 1
		if i >= cfg.Count {
			return
		}
		if interval > 0 {
			if d := time.Until(p.start.Add(time.Duration(float64(i) * interval))); d > 0 {
				timer.Reset(d)
				select {
				case <-timer.C:
				case <-issueCtx.Done():
					return
				}
			}
		}
		q := p.rt.queues[i%nq]
		binary.BigEndian.PutUint64(body, uint64(i))
		props = append(props[:0], "UNIQ_KEY\x01"...)
		props = append(props, p.uniqPrefix...)
		props = appendHex12(props, uint64(i))
		props = append(props, "\x02WAIT\x01true\x02"...)
		ext["e"] = strconv.Itoa(int(q.queueID))
		ext["n"] = q.name
		ext["g"] = strconv.FormatInt(time.Now().UnixMilli(), 10)
		ext["i"] = string(props)
		t0 := time.Now()
		resp, err := conns[q.broker].Invoke(callCtx, req)
		lat := time.Since(t0)
		switch {
		case err != nil:
			p.fail(stop, err.Error())
			// The frame may still be queued: never touch its body again.
			body = make([]byte, cfg.BodyBytes)
			fillBody(body)
			req = remoting.NewRequest(codeSendMessageV2, ext, body)
			if errors.Is(err, remoting.ErrConnClosed) {
				if c, derr := cl.Conn(callCtx, p.rt.addrs[q.broker]); derr == nil {
					conns = append([]*remoting.Conn(nil), conns...)
					conns[q.broker] = c
				}
			}
		case resp.Code != respSuccess && resp.Code != respFlushDiskTimeout:
			p.fail(stop, fmt.Sprintf("send to %s queue %d: code %d: %s", q.name, q.queueID, resp.Code, resp.Remark))
		default:
			h.Record(lat)
			p.sent.Add(1)
		}
	}
}

// fillBody writes printable filler after the 8-byte sequence number.
func fillBody(b []byte) {
	for i := 8; i < len(b); i++ {
		b[i] = 'a' + byte(i%26)
	}
}

const hexDigits = "0123456789ABCDEF"

// appendHex12 appends the low 48 bits of v as 12 uppercase hex digits.
func appendHex12(dst []byte, v uint64) []byte {
	for s := 44; s >= 0; s -= 4 {
		dst = append(dst, hexDigits[(v>>uint(s))&0xF])
	}
	return dst
}
