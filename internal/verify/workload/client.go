package workload

// The remoting (4.x) client the workloads share: Petrel's own
// remoting.Client dialing through the client's fault-proxy network, and
// typed requests from rmq. Every request has a deadline (Env.SendTimeout,
// plus the long-poll suspension for pulls). The remoting.Client dials a
// closed connection again on the next request.
//
// Errors are an *OpError that says whether the request may have taken
// effect: Fail when the broker answered an error or the connection could
// not be made (nothing was written), InDoubt when the request was handed
// to an open connection and no answer came (timeout, connection lost).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/auth/authwire"
	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/tlsx"
	"github.com/petrelmq/petrel/internal/verify/history"
)

// OpError is a request that did not succeed.
type OpError struct {
	// Outcome is history.Fail (known not to have taken effect) or
	// history.InDoubt.
	Outcome history.Type
	Code    int16 // the broker's answer code; -1 when there was no answer
	Err     error
}

func (e *OpError) Error() string { return e.Err.Error() }
func (e *OpError) Unwrap() error { return e.Err }

// Outcome is the history type of a request's error: OK for nil, else the
// OpError's outcome (InDoubt for any other error).
func Outcome(err error) history.Type {
	if err == nil {
		return history.OK
	}
	var oe *OpError
	if errors.As(err, &oe) {
		return oe.Outcome
	}
	return history.InDoubt
}

func refused(code int16, remark string) *OpError {
	return &OpError{Outcome: history.Fail, Code: code, Err: fmt.Errorf("broker answered code %d: %s", code, remark)}
}

// Client is one verify client (a producer, a consumer, a drain reader):
// its own connections, through the proxy links of its name.
type Client struct {
	env  *Env
	name string
	rc   *remoting.Client

	mu     sync.Mutex
	routes map[string]*Route

	// refusedOnce keeps the warning of a NO_PERMISSION answer to one per
	// client: a client the ACL refuses retries until the drain gives up,
	// and the log should say why once, not a thousand times.
	refusedOnce sync.Once
}

// NewClient returns the client named name (its Process in the history).
// env must have its defaults set (as a workload's Setup has). Each opt
// may change the remoting options (e.g. set a Handler for the broker's
// transaction check-backs); Network is always env.Network(name) (in TLS
// with Env.TLS), and with Env.Credentials every request is signed.
func NewClient(env *Env, name string, opts ...func(*remoting.ClientOptions)) *Client {
	return newClient(env, name, env.Credentials, opts)
}

// NewAdminClient is NewClient signing with Env.Admin (Env.Credentials
// when it is nil): the client of a workload's setup, which creates its
// topics.
func NewAdminClient(env *Env, name string) *Client {
	return newClient(env, name, cmp.Or(env.Admin, env.Credentials), nil)
}

func newClient(env *Env, name string, creds *Credentials, opts []func(*remoting.ClientOptions)) *Client {
	o := remoting.ClientOptions{DialTimeout: env.SendTimeout, Logger: env.Logger.With("client", name)}
	for _, f := range opts {
		f(&o)
	}
	o.Network = env.Network(name)
	if env.TLS != nil {
		o.Network = tlsx.DialNetwork(o.Network, env.TLS)
	}
	if creds != nil {
		o.Sign = authwire.Signer(creds.AccessKey, creds.SecretKey)
	}
	return &Client{env: env, name: name, rc: remoting.NewClient(o), routes: map[string]*Route{}}
}

// Name is the client's name.
func (c *Client) Name() string { return c.name }

// Close closes the client's connections.
func (c *Client) Close() error { return c.rc.Close() }

// Call sends req to addr and waits at most extra+SendTimeout for the
// answer. An error is an *OpError; an answer with any code is returned.
func (c *Client) Call(ctx context.Context, addr string, req *remoting.Command, extra time.Duration) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(ctx, c.env.SendTimeout+extra)
	defer cancel()
	conn, err := c.rc.Conn(ctx, addr)
	if err != nil {
		return nil, &OpError{Outcome: history.Fail, Code: -1, Err: err}
	}
	resp, err := conn.Invoke(ctx, req)
	if err != nil {
		return nil, &OpError{Outcome: history.InDoubt, Code: -1, Err: err}
	}
	if resp.Code == rmq.RespNoPermission {
		c.refusedOnce.Do(func() {
			c.env.Logger.Warn("the broker refused a request of a verify client (NO_PERMISSION): its credentials or ACL do not allow it; it retries",
				"client", c.name, "code", req.Code, "addr", addr, "remark", resp.Remark)
		})
	}
	return resp, nil
}

