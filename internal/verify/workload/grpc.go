package workload

// A small RocketMQ 5.x client for the grpc workload: one HTTP/2
// connection to Env.GRPC dialed through the client's own network (so the
// proxy's faults apply), the x-mq-* headers on every call, and a
// Telemetry session kept open (opened again after a fault) carrying the
// client's Settings, as the official clients send them before they send
// or receive.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	backoffpkg "google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/verify/history"
)

// gRPC client settings.
const (
	// grpcRequestTimeout is the request timeout announced in Settings.
	grpcRequestTimeout = 3 * time.Second
	// grpcLongPoll is how long a receive may be held by the front.
	grpcLongPoll = time.Second
	// grpcInvisible is how long a received message stays invisible to the
	// group; a message whose ack was lost comes again after it.
	grpcInvisible = 3 * time.Second
	// grpcReceiveBatch is the batch size of a receive.
	grpcReceiveBatch = 16
	// grpcMaxRecvBytes bounds one message from the front.
	grpcMaxRecvBytes = 8 << 20
)

// grpcClient is one client instance of the gRPC front.
type grpcClient struct {
	id   string
	addr string
	md   metadata.MD
	sec  grpcSecurity

	// fronts is the endpoint list in this client's order (one endpoint:
	// no list); opts dial them. mu guards the connection: moveOn
	// replaces it by one that starts at the next front.
	fronts []string
	opts   []grpc.DialOption
	mu     sync.Mutex
	cc     *grpc.ClientConn
	stub   v2.MessagingServiceClient
	at     int // the fronts' index cc starts at

	settings *v2.Settings
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

// grpcSecurity is how a gRPC client connects and signs.
type grpcSecurity struct {
	// TLS verifies the front as it says; nil accepts any certificate
	// (the front's own is self-signed).
	TLS *tls.Config
	// Credentials, when set, sign every call (the authorization and
	// x-mq-date-time metadata of the 5.x clients), with the time of Now.
	Credentials *Credentials
	Now         func() time.Time
}

// grpcSecurity is the env's security for a gRPC client.
func (e *Env) grpcSecurity() grpcSecurity {
	return grpcSecurity{TLS: e.TLS, Credentials: e.Credentials, Now: e.Clock.Now}
}

// dialGRPC sets up a client of the front at addr over nw, in TLS as sec
// says (by default accepting any certificate: the front's is
// self-signed). The connection is made on the first call and made again
// after it broke.
//
// addr may list several endpoints, comma-separated (every replica's front
// of a topology with controllers): the client connects to one, from a
// place in the list its id picks, and moves to the next when that one
// cannot be reached (gRPC's pick_first over the list) or leaves a call
// unanswered until its deadline (moveOn: a paused front), as a 5.x client
// behind a list of endpoints does.
func dialGRPC(nw netx.Network, addr, clientID string, st *v2.Settings, sec grpcSecurity) (*grpcClient, error) {
	creds := credentials.NewTLS(&tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}) // the front's certificate is self-signed
	if sec.TLS != nil {
		cfg := sec.TLS.Clone()
		if host, _, err := net.SplitHostPort(splitEndpoints(addr)[0]); err == nil && cfg.ServerName == "" {
			// The name to verify: the endpoints' host (gRPC would take
			// the target's, which for a list is no host at all).
			cfg.ServerName = host
		}
		creds = credentials.NewTLS(cfg)
	}
	c := &grpcClient{id: clientID, addr: addr, settings: st, sec: sec}
	if list := splitEndpoints(addr); len(list) > 1 {
		c.fronts = rotate(list, clientID)
		addr = c.fronts[0]
	}
	c.opts = []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return nw.Dial(ctx, a) }),
		// Reconnect quickly after a fault (gRPC's default back-off grows
		// to 2 min, which would stretch every outage the run measures).
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoffpkg.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 2, Jitter: 0.2, MaxDelay: MaxBackoff},
			MinConnectTimeout: grpcRequestTimeout,
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(grpcMaxRecvBytes)),
	}
	cc, err := c.connect(0)
	if err != nil {
		return nil, fmt.Errorf("workload: set up a gRPC connection to %s: %w", addr, err)
	}
	c.cc, c.stub, c.addr = cc, v2.NewMessagingServiceClient(cc), addr
	c.md = metadata.Pairs("x-mq-client-id", clientID, "x-mq-language", "GO", "x-mq-protocol", "v2",
		"x-mq-client-version", "petrel-verify")
	st.AccessPoint = grpcEndpoints(addr)
	st.RequestTimeout = durationpb.New(grpcRequestTimeout)
	st.UserAgent = &v2.UA{Language: v2.Language_GOLANG, Version: "petrel-verify", Hostname: "verify"}
	return c, nil
}

