package loadgen

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
)

// Consume defaults.
const (
	DefaultIdleTimeout    = 5 * time.Second
	DefaultSuspendTimeout = 20 * time.Second
	// MaxPullBatch bounds ConsumeConfig.PullBatch.
	MaxPullBatch = 1024
	// errorBackoff is the pause of a puller after a failed pull.
	errorBackoff = 100 * time.Millisecond
)

// ConsumeConfig configures Consume. Zero values take the defaults.
type ConsumeConfig struct {
	// NameServers to ask for the route (host:port); required.
	NameServers []string
	// Security: credentials and TLS (see Security).
	Security
	// Topic to consume; default DefaultTopic. It must exist.
	Topic string
	// Group is the consumer group; default DefaultConsumerGroup.
	Group string
	// Count stops the run once that many messages were received; default
	// DefaultCount. The last pulls may bring a few more.
	Count int64
	// Duration stops the run earlier; default DefaultDuration.
	Duration time.Duration
	// IdleTimeout stops the run when nothing arrived for that long;
	// default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// PullBatch is maxMsgNums of each pull (1..1024); default 32.
	PullBatch int
	// SuspendTimeout is how long the broker may hold a pull that finds
	// nothing new; default DefaultSuspendTimeout.
	SuspendTimeout time.Duration
	// FromStart starts every queue at its minimum offset instead of the
	// group's committed offset.
	FromStart bool
	// BrokerID is the broker id of each group to pull from: 0 (default)
	// the master, 1..N a slave, which the route must list for every group
	// of the topic. Offsets are still queried from and committed to the
	// group's master (the replica's when the route lists no master), and a
	// pull from a slave does not carry the commit-offset flag, as the
	// official clients do.
	BrokerID int64
	// MaxErrors stops the run after that many failed pulls; default
	// DefaultMaxErrors.
	MaxErrors int64
	// RouteWait bounds the wait for the route; default DefaultRouteWait.
	RouteWait time.Duration
	// AllowRemote permits non-loopback addresses.
	AllowRemote bool
	// Scenario names the run in the result line; default "consume".
	Scenario string
	// Progress, when set, is called every ProgressInterval while the run
	// lasts with the figures so far, on a goroutine of its own (one call
	// at a time). Default interval DefaultProgressInterval.
	Progress         func(Progress)
	ProgressInterval time.Duration
	// OnRecord, when set, is called with every record received (after
	// message.Check passed), concurrently from the pullers of different
	// queues. The record aliases a response buffer: copy what you keep.
	OnRecord func(r message.Record)
}

func (c *ConsumeConfig) fill() error {
	if err := c.Security.check(); err != nil {
		return err
	}
	if len(c.NameServers) == 0 {
		return fmt.Errorf("%w: no name server given", ErrConfig)
	}
	setDefault(&c.Topic, DefaultTopic)
	setDefault(&c.Group, DefaultConsumerGroup)
	setDefault(&c.Count, DefaultCount)
	setDefault(&c.Duration, DefaultDuration)
	setDefault(&c.IdleTimeout, DefaultIdleTimeout)
	setDefault(&c.PullBatch, DefaultPullBatch)
	setDefault(&c.SuspendTimeout, DefaultSuspendTimeout)
	setDefault(&c.MaxErrors, DefaultMaxErrors)
	setDefault(&c.RouteWait, DefaultRouteWait)
	setDefault(&c.Scenario, "consume")
	setDefault(&c.ProgressInterval, DefaultProgressInterval)
	switch {
	case c.PullBatch < 1 || c.PullBatch > MaxPullBatch:
		return fmt.Errorf("%w: pull batch %d is outside 1..%d", ErrConfig, c.PullBatch, MaxPullBatch)
	case c.BrokerID < 0:
		return fmt.Errorf("%w: broker id %d is negative (0 is the master, 1..N its slaves)", ErrConfig, c.BrokerID)
	case c.Count < 1, c.Duration < 0, c.IdleTimeout < 0, c.SuspendTimeout < 0, c.MaxErrors < 1, c.ProgressInterval < 0:
		return fmt.Errorf("%w: count must be ≥ 1, durations ≥ 0, max errors ≥ 1", ErrConfig)
	}
	return nil
}

// Consume drains messages as ConsumeConfig describes and returns the
// result. It returns an error, with no result, when the topic has no route
// or the heartbeat or offset queries fail, and an error wrapping
// ErrTooManyErrors, with the result so far, when MaxErrors pulls failed.
// When ctx ends, the result so far is returned without error.
func Consume(ctx context.Context, cfg ConsumeConfig) (*Result, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	cl := remoting.NewClient(cfg.Security.clientOptions(remoting.ClientOptions{Handler: ignoreRequests}))
	defer cl.Close()
	rt, err := resolve(ctx, cl, resolveConfig{
		nameServers: cfg.NameServers, topic: cfg.Topic, allowRemote: cfg.AllowRemote, wait: cfg.RouteWait, brokerID: cfg.BrokerID,
	})
	if err != nil {
		return nil, err
	}
	c := &consumer{cfg: &cfg, rt: rt, cl: cl, subVersion: time.Now().UnixNano()}
	c.clientID = fmt.Sprintf("127.0.0.1@petrel-bench-%d-%d", os.Getpid(), c.subVersion)
	if err := c.heartbeat(ctx); err != nil {
		return nil, err
	}
	offsets := make([]int64, len(rt.queues))
	for i, q := range rt.queues {
		if offsets[i], err = c.startOffset(ctx, q); err != nil {
			return nil, err
		}
	}
	return c.run(ctx, offsets)
}