// Oneway writes req to addr without waiting for an answer: Fail when no
// connection could be made, InDoubt when the write failed.
func (c *Client) Oneway(ctx context.Context, addr string, req *remoting.Command) error {
	ctx, cancel := context.WithTimeout(ctx, c.env.SendTimeout)
	defer cancel()
	conn, err := c.rc.Conn(ctx, addr)
	if err != nil {
		return &OpError{Outcome: history.Fail, Code: -1, Err: err}
	}
	if err := conn.InvokeOneway(req); err != nil {
		return &OpError{Outcome: history.InDoubt, Code: -1, Err: err}
	}
	return nil
}

// call is Call that turns every answer but success into a Fail error.
func (c *Client) call(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	resp, err := c.Call(ctx, addr, req, 0)
	if err != nil {
		return nil, err
	}
	if resp.Code != rmq.RespSuccess {
		return nil, refused(resp.Code, resp.Remark)
	}
	return resp, nil
}

// nameServers asks each name server in turn until one answers with
// success; the last error otherwise.
func (c *Client) nameServers(ctx context.Context, mk func() *remoting.Command) (*remoting.Command, error) {
	if len(c.env.NameSrv) == 0 {
		return nil, &OpError{Outcome: history.Fail, Code: -1, Err: errors.New("no name server")}
	}
	var last error
	for _, ns := range c.env.NameSrv {
		resp, err := c.call(ctx, ns, mk())
		if err == nil {
			return resp, nil
		}
		last = err
	}
	return nil, last
}

// RouteMaxAge is how long a client uses a topic's route before it asks a
// name server again (a send that fails asks at once). RocketMQ's clients
// poll every 30 s; a short age lets a failover's new master (and a group
// back from having none) be seen within about a second, as a client that
// refreshes on NOT_MASTER and on connection errors would.
var RouteMaxAge = time.Second

// DegradedRouteMaxAge replaces RouteMaxAge for a route in which a broker
// group has queues but no master: a failover is under way, and its new
// master should get sends as soon as the name servers list it, not up to
// a second later. Only such routes are asked for this often.
var DegradedRouteMaxAge = 100 * time.Millisecond

// Route is a topic's queues and the master address of each broker.
type Route struct {
	Queues []rmq.MessageQueue // every write queue, by broker name then id
	Addrs  map[string]string  // broker name → master address

	fetched time.Time // when the name server gave it (Env.Clock)
	// degraded: a broker group has queues of the topic but no master
	// (DegradedRouteMaxAge).
	degraded bool
}

// maxAge is how long r is used before the name servers are asked again.
func (r *Route) maxAge() time.Duration {
	if r.degraded {
		return DegradedRouteMaxAge
	}
	return RouteMaxAge
}

// Addr is the master address of q's broker ("" when unknown).
func (r *Route) Addr(q rmq.MessageQueue) string { return r.Addrs[q.BrokerName] }

// Route returns the topic's route, from the cache unless fresh is set.
func (c *Client) Route(ctx context.Context, topic string, fresh bool) (*Route, error) {
	c.mu.Lock()
	r := c.routes[topic]
	c.mu.Unlock()
	now := c.env.Clock.Now()
	if r != nil && !fresh && now.Sub(r.fetched) < r.maxAge() {
		return r, nil
	}
	resp, err := c.nameServers(ctx, func() *remoting.Command { return rmq.EncodeRouteRequest(rmq.RouteRequest{Topic: topic}) })
	if err != nil {
		if r != nil && !fresh {
			return r, nil // an old route is better than none
		}
		return nil, err
	}
	d, err := rmq.DecodeTopicRouteDataBody(resp.Body)
	if err != nil {
		return nil, &OpError{Outcome: history.Fail, Code: -1, Err: err}
	}
	r = &Route{Addrs: map[string]string{}, fetched: now}
	for _, b := range d.BrokerDatas {
		if a := b.BrokerAddrs[rmq.MasterID]; a != "" {
			r.Addrs[b.BrokerName] = a
		}
	}
	for _, q := range d.QueueDatas {
		if r.Addrs[q.BrokerName] == "" {
			r.degraded = true
			continue
		}
		if q.Perm&rmq.PermWrite == 0 {
			continue
		}
		for i := int32(0); i < q.WriteQueueNums; i++ {
			r.Queues = append(r.Queues, rmq.MessageQueue{Topic: topic, BrokerName: q.BrokerName, QueueID: i})
		}
	}
	if len(r.Queues) == 0 {
		return nil, &OpError{Outcome: history.Fail, Code: -1, Err: fmt.Errorf("topic %s has no writable queue on a live broker", topic)}
	}
	sortQueues(r.Queues)
	c.mu.Lock()
	c.routes[topic] = r
	c.mu.Unlock()
	return r, nil
}