// connect makes a connection to the fronts starting at index at (to the
// one endpoint without a list).
func (c *grpcClient) connect(at int) (*grpc.ClientConn, error) {
	if len(c.fronts) == 0 {
		return grpc.NewClient("passthrough:///"+c.addr, c.opts...)
	}
	r := manual.NewBuilderWithScheme("verify")
	state := resolver.State{}
	for i := range c.fronts {
		state.Addresses = append(state.Addresses, resolver.Address{Addr: c.fronts[(at+i)%len(c.fronts)]})
	}
	r.InitialState(state)
	return grpc.NewClient(r.Scheme()+":///fronts", append(c.opts, grpc.WithResolvers(r))...)
}

// conn is the client's stub now.
func (c *grpcClient) conn() v2.MessagingServiceClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stub
}

// moveOn leaves the front that did not answer a call within its
// deadline for the next one of the list, as a client behind a list of
// endpoints does once one stops answering: a front that is paused (or
// cut off) keeps its connection open, so gRPC's own pick_first would
// stay on it. The old connection is closed (its Telemetry session opens
// again on the new one). Nothing without a list, or when stub is no
// longer the connection's (another call moved on already).
func (c *grpcClient) moveOn(stub v2.MessagingServiceClient) {
	if len(c.fronts) < 2 {
		return
	}
	c.mu.Lock()
	if c.stub != stub || c.cc == nil {
		c.mu.Unlock()
		return
	}
	at := (c.at + 1) % len(c.fronts)
	cc, err := c.connect(at)
	if err != nil {
		c.mu.Unlock()
		return // kept: gRPC's own reconnection goes on
	}
	old := c.cc
	c.cc, c.stub, c.at = cc, v2.NewMessagingServiceClient(cc), at
	c.mu.Unlock()
	old.Close()
}

// unanswered reports whether err is a call's deadline passing without an
// answer from the front.
func unanswered(err error) bool {
	return status.Code(err) == codes.DeadlineExceeded
}

// splitEndpoints splits a comma-separated endpoint list.
func splitEndpoints(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// rotate starts list at a place picked by id, so that clients spread over
// the endpoints.
func rotate(list []string, id string) []string {
	h := fnv.New32a()
	h.Write([]byte(id))
	k := int(h.Sum32() % uint32(len(list)))
	return append(append([]string(nil), list[k:]...), list[:k]...)
}

// ctx returns ctx carrying the client's headers, signed now when the
// client has credentials.
func (c *grpcClient) ctx(ctx context.Context) context.Context {
	md := c.md
	if cr := c.sec.Credentials; cr != nil {
		dt := auth.GRPCDateTime(c.sec.Now())
		md = md.Copy()
		md.Set(grpcDateTimeKey, dt)
		md.Set(grpcAuthorizationKey, auth.GRPCAuthorization(cr.AccessKey, cr.SecretKey, dt))
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// The metadata keys of a signed 5.x call.
const (
	grpcDateTimeKey      = "x-mq-date-time"
	grpcAuthorizationKey = "authorization"
)

// startSession keeps a Telemetry stream with the client's Settings open
// until close, opening it again (after a pause on sleep) whenever it
// ends.
func (c *grpcClient) startSession(sleep func(context.Context, time.Duration) bool) {
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for n := 1; ctx.Err() == nil; n++ {
			c.session(ctx)
			sleep(ctx, backoff(n))
		}
	}()
}

// session runs one Telemetry stream until it breaks or ctx ends.
func (c *grpcClient) session(ctx context.Context) {
	sctx, cancel := context.WithCancel(c.ctx(ctx))
	defer cancel()
	stream, err := c.conn().Telemetry(sctx)
	if err != nil {
		return
	}
	if err := stream.Send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: c.settings}}); err != nil {
		return
	}
	for {
		if _, err := stream.Recv(); err != nil {
			return
		}
		// The server's Settings answer and pushed commands need nothing
		// from this client (it sends no transactional messages).
	}
}