type consumer struct {
	cfg        *ConsumeConfig
	rt         *route
	cl         *remoting.Client
	clientID   string
	subVersion int64

	start    time.Time
	lastRecv atomic.Int64 // ns since start of the last receipt
	msgs     atomic.Int64
	bytes    atomic.Int64
	errs     atomic.Int64
	errOnce  sync.Once
	first    string
}

func (c *consumer) heartbeat(ctx context.Context) error {
	hb := rmq.HeartbeatData{ClientID: c.clientID, ConsumerDataSet: []rmq.ConsumerData{{
		GroupName: c.cfg.Group, ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING",
		ConsumeFromWhere:    "CONSUME_FROM_FIRST_OFFSET",
		SubscriptionDataSet: []rmq.SubscriptionData{{Topic: c.cfg.Topic, SubString: "*", SubVersion: c.subVersion, ExpressionType: "TAG"}},
	}}}
	for _, a := range c.rt.uniqueAddrs() {
		resp, err := invokeTimeout(ctx, c.cl, a, defaultControlTimeout, rmq.EncodeHeartbeat(hb))
		if err != nil {
			return fmt.Errorf("heartbeat to %s: %w", a, err)
		}
		if resp.Code != rmq.RespSuccess {
			return fmt.Errorf("heartbeat to %s: code %d: %s", a, resp.Code, resp.Remark)
		}
	}
	return nil
}

// uniqueAddrs lists each broker address once: those pulled from and
// those of offset queries and commits.
func (r *route) uniqueAddrs() []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range slices.Concat(r.addrs, r.ctrl) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// startOffset is the group's committed offset of q (asked of the group's
// master) or, without one or with FromStart, q's minimum offset on the
// replica read.
func (c *consumer) startOffset(ctx context.Context, q queueRef) (int64, error) {
	addr := c.rt.ctrl[q.broker]
	if !c.cfg.FromStart {
		req := rmq.EncodeQueryConsumerOffsetRequest(rmq.QueryConsumerOffsetRequest{ConsumerGroup: c.cfg.Group, Topic: c.cfg.Topic, QueueID: q.queueID})
		resp, err := invokeTimeout(ctx, c.cl, addr, defaultControlTimeout, req)
		if err != nil {
			return 0, fmt.Errorf("query the offset of queue %d: %w", q.queueID, err)
		}
		switch resp.Code {
		case rmq.RespSuccess:
			r, err := rmq.DecodeOffsetResponse(resp)
			return r.Offset, err
		case rmq.RespQueryNotFound:
		default:
			return 0, fmt.Errorf("query the offset of queue %d: code %d: %s", q.queueID, resp.Code, resp.Remark)
		}
	}
	// The first offset of the replica read (its retention is its own).
	req := rmq.EncodeGetMinOffsetRequest(rmq.QueueOffsetRequest{Topic: c.cfg.Topic, QueueID: q.queueID})
	resp, err := invokeTimeout(ctx, c.cl, c.rt.addrs[q.broker], defaultControlTimeout, req)
	if err != nil {
		return 0, fmt.Errorf("query the min offset of queue %d: %w", q.queueID, err)
	}
	if resp.Code != rmq.RespSuccess {
		return 0, fmt.Errorf("query the min offset of queue %d: code %d: %s", q.queueID, resp.Code, resp.Remark)
	}
	r, err := rmq.DecodeOffsetResponse(resp)
	return r.Offset, err
}

func (c *consumer) run(ctx context.Context, offsets []int64) (*Result, error) {
	runCtx, stop := context.WithTimeout(ctx, c.cfg.Duration)
	defer stop()
	c.start = time.Now()
	stopProgress := reportProgress(c.cfg.Progress, c.cfg.ProgressInterval, func(*Histogram) Progress {
		return Progress{Elapsed: time.Since(c.start), Msgs: c.msgs.Load(), Bytes: c.bytes.Load(), Errors: c.errs.Load()}
	})
	defer stopProgress()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.watch(runCtx, stop)
	}()
	var pullers sync.WaitGroup
	for i, q := range c.rt.queues {
		pullers.Add(1)
		go func() {
			defer pullers.Done()
			offsets[i] = c.pullQueue(runCtx, stop, q, offsets[i])
		}()
	}
	pullers.Wait()
	stop()
	wg.Wait()
	stopProgress()
	elapsed := time.Duration(c.lastRecv.Load())
	c.commit(offsets)
	res := &Result{
		Scenario: c.cfg.Scenario, Msgs: c.msgs.Load(), Bytes: c.bytes.Load(), Elapsed: elapsed,
		Errors: c.errs.Load(), FirstError: c.first,
	}
	if res.Msgs > 0 {
		res.BodyBytes = int((res.Bytes + res.Msgs/2) / res.Msgs)
	}
	if res.Errors >= c.cfg.MaxErrors {
		return res, fmt.Errorf("%w: %d pulls failed (limit %d); first: %s", ErrTooManyErrors, res.Errors, c.cfg.MaxErrors, c.first)
	}
	return res, nil
}

