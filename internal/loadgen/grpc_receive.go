package loadgen

// Receive: a simple-consumer load over the gRPC front. Concurrency
// receivers each loop ReceiveMessage (long polling) and one AckMessage
// for all it got. Before a receive, a receiver reserves the messages it
// asks for from Count and gives back what did not come (or whose ack
// failed), so a run never receives more than Count messages: none is left
// received but unacknowledged, invisible to the next run.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Receive defaults and bounds.
const (
	DefaultReceivers = 8
	// MaxReceivers bounds ReceiveConfig.Concurrency.
	MaxReceivers = 256
	// MaxReceiveBatch bounds ReceiveConfig.Batch (the front's limit).
	MaxReceiveBatch   = 32
	DefaultInvisible  = 30 * time.Second
	DefaultLongPoll   = 20 * time.Second
	minInvisible      = time.Second
	maxInvisible      = 12 * time.Hour
	maxLongPoll       = 5 * time.Minute
	defaultAckTimeout = 10 * time.Second
)

// ReceiveConfig configures Receive. Zero values take the defaults.
type ReceiveConfig struct {
	// GRPC is the host:port of the gRPC front; required.
	GRPC string
	// GRPCPlaintext dials without TLS (default: TLS accepting any
	// certificate).
	GRPCPlaintext bool
	// Security: credentials and TLS (see Security).
	Security
	// Topic to receive from; default DefaultTopic.
	Topic string
	// Group is the consumer group; required.
	Group string
	// Count stops the run once that many messages were acknowledged;
	// default DefaultCount. No more than Count are received.
	Count int64
	// Duration stops the run earlier; default DefaultDuration.
	Duration time.Duration
	// IdleTimeout stops the run when nothing arrived for that long;
	// default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Concurrency is the number of receivers, each with one receive or
	// ack outstanding (1..MaxReceivers); default DefaultReceivers.
	Concurrency int
	// Batch is each receive's batch size (1..32); default 32.
	Batch int
	// Invisible is how long a received message stays invisible to the
	// group before it is delivered again unless acknowledged
	// (1 s..12 h); default DefaultInvisible.
	Invisible time.Duration
	// LongPoll is how long the server may hold a receive that finds
	// nothing (the Settings' long-polling timeout, up to 5 min); default
	// DefaultLongPoll.
	LongPoll time.Duration
	// MaxErrors stops the run after that many failed requests; default
	// DefaultMaxErrors.
	MaxErrors int64
	// AllowRemote permits non-loopback addresses.
	AllowRemote bool
	// Scenario names the run in the result line; default "receive".
	Scenario string
	// Progress, when set, is called every ProgressInterval while the run
	// lasts with the figures so far (acknowledged messages, ack
	// latencies), on a goroutine of its own. Default interval
	// DefaultProgressInterval.
	Progress         func(Progress)
	ProgressInterval time.Duration
	// OnMessage, when set, is called with every message received, before
	// it is acknowledged, concurrently from the receivers. body must not
	// be kept.
	OnMessage func(messageID string, body []byte)
}

