package grpcfront

// Simple consumers: ReceiveMessage (a long-polled pop of the whole topic
// for the group), AckMessage, ChangeInvisibleDuration and
// ForwardMessageToDeadLetterQueue, all through the broker's pop API. The
// receipt handle is the broker's, passed through untouched.
//
// ReceiveMessage answers on its stream, as the Java proxy does:
//
//	messages found:  {status OK}, {message}..., {delivery_timestamp}
//	none in time:    {status MESSAGE_NOT_FOUND}, {delivery_timestamp}
//	refused:         {status <code>}

import (
	"context"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/petrelmq/petrel/internal/broker"
)

// Limits of invisible durations.
const (
	// minInvisible is the shortest invisible time a receive may ask for
	// (Java requires 10 s; tests use short ones).
	minInvisible = time.Second
	// maxInvisible is the longest invisible time (Java's 12 h).
	maxInvisible = 12 * time.Hour
	// rehide is how long messages a receive could not hand over stay
	// invisible (Java's 1 s).
	rehide = time.Second
	// maxReceiveBatch caps a receive's batch (the broker's cap too).
	maxReceiveBatch = 32
	// maxAckBatch bounds the entries of one AckMessage (the Go client
	// sends one per message).
	maxAckBatch = 1024
)

// pollWait is how long a receive may wait for messages: the client's
// long-polling timeout (or defaultLongPoll), but ending a margin before
// the call's deadline so the answer arrives in time. The margin is half
// the client's request timeout, at least 500 ms.
func pollWait(longPoll, requestTimeout time.Duration, deadline time.Time, hasDeadline bool, now time.Time) time.Duration {
	if longPoll <= 0 {
		longPoll = defaultLongPoll
	}
	if !hasDeadline {
		return longPoll
	}
	margin := max(requestTimeout/2, 500*time.Millisecond)
	return max(min(longPoll, deadline.Sub(now)-margin), 0)
}

