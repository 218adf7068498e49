package brokerfront

// Requests answered by a consumer client (headers and bodies in
// rmq/clientfwd.go): 307 GET_CONSUMER_RUNNING_INFO and 309
// CONSUME_MESSAGE_DIRECTLY go to the named member over the connection
// its heartbeats came on, and its answer is relayed as it is (code,
// remark, ext fields, body); 223 INVOKE_BROKER_TO_GET_CONSUMER_STATUS
// asks each member (or the one named) with 221 and gathers their queue
// offsets. As RocketMQ's Broker2Client: a member that is not connected
// here is SYSTEM_ERROR "not online", one that does not answer in time
// CONSUME_MSG_TIMEOUT (207); each call waits at most
// Options.ClientCallTimeout.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// DefaultClientCallTimeout bounds a request forwarded to a client
// (RocketMQ's Broker2Client.callClient waits 10 s).
const DefaultClientCallTimeout = 10 * time.Second

func (f *Front) registerClientFwd(s *remoting.Server) {
	s.Handle(rmq.CodeGetConsumerRunningInfo, f.consumerRunningInfo)
	s.Handle(rmq.CodeConsumeMessageDirectly, f.consumeMessageDirectly)
	s.Handle(rmq.CodeInvokeBrokerToGetConsumerStatus, f.consumerStatus)
}

// memberConn returns the remoting connection of group's member clientID,
// or nil when it has none on this front.
func (f *Front) memberConn(group, clientID string) *remoting.Conn {
	for _, m := range f.b.ConsumerMembers(group) {
		if m.ClientID != clientID {
			continue
		}
		f.mu.Lock()
		c := f.conns[m.Conn]
		f.mu.Unlock()
		if c != nil {
			return c
		}
	}
	return nil
}

func notOnline(req *remoting.Command, group, clientID string) *remoting.Command {
	return remoting.NewResponse(req, rmq.RespSystemError, fmt.Sprintf("The Consumer <%s> <%s> not online", group, clientID))
}

// callConsumer forwards fwd to the member and relays its answer as the
// answer to req.
func (f *Front) callConsumer(ctx context.Context, req, fwd *remoting.Command, group, clientID string) *remoting.Command {
	c := f.memberConn(group, clientID)
	if c == nil {
		return notOnline(req, group, clientID)
	}
	ctx, cancel := context.WithTimeout(ctx, f.clientCallTimeout())
	defer cancel()
	resp, err := c.Invoke(ctx, fwd)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		f.log.Debug("consumer call timed out", "code", fwd.Code, "group", group, "client_id", clientID, "err", err)
		return remoting.NewResponse(req, rmq.RespConsumeMsgTimeout, fmt.Sprintf("consumer <%s> <%s> Timeout: no answer within %s", group, clientID, f.clientCallTimeout()))
	case err != nil:
		f.log.Debug("consumer call failed", "code", fwd.Code, "group", group, "client_id", clientID, "err", err)
		return remoting.NewResponse(req, rmq.RespSystemError, fmt.Sprintf("invoke consumer <%s> <%s> failed: its connection closed; retry", group, clientID))
	}
	out := remoting.NewResponse(req, resp.Code, resp.Remark)
	resp.EachExt(func(k, v string) { out.SetExt(k, v) })
	out.Body = resp.Body
	return out
}

// forwardOf copies req's ext fields (and body) into a new request of the
// same code, as RocketMQ's callConsumer does.
func forwardOf(req *remoting.Command, body []byte) *remoting.Command {
	fwd := remoting.NewRequest(req.Code, nil, body)
	req.EachExt(func(k, v string) { fwd.SetExt(k, v) })
	return fwd
}

func (f *Front) consumerRunningInfo(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeGetConsumerRunningInfo(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	return f.callConsumer(ctx, req, forwardOf(req, req.Body), h.ConsumerGroup, h.ClientID)
}

// consumeMessageDirectly adds what RocketMQ's broker adds (brokerName,
// topicSysFlag, groupSysFlag) and the stored message the msgId (an
// offset message id) names as the body. A message that is not here is
// refused before the client is asked: clients decode the body without
// checking it.
func (f *Front) consumeMessageDirectly(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeConsumeMessageDirectly(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	_, off, err := message.ParseOffsetID(h.MsgID)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, fmt.Sprintf("msgId %.64q is not an offset message id (the broker's address and commit-log offset in hex)", h.MsgID))
	}
	rec, err := f.b.ViewByOffset(off)
	if err != nil {
		f.log.Debug("consume directly: message not found", "msg_id", h.MsgID, "err", err)
		return remoting.NewResponse(req, rmq.RespSystemError, "no message "+h.MsgID+" on this broker")
	}
	fwd := forwardOf(req, rec)
	fwd.SetExt("brokerName", f.name)
	if h.Topic != "" {
		if t, ok := f.b.Topic(h.Topic); ok {
			fwd.SetExt("topicSysFlag", strconv.Itoa(int(t.TopicSysFlag)))
		}
	}
	if g, ok := f.b.Group(h.ConsumerGroup); ok {
		fwd.SetExt("groupSysFlag", strconv.Itoa(int(g.GroupSysFlag)))
	}
	return f.callConsumer(ctx, req, fwd, h.ConsumerGroup, h.ClientID)
}

// consumerStatus is RocketMQ's Broker2Client.getConsumeStatus: members
// that fail or time out are left out of the table, as there.
func (f *Front) consumerStatus(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeGetConsumerStatus(req)
	if err != nil {
		return refuseHeader(req, err)
	}
	members := f.b.ConsumerMembers(h.Group)
	if len(members) == 0 {
		return remoting.NewResponse(req, rmq.RespSystemError, fmt.Sprintf("No Any Consumer online in the consumer group: [%s]", h.Group))
	}
	table := map[string]rmq.OffsetTable{}
	for _, m := range members {
		if h.ClientAddr != "" && h.ClientAddr != m.ClientID {
			continue
		}
		f.mu.Lock()
		c := f.conns[m.Conn]
		f.mu.Unlock()
		if c == nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, f.clientCallTimeout()/2) // RocketMQ: 5 s of 10
		resp, err := c.Invoke(cctx, rmq.EncodeGetConsumerStatusFromClient(h.Topic, h.Group))
		cancel()
		if err != nil {
			f.log.Debug("consumer status call failed", "group", h.Group, "client_id", m.ClientID, "err", err)
			continue
		}
		if resp.Code != rmq.RespSuccess || len(resp.Body) == 0 {
			continue
		}
		t, err := rmq.DecodeClientConsumerStatus(resp.Body)
		if err != nil {
			f.log.Debug("consumer status answer unreadable", "group", h.Group, "client_id", m.ClientID, "err", err)
			continue
		}
		table[m.ClientID] = t
		if h.ClientAddr != "" {
			break
		}
	}
	return bodyResponse(req, rmq.EncodeConsumerStatusBody(table), nil)
}

func (f *Front) clientCallTimeout() time.Duration {
	if f.clientTimeout > 0 {
		return f.clientTimeout
	}
	return DefaultClientCallTimeout
}
