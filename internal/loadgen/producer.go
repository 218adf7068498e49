package loadgen

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/remoting"
)

// rmq.CodeSendBatchMessage is SEND_BATCH_MESSAGE.

type producer struct {
	cfg        *ProduceConfig
	rt         *route
	clients    []*remoting.Client
	uniqPrefix string

	slots     chan *slot   // free slots
	next      atomic.Int64 // sequence number of the next message
	ctx       context.Context
	issueCtx  context.Context
	stopIssue context.CancelFunc // ends issuing (MaxErrors reached)
	connMu    sync.Mutex
	conns     [][]*remoting.Conn // [client][broker]
	sent      atomic.Int64       // messages sent (acknowledged, or written for oneway)
	errs      atomic.Int64
	unrepl    atomic.Int64 // messages stored, not confirmed replicated
	errMu     sync.Mutex
	first     string
	start     time.Time
	all       []*slot
	// offReader: the next request is not sent from the connection's
	// reader (answered) but by the issuers, one per CPU: signing costs
	// as much as the rest of a send, and on the reader it would make one
	// goroutine do all of it, which no real client does (they sign in
	// the goroutines that send).
	offReader bool
}

func (p *producer) run(ctx context.Context, conns [][]*remoting.Conn) (*Result, error) {
	issueCtx, stopIssue := context.WithTimeout(ctx, p.cfg.Duration)
	defer stopIssue()
	p.slots = make(chan *slot, p.cfg.InFlight)
	p.all = make([]*slot, p.cfg.InFlight)
	for i := range p.all {
		p.all[i] = p.newSlot()
		p.slots <- p.all[i]
	}
	p.ctx, p.issueCtx, p.stopIssue, p.conns = ctx, issueCtx, stopIssue, conns
	p.start = time.Now()
	stopProgress := reportProgress(p.cfg.Progress, p.cfg.ProgressInterval, p.progress)
	switch {
	case p.cfg.Mode == ModeSync:
		p.runSync(issueCtx)
	case p.offReader:
		var wg sync.WaitGroup
		for range runtime.GOMAXPROCS(0) {
			wg.Go(func() { p.issue(issueCtx) })
		}
		wg.Wait()
	default:
		p.issue(issueCtx)
	}
	// Wait for the answers still due, a grace period at most.
	grace := time.NewTimer(p.cfg.GracePeriod)
	defer grace.Stop()
wait:
	for range p.all { // every slot, free or not, comes back once
		select {
		case <-p.slots:
		case <-grace.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	elapsed := time.Since(p.start)
	stopProgress()
	h := p.latencies(NewHistogram())
	p.errMu.Lock()
	first := p.first
	p.errMu.Unlock()
	sent := p.sent.Load()
	res := &Result{
		Scenario: p.cfg.Scenario, Mode: string(p.cfg.Mode), Batch: p.cfg.Batch, BodyBytes: p.cfg.BodyBytes, Msgs: sent,
		Bytes: sent * int64(p.cfg.BodyBytes), Elapsed: elapsed,
		Errors: p.errs.Load(), FirstError: first, Latency: h, NotReplicated: p.unrepl.Load(),
	}
	if res.Errors >= p.cfg.MaxErrors {
		return res, fmt.Errorf("%w: %d sends failed (limit %d); first: %s", ErrTooManyErrors, res.Errors, p.cfg.MaxErrors, first)
	}
	return res, nil
}

// latencies merges every slot's latencies into h and returns it.
func (p *producer) latencies(h *Histogram) *Histogram {
	for _, s := range p.all {
		s.mu.Lock()
		h.Merge(s.hist)
		s.mu.Unlock()
	}
	return h
}

// progress is the figures so far, for ProduceConfig.Progress.
func (p *producer) progress(h *Histogram) Progress {
	h.Reset()
	p.latencies(h)
	sent := p.sent.Load()
	return Progress{Elapsed: time.Since(p.start), Msgs: sent, Bytes: sent * int64(p.cfg.BodyBytes), Errors: p.errs.Load(),
		Latency: true, P50: h.Quantile(0.50), P99: h.Quantile(0.99)}
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
// buffers: the issuer fills a free slot and sends it, the answer's callback
// (on the connection's reader) records it and frees the slot. No goroutine
// per request, and nothing allocated per send but the header's strings.
type slot struct {
	p     *producer
	req   *remoting.Command
	body  []byte // one message's body
	batch []byte // the SEND_BATCH_MESSAGE body (Batch > 1)
	props []byte
	n     int64 // messages in the request in flight
	k     int64 // the request's number, picks the connection
	t0    time.Time
	q     queueRef
	done  func(*remoting.Command, error) // s.answered, bound once
	wrote func()                         // s.written, bound once (oneway)

	mu   sync.Mutex // the histogram: callbacks record, the end merges
	hist *Histogram
}

func (p *producer) newSlot() *slot {
	cfg := p.cfg
	s := &slot{p: p, body: make([]byte, cfg.BodyBytes), props: make([]byte, 0, 128), hist: NewHistogram()}
	fillBody(s.body)
	code := codeSendMessageV2
	if cfg.Batch > 1 {
		code = rmq.CodeSendBatchMessage
		s.batch = make([]byte, 0, cfg.Batch*(cfg.BodyBytes+batchItemOverhead))
	}
	s.req = remoting.NewRequest(code, nil, nil) // header and body set per send
	if cfg.Serialize == SerializeRocketMQ {
		s.req.SerializeType = remoting.SerializeRocketMQ
	}
	s.done = s.answered
	s.wrote = s.written
	return s
}

// issue sends while the count is not reached and issueCtx lasts, taking
// free slots (ModeAsync and ModeOneway). Unpaced async, it starts the
// window and then only resends slots whose call failed: an answer's
// callback sends its slot's next request itself, so a send costs no
// goroutine hand-off.
func (p *producer) issue(issueCtx context.Context) {
	pace := p.pacer()
	defer pace.stop()
	for {
		var s *slot
		select {
		case s = <-p.slots:
		case <-issueCtx.Done():
			return
		}
		if !pace.wait(issueCtx) || !p.send(s) {
			p.slots <- s
			return
		}
	}
}

// runSync runs InFlight workers that each send and wait (ModeSync).
func (p *producer) runSync(issueCtx context.Context) {
	var wg sync.WaitGroup
	for range p.cfg.InFlight {
		s := <-p.slots // all are free now
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { p.slots <- s }()
			pace := p.pacer()
			defer pace.stop()
			for pace.wait(issueCtx) && p.prepare(s) {
				ctx, cancel := context.WithTimeout(p.ctx, p.cfg.GracePeriod)
				resp, err := p.conn(s).Invoke(ctx, s.req)
				cancel()
				p.record(s, resp, err)
			}
		}()
	}
	wg.Wait()
}

// pacer spaces sends at Rate; without a Rate it never waits.
type pacer struct {
	next     *atomic.Int64 // sequence number of the next message
	start    time.Time
	interval float64
	timer    *time.Timer
}

func (p *producer) pacer() *pacer { return newPacer(p.cfg.Rate, &p.next, p.start) }

// newPacer paces at rate messages per second from start, next being the
// run's next sequence number; rate 0 never waits.
func newPacer(rate float64, next *atomic.Int64, start time.Time) *pacer {
	pc := &pacer{next: next, start: start}
	if rate > 0 {
		pc.interval = float64(time.Second) / rate
		pc.timer = time.NewTimer(time.Hour)
		pc.timer.Stop()
	}
	return pc
}

// wait waits until the next message's time; false when ctx ended first.
func (pc *pacer) wait(ctx context.Context) bool {
	if pc.interval == 0 {
		return ctx.Err() == nil
	}
	i := pc.next.Load()
	if d := time.Until(dueTime(pc.start, pc.interval, i)); d > 0 {
		pc.timer.Reset(d)
		select {
		case <-pc.timer.C:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// sendStart returns the moment message i's latency runs from: paced at
// rate from start, its due time (start + i/rate) unless it went out
// earlier, so that a send that waited for a free slot, or a stalled
// sender, counts the delay (no coordinated omission); unpaced, now.
func sendStart(rate float64, start time.Time, i int64) time.Time {
	now := time.Now()
	if rate <= 0 {
		return now
	}
	if due := dueTime(start, float64(time.Second)/rate, i); due.Before(now) {
		return due
	}
	return now
}

// dueTime is when message i is due, paced every interval (ns) from start.
func dueTime(start time.Time, interval float64, i int64) time.Time {
	return start.Add(time.Duration(float64(i) * interval))
}

func (pc *pacer) stop() {
	if pc.timer != nil {
		pc.timer.Stop()
	}
}

// send prepares s and sends it in ModeAsync or ModeOneway; false when the
// count is reached or issuing stopped (s is then the caller's to free).
func (p *producer) send(s *slot) bool {
	if !p.prepare(s) {
		return false
	}
	c := p.conn(s)
	if p.cfg.Mode == ModeOneway {
		n := s.n // s may be free again once InvokeOneway returns
		s.req.Release = s.wrote
		if err := c.InvokeOneway(s.req); err != nil {
			p.fail(err.Error()) // Release ran: s is free
			return true
		}
		p.sent.Add(n)
		return true
	}
	c.InvokeAsync(s.req, s.done)
	return true
}

// prepare fills s with the next message or batch; false when the count is
// reached or issuing stopped.
func (p *producer) prepare(s *slot) bool {
	if p.issueCtx.Err() != nil {
		return false
	}
	cfg := p.cfg
	b := int64(cfg.Batch)
	i := p.next.Add(b) - b
	if i >= cfg.Count || i < 0 {
		return false
	}
	s.n = min(b, cfg.Count-i)
	s.k = i / b
	q := p.rt.queues[s.k%int64(len(p.rt.queues))]
	if cfg.Batch == 1 {
		s.props = p.appendProps(s.props[:0], i)
		s.req.Body = p.messageBody(s, i)
	} else {
		s.props = append(s.props[:0], "WAIT\x01true\x02"...)
		s.batch = s.batch[:0]
		for j := range s.n {
			s.batch = p.appendBatchItem(s.batch, s, i+j)
		}
		s.req.Body = s.batch
	}
	rmq.AppendSendHeader(s.req, rmq.SendHeader{
		ProducerGroup: cfg.ProducerGroup, Topic: cfg.Topic, DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		QueueID: q.queueID, BornTimestamp: time.Now().UnixMilli(), Properties: string(s.props),
		MaxReconsumeTimes: 16, Batch: cfg.Batch > 1, BrokerName: q.name,
	})
	s.q = q
	s.t0 = sendStart(cfg.Rate, p.start, i)
	return true
}

// appendProps appends the properties of message i: its UNIQ_KEY and
// WAIT=true.
func (p *producer) appendProps(dst []byte, i int64) []byte {
	dst = append(dst, "UNIQ_KEY\x01"...)
	dst = append(dst, p.uniqPrefix...)
	dst = appendHex12(dst, uint64(i))
	return append(dst, "\x02WAIT\x01true\x02"...)
}

// messageBody writes sequence number i into s's body and returns it.
func (p *producer) messageBody(s *slot, i int64) []byte {
	binary.BigEndian.PutUint64(s.body, uint64(i))
	return s.body
}

// batchItemFixed is a batch item's fixed fields (TOTALSIZE .. BODYLENGTH,
// PROPERTIESLENGTH); batchItemOverhead adds its properties (UNIQ_KEY and
// WAIT), for sizing the batch buffer.
const (
	batchItemFixed    = 20 + 2
	batchItemOverhead = batchItemFixed + 64
)

// appendBatchItem appends message i as a SEND_BATCH_MESSAGE item (layout
// in internal/message's batch.go).
func (p *producer) appendBatchItem(dst []byte, s *slot, i int64) []byte {
	s.props = s.props[:len("WAIT\x01true\x02")]
	props := p.appendProps(s.props[len(s.props):], i)
	body := p.messageBody(s, i)
	be := binary.BigEndian
	dst = be.AppendUint32(dst, uint32(batchItemFixed+len(body)+len(props)))
	dst = be.AppendUint32(dst, 0) // MAGICCODE
	dst = be.AppendUint32(dst, 0) // BODYCRC
	dst = be.AppendUint32(dst, 0) // FLAG
	dst = be.AppendUint32(dst, uint32(len(body)))
	dst = append(dst, body...)
	dst = be.AppendUint16(dst, uint16(len(props)))
	return append(dst, props...)
}

// conn returns the connection for s's queue, redialing one the broker
// closed (its calls failed and were counted).
func (p *producer) conn(s *slot) *remoting.Conn {
	ci, b := int(s.k%int64(len(p.clients))), s.q.broker
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

// record counts an answer: its latency on success, else a failure. It
// reports success.
func (p *producer) record(s *slot, resp *remoting.Command, err error) bool {
	lat := time.Since(s.t0)
	switch {
	case err != nil && p.ctx.Err() != nil:
		// The run was stopped (SIGINT): an abandoned call is no failure.
	case err != nil:
		p.fail(err.Error())
	case resp.Code == rmq.RespSlaveNotAvailable || resp.Code == rmq.RespFlushSlaveTimeout:
		// Stored on the master, not confirmed replicated: an outcome of
		// its own, not a failure (its latency is the replication
		// timeout's, or none: not recorded).
		p.unrepl.Add(s.n)
	case resp.Code != rmq.RespSuccess && resp.Code != rmq.RespFlushDiskTimeout:
		p.fail(fmt.Sprintf("send to %s queue %d: code %d: %s", s.q.name, s.q.queueID, resp.Code, resp.Remark))
	default:
		s.mu.Lock()
		s.hist.Record(lat)
		s.mu.Unlock()
		p.sent.Add(s.n)
		return true
	}
	return false
}

// answered is a slot's callback in ModeAsync: it runs on the connection's
// reader.
func (s *slot) answered(resp *remoting.Command, err error) {
	p := s.p
	if p.record(s, resp, err) && p.cfg.Rate == 0 && !p.offReader && p.send(s) {
		return
	}
	p.slots <- s // never blocks: the channel holds every slot
}

// written is a slot's Release hook in ModeOneway: the request was written
// to the socket (or dropped with the connection). It runs on the
// connection's writer, which must not be made to wait: it only records
// and frees the slot; the issuer sends the next request.
func (s *slot) written() {
	lat := time.Since(s.t0)
	s.mu.Lock()
	s.hist.Record(lat)
	s.mu.Unlock()
	s.p.slots <- s
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
