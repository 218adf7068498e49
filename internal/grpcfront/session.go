package grpcfront

// Client sessions: Heartbeat, Telemetry (the Settings handshake and
// server-pushed commands), NotifyClientTermination and expiry.
//
// A client is known by its x-mq-client-id from its first Settings on a
// Telemetry stream. Each known client has a connection the broker
// registered (broker.RegisterConn, idle timeout ClientExpiry) and under
// whose id it is in the broker's client table: producers under their
// publishing topics (the producer group of a 5.x transactional message is
// its topic, as in the Java proxy), simple consumers under their group.
// Client traffic touches the registration (broker.TouchConn). It ends
// (broker.ConnClosed) when the client's Telemetry stream ends or on
// NotifyClientTermination; when the client has been silent for
// ClientExpiry the broker expires it and tells the session's handler.

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"slices"
	"sync"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/petrelmq/petrel/internal/broker"
)

// maxClients bounds the known clients; Settings from more are refused.
const maxClients = 100_000

// outboxLen bounds the commands queued for one Telemetry stream; a push
// to a full outbox is refused (the broker checks the transaction again
// later).
const outboxLen = 64

// Settings the server sends.
const (
	// defaultLongPoll is the longest a receive is held when the client's
	// Settings name no long-polling timeout (Java's maximum).
	defaultLongPoll = 20 * time.Second
	// receiveBatchSize is the batch size reported to consumers (Java's).
	receiveBatchSize = 32
)

// FIFOAttribute, set to "true" in a subscription group's attributes, is
// the old spelling of the group config's ConsumeMessageOrderly (RocketMQ
// 5's consumeMessageOrderly, set with `petrel group create --orderly`); a
// group with either consumes in order.
const FIFOAttribute = "consumeMessageOrderly"

// client is one client instance's session.
type client struct {
	id        string
	conn      uint64
	namespace string
	typ       v2.ClientType
	group     string   // stored name (namespace applied); consumers only
	topics    []string // stored names: a producer's publishing topics, sorted
	subs      []broker.Subscription
	settings  *v2.Settings // as last received
	addr      string       // host:port of its Telemetry stream's peer
	stream    *telemetryStream
}

// telemetryStream is one open Telemetry stream; commands for the client
// go through its outbox to the handler goroutine, the stream's only
// writer.
type telemetryStream struct {
	outbox chan *v2.TelemetryCommand
	addr   string // the client's address (host:port), "" when unknown
	remote netip.AddrPort
}

type sessions struct {
	s      *Server
	mu     sync.Mutex
	byID   map[string]*client
	byConn map[uint64]*client // by the broker's connection id
	limit  int                // maxClients; tests lower it
	closed bool
}

func (ss *sessions) init(s *Server) {
	ss.s = s
	ss.byID = make(map[string]*client)
	ss.byConn = make(map[uint64]*client)
	ss.limit = maxClients
}

// sessionConn is the broker's handler of one session's connection.
type sessionConn struct {
	ss   *sessions
	conn uint64 // set under ss.mu once registered; read under it
}

// CheckTransaction sends the check-back on the session's Telemetry stream.
func (h *sessionConn) CheckTransaction(chk broker.TransactionCheck) bool {
	return h.ss.s.sendCheck(chk)
}

// NotifyConsumerIDsChanged does nothing: 5.x consumers do not rebalance
// on the broker's word (simple consumers pop from every queue).
func (h *sessionConn) NotifyConsumerIDsChanged(string) {}

// Expired forgets the session the broker expired after ClientExpiry of
// silence (its broker registrations are gone already).
func (h *sessionConn) Expired() {
	ss := h.ss
	ss.mu.Lock()
	c := ss.byConn[h.conn]
	if c != nil {
		ss.removeLocked(c)
	}
	ss.mu.Unlock()
	if c != nil {
		ss.s.log.Debug("gRPC client expired", "client_id", c.id, "conn", c.conn)
	}
}

// removeLocked forgets c; mu is held. The caller tells the broker.
func (ss *sessions) removeLocked(c *client) {
	if ss.byID[c.id] == c {
		delete(ss.byID, c.id)
	}
	delete(ss.byConn, c.conn)
}

