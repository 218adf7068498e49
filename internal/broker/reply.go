package broker

// Request-reply (RocketMQ 4.7+): a requester sends an ordinary message
// carrying its client id (REPLY_TO_CLIENT) and a correlation id; the
// replying consumer sends its answer with SEND_REPLY_MESSAGE (324/325) to
// the cluster's reply topic <cluster>_REPLY_TOPIC. The broker pushes the
// reply to the requester's connection at once (PUSH_REPLY_MESSAGE_TO_CLIENT,
// 326, through the connection's ReplyPusher) and then stores it in the
// reply topic, as Java's ReplyMessageProcessor does (storeReplyMessageEnable
// is on by default there): the push, not the store, is what the replier's
// answer reports, so a reply that reached its requester is a success even
// when the store refused it, and one that did not is a SYSTEM_ERROR (which
// the replier's client retries) even though it was stored.
//
// The requester is found as Java's ProducerManager.findChannel finds it: the
// connection whose heartbeat registered a producer group under that client
// id (the newest, if several), and the reply is pushed to that one
// connection only. Failing that, Petrel also knows
// the connections that sent a request naming that client id in
// REPLY_TO_CLIENT and never heart-beat (NoteRequester): the official Go
// client sends its first requests before its first heartbeat reaches a
// broker it has just learnt of (it heart-beats every 30 s, and its
// Request forces one only for a topic the name server does not know), so
// without them the replies to a new requester's first requests would be
// lost, which Java only avoids by its client's forced heartbeat.

import (
	"context"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/message"
)

// ReplyTopicSuffix ends the name of a cluster's reply topic (RocketMQ's
// MixAll.REPLY_TOPIC_POSTFIX with its separator).
const ReplyTopicSuffix = "_REPLY_TOPIC"

// PropertyPushReplyTime is the property the broker adds to a pushed reply:
// when it pushed it, unix ms (RocketMQ's PUSH_REPLY_TIME).
const PropertyPushReplyTime = "PUSH_REPLY_TIME"

// replyPushTimeout bounds one push of a reply to its requester: the
// replier's client gives up on its send after 3 s by default, and a
// requester answers a push at once (it only hands the reply to a waiting
// request).
const replyPushTimeout = 3 * time.Second

// ReplyTopic is the reply topic of cluster.
func ReplyTopic(cluster string) string { return cluster + ReplyTopicSuffix }

// ReplyPusher is implemented by the ConnHandler of a connection whose
// protocol can deliver replies to a requester (the remoting front's).
// Unlike ConnHandler's methods, PushReply waits for the requester's answer,
// up to ctx's deadline.
type ReplyPusher interface {
	// PushReply delivers r to the requester and returns nil once it
	// acknowledged it; an error (the cause, for the log) when the push
	// could not be written, timed out or was refused.
	PushReply(ctx context.Context, r ReplyPush) error
}

// ReplyPush is a reply as the broker pushes it to its requester.
type ReplyPush struct {
	// Send is the reply as the replier sent it; the pusher reads its
	// header fields and Body, not its Properties.
	Send *SendRequest
	// Properties are the reply's encoded properties with
	// PropertyPushReplyTime added.
	Properties string
	// StoreHost is the broker's client-facing address; StoreTimestamp the
	// push time, unix ms.
	StoreHost      netip.AddrPort
	StoreTimestamp int64
}

