package loadgen

// Produce over the gRPC front: InFlight senders, each with one
// SendMessage of Batch messages outstanding, spread over Conns HTTP/2
// connections. A gRPC unary call is answered on its own stream, so
// InFlight blocking senders are what an async producer amounts to (the
// official Go client's SendAsync runs a goroutine per send); ModeSync and
// ModeAsync therefore run the same way.

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// ProtocolGRPC is Result.Protocol of a run over the gRPC front.
const ProtocolGRPC = "grpc"

type grpcProducer struct {
	cfg        *ProduceConfig
	cl         *grpcClient
	topic      *v2.Resource
	uniqPrefix string

	ctx     context.Context // the caller's: ends calls (SIGINT)
	next    atomic.Int64    // sequence number of the next message
	sent    atomic.Int64
	unrepl  atomic.Int64 // messages stored, not confirmed replicated
	errs    errRecorder
	stop    context.CancelFunc // ends issuing (MaxErrors reached)
	start   time.Time
	workers []*latencyWorker
}

// produceGRPC runs Produce over the gRPC front at cfg.GRPC (cfg filled).
func produceGRPC(ctx context.Context, cfg *ProduceConfig) (*Result, error) {
	cl, _, ep, err := connectGRPC(ctx, cfg.GRPC, cfg.Topic, cfg.Conns, cfg.GRPCPlaintext, cfg.Security, cfg.AllowRemote, true)
	if err != nil {
		return nil, err
	}
	defer cl.close()
	p := &grpcProducer{cfg: cfg, cl: cl, topic: &v2.Resource{Name: cfg.Topic}, uniqPrefix: uniqPrefix(), ctx: ctx}
	p.errs.max = cfg.MaxErrors
	var issueCtx context.Context
	issueCtx, p.stop = context.WithCancel(ctx) // before the heartbeats can fail
	defer p.stop()
	ptype := v2.ClientType_PRODUCER
	st := &v2.Settings{
		ClientType: &ptype, AccessPoint: endpointsOf(ep), RequestTimeout: durationpb.New(grpcRequestTimeout),
		UserAgent: userAgent(),
		PubSub:    &v2.Settings_Publishing{Publishing: &v2.Publishing{Topics: []*v2.Resource{p.topic}}},
	}
	if err := cl.openSession(ctx, st, &v2.HeartbeatRequest{ClientType: ptype}, p.fail); err != nil {
		return nil, err
	}
	// Connect every connection before the clock starts.
	for i, stub := range cl.stubs {
		cctx, cancel := context.WithTimeout(cl.ctx(ctx), defaultControlTimeout)
		resp, err := stub.QueryRoute(cctx, &v2.QueryRouteRequest{Topic: p.topic, Endpoints: endpointsOf(ep)})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("connect gRPC connection %d to %s: %w", i, ep, err)
		}
		// An unknown topic is created by the first send where the broker
		// auto-creates topics; sends say so where it does not.
		if c := resp.GetStatus().GetCode(); c != v2.Code_OK && c != v2.Code_TOPIC_NOT_FOUND {
			return nil, fmt.Errorf("route of topic %q from %s: %s", cfg.Topic, ep, statusText(resp.GetStatus()))
		}
	}
	return p.run(issueCtx), p.tooMany()
}

func (p *grpcProducer) fail(msg string) {
	if p.errs.fail(msg) {
		p.stop()
	}
}

func (p *grpcProducer) tooMany() error {
	if n := p.errs.n.Load(); n >= p.cfg.MaxErrors {
		return fmt.Errorf("%w: %d sends failed (limit %d); first: %s", ErrTooManyErrors, n, p.cfg.MaxErrors, p.errs.firstErr())
	}
	return nil
}

// run sends until the count is reached, Duration passed or issueCtx
// ended, and waits for the answers due.
func (p *grpcProducer) run(issueCtx context.Context) *Result {
	issueCtx, stop := context.WithTimeout(issueCtx, p.cfg.Duration)
	defer stop()
	p.workers = make([]*latencyWorker, p.cfg.InFlight)
	for i := range p.workers {
		p.workers[i] = &latencyWorker{hist: NewHistogram()}
	}
	p.start = time.Now()
	stopProgress := reportProgress(p.cfg.Progress, p.cfg.ProgressInterval, func(h *Histogram) Progress {
		h.Reset()
		mergeLatencies(h, p.workers)
		sent := p.sent.Load()
		return Progress{Elapsed: time.Since(p.start), Msgs: sent, Bytes: sent * int64(p.cfg.BodyBytes), Errors: p.errs.n.Load(),
			Latency: true, P50: h.Quantile(0.50), P99: h.Quantile(0.99)}
	})
	var wg sync.WaitGroup
	for i, w := range p.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.sender(issueCtx, w, p.cl.stubs[i%len(p.cl.stubs)])
		}()
	}
	wg.Wait()
	elapsed := time.Since(p.start)
	stopProgress()
	sent := p.sent.Load()
	return &Result{
		Scenario: p.cfg.Scenario, Mode: string(p.cfg.Mode), Protocol: ProtocolGRPC, Batch: p.cfg.Batch, BodyBytes: p.cfg.BodyBytes,
		Msgs: sent, Bytes: sent * int64(p.cfg.BodyBytes), Elapsed: elapsed,
		Errors: p.errs.n.Load(), FirstError: p.errs.firstErr(), Latency: mergeLatencies(NewHistogram(), p.workers),
		NotReplicated: p.unrepl.Load(),
	}
}