// close ends the session and the connection.
func (c *grpcClient) close() {
	if c.stop != nil {
		c.stop()
	}
	c.mu.Lock()
	cc := c.cc
	c.cc = nil
	c.mu.Unlock()
	cc.Close()
	c.wg.Wait()
}

// grpcEndpoints is addr as the Endpoints of a request.
func grpcEndpoints(addr string) *v2.Endpoints {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	p, _ := strconv.Atoi(port)
	scheme := v2.AddressScheme_DOMAIN_NAME
	if ip := net.ParseIP(host); ip != nil {
		scheme = v2.AddressScheme_IPv4
		if ip.To4() == nil {
			scheme = v2.AddressScheme_IPv6
		}
	}
	return &v2.Endpoints{Scheme: scheme, Addresses: []*v2.Address{{Host: host, Port: int32(p)}}}
}

// grpcSendOutcome is how a SendMessage ended, for the history.
type grpcSendOutcome int

const (
	grpcSendOK grpcSendOutcome = iota
	grpcSendFail
	grpcSendInDoubt
)

// sendOne sends one message and returns the outcome, the stored offset
// (on OK) and why it did not succeed.
func (c *grpcClient) sendOne(ctx context.Context, timeout time.Duration, m *v2.Message) (grpcSendOutcome, int64, string) {
	cctx, cancel := context.WithTimeout(c.ctx(ctx), timeout)
	defer cancel()
	stub := c.conn()
	resp, err := stub.SendMessage(cctx, &v2.SendMessageRequest{Messages: []*v2.Message{m}})
	if err != nil {
		if unanswered(err) && ctx.Err() == nil {
			c.moveOn(stub)
		}
		if grpcNotSent(err) {
			return grpcSendFail, -1, err.Error()
		}
		return grpcSendInDoubt, -1, err.Error()
	}
	st := resp.GetStatus()
	if len(resp.GetEntries()) == 1 {
		st = resp.GetEntries()[0].GetStatus()
	}
	if st.GetCode() != v2.Code_OK {
		return grpcSendFail, -1, fmt.Sprintf("%v: %s", st.GetCode(), st.GetMessage())
	}
	if len(resp.GetEntries()) != 1 {
		return grpcSendInDoubt, -1, fmt.Sprintf("the answer has %d entries for one message", len(resp.GetEntries()))
	}
	return grpcSendOK, resp.GetEntries()[0].GetOffset(), ""
}

// grpcNotSent reports whether a call's error says the request never left
// the client: no connection could be made, so gRPC failed the call before
// writing any byte of it ("connection error: desc = ..." is the last
// connection attempt's failure; a call cut off after it was written ends
// with "transport is closing", "error reading from server" and the like).
func grpcNotSent(err error) bool {
	s, ok := status.FromError(err)
	if !ok || s.Code() != codes.Unavailable {
		return false
	}
	msg := s.Message()
	return strings.Contains(msg, "connection error") || strings.Contains(msg, "error while dialing") ||
		strings.Contains(msg, "connection refused")
}