func sortQueues(qs []rmq.MessageQueue) {
	slices.SortFunc(qs, func(a, b rmq.MessageQueue) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.BrokerName, b.BrokerName), cmp.Compare(a.QueueID, b.QueueID))
	})
}

// CreateTopic creates topic with queues read and write queues on every
// broker the name servers know, then waits until the route lists it.
func (c *Client) CreateTopic(ctx context.Context, topic string, queues int, order bool) error {
	resp, err := c.nameServers(ctx, rmq.EncodeClusterInfoRequest)
	if err != nil {
		return fmt.Errorf("workload: cluster info: %w", err)
	}
	ci, err := rmq.DecodeClusterInfoBody(resp.Body)
	if err != nil {
		return fmt.Errorf("workload: cluster info: %w", err)
	}
	n := 0
	for _, b := range ci.BrokerAddrTable {
		addr := b.BrokerAddrs[rmq.MasterID]
		if addr == "" {
			continue
		}
		req := rmq.EncodeCreateTopic(rmq.CreateTopicRequest{
			Topic: topic, ReadQueueNums: int32(queues), WriteQueueNums: int32(queues),
			Perm: rmq.PermRead | rmq.PermWrite, Order: order,
		})
		if _, err := c.call(ctx, addr, req); err != nil {
			return fmt.Errorf("workload: create topic %s on %s: %w", topic, b.BrokerName, err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("workload: create topic %s: the name servers know no broker master", topic)
	}
	for i := 1; ; i++ {
		r, err := c.Route(ctx, topic, true)
		if err == nil && len(r.Queues) >= queues {
			return nil
		}
		if !c.env.sleep(ctx, backoff(i)) {
			return fmt.Errorf("workload: route of %s did not appear: %w", topic, errors.Join(err, ctx.Err()))
		}
	}
}

// SendResult is where the broker stored a message.
type SendResult struct {
	Queue  int32
	Offset int64
	Addr   string // the broker's
	MsgID  string // the broker's offset message id (it holds the commit log offset)
}

// SendOpts are the extra fields of a send.
type SendOpts struct {
	ProducerGroup string
	Properties    string // encoded; idProperties makes them
	SysFlag       int32
}

// Send sends body to queue q of its topic (SEND_MESSAGE_V2) and waits for
// the answer. An answer that the message was stored but not flushed or
// replicated in time (10, 11, 12) is InDoubt.
func (c *Client) Send(ctx context.Context, r *Route, q rmq.MessageQueue, body []byte, o SendOpts) (SendResult, error) {
	addr := r.Addr(q)
	if addr == "" {
		return SendResult{}, &OpError{Outcome: history.Fail, Code: -1, Err: fmt.Errorf("no address for broker %s", q.BrokerName)}
	}
	req := rmq.EncodeSendHeader(rmq.SendHeader{
		ProducerGroup: o.ProducerGroup, Topic: q.Topic, DefaultTopic: "TBW102", DefaultTopicQueueNums: int32(len(r.Queues)),
		QueueID: q.QueueID, SysFlag: o.SysFlag, BornTimestamp: c.env.Clock.Now().UnixMilli(), Properties: o.Properties,
		BrokerName: q.BrokerName,
	})
	req.Body = body
	resp, err := c.Call(ctx, addr, req, 0)
	if err != nil {
		return SendResult{}, err
	}
	switch resp.Code {
	case rmq.RespSuccess:
	case rmq.RespFlushDiskTimeout, 11, 12: // FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE
		return SendResult{}, &OpError{Outcome: history.InDoubt, Code: resp.Code,
			Err: fmt.Errorf("broker answered code %d (stored, not made durable in time): %s", resp.Code, resp.Remark)}
	default:
		return SendResult{}, refused(resp.Code, resp.Remark)
	}
	sr, err := rmq.DecodeSendResponse(resp)
	if err != nil {
		return SendResult{}, &OpError{Outcome: history.InDoubt, Code: resp.Code, Err: fmt.Errorf("send answer: %w", err)}
	}
	return SendResult{Queue: sr.QueueID, Offset: sr.QueueOffset, Addr: addr, MsgID: sr.MsgID}, nil
}

// RouteWatch is how often a send still without an answer asks the name
// servers again whether its broker has another master now. A master that
// is paused (or cut off) keeps its connections open: without the watch an
// attempt sent to it waits its whole timeout, and the retry after it may
// go to it again if the failover came a moment later, so the client would
// see the new master only when the old one resumes.
var RouteWatch = 500 * time.Millisecond

// errMasterMoved is the cause of an attempt abandoned by the watch.
var errMasterMoved = errors.New("the route names another master now")

// SendWatched is Send that watches the route while it waits: every
// RouteWatch it fetches q's topic's route afresh (the cache then holds
// it for the retry), and when that names another master for q's broker
// than the one the attempt went to it abandons the attempt, InDoubt (the
// old master may have stored it: a retry under the same id is a
// duplicate at worst, never a loss).
func (c *Client) SendWatched(ctx context.Context, r *Route, q rmq.MessageQueue, body []byte, o SendOpts) (SendResult, error) {
	addr := r.Addr(q)
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := &masterWatch{c: c, ctx: sctx, cancel: cancel, topic: q.Topic, broker: q.BrokerName, addr: addr}
	if addr != "" {
		w.arm()
	}
	res, err := c.Send(sctx, r, q, body, o)
	w.stop()
	if err != nil && errors.Is(context.Cause(sctx), errMasterMoved) {
		return SendResult{}, &OpError{Outcome: history.InDoubt, Code: -1,
			Err: fmt.Errorf("abandoned the send to %s: %w (%s): %w", addr, context.Cause(sctx), w.moved, err)}
	}
	return res, err
}

// masterWatch is the route watch of one SendWatched.
type masterWatch struct {
	c                   *Client
	ctx                 context.Context
	cancel              context.CancelCauseFunc
	topic, broker, addr string

	mu      sync.Mutex
	timer   clock.Timer
	stopped bool
	running sync.WaitGroup
	moved   string // the master the route named when the watch abandoned the send
}

func (w *masterWatch) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.running.Add(1)
		w.timer = w.c.env.Clock.AfterFunc(RouteWatch, w.check)
	}
}