// Reply delivers a reply of request-reply: req is the reply as its
// replier sent it (to the reply topic; Transactional and Delay are
// ignored: a reply is stored as it is pushed, at once), replyTo the
// requester's client id (the reply's REPLY_TO_CLIENT property). Reply
// pushes it to the requester, then stores it (see the file comment).
//
// The result is the store's when the push and the store succeeded; when
// only the push did, a result with MsgID "0" and QueueOffset 0 (what Java
// answers, so that the replier's client decodes it), the store failure
// going to the log. Errors: what Send refuses before storing anything (a
// closed broker, a slave, a bad topic name, a body or properties over
// their limits) is refused before the push too, with Send's kinds, and so
// is a batch (KindMessageIllegal); KindSystemError when replyTo is empty,
// names no requester connected to this broker, or the push failed (the
// message names the requester, the cause is in Err).
func (b *Broker) Reply(ctx context.Context, req *SendRequest, replyTo string) (SendResult, error) {
	props, err := b.checkReply(req)
	if err != nil {
		return SendResult{}, err
	}
	r := *req
	r.Transactional, r.Delay = false, message.Delay{}
	pushErr := b.pushReply(ctx, &r, replyTo, props)
	res, storeErr := b.Send(ctx, &r)
	if pushErr != nil {
		if storeErr != nil {
			b.log.Debug("reply not stored", "topic", r.Topic, "client_id", replyTo, "err", storeErr)
		}
		return SendResult{}, pushErr
	}
	if storeErr != nil {
		b.log.Warn("reply pushed but not stored", "topic", r.Topic, "client_id", replyTo, "err", storeErr)
		return SendResult{MsgID: "0", QueueID: max(r.QueueID, 0), RegionID: DefaultRegionID}, nil
	}
	return res, nil
}

// checkReply refuses what Send would refuse before storing anything, so
// that such a reply is not pushed either, and returns the properties to
// push.
func (b *Broker) checkReply(req *SendRequest) (string, error) {
	if b.closed.Load() {
		return "", b.errClosed()
	}
	if err := b.refuseOnSlave(KindServiceUnavailable, "replies"); err != nil {
		return "", err
	}
	if err := checkTopicName(req.Topic); err != nil {
		return "", err
	}
	if req.Batch {
		return "", errorf(KindMessageIllegal, nil, "a reply cannot be a batch; send each reply on its own")
	}
	if len(req.Body) > b.cfg.MaxMessageBytes {
		return "", errorf(KindMessageIllegal, nil, "reply body is %d bytes, over the limit of %d bytes (MaxMessageBytes); send a smaller body", len(req.Body), b.cfg.MaxMessageBytes)
	}
	props := withProperty(req.Properties.Encoded(), PropertyPushReplyTime, strconv.FormatInt(b.now().UnixMilli(), 10))
	if err := checkProperties(props, -1); err != nil {
		return "", err
	}
	return props, nil
}

// withProperty appends key=value to encoded properties (the last item of
// a key wins for every reader).
func withProperty(props, key, value string) string {
	var sb strings.Builder
	sb.Grow(len(props) + len(key) + len(value) + 2)
	sb.WriteString(props)
	if props != "" && props[len(props)-1] != message.PropertySeparator {
		sb.WriteByte(message.PropertySeparator)
	}
	sb.WriteString(key)
	sb.WriteByte(message.NameValueSeparator)
	sb.WriteString(value)
	return sb.String()
}

// pushReply pushes the reply to the first of replyTo's connections
// (producerConnsOf) that takes replies, and only to it, as Java pushes to
// the one channel it finds: a push that timed out may still have been
// delivered, and a second push of the same reply would be a duplicate
// (the Java client can run a request's callback twice for two replies
// that arrive together).
func (b *Broker) pushReply(ctx context.Context, req *SendRequest, replyTo, props string) error {
	if replyTo == "" {
		return errorf(KindSystemError, nil, "the reply has no REPLY_TO_CLIENT property, so it cannot reach its requester; build the reply from the request message")
	}
	for _, id := range b.clients.producerConnsOf(replyTo) {
		rp, ok := b.conns.handler(id).(ReplyPusher)
		if !ok {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, replyPushTimeout)
		defer cancel()
		err := rp.PushReply(pctx, ReplyPush{Send: req, Properties: props, StoreHost: b.cfg.StoreHost, StoreTimestamp: b.now().UnixMilli()})
		if err != nil {
			b.log.Debug("reply push failed", "client_id", replyTo, "conn", id, "err", err)
			return errorf(KindSystemError, err, "pushing the reply to requester %s failed; retry", shortID(replyTo))
		}
		return nil
	}
	return errorf(KindSystemError, nil, "requester %s has no producer connected to broker %s, so the reply cannot reach it; the requester must stay connected until its reply arrives", shortID(replyTo), b.cfg.BrokerName)
}