func (c *ReceiveConfig) fill() error {
	if err := c.Security.check(); err != nil {
		return err
	}
	switch {
	case c.GRPC == "":
		return fmt.Errorf("%w: no gRPC front address given", ErrConfig)
	case c.Group == "":
		return fmt.Errorf("%w: no consumer group given", ErrConfig)
	}
	setDefault(&c.Topic, DefaultTopic)
	setDefault(&c.Count, DefaultCount)
	setDefault(&c.Duration, DefaultDuration)
	setDefault(&c.IdleTimeout, DefaultIdleTimeout)
	setDefault(&c.Concurrency, DefaultReceivers)
	setDefault(&c.Batch, MaxReceiveBatch)
	setDefault(&c.Invisible, DefaultInvisible)
	setDefault(&c.LongPoll, DefaultLongPoll)
	setDefault(&c.MaxErrors, DefaultMaxErrors)
	setDefault(&c.Scenario, "receive")
	setDefault(&c.ProgressInterval, DefaultProgressInterval)
	switch {
	case c.Concurrency < 1 || c.Concurrency > MaxReceivers:
		return fmt.Errorf("%w: concurrency %d is outside 1..%d receivers", ErrConfig, c.Concurrency, MaxReceivers)
	case c.Batch < 1 || c.Batch > MaxReceiveBatch:
		return fmt.Errorf("%w: receive batch %d is outside 1..%d messages", ErrConfig, c.Batch, MaxReceiveBatch)
	case c.Invisible < minInvisible || c.Invisible > maxInvisible:
		return fmt.Errorf("%w: invisible duration %v is outside %v..%v", ErrConfig, c.Invisible, minInvisible, maxInvisible)
	case c.LongPoll < 0 || c.LongPoll > maxLongPoll:
		return fmt.Errorf("%w: long-polling timeout %v is outside 0..%v", ErrConfig, c.LongPoll, maxLongPoll)
	case c.Count < 1, c.Duration < 0, c.IdleTimeout < 0, c.MaxErrors < 1, c.ProgressInterval < 0:
		return fmt.Errorf("%w: count must be ≥ 1, durations ≥ 0, max errors ≥ 1", ErrConfig)
	}
	return nil
}

// Receive consumes as a simple consumer over the gRPC front as
// ReceiveConfig describes and returns the result: Msgs counts
// acknowledged messages, Latency the AckMessage latencies, Elapsed runs
// to the last acknowledgement. It returns an error, with no result, when
// the route or the Settings handshake fails, and an error wrapping
// ErrTooManyErrors, with the result so far, after MaxErrors failed
// requests. When ctx ends, the result so far is returned without error.
func Receive(ctx context.Context, cfg ReceiveConfig) (*Result, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	cl, queues, ep, err := connectGRPC(ctx, cfg.GRPC, cfg.Topic, 1, cfg.GRPCPlaintext, cfg.Security, cfg.AllowRemote, false)
	if err != nil {
		return nil, err
	}
	defer cl.close()
	r := &receiver{cfg: &cfg, cl: cl, queues: queues, ctx: ctx,
		topic: &v2.Resource{Name: cfg.Topic}, group: &v2.Resource{Name: cfg.Group}}
	r.errs.max = cfg.MaxErrors
	var runCtx context.Context
	runCtx, r.stop = context.WithCancel(ctx) // before the heartbeats can fail
	defer r.stop()
	ctype := v2.ClientType_SIMPLE_CONSUMER
	filter := &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "*"}
	st := &v2.Settings{
		ClientType: &ctype, AccessPoint: endpointsOf(ep), RequestTimeout: durationpb.New(grpcRequestTimeout),
		UserAgent: userAgent(),
		PubSub: &v2.Settings_Subscription{Subscription: &v2.Subscription{
			Group: r.group, LongPollingTimeout: durationpb.New(cfg.LongPoll),
			Subscriptions: []*v2.SubscriptionEntry{{Topic: r.topic, Expression: filter}},
		}},
	}
	if err := cl.openSession(ctx, st, &v2.HeartbeatRequest{ClientType: ctype, Group: r.group}, r.fail); err != nil {
		return nil, err
	}
	res := r.run(runCtx, filter)
	if n := r.errs.n.Load(); n >= cfg.MaxErrors {
		return res, fmt.Errorf("%w: %d requests failed (limit %d); first: %s", ErrTooManyErrors, n, cfg.MaxErrors, r.errs.firstErr())
	}
	return res, nil
}

type receiver struct {
	cfg          *ReceiveConfig
	cl           *grpcClient
	queues       []*v2.MessageQueue
	topic, group *v2.Resource
	ctx          context.Context    // the caller's: bounds acks (SIGINT)
	stop         context.CancelFunc // ends the run

	reserved atomic.Int64 // messages asked for or acknowledged
	acked    atomic.Int64
	bytes    atomic.Int64
	nextQ    atomic.Int64
	errs     errRecorder
	start    time.Time
	lastRecv atomic.Int64 // ns since start of the last receipt
	lastAck  atomic.Int64 // ns since start of the last acknowledgement
	workers  []*latencyWorker
}