// check asks for the route once; it abandons the send or arms again.
func (w *masterWatch) check() {
	defer w.running.Done()
	if w.ctx.Err() != nil {
		return
	}
	r, err := w.c.Route(w.ctx, w.topic, true)
	if err == nil {
		if a := r.Addrs[w.broker]; a != "" && a != w.addr {
			w.mu.Lock()
			w.moved = a
			w.mu.Unlock()
			w.cancel(errMasterMoved)
			return
		}
	}
	w.arm()
}

// stop ends the watch and waits for a check under way.
func (w *masterWatch) stop() {
	w.mu.Lock()
	w.stopped = true
	if w.timer != nil && w.timer.Stop() {
		w.running.Done()
	}
	w.mu.Unlock()
	w.running.Wait()
}

// PullResult is a pull's answer.
type PullResult struct {
	Code     int16 // RespSuccess (found), RespPullNotFound, RespPullRetryImmediately, RespPullOffsetMoved
	Header   rmq.PullResponse
	Messages []*message.Message
}

// Pull pulls from q at offset; suspend > 0 lets the broker hold the
// request that long for new messages (long polling). A subscription "*"
// is always carried.
func (c *Client) Pull(ctx context.Context, addr, group string, q rmq.MessageQueue, offset int64, maxMsgs int32, suspend time.Duration) (PullResult, error) {
	flag := rmq.PullFlagSubscription
	if suspend > 0 {
		flag |= rmq.PullFlagSuspend
	}
	req := rmq.EncodePullRequest(rmq.PullRequest{
		ConsumerGroup: group, Topic: q.Topic, QueueID: q.QueueID, QueueOffset: offset, MaxMsgNums: maxMsgs,
		SysFlag: flag, CommitOffset: -1, SuspendTimeoutMillis: suspend.Milliseconds(), Subscription: "*", ExpressionType: "TAG",
	})
	resp, err := c.Call(ctx, addr, req, suspend)
	if err != nil {
		return PullResult{}, err
	}
	switch resp.Code {
	case rmq.RespSuccess, rmq.RespPullNotFound, rmq.RespPullRetryImmediately, rmq.RespPullOffsetMoved:
	default:
		return PullResult{}, refused(resp.Code, resp.Remark)
	}
	h, err := rmq.DecodePullResponse(resp)
	if err != nil {
		return PullResult{}, &OpError{Outcome: history.Fail, Code: resp.Code, Err: fmt.Errorf("pull answer: %w", err)}
	}
	out := PullResult{Code: resp.Code, Header: h}
	if resp.Code != rmq.RespSuccess {
		return out, nil
	}
	for b := resp.Body; len(b) > 0; {
		m, n, err := message.Decode(b)
		if err != nil {
			return PullResult{}, &OpError{Outcome: history.Fail, Code: resp.Code,
				Err: fmt.Errorf("pull answer: record %d of queue %d: %w", len(out.Messages), q.QueueID, err)}
		}
		out.Messages = append(out.Messages, m)
		b = b[n:]
	}
	return out, nil
}