// drop forgets the client with this id (if it is still c, when c is
// non-nil) and ends its broker registration.
func (ss *sessions) drop(id string, only *client) bool {
	ss.mu.Lock()
	c := ss.byID[id]
	if c == nil || (only != nil && c != only) {
		ss.mu.Unlock()
		return false
	}
	ss.removeLocked(c)
	ss.mu.Unlock()
	ss.s.b.ConnClosed(c.conn)
	ss.s.renew.dropClient(id)
	return true
}

// close drops every client (Shutdown).
func (ss *sessions) close() {
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return
	}
	ss.closed = true
	var conns []uint64
	for _, c := range ss.byID {
		conns = append(conns, c.conn)
	}
	ss.byID = map[string]*client{}
	ss.byConn = map[uint64]*client{}
	ss.mu.Unlock()
	for _, conn := range conns {
		ss.s.b.ConnClosed(conn)
	}
}

// touch marks the client alive (its broker registration's idle timeout
// starts again) and returns a copy of its state, or false when it is
// unknown, also to the broker (expired a moment ago).
func (ss *sessions) touch(id string) (client, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	c := ss.byID[id]
	if c == nil {
		return client{}, false
	}
	if !ss.s.b.TouchConn(c.conn) {
		ss.removeLocked(c)
		return client{}, false
	}
	return *c, true
}

// get returns a copy of the client's state.
func (ss *sessions) get(id string) (client, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	c := ss.byID[id]
	if c == nil {
		return client{}, false
	}
	return *c, true
}

// Refusals of applySettings.
var (
	errTooManyClients = errors.New("grpcfront: too many clients")
	errClosed         = errors.New("grpcfront: shut down")
)

// applySettings creates or updates the client from its Settings, attaches
// stream, and returns the copy to register with the broker. It fails when
// the server is shutting down, or with errTooManyClients.
func (ss *sessions) applySettings(id, namespace string, st *v2.Settings, stream *telemetryStream) (client, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return client{}, errClosed
	}
	c := ss.byID[id]
	if c != nil && !ss.s.b.TouchConn(c.conn) {
		// Expired by the broker a moment ago: start afresh.
		ss.removeLocked(c)
		c = nil
	}
	if c == nil && len(ss.byID) >= ss.limit {
		return client{}, errTooManyClients
	}
	if c == nil {
		info := broker.ConnInfo{Protocol: broker.ProtocolGRPC, ClientID: id, IdleTimeout: ss.s.cfg.ClientExpiry}
		if stream != nil {
			info.Remote = stream.remote
		}
		h := &sessionConn{ss: ss}
		h.conn = ss.s.b.RegisterConn(info, h)
		c = &client{id: id, conn: h.conn}
		ss.byID[id] = c
		ss.byConn[c.conn] = c
	}
	c.namespace = namespace
	c.settings = st
	c.stream = stream
	if stream != nil && stream.addr != "" {
		c.addr = stream.addr
	}
	if st.ClientType != nil {
		c.typ = *st.ClientType
	}
	switch ps := st.PubSub.(type) {
	case *v2.Settings_Publishing:
		var topics []string
		for _, r := range ps.Publishing.GetTopics() {
			if r.GetName() != "" {
				topics = append(topics, storedName(r))
			}
		}
		c.topics = mergeTopics(c.topics, topics)
	case *v2.Settings_Subscription:
		sub := ps.Subscription
		if g := sub.GetGroup(); g.GetName() != "" {
			c.group = storedName(g)
		}
		c.subs = c.subs[:0:0]
		for _, e := range sub.GetSubscriptions() {
			if e.GetTopic().GetName() == "" {
				continue
			}
			typ, expr := filterOf(e.GetExpression())
			c.subs = append(c.subs, broker.Subscription{Topic: storedName(e.GetTopic()), Expression: expr, ExpressionType: typ})
		}
	}
	return *c, nil
}

// addTopic adds a publishing topic to a producer (a transactional send to
// a topic its Settings did not list) and reports whether it was new.
func (ss *sessions) addTopic(id, topic string) (client, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	c := ss.byID[id]
	if c == nil || slices.Contains(c.topics, topic) {
		return client{}, false
	}
	c.topics = mergeTopics(c.topics, []string{topic})
	return *c, true
}