// ReceiveMessage pops up to batch_size messages of the request's topic
// for its group, waiting up to the long-polling window for one.
func (s *Server) ReceiveMessage(req *v2.ReceiveMessageRequest, stream v2.MessagingService_ReceiveMessageServer) error {
	send := func(st *v2.Status) error {
		return stream.Send(&v2.ReceiveMessageResponse{Content: &v2.ReceiveMessageResponse_Status{Status: st}})
	}
	if s.cfg.Auth != nil {
		if st := s.check(stream.Context(), "ReceiveMessage", receiveNeeds(req)); st != nil {
			return send(st)
		}
	}
	pr, topic, st := s.popRequest(stream.Context(), req)
	if st != nil {
		return send(st)
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	stopWatch := context.AfterFunc(s.stop, cancel) // Shutdown answers parked receives
	defer stopWatch()

	got, err := s.pop.Pop(ctx, pr)
	if err != nil {
		if len(got) == 0 && ctx.Err() != nil {
			return s.noMessage(stream)
		}
		s.rehide(pr, got)
		return send(s.receiveStatus(err))
	}
	if len(got) == 0 {
		return s.noMessage(stream)
	}
	if err := send(okStatus()); err != nil {
		s.rehide(pr, got)
		return nil
	}
	now := s.clk.Now()
	client := header(stream.Context(), headerClientID)
	for i, p := range got {
		if err := stream.Send(&v2.ReceiveMessageResponse{Content: &v2.ReceiveMessageResponse_Message{Message: delivered(p, topic, now)}}); err != nil {
			s.rehide(pr, got[i:])
			return nil
		}
		if req.GetAutoRenew() {
			s.renew.add(client, pr.Group, pr.Topic, p.Handle, now)
		}
	}
	_ = stream.Send(&v2.ReceiveMessageResponse{Content: &v2.ReceiveMessageResponse_DeliveryTimestamp{DeliveryTimestamp: timestamppb.New(s.clk.Now())}})
	return nil
}

// noMessage answers an empty receive.
func (s *Server) noMessage(stream v2.MessagingService_ReceiveMessageServer) error {
	if err := stream.Send(&v2.ReceiveMessageResponse{Content: &v2.ReceiveMessageResponse_Status{
		Status: status(v2.Code_MESSAGE_NOT_FOUND, "no new message; receive again")}}); err != nil {
		return nil
	}
	_ = stream.Send(&v2.ReceiveMessageResponse{Content: &v2.ReceiveMessageResponse_DeliveryTimestamp{DeliveryTimestamp: timestamppb.New(s.clk.Now())}})
	return nil
}

// rehide makes popped messages the client never got visible again soon.
func (s *Server) rehide(pr *broker.PopRequest, ps []broker.PoppedMessage) {
	for _, p := range ps {
		if _, err := s.pop.ChangeInvisible(pr.Group, pr.Topic, p.Handle, rehide); err != nil {
			s.log.Debug("a received message the client did not get stays invisible until its time", "group", pr.Group, "topic", pr.Topic, "err", err)
		}
	}
}

// popRequest validates a receive and builds the broker's pop request;
// topic is the resource to name in delivered messages.
func (s *Server) popRequest(ctx context.Context, req *v2.ReceiveMessageRequest) (*broker.PopRequest, *v2.Resource, *v2.Status) {
	group, st := checkGroup(req.GetGroup())
	if st != nil {
		return nil, nil, st
	}
	topicRes := req.GetMessageQueue().GetTopic()
	topic, st := checkTopic(topicRes)
	if st != nil {
		return nil, nil, st
	}
	// A slave that forwards leaves an unknown topic to its master, whose
	// table is the source (it answers TOPIC_NOT_EXIST itself).
	if _, ok := s.b.Topic(topic); !ok && !s.forwarding() {
		return nil, nil, status(v2.Code_TOPIC_NOT_FOUND, "topic %q does not exist on broker %s; query its route or create it first", topic, s.b.Config().BrokerName)
	}
	typ, expr := filterOf(req.GetFilterExpression())
	if typ == "" {
		return nil, nil, status(v2.Code_ILLEGAL_FILTER_EXPRESSION, "filter type %v is not TAG or SQL", req.GetFilterExpression().GetType())
	}
	// A push consumer asks for auto_renew and names no invisible time:
	// the server hides its messages and renews them (renew.go).
	invisible := autoRenewInvisible
	if !req.GetAutoRenew() {
		inv := req.GetInvisibleDuration()
		if inv == nil {
			return nil, nil, status(v2.Code_ILLEGAL_INVISIBLE_TIME, "the receive has no invisible duration; set one between %v and %v, or auto_renew", minInvisible, maxInvisible)
		}
		if d := inv.AsDuration(); d < minInvisible || d > maxInvisible {
			return nil, nil, status(v2.Code_ILLEGAL_INVISIBLE_TIME, "invisible duration %v is outside %v..%v", d, minInvisible, maxInvisible)
		}
		invisible = inv.AsDuration()
	}
	batch := req.GetBatchSize()
	if batch <= 0 {
		return nil, nil, status(v2.Code_BAD_REQUEST, "batch size %d must be positive", batch)
	}
	fifo, attempts := s.groupPolicy(group)
	var longPoll, reqTimeout time.Duration
	if c, ok := s.sessions.get(header(ctx, headerClientID)); ok && c.settings != nil {
		if sub := c.settings.GetSubscription(); sub != nil {
			longPoll = sub.GetLongPollingTimeout().AsDuration()
		}
		reqTimeout = c.settings.GetRequestTimeout().AsDuration()
	}
	if reqTimeout <= 0 {
		reqTimeout = 3 * time.Second
	}
	deadline, hasDeadline := ctx.Deadline()
	return &broker.PopRequest{
		Group:          group,
		Topic:          topic,
		Expression:     expr,
		ExpressionType: typ,
		MaxMsgs:        int(min(batch, maxReceiveBatch)),
		Invisible:      invisible,
		// The deadline is the client's, in real time.
		Wait:        pollWait(longPoll, reqTimeout, deadline, hasDeadline, time.Now()),
		FIFO:        fifo,
		MaxAttempts: int(attempts),
	}, topicRes, nil
}

// filterOf returns the broker's expression type and expression for a
// filter ("" type for an unknown filter type). No filter means all.
func filterOf(f *v2.FilterExpression) (typ, expr string) {
	if f == nil {
		return broker.ExpressionTag, "*"
	}
	expr = f.GetExpression()
	switch f.GetType() {
	case v2.FilterType_TAG, v2.FilterType_FILTER_TYPE_UNSPECIFIED:
		if expr == "" {
			expr = "*"
		}
		return broker.ExpressionTag, expr
	case v2.FilterType_SQL:
		return broker.ExpressionSQL92, expr
	}
	return "", ""
}

// AckMessage acknowledges each entry by its receipt handle.
func (s *Server) AckMessage(ctx context.Context, req *v2.AckMessageRequest) (*v2.AckMessageResponse, error) {
	group, st := checkGroup(req.GetGroup())
	if st == nil {
		_, st = checkTopic(req.GetTopic())
	}
	if st != nil {
		return &v2.AckMessageResponse{Status: st}, nil
	}
	topic := storedName(req.GetTopic())
	switch n := len(req.GetEntries()); {
	case n == 0:
		return &v2.AckMessageResponse{Status: status(v2.Code_BAD_REQUEST, "the request holds no entry; acknowledge at least one message")}, nil
	case n > maxAckBatch:
		return &v2.AckMessageResponse{Status: status(v2.Code_BAD_REQUEST, "the request holds %d entries, over the limit of %d; acknowledge fewer at a time", n, maxAckBatch)}, nil
	}
	entries := req.GetEntries()
	out := make([]*v2.AckMessageResultEntry, len(entries))
	// The entries go to the broker in one batch: one write and fsync of
	// its pop state for all.
	reqs := make([]broker.AckRequest, 0, len(entries))
	asked := make([]*v2.AckMessageResultEntry, 0, len(entries))
	for i, e := range entries {
		r := &v2.AckMessageResultEntry{MessageId: e.GetMessageId(), ReceiptHandle: e.GetReceiptHandle()}
		out[i] = r
		if e.GetReceiptHandle() == "" {
			r.Status = status(v2.Code_INVALID_RECEIPT_HANDLE, "the entry has no receipt handle; use the one the receive gave")
			continue
		}
		reqs = append(reqs, broker.AckRequest{Group: group, Topic: topic, Handle: s.renew.take(e.GetReceiptHandle())})
		asked = append(asked, r)
	}
	if len(reqs) > 0 {
		for i, err := range s.pop.AckBatch(reqs) {
			if err != nil {
				asked[i].Status = s.brokerStatus(err, "ack")
			} else {
				asked[i].Status = okStatus()
			}
		}
	}
	return &v2.AckMessageResponse{Status: summary(out, func(e *v2.AckMessageResultEntry) *v2.Status { return e.Status }), Entries: out}, nil
}

// ChangeInvisibleDuration sets a received message's invisible time from
// now and returns its new receipt handle; on failure the request's handle
// is returned (the client overwrites its copy with whatever comes back).
func (s *Server) ChangeInvisibleDuration(ctx context.Context, req *v2.ChangeInvisibleDurationRequest) (*v2.ChangeInvisibleDurationResponse, error) {
	fail := func(st *v2.Status) (*v2.ChangeInvisibleDurationResponse, error) {
		return &v2.ChangeInvisibleDurationResponse{Status: st, ReceiptHandle: req.GetReceiptHandle()}, nil
	}
	group, st := checkGroup(req.GetGroup())
	if st == nil {
		_, st = checkTopic(req.GetTopic())
	}
	if st != nil {
		return fail(st)
	}
	if req.GetReceiptHandle() == "" {
		return fail(status(v2.Code_INVALID_RECEIPT_HANDLE, "the request has no receipt handle; use the one the receive gave"))
	}
	inv := req.GetInvisibleDuration()
	if inv == nil {
		return fail(status(v2.Code_ILLEGAL_INVISIBLE_TIME, "the request has no invisible duration; set one between 0s and %v", maxInvisible))
	}
	if d := inv.AsDuration(); d < 0 || d > maxInvisible {
		return fail(status(v2.Code_ILLEGAL_INVISIBLE_TIME, "invisible duration %v is outside 0s..%v", d, maxInvisible))
	}
	h, err := s.pop.ChangeInvisible(group, storedName(req.GetTopic()), s.renew.take(req.GetReceiptHandle()), inv.AsDuration())
	if err != nil {
		return fail(s.brokerStatus(err, "change invisible duration"))
	}
	return &v2.ChangeInvisibleDurationResponse{Status: okStatus(), ReceiptHandle: h}, nil
}

// ForwardMessageToDeadLetterQueue moves a received message to the group's
// dead-letter queue and acknowledges it (push consumers that gave up).
func (s *Server) ForwardMessageToDeadLetterQueue(ctx context.Context, req *v2.ForwardMessageToDeadLetterQueueRequest) (*v2.ForwardMessageToDeadLetterQueueResponse, error) {
	group, st := checkGroup(req.GetGroup())
	if st == nil {
		_, st = checkTopic(req.GetTopic())
	}
	if st != nil {
		return &v2.ForwardMessageToDeadLetterQueueResponse{Status: st}, nil
	}
	if req.GetReceiptHandle() == "" {
		return &v2.ForwardMessageToDeadLetterQueueResponse{Status: status(v2.Code_INVALID_RECEIPT_HANDLE, "the request has no receipt handle; use the one the receive gave")}, nil
	}
	if err := s.pop.ForwardPopToDLQ(group, storedName(req.GetTopic()), s.renew.take(req.GetReceiptHandle())); err != nil {
		return &v2.ForwardMessageToDeadLetterQueueResponse{Status: s.brokerStatus(err, "forward to the dead-letter queue")}, nil
	}
	return &v2.ForwardMessageToDeadLetterQueueResponse{Status: okStatus()}, nil
}