// QueryOffset returns group's committed offset of q, or -1 when it has
// none.
func (c *Client) QueryOffset(ctx context.Context, addr, group string, q rmq.MessageQueue) (int64, error) {
	resp, err := c.Call(ctx, addr, rmq.EncodeQueryConsumerOffsetRequest(rmq.QueryConsumerOffsetRequest{
		ConsumerGroup: group, Topic: q.Topic, QueueID: q.QueueID}), 0)
	if err != nil {
		return 0, err
	}
	switch resp.Code {
	case rmq.RespSuccess:
	case rmq.RespQueryNotFound:
		return -1, nil
	default:
		return 0, refused(resp.Code, resp.Remark)
	}
	r, err := rmq.DecodeOffsetResponse(resp)
	if err != nil {
		return 0, &OpError{Outcome: history.Fail, Code: resp.Code, Err: err}
	}
	return r.Offset, nil
}

// CommitOffset stores group's offset of q (UPDATE_CONSUMER_OFFSET, waiting
// for the answer).
func (c *Client) CommitOffset(ctx context.Context, addr, group string, q rmq.MessageQueue, offset int64) error {
	_, err := c.call(ctx, addr, rmq.EncodeUpdateConsumerOffsetRequest(rmq.UpdateConsumerOffsetRequest{
		ConsumerGroup: group, Topic: q.Topic, QueueID: q.QueueID, CommitOffset: offset}))
	return err
}

// MaxOffset is q's max offset: the offset the next message will get.
func (c *Client) MaxOffset(ctx context.Context, addr string, q rmq.MessageQueue) (int64, error) {
	return c.queueOffset(ctx, addr, rmq.EncodeGetMaxOffsetRequest(rmq.QueueOffsetRequest{Topic: q.Topic, QueueID: q.QueueID}))
}

// MinOffset is q's min offset: its first message still stored.
func (c *Client) MinOffset(ctx context.Context, addr string, q rmq.MessageQueue) (int64, error) {
	return c.queueOffset(ctx, addr, rmq.EncodeGetMinOffsetRequest(rmq.QueueOffsetRequest{Topic: q.Topic, QueueID: q.QueueID}))
}

func (c *Client) queueOffset(ctx context.Context, addr string, req *remoting.Command) (int64, error) {
	resp, err := c.call(ctx, addr, req)
	if err != nil {
		return 0, err
	}
	r, err := rmq.DecodeOffsetResponse(resp)
	if err != nil {
		return 0, &OpError{Outcome: history.Fail, Code: resp.Code, Err: err}
	}
	return r.Offset, nil
}