func mergeTopics(have, more []string) []string {
	out := append(slices.Clone(have), more...)
	slices.Sort(out)
	return slices.Compact(out)
}

// register (re)registers the client with the broker's client table; it
// also refreshes the registration's expiry there.
func (s *Server) register(c client) {
	hb := broker.Heartbeat{ClientID: c.id}
	switch c.typ {
	case v2.ClientType_PRODUCER:
		hb.Producers = c.topics
	case v2.ClientType_SIMPLE_CONSUMER, v2.ClientType_PUSH_CONSUMER:
		if c.group == "" {
			return
		}
		ua := c.settings.GetUserAgent()
		hb.Consumers = []broker.ConsumerData{{Group: c.group, ConsumeType: "CONSUME_POP", MessageModel: "CLUSTERING",
			ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET", Subscriptions: c.subs,
			Language: languageCode(ua.GetLanguage()), Version: clientVersion(ua.GetVersion()), ClientAddr: c.addr}}
	default:
		return
	}
	s.b.Heartbeat(c.conn, hb)
}

// Heartbeat keeps a known client alive. An unknown client id gets
// UNRECOGNIZED_CLIENT_TYPE, on which the client sends its Settings again
// (on a new Telemetry stream if it lost its old one).
func (s *Server) Heartbeat(ctx context.Context, req *v2.HeartbeatRequest) (*v2.HeartbeatResponse, error) {
	id := header(ctx, headerClientID)
	if id == "" {
		return &v2.HeartbeatResponse{Status: status(v2.Code_CLIENT_ID_REQUIRED, "the request has no %s header; send the client id with every call", headerClientID)}, nil
	}
	c, ok := s.sessions.touch(id)
	if !ok {
		return &v2.HeartbeatResponse{Status: status(v2.Code_UNRECOGNIZED_CLIENT_TYPE,
			"client %s is not known to this broker (no Settings received, or it was dropped after %v of silence); send Settings on a Telemetry stream first", id, s.cfg.ClientExpiry)}, nil
	}
	s.register(c)
	return &v2.HeartbeatResponse{Status: okStatus()}, nil
}

// NotifyClientTermination forgets the client and ends its broker
// registration. (The Go client v5.1.2 never sends it; others do.)
func (s *Server) NotifyClientTermination(ctx context.Context, req *v2.NotifyClientTerminationRequest) (*v2.NotifyClientTerminationResponse, error) {
	id := header(ctx, headerClientID)
	if id == "" {
		return &v2.NotifyClientTerminationResponse{Status: status(v2.Code_CLIENT_ID_REQUIRED, "the request has no %s header; send the client id with every call", headerClientID)}, nil
	}
	if !s.sessions.drop(id, nil) {
		return &v2.NotifyClientTerminationResponse{Status: status(v2.Code_UNRECOGNIZED_CLIENT_TYPE, "client %s is not known to this broker; nothing to terminate", id)}, nil
	}
	s.log.Debug("gRPC client terminated", "client_id", id)
	return &v2.NotifyClientTerminationResponse{Status: okStatus()}, nil
}

