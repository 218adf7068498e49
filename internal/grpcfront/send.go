package grpcfront

// SendMessage: each message is validated, turned into a typed broker
// send and stored; the response has one entry per message, in order. The
// broker applies the policy: topic auto-creation, the message types a
// topic accepts (MessageType), the queue of a FIFO message, the timer
// limit.
//
//	gRPC                              broker send          stored property
//	system_properties.message_id      properties           UNIQ_KEY (the broker's dedup window uses it)
//	tag                               properties           TAGS
//	keys                              properties           KEYS (space-separated)
//	message_type (or inferred)        MessageType          (checked against the topic's message.type)
//	message_group (FIFO)              ShardingKey          __SHARDINGKEY; queue = broker.ShardQueue
//	delivery_timestamp (DELAY)        Delay.AtMS           TIMER_DELIVER_MS (the broker's timer)
//	message_type TRANSACTION          Transactional,       TRAN_MSG=true, PGROUP=<topic>
//	                                  ProducerGroup=topic  (the broker adds __transactionId__ = UNIQ_KEY)
//	trace_context                     properties           TRACE_CONTEXT
//	born_timestamp                    BornTimestamp
//	user_properties                   properties           as given (reserved keys refused)
//	peer address                      BornHost

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc/peer"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/grpcfront/pbcodec"
	"github.com/petrelmq/petrel/internal/message"
)

// autoCreateQueues is the queue count a gRPC send asks an auto-created
// topic to have (capped by the template's), as the 4.x clients ask for.
const autoCreateQueues = 4

// maxSendBatch bounds the messages of one SendMessage (the clients send
// one).
const maxSendBatch = 1024

// SendMessage stores the request's messages.
func (s *Server) SendMessage(ctx context.Context, req *v2.SendMessageRequest) (*v2.SendMessageResponse, error) {
	msgs := req.GetMessages()
	switch {
	case len(msgs) == 0:
		return &v2.SendMessageResponse{Status: status(v2.Code_BAD_REQUEST, "the request holds no message; send at least one")}, nil
	case len(msgs) > maxSendBatch:
		return &v2.SendMessageResponse{Status: status(v2.Code_BAD_REQUEST, "the request holds %d messages, over the limit of %d; send fewer at a time", len(msgs), maxSendBatch)}, nil
	}
	born := bornHost(ctx)
	id := header(ctx, headerClientID)
	entries := make([]*v2.SendResultEntry, len(msgs))
	reqs := make([]*broker.SendRequest, 0, len(msgs))
	idx := make([]int, 0, len(msgs)) // reqs[k] stores msgs[idx[k]]
	for i, m := range msgs {
		var req *broker.SendRequest
		if entries[i], req = s.prepareOne(id, m, born); req != nil {
			reqs = append(reqs, req)
			idx = append(idx, i)
		}
	}
	if len(reqs) > 0 {
		// One broker call: the messages go to the commit log as one group
		// commit.
		var answered sync.WaitGroup
		answered.Add(len(reqs))
		s.sendBatch(ctx, reqs, func(k int, res broker.SendResult, err error) {
			s.sent(entries[idx[k]], msgs[idx[k]], res, err)
			answered.Done()
		})
		answered.Wait()
	}
	return &v2.SendMessageResponse{Status: summary(entries, func(e *v2.SendResultEntry) *v2.Status { return e.Status }), Entries: entries}, nil
}

// summary is the top-level status of per-entry results: the entries'
// shared status, else MULTIPLE_RESULTS.
func summary[E any](entries []E, st func(E) *v2.Status) *v2.Status {
	if len(entries) == 0 {
		return okStatus()
	}
	first := st(entries[0])
	for _, e := range entries[1:] {
		if st(e).GetCode() != first.GetCode() {
			return status(v2.Code_MULTIPLE_RESULTS, "the entries have different results; see each entry's status")
		}
	}
	return first
}

// bornHost is the client's address, the stored born host.
func bornHost(ctx context.Context) netip.AddrPort {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return netip.AddrPort{}
	}
	if t, ok := p.Addr.(*net.TCPAddr); ok {
		return t.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(p.Addr.String())
	return ap
}

// prepareOne validates one message and returns its entry and the broker
// send to store it, or the entry with the refusing status and no send.
func (s *Server) prepareOne(clientID string, m *v2.Message, born netip.AddrPort) (*v2.SendResultEntry, *broker.SendRequest) {
	entry := &v2.SendResultEntry{MessageId: m.GetSystemProperties().GetMessageId()}
	req, typ, st := s.sendRequest(m, born)
	if st != nil {
		entry.Status = st
		return entry, nil
	}
	if typ == v2.MessageType_TRANSACTION && clientID != "" {
		// The producer answers check-backs of this topic: make sure the
		// broker knows it as a producer of it.
		if c, added := s.sessions.addTopic(clientID, req.Topic); added {
			s.register(c)
		}
	}
	return entry, req
}

// sent fills the entry of m with the broker's answer. The entry's
// transaction id is the message id, for every type of message, as
// RocketMQ's proxy answers.
func (s *Server) sent(entry *v2.SendResultEntry, m *v2.Message, res broker.SendResult, err error) {
	if err != nil {
		entry.Status = s.brokerStatus(err, "send")
		return
	}
	switch res.Status {
	case broker.SendFlushSlaveTimeout:
		// Stored on the master, not known replicated (the proxy's mapping
		// of FLUSH_SLAVE_TIMEOUT).
		entry.Status = status(v2.Code_SLAVE_PERSISTENCE_TIMEOUT, "the message was stored on the master but its slaves did not confirm it in time (FLUSH_SLAVE_TIMEOUT); it may still be replicated")
		return
	case broker.SendSlaveNotAvailable:
		entry.Status = status(v2.Code_HA_NOT_AVAILABLE, "the message was stored on the master but too few slaves are in sync to replicate it (SLAVE_NOT_AVAILABLE)")
		return
	}
	entry.Status = okStatus()
	entry.Offset = res.QueueOffset
	// RocketMQ answers the message id (UNIQ_KEY) as the transaction id of
	// every send; a half is found by it again (EndTransaction).
	entry.TransactionId = m.GetSystemProperties().GetMessageId()
	if res.RecallHandle != "" {
		pbcodec.SetRecallHandle(entry, res.RecallHandle) // field 5, recall.go
	}
}