// Heartbeat tells the broker at addr that clientID is a live member of
// group, consuming topic with model (CLUSTERING or BROADCASTING); an empty
// group sends a producer heartbeat for producerGroup.
func (c *Client) Heartbeat(ctx context.Context, addr, clientID, group, model, producerGroup string, topics ...string) error {
	h := rmq.HeartbeatData{ClientID: clientID}
	if producerGroup != "" {
		h.ProducerDataSet = []rmq.ProducerData{{GroupName: producerGroup}}
	}
	if group != "" {
		cd := rmq.ConsumerData{GroupName: group, ConsumeType: "CONSUME_ACTIVELY", MessageModel: model,
			ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET"}
		for _, t := range topics {
			cd.SubscriptionDataSet = append(cd.SubscriptionDataSet, rmq.SubscriptionData{
				Topic: t, SubString: "*", ExpressionType: "TAG", SubVersion: c.env.Clock.Now().UnixNano()})
		}
		h.ConsumerDataSet = []rmq.ConsumerData{cd}
	}
	_, err := c.call(ctx, addr, rmq.EncodeHeartbeat(h))
	return err
}

// ConsumerList is the client ids of group's live members at addr.
func (c *Client) ConsumerList(ctx context.Context, addr, group string) ([]string, error) {
	resp, err := c.call(ctx, addr, rmq.EncodeGetConsumerListRequest(rmq.ConsumerGroupRequest{ConsumerGroup: group}))
	if err != nil {
		return nil, err
	}
	l, err := rmq.DecodeConsumerListResponse(resp)
	if err != nil {
		return nil, &OpError{Outcome: history.Fail, Code: resp.Code, Err: err}
	}
	return l.ConsumerIDList, nil
}

// Lock locks qs for clientID in group at addr (LOCK_BATCH_MQ, also the
// renewal); it returns the queues the client now holds.
func (c *Client) Lock(ctx context.Context, addr, group, clientID string, qs []rmq.MessageQueue) ([]rmq.MessageQueue, error) {
	resp, err := c.call(ctx, addr, rmq.EncodeLockBatchRequest(rmq.LockBatchBody{ConsumerGroup: group, ClientID: clientID, MQSet: qs}))
	if err != nil {
		return nil, err
	}
	l, err := rmq.DecodeLockBatchResponse(resp)
	if err != nil {
		return nil, &OpError{Outcome: history.Fail, Code: resp.Code, Err: err}
	}
	return l.LockOKMQSet, nil
}

// Unlock releases clientID's locks on qs (UNLOCK_BATCH_MQ).
func (c *Client) Unlock(ctx context.Context, addr, group, clientID string, qs []rmq.MessageQueue) error {
	_, err := c.call(ctx, addr, rmq.EncodeUnlockBatchRequest(rmq.LockBatchBody{ConsumerGroup: group, ClientID: clientID, MQSet: qs}))
	return err
}

// Allocate returns the queues of qs that member me gets when they are
// shared among members (sorted) as RocketMQ's AllocateMessageQueueAveragely
// does: consecutive ranges, the first len(qs)%len(members) members one
// more. A client not among the members gets none.
func Allocate(qs []rmq.MessageQueue, members []string, me string) []rmq.MessageQueue {
	ms := append([]string(nil), members...)
	slices.Sort(ms)
	idx := -1
	for i, m := range ms {
		if m == me {
			idx = i
			break
		}
	}
	if idx < 0 || len(qs) == 0 {
		return nil
	}
	n, size := len(ms), len(qs)
	mod := size % n
	var per int
	switch {
	case size <= n:
		per = 1
	case mod > 0 && idx < mod:
		per = size/n + 1
	default:
		per = size / n
	}
	start := idx * per
	if mod > 0 && idx >= mod {
		start = idx*per + mod
	}
	rng := min(per, size-start)
	if rng <= 0 || start >= size {
		return nil
	}
	return append([]rmq.MessageQueue(nil), qs[start:start+rng]...)
}

// errText is an error for a history line: the message, bounded.
func errText(err error) string {
	s := err.Error()
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// itoa formats an int for a body field.
func itoa[T int | int32 | int64](v T) string { return strconv.FormatInt(int64(v), 10) }