// Telemetry serves a client's command stream: Settings are stored and
// answered with the server's settings; the server pushes transaction
// check-backs. The stream stays open until the client closes it or the
// server shuts down; its end drops the client.
func (s *Server) Telemetry(stream v2.MessagingService_TelemetryServer) error {
	ctx := stream.Context()
	if s.cfg.Auth != nil {
		// A caller that is not a user gets nothing of the stream; one
		// that is is checked again on every command (auth.go), as its
		// user or policies may change while the stream is open.
		if _, ref := s.authenticate(ctx, "Telemetry"); ref != nil {
			return stream.Send(&v2.TelemetryCommand{Status: refusalStatus(ref)})
		}
	}
	id := header(ctx, headerClientID)
	if id == "" {
		return stream.Send(&v2.TelemetryCommand{Status: status(v2.Code_CLIENT_ID_REQUIRED, "the stream has no %s header; send the client id", headerClientID),
			Command: &v2.TelemetryCommand_Settings{Settings: &v2.Settings{}}})
	}
	ns := header(ctx, headerNamespace)
	ts := &telemetryStream{outbox: make(chan *v2.TelemetryCommand, outboxLen)}
	if ap := bornHost(ctx); ap.IsValid() {
		ts.addr, ts.remote = ap.String(), ap
	}

	in := make(chan *v2.TelemetryCommand)
	recvErr := make(chan error, 1)
	go func() {
		for {
			cmd, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case in <- cmd:
			case <-ctx.Done():
				recvErr <- ctx.Err()
				return
			}
		}
	}()
	var attached bool
	defer func() {
		if !attached {
			return
		}
		s.sessions.mu.Lock()
		c := s.sessions.byID[id]
		mine := c != nil && c.stream == ts
		s.sessions.mu.Unlock()
		if mine && s.sessions.drop(id, c) {
			s.log.Debug("gRPC client left: its Telemetry stream ended", "client_id", id)
		}
	}()
	for {
		select {
		case cmd := <-in:
			var reply *v2.TelemetryCommand
			if st := s.checkTelemetry(ctx, cmd); st != nil {
				// Refused as RocketMQ's proxy refuses a command: a status
				// alone; Settings refused are not applied.
				reply = &v2.TelemetryCommand{Status: st}
			} else {
				reply = s.onTelemetry(id, ns, cmd, ts)
			}
			if reply == nil {
				continue
			}
			if _, ok := reply.Command.(*v2.TelemetryCommand_Settings); ok {
				attached = true
			}
			if err := stream.Send(reply); err != nil {
				return nil
			}
		case cmd := <-ts.outbox:
			if err := stream.Send(cmd); err != nil {
				return nil
			}
		case err := <-recvErr:
			if !errors.Is(err, io.EOF) {
				s.log.Debug("gRPC Telemetry stream ended", "client_id", id, "err", err)
			}
			return nil
		case <-s.stop.Done():
			return nil
		}
	}
}

// onTelemetry handles one command from the client and returns the reply,
// if any.
func (s *Server) onTelemetry(id, ns string, cmd *v2.TelemetryCommand, ts *telemetryStream) *v2.TelemetryCommand {
	switch c := cmd.Command.(type) {
	case *v2.TelemetryCommand_Settings:
		st := c.Settings
		if st == nil {
			return nil
		}
		cl, err := s.sessions.applySettings(id, ns, st, ts)
		if errors.Is(err, errTooManyClients) {
			s.sessions.mu.Lock()
			limit := s.sessions.limit
			s.sessions.mu.Unlock()
			s.log.Warn("gRPC client refused: too many clients", "client_id", id, "limit", limit)
			return &v2.TelemetryCommand{Status: status(v2.Code_TOO_MANY_REQUESTS,
				"this broker already serves %d clients, its limit; retry later or use another broker", limit),
				Command: &v2.TelemetryCommand_Settings{Settings: s.replySettings(st)}}
		}
		if err != nil {
			return nil
		}
		s.register(cl)
		return &v2.TelemetryCommand{Status: okStatus(), Command: &v2.TelemetryCommand_Settings{Settings: s.replySettings(st)}}
	default:
		// Replies to commands this server never sends (thread stack
		// traces, message verification), and anything unknown: a live
		// client, nothing to do.
		s.sessions.touch(id)
		return nil
	}
}