// receive makes one ReceiveMessage call for group on topic and returns
// the messages it delivered; MESSAGE_NOT_FOUND is no error.
func (c *grpcClient) receive(ctx context.Context, group, topic string) ([]*v2.Message, error) {
	cctx, cancel := context.WithTimeout(c.ctx(ctx), grpcLongPoll+grpcRequestTimeout)
	defer cancel()
	stub := c.conn()
	stream, err := stub.ReceiveMessage(cctx, &v2.ReceiveMessageRequest{
		Group:             &v2.Resource{Name: group},
		MessageQueue:      &v2.MessageQueue{Topic: &v2.Resource{Name: topic}, Id: -1},
		FilterExpression:  &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "*"},
		BatchSize:         grpcReceiveBatch,
		InvisibleDuration: durationpb.New(grpcInvisible),
	})
	if err != nil {
		if unanswered(err) && ctx.Err() == nil {
			c.moveOn(stub)
		}
		return nil, err
	}
	var msgs []*v2.Message
	var st *v2.Status
	for {
		resp, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			// What was delivered before the break comes again once its
			// invisible time is over.
			if unanswered(err) && ctx.Err() == nil {
				c.moveOn(stub)
			}
			return msgs, err
		}
		switch x := resp.GetContent().(type) {
		case *v2.ReceiveMessageResponse_Status:
			st = x.Status
		case *v2.ReceiveMessageResponse_Message:
			msgs = append(msgs, x.Message)
		}
	}
	switch code := st.GetCode(); {
	case st == nil:
		return msgs, errors.New("the receive's answer has no status")
	case code == v2.Code_OK, code == v2.Code_MESSAGE_NOT_FOUND:
		return msgs, nil
	default:
		return msgs, fmt.Errorf("%v: %s", code, st.GetMessage())
	}
}

// ack acknowledges msgs of topic for group; an error leaves them to come
// again.
func (c *grpcClient) ack(ctx context.Context, group, topic string, msgs []*v2.Message) error {
	req := &v2.AckMessageRequest{Group: &v2.Resource{Name: group}, Topic: &v2.Resource{Name: topic},
		Entries: make([]*v2.AckMessageEntry, len(msgs))}
	for i, m := range msgs {
		req.Entries[i] = &v2.AckMessageEntry{MessageId: m.GetSystemProperties().GetMessageId(),
			ReceiptHandle: m.GetSystemProperties().GetReceiptHandle()}
	}
	cctx, cancel := context.WithTimeout(c.ctx(ctx), grpcRequestTimeout)
	defer cancel()
	resp, err := c.conn().AckMessage(cctx, req)
	if err != nil {
		return err
	}
	if st := resp.GetStatus(); st.GetCode() != v2.Code_OK {
		return fmt.Errorf("%v: %s", st.GetCode(), st.GetMessage())
	}
	return nil
}

// The grpc workload: the queue workload through the 5.x front. Producers
// send one message per SendMessage (the id as message id and key);
// consumers of one group receive (long polling) and acknowledge. The
// drain lets the consumers catch up until the group's consumer offset of
// every queue (the lowest offset not yet acknowledged, as the broker
// keeps it for pop groups) reaches the queue's max offset, then reads the
// queues over the remoting protocol as the other workloads' drains do.

func init() { register(grpcName, func() Workload { return &grpcWorkload{} }) }

const grpcName = "grpc"

type grpcWorkload struct {
	env          *Env
	topic, group string
	consumers    *background
}

func (w *grpcWorkload) Name() string { return grpcName }

func (w *grpcWorkload) Setup(ctx context.Context, env *Env) error {
	e, err := env.withDefaults()
	if err != nil {
		return err
	}
	if e.GRPC == "" {
		return errors.New("workload: grpc: Env.GRPC names no gRPC endpoint")
	}
	w.env, w.topic, w.group = e, e.Topic(grpcName), e.Group(grpcName)
	c := NewAdminClient(e, grpcName+"-setup")
	defer c.Close()
	return c.CreateTopic(ctx, w.topic, e.Queues, false)
}

// Run drives the producers until ctx ends; the consumers go on until
// Drain has caught up (or Close).
func (w *grpcWorkload) Run(ctx context.Context) error {
	if w.env == nil {
		return errors.New("workload: grpc: Run before Setup")
	}
	w.consumers = newBackground(context.WithoutCancel(ctx))
	for i := range w.env.Consumers {
		w.consumers.Go(func(ctx context.Context) { w.consume(ctx, i) })
	}
	var wg sync.WaitGroup
	for i := range w.env.Producers {
		wg.Go(func() { w.produce(ctx, i) })
	}
	wg.Wait()
	return nil
}