func (r *receiver) fail(msg string) {
	if r.errs.fail(msg) {
		r.stop()
	}
}

func (r *receiver) run(runCtx context.Context, filter *v2.FilterExpression) *Result {
	runCtx, stop := context.WithTimeout(runCtx, r.cfg.Duration)
	defer stop()
	r.workers = make([]*latencyWorker, r.cfg.Concurrency)
	for i := range r.workers {
		r.workers[i] = &latencyWorker{hist: NewHistogram()}
	}
	r.start = time.Now()
	stopProgress := reportProgress(r.cfg.Progress, r.cfg.ProgressInterval, func(h *Histogram) Progress {
		h.Reset()
		mergeLatencies(h, r.workers)
		return Progress{Elapsed: time.Since(r.start), Msgs: r.acked.Load(), Bytes: r.bytes.Load(), Errors: r.errs.n.Load(),
			Latency: true, P50: h.Quantile(0.50), P99: h.Quantile(0.99)}
	})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.watchIdle(runCtx, stop)
	}()
	var receivers sync.WaitGroup
	for _, w := range r.workers {
		receivers.Add(1)
		go func() {
			defer receivers.Done()
			r.receiveLoop(runCtx, stop, w, filter)
		}()
	}
	receivers.Wait()
	stop()
	wg.Wait()
	stopProgress()
	res := &Result{
		Scenario: r.cfg.Scenario, Protocol: ProtocolGRPC, Batch: r.cfg.Batch, Msgs: r.acked.Load(), Bytes: r.bytes.Load(),
		Elapsed: time.Duration(r.lastAck.Load()), Errors: r.errs.n.Load(), FirstError: r.errs.firstErr(),
		Latency: mergeLatencies(NewHistogram(), r.workers),
	}
	if res.Msgs > 0 {
		res.BodyBytes = int((res.Bytes + res.Msgs/2) / res.Msgs)
	}
	return res
}

// watchIdle stops the run when nothing arrived for IdleTimeout.
func (r *receiver) watchIdle(ctx context.Context, stop context.CancelFunc) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if now.Sub(r.start)-time.Duration(r.lastRecv.Load()) > r.cfg.IdleTimeout {
				stop()
				return
			}
		}
	}
}

// reserve takes up to n of the messages still to receive; 0 when Count
// is reserved.
func (r *receiver) reserve(n int64) int64 {
	for {
		cur := r.reserved.Load()
		want := min(n, r.cfg.Count-cur)
		if want <= 0 {
			return 0
		}
		if r.reserved.CompareAndSwap(cur, cur+want) {
			return want
		}
	}
}

// receiveLoop receives and acknowledges until the run ends or Count is
// reserved.
func (r *receiver) receiveLoop(ctx context.Context, stop context.CancelFunc, w *latencyWorker, filter *v2.FilterExpression) {
	req := &v2.ReceiveMessageRequest{Group: r.group, FilterExpression: filter, InvisibleDuration: durationpb.New(r.cfg.Invisible)}
	for ctx.Err() == nil {
		want := r.reserve(int64(r.cfg.Batch))
		if want == 0 {
			return
		}
		req.MessageQueue = r.queues[int(r.nextQ.Add(1)-1)%len(r.queues)]
		req.BatchSize = int32(want)
		msgs, err := r.receive(ctx, req)
		r.reserved.Add(-(want - int64(len(msgs))))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.fail(err.Error())
			backoff(ctx)
			continue
		}
		if len(msgs) == 0 {
			continue
		}
		storeMax(&r.lastRecv, int64(time.Since(r.start)))
		if acked := r.ack(w, msgs); r.acked.Add(acked) >= r.cfg.Count {
			stop()
		}
	}
}