// replySettings is the server's answer to a client's Settings: the
// client's own with the publishing or subscription part the server
// decides.
func (s *Server) replySettings(in *v2.Settings) *v2.Settings {
	out := &v2.Settings{
		ClientType:     in.ClientType,
		AccessPoint:    in.AccessPoint,
		RequestTimeout: in.RequestTimeout,
		UserAgent:      in.UserAgent,
		// No Metric: the Go client v5.1.2 replaces its meter on every
		// reply that has one, racing with its sends; left out, its
		// metrics stay off.
	}
	switch ps := in.PubSub.(type) {
	case *v2.Settings_Publishing:
		if in.GetUserAgent().GetLanguage() != v2.Language_GOLANG {
			// Not to the Go client v5.1.2: it writes a received
			// exponential back-off into the settings it is marshalling
			// for its next sync (a data race); it keeps its own.
			out.BackoffPolicy = producerBackoff(in.GetBackoffPolicy().GetMaxAttempts())
		}
		out.PubSub = &v2.Settings_Publishing{Publishing: &v2.Publishing{
			Topics:              ps.Publishing.GetTopics(),
			MaxBodySize:         s.maxBodySize(),
			ValidateMessageType: !s.b.Config().NoTopicMessageTypeCheck,
		}}
	case *v2.Settings_Subscription:
		sub := ps.Subscription
		fifo, attempts := false, s.defaultMaxAttempts()
		backoff := &v2.RetryPolicy{MaxAttempts: attempts, Strategy: &v2.RetryPolicy_CustomizedBackoff{
			CustomizedBackoff: &v2.CustomizedBackoff{Next: consumerBackoff()}}}
		if g := sub.GetGroup(); g.GetName() != "" {
			fifo, attempts = s.groupPolicy(storedName(g))
			backoff = s.groupBackoff(storedName(g), attempts)
		}
		longPoll := sub.GetLongPollingTimeout()
		if longPoll == nil || longPoll.AsDuration() <= 0 {
			longPoll = durationpb.New(defaultLongPoll)
		}
		out.BackoffPolicy = backoff
		out.PubSub = &v2.Settings_Subscription{Subscription: &v2.Subscription{
			Group:              sub.Group,
			Subscriptions:      sub.Subscriptions,
			Fifo:               &fifo,
			ReceiveBatchSize:   ptr(int32(receiveBatchSize)),
			LongPollingTimeout: longPoll,
		}}
	default:
		out.PubSub = in.PubSub
	}
	return out
}

// maxBodySize is the broker's body limit as Publishing.max_body_size:
// never 0, which would make the client refuse every send.
func (s *Server) maxBodySize() int32 {
	n := s.b.Config().MaxMessageBytes
	if n <= 0 {
		n = 4 << 20
	}
	return int32(min(n, 1<<31-1))
}

// producerBackoff is Java's default: 10 ms doubling up to 1 s (the client
// sleeps it only after TOO_MANY_REQUESTS). The client's own max attempts
// are echoed; it ignores the value.
func producerBackoff(attempts int32) *v2.RetryPolicy {
	if attempts <= 0 {
		attempts = 3
	}
	return &v2.RetryPolicy{MaxAttempts: attempts, Strategy: &v2.RetryPolicy_ExponentialBackoff{ExponentialBackoff: &v2.ExponentialBackoff{
		Initial: durationpb.New(10 * time.Millisecond), Max: durationpb.New(time.Second), Multiplier: 2}}}
}

// consumerBackoff is RocketMQ's retry schedule of push consumers (1 s 5 s
// 10 s 30 s 1 m ... 2 h). Simple consumers get no server back-off: a
// message becomes visible again when its invisible time ends.
func consumerBackoff() []*durationpb.Duration {
	levels := broker.DefaultDelayLevels
	out := make([]*durationpb.Duration, len(levels))
	for i, d := range levels {
		out[i] = durationpb.New(d)
	}
	return out
}

// groupPolicy returns whether the group consumes in order (its
// ConsumeMessageOrderly, or the older FIFOAttribute) and its maximum
// delivery attempts (RetryMaxTimes + 1, as RocketMQ's proxy: 0 retries is
// one attempt). An unknown group has the broker's defaults. The config is
// read on every call, so a change reaches running members at once.
func (s *Server) groupPolicy(group string) (fifo bool, maxAttempts int32) {
	g, ok := s.b.Group(group)
	if !ok {
		return false, s.defaultMaxAttempts()
	}
	return g.ConsumeMessageOrderly || g.Attributes[FIFOAttribute] == "true", max(g.RetryMaxTimes, 0) + 1
}