// grpcClientSeq makes the client ids of this process unique.
var grpcClientSeq atomic.Int64

// client dials the front for the process name with st.
func (w *grpcWorkload) client(name string, st *v2.Settings) (*grpcClient, error) {
	id := fmt.Sprintf("verify@%s@%s@%d", w.env.RunID, name, grpcClientSeq.Add(1))
	c, err := dialGRPC(w.env.Network(name), w.env.GRPC, id, st, w.env.grpcSecurity())
	if err != nil {
		return nil, err
	}
	c.startSession(w.env.sleep)
	return c, nil
}

// produce is producer i: one send after another at the env's rate.
func (w *grpcWorkload) produce(ctx context.Context, i int) {
	e := w.env
	name := producerName(grpcName, i)
	e.start(grpcName, name, history.RoleProducer)
	ptype := v2.ClientType_PRODUCER
	c, err := w.client(name, &v2.Settings{ClientType: &ptype,
		PubSub: &v2.Settings_Publishing{Publishing: &v2.Publishing{Topics: []*v2.Resource{{Name: w.topic}}}}})
	if err != nil {
		e.Logger.Error("grpc producer cannot start", "process", name, "err", err)
		return
	}
	defer c.close()
	pace := pacer{env: e, rate: e.Rate}
	fails := 0
	for n := 0; pace.wait(ctx); n++ {
		id := ID(e.RunID, grpcName, i, n)
		body := Body(id, e.BodyBytes)
		m := &v2.Message{Topic: &v2.Resource{Name: w.topic}, Body: body, SystemProperties: &v2.SystemProperties{
			MessageId: id, Keys: []string{id}, MessageType: v2.MessageType_NORMAL,
			BornTimestamp: timestamppb.New(e.Clock.Now()), BodyEncoding: v2.Encoding_IDENTITY,
		}}
		op := history.New(history.Invoke, history.Send)
		op.Workload, op.Process, op.ID, op.Topic, op.Sum = grpcName, name, id, w.topic, Sum(body)
		op.Group = e.GRPCGroup
		op = e.record(op)
		// A send in flight when the run ends is answered, so that it
		// has its outcome line.
		outcome, off, why := c.sendOne(context.WithoutCancel(ctx), e.SendTimeout, m)
		res := history.New(history.OK, history.Send)
		switch outcome {
		case grpcSendFail:
			res.Type = history.Fail
		case grpcSendInDoubt:
			res.Type = history.InDoubt
		}
		res.Workload, res.Process, res.ID, res.Topic, res.Group = grpcName, name, id, w.topic, e.GRPCGroup
		res.Offset, res.Latency = off, e.Clock.Now().Sub(op.Time)
		if why != "" {
			res.Error = errText(errors.New(why))
		}
		e.record(res)
		if outcome == grpcSendOK {
			fails = 0
			continue
		}
		fails++
		if !e.sleep(ctx, backoff(fails)) {
			return
		}
	}
}

// consumerSettings are a simple consumer's Settings for the group.
func (w *grpcWorkload) consumerSettings() *v2.Settings {
	ctype := v2.ClientType_SIMPLE_CONSUMER
	return &v2.Settings{ClientType: &ctype, PubSub: &v2.Settings_Subscription{Subscription: &v2.Subscription{
		Group: &v2.Resource{Name: w.group}, LongPollingTimeout: durationpb.New(grpcLongPoll),
		Subscriptions: []*v2.SubscriptionEntry{{Topic: &v2.Resource{Name: w.topic},
			Expression: &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "*"}}},
	}}}
}

