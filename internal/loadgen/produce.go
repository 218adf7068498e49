package loadgen

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
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

	slots     chan *slot   // free slots
	next      atomic.Int64 // sequence number of the next message
	issueCtx  context.Context
	stopIssue context.CancelFunc // ends issuing (MaxErrors reached)
	connMu    sync.Mutex
	conns     [][]*remoting.Conn // [client][broker]
	sent      atomic.Int64
	errs      atomic.Int64
	errMu     sync.Mutex
	first     string
	start     time.Time
}

func (p *producer) run(ctx context.Context, conns [][]*remoting.Conn) (*Result, error) {
	issueCtx, stopIssue := context.WithTimeout(ctx, p.cfg.Duration)
	defer stopIssue()
	p.slots = make(chan *slot, p.cfg.InFlight)
	all := make([]*slot, p.cfg.InFlight)
	for i := range all {
		all[i] = p.newSlot()
		p.slots <- all[i]
	}
	p.issueCtx, p.stopIssue, p.conns = issueCtx, stopIssue, conns
	p.start = time.Now()
	p.issue(issueCtx)
	// Wait for the answers still due, a grace period at most.
	grace := time.NewTimer(p.cfg.GracePeriod)
	defer grace.Stop()
wait:
	for range all { // every slot, free or not, comes back once
		select {
		case <-p.slots:
		case <-grace.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	elapsed := time.Since(p.start)
	h := NewHistogram()
	for _, s := range all {
		s.mu.Lock()
		h.Merge(s.hist)
		s.mu.Unlock()
	}
	p.errMu.Lock()
	first := p.first
	p.errMu.Unlock()
	res := &Result{
		Scenario: p.cfg.Scenario, BodyBytes: p.cfg.BodyBytes, Msgs: p.sent.Load(),
		Bytes: p.sent.Load() * int64(p.cfg.BodyBytes), Elapsed: elapsed,
		Errors: p.errs.Load(), FirstError: first, Latency: h,
	}
	if res.Errors >= p.cfg.MaxErrors {
		return res, fmt.Errorf("%w: %d sends failed (limit %d); first: %s", ErrTooManyErrors, res.Errors, p.cfg.MaxErrors, first)
	}
	return res, nil
}

func (p *producer) fail(msg string) {
	p.errMu.Lock()
	if p.first == "" {
		p.first = msg
	}
	p.errMu.Unlock()
	if p.errs.Add(1) >= p.cfg.MaxErrors {
		p.stopIssue()
	}
}

// slot is one request in flight, with its own request, body and header
// map: the issuer fills a free slot and sends it, the answer's callback
// (on the connection's reader) records it and frees the slot. No goroutine
// per request, and nothing allocated per send but the header's strings.
type slot struct {
	p     *producer
	req   *remoting.Command
	body  []byte
	props []byte
	t0    time.Time
	q     queueRef
	done  func(*remoting.Command, error) // s.answered, bound once

	mu   sync.Mutex // the histogram: callbacks record, the end merges
	hist *Histogram
}

func (p *producer) newSlot() *slot {
	cfg := p.cfg
	s := &slot{p: p, body: make([]byte, cfg.BodyBytes), props: make([]byte, 0, 64), hist: NewHistogram()}
	fillBody(s.body)
	s.req = remoting.NewRequest(codeSendMessageV2, nil, s.body) // header fields set per send
	s.done = s.answered
	return s
}

// issue sends while the count is not reached and issueCtx lasts, taking
// free slots. Unpaced, it starts the window and then only resends slots
// whose call failed: an answer's callback sends its slot's next message
// itself, so a send costs no goroutine hand-off.
func (p *producer) issue(issueCtx context.Context) {
	cfg := p.cfg
	var interval float64
	var timer *time.Timer
	if cfg.Rate > 0 {
		interval = float64(time.Second) / cfg.Rate
		timer = time.NewTimer(time.Hour)
		timer.Stop()
		defer timer.Stop()
	}
	for {
		var s *slot
		select {
		case s = <-p.slots:
		case <-issueCtx.Done():
			return
		}
		if interval > 0 {
			i := p.next.Load()
			if d := time.Until(p.start.Add(time.Duration(float64(i) * interval))); d > 0 {
				timer.Reset(d)
				select {
				case <-timer.C:
				case <-issueCtx.Done():
					p.slots <- s
					return
				}
			}
		}
		if !p.send(s) {
			p.slots <- s
			return
		}
	}
}

// send sends the next message on s; false when the count is reached or
// issuing stopped (s is then the caller's to free).
func (p *producer) send(s *slot) bool {
	if p.issueCtx.Err() != nil {
		return false
	}
	i := p.next.Add(1) - 1
	if i >= p.cfg.Count {
		return false
	}
	q := p.rt.queues[i%int64(len(p.rt.queues))]
	binary.BigEndian.PutUint64(s.body, uint64(i))
	s.props = append(s.props[:0], "UNIQ_KEY\x01"...)
	s.props = append(s.props, p.uniqPrefix...)
	s.props = appendHex12(s.props, uint64(i))
	s.props = append(s.props, "\x02WAIT\x01true\x02"...)
	cfg := p.cfg
	s.req.ResetExt().
		AppendExt("a", cfg.ProducerGroup).AppendExt("b", cfg.Topic).AppendExt("c", "TBW102").
		AppendExt("d", "4").AppendExt("e", strconv.Itoa(int(q.queueID))).AppendExt("f", "0").
		AppendExt("g", strconv.FormatInt(time.Now().UnixMilli(), 10)).AppendExt("h", "0").
		AppendExt("i", string(s.props)).AppendExt("j", "0").AppendExt("k", "false").
		AppendExt("l", "16").AppendExt("m", "false").AppendExt("n", q.name)
	s.q = q
	c := p.conn(int(i)%len(p.clients), q.broker)
	s.t0 = time.Now()
	c.InvokeAsync(s.req, s.done)
	return true
}

// conn returns the connection of client ci to broker b, redialing one the
// broker closed (its calls failed and were counted).
func (p *producer) conn(ci, b int) *remoting.Conn {
	p.connMu.Lock()
	defer p.connMu.Unlock()
	c := p.conns[ci][b]
	select {
	case <-c.Closed():
		dctx, cancel := context.WithTimeout(p.issueCtx, defaultControlTimeout)
		if nc, err := p.clients[ci].Conn(dctx, p.rt.addrs[b]); err == nil {
			p.conns[ci][b], c = nc, nc
		}
		cancel()
	default:
	}
	return c
}

// answered is a slot's callback: it runs on the connection's reader.
func (s *slot) answered(resp *remoting.Command, err error) {
	lat := time.Since(s.t0)
	p := s.p
	switch {
	case err != nil:
		p.fail(err.Error())
	case resp.Code != respSuccess && resp.Code != respFlushDiskTimeout:
		p.fail(fmt.Sprintf("send to %s queue %d: code %d: %s", s.q.name, s.q.queueID, resp.Code, resp.Remark))
	default:
		s.mu.Lock()
		s.hist.Record(lat)
		s.mu.Unlock()
		p.sent.Add(1)
		if p.cfg.Rate == 0 && p.send(s) {
			return
		}
	}
	p.slots <- s // never blocks: the channel holds every slot
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