// sender sends until the count is reached or issueCtx ends, reusing one
// request, its messages and their bodies: a call's request is marshalled
// before the call returns.
func (p *grpcProducer) sender(issueCtx context.Context, w *latencyWorker, stub v2.MessagingServiceClient) {
	cfg := p.cfg
	msgs := make([]*v2.Message, cfg.Batch)
	for j := range msgs {
		body := make([]byte, cfg.BodyBytes)
		fillBody(body)
		msgs[j] = &v2.Message{Topic: p.topic, Body: body, SystemProperties: &v2.SystemProperties{
			BodyEncoding: v2.Encoding_IDENTITY, MessageType: v2.MessageType_NORMAL, BornTimestamp: &timestamppb.Timestamp{},
		}}
	}
	req := &v2.SendMessageRequest{}
	id := make([]byte, 0, 32)
	pace := newPacer(cfg.Rate, &p.next, p.start)
	defer pace.stop()
	b := int64(cfg.Batch)
	for pace.wait(issueCtx) {
		i := p.next.Add(b) - b
		if i >= cfg.Count || i < 0 {
			return
		}
		n := min(b, cfg.Count-i)
		now := time.Now()
		for j := range n {
			m := msgs[j]
			binary.BigEndian.PutUint64(m.Body, uint64(i+j))
			id = appendHex12(append(id[:0], p.uniqPrefix...), uint64(i+j))
			m.SystemProperties.MessageId = string(id)
			m.SystemProperties.BornTimestamp.Seconds, m.SystemProperties.BornTimestamp.Nanos = now.Unix(), int32(now.Nanosecond())
		}
		req.Messages = msgs[:n]
		ctx, cancel := context.WithTimeout(p.cl.ctx(p.ctx), cfg.GracePeriod)
		t0 := sendStart(cfg.Rate, p.start, i)
		resp, err := stub.SendMessage(ctx, req)
		lat := time.Since(t0)
		cancel()
		p.record(w, resp, err, n, lat)
	}
}

// record counts an answer: its latency when every message was stored,
// else a failure; messages stored in a partly failed batch count as sent.
func (p *grpcProducer) record(w *latencyWorker, resp *v2.SendMessageResponse, err error, n int64, lat time.Duration) {
	switch {
	case err != nil && p.ctx.Err() != nil:
		// The run was stopped (SIGINT): an abandoned call is no failure.
	case err != nil:
		p.fail(fmt.Sprintf("SendMessage to %s: %v", p.cl.addr, err))
	case resp.GetStatus().GetCode() == v2.Code_OK:
		w.record(lat)
		p.sent.Add(n)
	default:
		var ok, unrepl int64
		var bad *v2.Status
		for _, e := range resp.GetEntries() {
			switch c := e.GetStatus().GetCode(); {
			case c == v2.Code_OK:
				ok++
			case notReplicated(c):
				unrepl++
			case bad == nil:
				bad = e.GetStatus()
			}
		}
		if len(resp.GetEntries()) == 0 && notReplicated(resp.GetStatus().GetCode()) {
			unrepl = n
		}
		p.sent.Add(ok)
		p.unrepl.Add(unrepl)
		if ok+unrepl == n {
			return
		}
		if bad == nil {
			bad = resp.GetStatus()
		}
		p.fail(fmt.Sprintf("SendMessage to topic %s: %d of %d messages refused: %s", p.cfg.Topic, n-ok, n, statusText(bad)))
	}
}

// notReplicated tells the gRPC codes of a message stored on the master and
// not confirmed replicated (the proxy's mappings of SLAVE_NOT_AVAILABLE and
// FLUSH_SLAVE_TIMEOUT).
func notReplicated(c v2.Code) bool {
	return c == v2.Code_HA_NOT_AVAILABLE || c == v2.Code_SLAVE_PERSISTENCE_TIMEOUT
}