// consume is consumer i: receive, record, acknowledge, until ctx ends.
func (w *grpcWorkload) consume(ctx context.Context, i int) {
	e := w.env
	name := grpcName + "-c" + itoa(i)
	e.start(grpcName, name, history.RoleConsumer)
	c, err := w.client(name, w.consumerSettings())
	if err != nil {
		e.Logger.Error("grpc consumer cannot start", "process", name, "err", err)
		return
	}
	defer c.close()
	fails := 0
	for ctx.Err() == nil {
		msgs, err := c.receive(ctx, w.group, w.topic)
		for _, m := range msgs {
			e.record(grpcDeliver(m, name, w.topic))
		}
		if len(msgs) > 0 {
			// What was received is acknowledged even when the run just
			// ended; a lost ack only brings the messages again.
			if aerr := c.ack(context.WithoutCancel(ctx), w.group, w.topic, msgs); aerr != nil && err == nil {
				err = aerr
			}
		}
		if err == nil || ctx.Err() != nil {
			fails = 0
			continue
		}
		e.Logger.Debug("grpc consumer error", "process", name, "err", err)
		fails++
		e.sleep(ctx, backoff(fails))
	}
}

// grpcDeliver is the Deliver line of a message received over gRPC.
func grpcDeliver(m *v2.Message, process, topic string) history.Op {
	sp := m.GetSystemProperties()
	rc := receive(m.GetBody(), func() string {
		if k := sp.GetKeys(); len(k) > 0 {
			return k[0]
		}
		return ""
	})
	offset := int64(-1)
	if sp.QueueOffset != nil {
		offset = sp.GetQueueOffset()
	}
	return rc.op(history.Deliver, grpcName, process, topic, sp.GetQueueId(), offset)
}

// Drain lets the consumers catch up until the group's committed offset
// of every queue (the lowest offset it has not acknowledged) reaches the
// queue's max offset as it is now, stops them, then reads the topic's
// queues from their min offsets over the remoting protocol (DrainRead).
// Consumers that do not catch up do not end the drain: what they did not
// get is what the checker reports as undelivered.
func (w *grpcWorkload) Drain(ctx context.Context) error {
	if w.env == nil || w.consumers == nil {
		return errors.New("workload: grpc: Drain before Run")
	}
	c := NewClient(w.env, grpcName+"-drain")
	err := awaitOffsets(ctx, w.env, c, w.topic, w.group)
	c.Close()
	w.consumers.stop()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("workload %s: %w", grpcName, err)
		}
		w.env.Logger.Warn("consumers did not catch up", "workload", grpcName, "err", err)
	}
	if err := DrainRead(ctx, w.env, grpcName, w.topic); err != nil {
		return fmt.Errorf("workload %s: %w", grpcName, err)
	}
	return nil
}

func (w *grpcWorkload) Close() error {
	w.consumers.stop()
	return nil
}

// grpcCatchUpStall is how long the group's committed offsets may stand
// still, short of the max offsets, before the catch-up gives up (a
// message retried to the group's dead-letter queue, say, holds a pop
// group's offset back for good).
const grpcCatchUpStall = 15 * time.Second

// awaitOffsets takes the max offset of every queue of topic now and waits
// until group's committed offset of each reaches it (or ctx ends).
func awaitOffsets(ctx context.Context, e *Env, c *Client, topic, group string) error {
	_, want, err := MaxOffsets(ctx, e, c, topic)
	if err != nil {
		return err
	}
	r, err := c.Route(ctx, topic, false) // MaxOffsets' (cached)
	if err != nil {
		return err
	}
	var progress int64 = -1
	lastMove := e.Clock.Now()
	for n := 1; ; n++ {
		behind := 0
		var sum int64
		for q, m := range want {
			if m <= 0 {
				continue // an empty queue: nothing to catch up with (and no offset to commit)
			}
			off, err := c.QueryOffset(ctx, r.Addr(q), group, q)
			if err != nil || off < m {
				behind++
			}
			sum += max(off, 0)
		}
		if behind == 0 {
			return nil
		}
		if sum != progress {
			progress, lastMove = sum, e.Clock.Now()
		} else if e.Clock.Now().Sub(lastMove) > grpcCatchUpStall {
			return fmt.Errorf("workload: group %s stalled %d queues short of the max offsets of %s for %v", group, behind, topic, grpcCatchUpStall)
		}
		if !e.sleep(ctx, min(backoff(n), 100*time.Millisecond)) {
			return fmt.Errorf("workload: group %s did not catch up with %s (%d queues behind): %w", group, topic, behind, ctx.Err())
		}
	}
}