// sendRequest builds the broker send for m, or the status refusing it.
func (s *Server) sendRequest(m *v2.Message, born netip.AddrPort) (*broker.SendRequest, v2.MessageType, *v2.Status) {
	topic, st := checkTopic(m.GetTopic())
	if st != nil {
		return nil, 0, st
	}
	sp := m.GetSystemProperties()
	if sp == nil {
		return nil, 0, status(v2.Code_BAD_REQUEST, "the message has no system properties; the client must set them (message id, type)")
	}
	if why := validMessageID(sp.GetMessageId()); why != "" {
		return nil, 0, status(v2.Code_ILLEGAL_MESSAGE_ID, "%s", why)
	}
	body := m.GetBody()
	if len(body) == 0 {
		return nil, 0, status(v2.Code_BAD_REQUEST, "the message body is empty; send a body of at least one byte")
	}
	if limit := s.b.Config().MaxMessageBytes; len(body) > limit {
		return nil, 0, status(v2.Code_MESSAGE_BODY_TOO_LARGE, "the message body is %d bytes, over the broker's limit of %d bytes; send a smaller body", len(body), limit)
	}
	if sp.GetBodyEncoding() == v2.Encoding_GZIP {
		return nil, 0, status(v2.Code_BAD_REQUEST, "GZIP-encoded bodies are not accepted; send the body uncompressed (IDENTITY)")
	}
	props := make(map[string]string, len(m.GetUserProperties())+6)
	for k, v := range m.GetUserProperties() {
		if why := validUserProperty(k, v); why != "" {
			return nil, 0, status(v2.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "%s", why)
		}
		props[k] = v
	}
	props[message.PropertyUniqKey] = sp.GetMessageId()
	if sp.Tag != nil {
		if why := validTag(sp.GetTag()); why != "" {
			return nil, 0, status(v2.Code_ILLEGAL_MESSAGE_TAG, "%s", why)
		}
		props[message.PropertyTags] = sp.GetTag()
	}
	if keys := sp.GetKeys(); len(keys) > 0 {
		for _, k := range keys {
			if why := validKey(k); why != "" {
				return nil, 0, status(v2.Code_ILLEGAL_MESSAGE_KEY, "%s", why)
			}
		}
		props[message.PropertyKeys] = strings.Join(keys, " ")
	}
	if tc := sp.GetTraceContext(); tc != "" && message.ValidProperty(propertyTraceContext, tc) {
		props[propertyTraceContext] = tc
	}

	typ := sp.GetMessageType()
	if typ == v2.MessageType_MESSAGE_TYPE_UNSPECIFIED {
		typ = inferType(sp)
	}
	req := &broker.SendRequest{Topic: topic, QueueID: -1, Body: body, BornHost: born,
		DefaultTopicQueueNums: autoCreateQueues, NoGroupTopicCreate: true}
	if bt := sp.GetBornTimestamp(); bt != nil {
		req.BornTimestamp = bt.AsTime().UnixMilli()
	} else {
		req.BornTimestamp = s.clk.Now().UnixMilli()
	}
	switch typ {
	case v2.MessageType_FIFO:
		g := sp.GetMessageGroup()
		if g == "" {
			return nil, 0, status(v2.Code_ILLEGAL_MESSAGE_GROUP, "a FIFO message needs a message group; set one")
		}
		if why := validText(g, "message group", MaxMessageGroupLen); why != "" {
			return nil, 0, status(v2.Code_ILLEGAL_MESSAGE_GROUP, "%s", why)
		}
		req.ShardingKey = g
		req.MessageType = broker.MessageTypeFIFO
	case v2.MessageType_DELAY:
		dt := sp.GetDeliveryTimestamp()
		if dt == nil {
			return nil, 0, status(v2.Code_ILLEGAL_DELIVERY_TIME, "a DELAY message needs a delivery timestamp; set one")
		}
		req.Delay = message.Delay{AtMS: dt.AsTime().UnixMilli()}
		req.MessageType = broker.MessageTypeDelay
	case v2.MessageType_TRANSACTION:
		// The producer group of a 5.x transaction is its topic.
		req.ProducerGroup = topic
		req.Transactional = true
		req.MessageType = broker.MessageTypeTransaction
	case v2.MessageType_NORMAL:
		req.MessageType = broker.MessageTypeNormal
	default:
		return nil, 0, status(v2.Code_BAD_REQUEST, "message type %v is not one of NORMAL, FIFO, DELAY, TRANSACTION", typ)
	}
	req.Properties = message.MapProperties(props)
	return req, typ, nil
}

// inferType is the type of a message that does not say (older clients),
// by what it carries.
func inferType(sp *v2.SystemProperties) v2.MessageType {
	switch {
	case sp.GetMessageGroup() != "":
		return v2.MessageType_FIFO
	case sp.GetDeliveryTimestamp() != nil:
		return v2.MessageType_DELAY
	}
	return v2.MessageType_NORMAL
}