// watch stops the run when nothing arrived for IdleTimeout and renews the
// heartbeat, until the run ends.
func (c *consumer) watch(ctx context.Context, stop context.CancelFunc) {
	const tick = 100 * time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	lastBeat := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if now.Sub(c.start)-time.Duration(c.lastRecv.Load()) > c.cfg.IdleTimeout {
				stop()
				return
			}
			if now.Sub(lastBeat) > 20*time.Second {
				lastBeat = now
				if err := c.heartbeat(ctx); err != nil && ctx.Err() == nil {
					c.fail(stop, err.Error())
				}
			}
		}
	}
}

func (c *consumer) fail(stop context.CancelFunc, msg string) {
	c.errOnce.Do(func() { c.first = msg })
	if c.errs.Add(1) >= c.cfg.MaxErrors {
		stop()
	}
}

// pullQueue pulls q from offset until the run ends and returns the offset
// reached.
func (c *consumer) pullQueue(ctx context.Context, stop context.CancelFunc, q queueRef, off int64) int64 {
	addr := c.rt.addrs[q.broker]
	h := rmq.PullRequest{
		ConsumerGroup: c.cfg.Group, Topic: c.cfg.Topic, QueueID: q.queueID, MaxMsgNums: int32(c.cfg.PullBatch),
		SuspendTimeoutMillis: c.cfg.SuspendTimeout.Milliseconds(), Subscription: "*", SubVersion: c.subVersion, ExpressionType: "TAG",
	}
	for ctx.Err() == nil {
		h.SysFlag = rmq.PullFlagSuspend | rmq.PullFlagSubscription
		if off > 0 && c.cfg.BrokerID == 0 {
			h.SysFlag |= rmq.PullFlagCommitOffset
		}
		h.QueueOffset, h.CommitOffset = off, off
		req := rmq.EncodePullRequest(h)
		resp, err := c.cl.Invoke(ctx, addr, req)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			c.fail(stop, err.Error())
			c.backoff(ctx)
			continue
		}
		pr, perr := rmq.DecodePullResponse(resp)
		switch resp.Code {
		case rmq.RespSuccess:
			n, bytes, cerr := c.records(resp.Body)
			if cerr != nil {
				c.fail(stop, fmt.Sprintf("pull of queue %d at offset %d: %v", q.queueID, off, cerr))
			}
			if n > 0 {
				c.bytes.Add(bytes)
				total := c.msgs.Add(n)
				c.lastRecv.Store(int64(time.Since(c.start)))
				if total >= c.cfg.Count {
					stop()
				}
			}
		case rmq.RespPullNotFound, rmq.RespPullRetryImmediately, rmq.RespPullOffsetMoved:
		default:
			c.fail(stop, fmt.Sprintf("pull of queue %d at offset %d: code %d: %s", q.queueID, off, resp.Code, resp.Remark))
			c.backoff(ctx)
			continue
		}
		if perr != nil {
			c.fail(stop, fmt.Sprintf("pull of queue %d at offset %d: answer without valid offsets: %v", q.queueID, off, perr))
			c.backoff(ctx)
			continue
		}
		off = pr.NextBeginOffset
	}
	return off
}

// records checks and counts the stored records of a pull body.
func (c *consumer) records(body []byte) (n, bytes int64, err error) {
	for len(body) > 0 {
		size, err := message.Check(body)
		if err != nil {
			return n, bytes, fmt.Errorf("record %d of the body: %w", n, err)
		}
		r := message.Record(body[:size])
		if c.cfg.OnRecord != nil {
			c.cfg.OnRecord(r)
		}
		n++
		bytes += int64(len(r.Body()))
		body = body[size:]
	}
	return n, bytes, nil
}

func (c *consumer) backoff(ctx context.Context) {
	t := time.NewTimer(errorBackoff)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// commit stores the offsets reached, as a push consumer does on shutdown.
func (c *consumer) commit(offsets []int64) {
	for i, q := range c.rt.queues {
		req := rmq.EncodeUpdateConsumerOffsetRequest(rmq.UpdateConsumerOffsetRequest{
			ConsumerGroup: c.cfg.Group, Topic: c.cfg.Topic, QueueID: q.queueID, CommitOffset: offsets[i],
		})
		resp, err := invokeTimeout(context.Background(), c.cl, c.rt.ctrl[q.broker], defaultControlTimeout, req)
		switch {
		case err != nil:
			c.fail(func() {}, fmt.Sprintf("commit the offset of queue %d: %v", q.queueID, err))
		case resp.Code != rmq.RespSuccess:
			c.fail(func() {}, fmt.Sprintf("commit the offset of queue %d: code %d: %s", q.queueID, resp.Code, resp.Remark))
		}
	}
}