// groupBackoff is the consumer back-off of the group's retry policy, as
// RocketMQ's proxy sends it: EXPONENTIAL as an exponential back-off
// (RocketMQ's 5 s doubling up to 2 h when it names no values), otherwise
// customized steps (the default delay levels when it names none).
func (s *Server) groupBackoff(group string, attempts int32) *v2.RetryPolicy {
	out := &v2.RetryPolicy{MaxAttempts: attempts}
	g, _ := s.b.Group(group)
	p := g.GroupRetryPolicy
	switch {
	case p != nil && p.Type == "EXPONENTIAL":
		e := broker.ExponentialRetry{Initial: 5000, Max: 2 * 3600 * 1000, Multiplier: 2}
		if p.Exponential != nil {
			e = *p.Exponential
		}
		out.Strategy = &v2.RetryPolicy_ExponentialBackoff{ExponentialBackoff: &v2.ExponentialBackoff{
			Initial: durationpb.New(time.Duration(e.Initial) * time.Millisecond), Max: durationpb.New(time.Duration(e.Max) * time.Millisecond),
			Multiplier: float32(e.Multiplier)}}
	case p != nil && p.Customized != nil && len(p.Customized.Next) > 0:
		next := make([]*durationpb.Duration, len(p.Customized.Next))
		for i, ms := range p.Customized.Next {
			next[i] = durationpb.New(time.Duration(ms) * time.Millisecond)
		}
		out.Strategy = &v2.RetryPolicy_CustomizedBackoff{CustomizedBackoff: &v2.CustomizedBackoff{Next: next}}
	default:
		out.Strategy = &v2.RetryPolicy_CustomizedBackoff{CustomizedBackoff: &v2.CustomizedBackoff{Next: consumerBackoff()}}
	}
	return out
}

// pushGroupSettings is the broker's OnGroupChanged hook: every connected
// 5.x consumer of the group gets its settings again on its Telemetry
// stream (fifo and max attempts as the new config has them), as the reply
// to a Settings it sent would carry them. A client whose command queue is
// full is skipped; it reads the new config at its next Settings sync.
func (s *Server) pushGroupSettings(group string) {
	type target struct {
		id       string
		settings *v2.Settings
		stream   *telemetryStream
	}
	var targets []target
	s.sessions.mu.Lock()
	for _, c := range s.sessions.byID {
		if c.group == group && c.stream != nil && c.settings != nil && c.settings.GetSubscription() != nil {
			targets = append(targets, target{c.id, c.settings, c.stream})
		}
	}
	s.sessions.mu.Unlock()
	for _, t := range targets {
		cmd := &v2.TelemetryCommand{Status: okStatus(), Command: &v2.TelemetryCommand_Settings{Settings: s.replySettings(t.settings)}}
		select {
		case t.stream.outbox <- cmd:
			s.log.Debug("group settings pushed", "group", group, "client_id", t.id)
		default:
			s.log.Warn("group settings not pushed: the client's command queue is full", "group", group, "client_id", t.id, "limit", outboxLen)
		}
	}
}

func (s *Server) defaultMaxAttempts() int32 { return s.b.Config().DefaultMaxReconsumeTimes + 1 }

// sendCheck sends a check-back the broker routed to one of this front's
// sessions on its Telemetry stream as a RecoverOrphanedTransactionCommand.
// False for a connection without a session, a client without a stream, or
// a full outbox.
func (s *Server) sendCheck(chk broker.TransactionCheck) bool {
	s.sessions.mu.Lock()
	c := s.sessions.byConn[chk.Conn]
	var ts *telemetryStream
	ns := ""
	if c != nil {
		ts, ns = c.stream, c.namespace
	}
	s.sessions.mu.Unlock()
	if ts == nil {
		return false
	}
	msg, err := checkMessage(chk, ns)
	if err != nil {
		s.log.Warn("cannot build a transaction check-back", "group", chk.Group, "err", err)
		return false
	}
	// The transaction id is the half's __transactionId__ (its UNIQ_KEY),
	// the one the send answered; a half stored without it is named by
	// its message id.
	id := chk.Header.TransactionID
	if id == "" {
		id = msg.GetSystemProperties().GetMessageId()
	}
	cmd := &v2.TelemetryCommand{Status: okStatus(), Command: &v2.TelemetryCommand_RecoverOrphanedTransactionCommand{
		RecoverOrphanedTransactionCommand: &v2.RecoverOrphanedTransactionCommand{
			Message:       msg,
			TransactionId: id,
		}}}
	select {
	case ts.outbox <- cmd:
		return true
	default:
		s.log.Debug("transaction check-back not sent: the client's command queue is full", "conn", chk.Conn, "limit", outboxLen)
		return false
	}
}

func ptr[T any](v T) *T { return &v }