// shortID is a client id for a message to a client: the replier names it,
// up to the properties' limit, and a remark need not echo all of it.
func shortID(id string) string {
	const limit = 128
	if len(id) <= limit {
		return id
	}
	return strings.ToValidUTF8(id[:limit], "") + "..."
}

// NoteRequester records that a request naming clientID as the client to
// reply to (its REPLY_TO_CLIENT) arrived on conn, which has not heart-beat
// yet: until it does, a reply to clientID may be pushed to it (after the
// connections whose heartbeats registered a producer under clientID). A
// connection that heart-beat is known by its heartbeat's client id, and
// the note is ignored (a consumer resending a request message is not its
// requester); a later note replaces an earlier one, so a connection holds
// at most one. The note ends with the connection or its first heartbeat.
// The front calls it for the requests it passes to Send (not for
// forwarded, retried or reply messages).
func (b *Broker) NoteRequester(conn uint64, clientID string) {
	if clientID == "" {
		return
	}
	c := &b.clients
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || b.conns.gone(conn) || c.conns[conn] != nil {
		return
	}
	if old, ok := c.noted[conn]; ok {
		if old == clientID {
			return
		}
		c.notedBy.remove(old, conn)
	}
	clientID = strings.Clone(clientID) // not the request's properties, which it would keep alive
	if c.noted == nil {
		c.noted = make(map[uint64]string)
	}
	c.noted[conn] = clientID
	c.notedBy.add(clientID, conn)
}

// dropNoteLocked forgets conn's note; mu is held.
func (c *clientTable) dropNoteLocked(conn uint64) {
	if id, ok := c.noted[conn]; ok {
		delete(c.noted, conn)
		c.notedBy.remove(id, conn)
	}
}

// producerConnsOf returns the connections whose heartbeats registered a
// producer group under clientID, newest first, then those noted as
// clientID's requesters, newest first.
func (c *clientTable) producerConnsOf(clientID string) []uint64 {
	c.mu.Lock()
	var beat, noted []uint64
	for conn := range c.byClient[clientID] {
		if cs := c.conns[conn]; cs != nil && len(cs.producers) > 0 {
			beat = append(beat, conn)
		}
	}
	for conn := range c.notedBy[clientID] {
		noted = append(noted, conn)
	}
	c.mu.Unlock()
	for _, s := range [][]uint64{beat, noted} {
		slices.Sort(s)
		slices.Reverse(s)
	}
	return append(beat, noted...)
}

// connIndex is a set of connections per client id.
type connIndex map[string]map[uint64]struct{}

func (x *connIndex) add(clientID string, conn uint64) {
	if *x == nil {
		*x = make(connIndex)
	}
	set := (*x)[clientID]
	if set == nil {
		set = make(map[uint64]struct{}, 1)
		(*x)[clientID] = set
	}
	set[conn] = struct{}{}
}

func (x connIndex) remove(clientID string, conn uint64) {
	if set := x[clientID]; set != nil {
		delete(set, conn)
		if len(set) == 0 {
			delete(x, clientID)
		}
	}
}

// setConnLocked records conn's client state and indexes it by client id
// (a heartbeat on conn: its note, if any, ends); mu is held.
func (c *clientTable) setConnLocked(conn uint64, cs *connState) {
	if old := c.conns[conn]; old != nil {
		c.byClient.remove(old.clientID, conn)
	}
	c.dropNoteLocked(conn)
	c.conns[conn] = cs
	c.byClient.add(cs.clientID, conn)
}

// deleteConnLocked forgets conn's client state; mu is held.
func (c *clientTable) deleteConnLocked(conn uint64) {
	if cs := c.conns[conn]; cs != nil {
		c.byClient.remove(cs.clientID, conn)
	}
	delete(c.conns, conn)
}