// receive makes one ReceiveMessage call and returns the messages it
// delivered; MESSAGE_NOT_FOUND is no error.
func (r *receiver) receive(ctx context.Context, req *v2.ReceiveMessageRequest) ([]*v2.Message, error) {
	cctx, cancel := context.WithTimeout(r.cl.ctx(ctx), r.cfg.LongPoll+grpcRequestTimeout)
	defer cancel()
	stream, err := r.cl.stubs[0].ReceiveMessage(cctx, req)
	if err != nil {
		return nil, fmt.Errorf("ReceiveMessage from %s: %w", r.cl.addr, err)
	}
	var msgs []*v2.Message
	var st *v2.Status
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// Messages already delivered stay invisible until their
			// time, then come again.
			return nil, fmt.Errorf("ReceiveMessage from %s: %w", r.cl.addr, err)
		}
		switch c := resp.GetContent().(type) {
		case *v2.ReceiveMessageResponse_Status:
			st = c.Status
		case *v2.ReceiveMessageResponse_Message:
			msgs = append(msgs, c.Message)
		}
	}
	switch code := st.GetCode(); {
	case st == nil:
		return nil, fmt.Errorf("ReceiveMessage from %s: the answer has no status", r.cl.addr)
	case code == v2.Code_OK, code == v2.Code_MESSAGE_NOT_FOUND:
		return msgs, nil
	default:
		return nil, fmt.Errorf("ReceiveMessage of group %s topic %s: %s", r.cfg.Group, r.cfg.Topic, statusText(st))
	}
}

// ack acknowledges msgs with one AckMessage, records its latency and
// returns how many were acknowledged; the reservations of the others are
// given back.
func (r *receiver) ack(w *latencyWorker, msgs []*v2.Message) int64 {
	req := &v2.AckMessageRequest{Group: r.group, Topic: r.topic, Entries: make([]*v2.AckMessageEntry, len(msgs))}
	for i, m := range msgs {
		id := m.GetSystemProperties().GetMessageId()
		if r.cfg.OnMessage != nil {
			r.cfg.OnMessage(id, m.GetBody())
		}
		req.Entries[i] = &v2.AckMessageEntry{MessageId: id, ReceiptHandle: m.GetSystemProperties().GetReceiptHandle()}
	}
	ctx, cancel := context.WithTimeout(r.cl.ctx(r.ctx), defaultAckTimeout)
	t0 := time.Now()
	resp, err := r.cl.stubs[0].AckMessage(ctx, req)
	lat := time.Since(t0)
	cancel()
	var okHandles map[string]bool // nil: all acknowledged
	switch {
	case err != nil:
		okHandles = map[string]bool{}
		if r.ctx.Err() == nil {
			r.fail(fmt.Sprintf("AckMessage to %s: %v", r.cl.addr, err))
		}
	case resp.GetStatus().GetCode() == v2.Code_OK:
		w.record(lat)
	default:
		okHandles = map[string]bool{}
		bad := resp.GetStatus()
		for _, e := range resp.GetEntries() {
			if e.GetStatus().GetCode() == v2.Code_OK {
				okHandles[e.GetReceiptHandle()] = true
			} else {
				bad = e.GetStatus()
			}
		}
		r.fail(fmt.Sprintf("AckMessage of group %s topic %s: %d of %d refused: %s", r.cfg.Group, r.cfg.Topic,
			len(msgs)-len(okHandles), len(msgs), statusText(bad)))
	}
	var ok, bytes int64
	for _, m := range msgs {
		if okHandles == nil || okHandles[m.GetSystemProperties().GetReceiptHandle()] {
			ok++
			bytes += int64(len(m.GetBody()))
		}
	}
	r.reserved.Add(-(int64(len(msgs)) - ok))
	if ok > 0 {
		r.bytes.Add(bytes)
		storeMax(&r.lastAck, int64(time.Since(r.start)))
	}
	return ok
}

// storeMax raises a to v unless it is already higher.
func storeMax(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if cur >= v || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// backoff pauses a worker after a failed request.
func backoff(ctx context.Context) {
	t := time.NewTimer(errorBackoff)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
