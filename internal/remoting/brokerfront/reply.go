package brokerfront

// Request-reply (headers in rmq/reply.go): SEND_REPLY_MESSAGE (324, V1
// send header) and SEND_REPLY_MESSAGE_V2 (325, V2 letters) from a
// replier, answered like a send; PUSH_REPLY_MESSAGE_TO_CLIENT (326) to the
// requester, whose answer the broker awaits. The broker decides (see
// broker.Reply): it finds the requester by the reply's REPLY_TO_CLIENT
// property among the producers registered by heartbeat, pushes through
// the requester connection's handler (remoteConn.PushReply), then stores
// the reply in <cluster>_REPLY_TOPIC. A requester that has not heart-beat
// yet is found by the connection its request came on (noteRequester).
//
// Replies are not forwarded by a slave: clients send them to the master
// of the reply topic's queue, and a slave refuses them as it refuses
// sends it cannot forward.

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// reply serves SEND_REPLY_MESSAGE and SEND_REPLY_MESSAGE_V2. It runs on
// a handler goroutine of the replier's connection (not the reader: it
// waits for the requester's answer to the push), so a slow requester holds
// one of the replier connection's in-flight slots for at most the push
// timeout.
func (f *Front) reply(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	sr, refused := sendRequest(c, req)
	if refused != nil {
		return refused
	}
	replyTo, _ := sr.Properties.Get(rmq.PropertyReplyToClient)
	res, err := f.b.Reply(ctx, sr, replyTo)
	return f.sendResponse(req, res, err)
}

// requesterKey holds, on a connection, the requester id it was last
// noted as (noteRequester).
type requesterKey struct{}

// noteRequester tells the broker which client a connection speaks for
// when a send on it is a request of request-reply (its properties name
// REPLY_TO_CLIENT), so that the replies to a requester that has not
// heart-beat yet find it (broker.NoteRequester). Not for what merely
// carries a request's properties: a reply (MSG_TYPE=reply), a consumer's
// resend (reconsumeTimes > 0, %RETRY% and %DLQ% topics) or a slave's
// forward. Sends without the property cost one substring search.
func (f *Front) noteRequester(c *remoting.Conn, req *remoting.Command, sr *broker.SendRequest) {
	props := sr.Properties.Encoded()
	if !strings.Contains(props, rmq.PropertyReplyToClient) || sr.ReconsumeTimes > 0 || strings.HasPrefix(sr.Topic, "%") {
		return
	}
	id, ok := message.PropertyOf(props, rmq.PropertyReplyToClient)
	if !ok || id == "" || req.Ext(rmq.ExtForwarded) == "true" {
		return
	}
	if t, _ := message.PropertyOf(props, rmq.PropertyMessageType); t == rmq.MessageTypeReply {
		return
	}
	if last, _ := c.Value(requesterKey{}).(string); last == id {
		return // noted already (batch handlers run on the reader, one at a time)
	}
	f.b.NoteRequester(f.id(c), id)
	c.SetValue(requesterKey{}, strings.Clone(id))
}

// PushReply sends PUSH_REPLY_MESSAGE_TO_CLIENT to the requester on this
// connection and waits, up to ctx's deadline, for its answer: nil when it
// answered code 0 (broker.ReplyPusher).
func (r *remoteConn) PushReply(ctx context.Context, p broker.ReplyPush) error {
	s := p.Send
	h := rmq.PushReplyRequest{
		ProducerGroup:         s.ProducerGroup,
		Topic:                 s.Topic,
		DefaultTopic:          cmp.Or(s.DefaultTopic, broker.TemplateTopic),
		DefaultTopicQueueNums: s.DefaultTopicQueueNums,
		QueueID:               s.QueueID,
		SysFlag:               s.SysFlag,
		BornTimestamp:         s.BornTimestamp,
		Flag:                  s.Flag,
		Properties:            p.Properties,
		ReconsumeTimes:        s.ReconsumeTimes,
		BornHost:              hostPort(s.BornHost),
		StoreHost:             hostPort(p.StoreHost),
		StoreTimestamp:        p.StoreTimestamp,
	}
	resp, err := r.c.Invoke(ctx, rmq.EncodePushReply(h, s.Body))
	if err != nil {
		return err
	}
	if resp.Code != rmq.RespSuccess {
		return fmt.Errorf("brokerfront: the requester answered the reply push with code %d (%q)", resp.Code, resp.Remark)
	}
	return nil
}

// hostPort writes an address as Java's ReplyMessageProcessor does, host
// address ":" port (no brackets around an IPv6 address); an unknown one
// is 0.0.0.0:0.
func hostPort(ap netip.AddrPort) string {
	if !ap.IsValid() {
		return "0.0.0.0:0"
	}
	return ap.Addr().Unmap().String() + ":" + strconv.Itoa(int(ap.Port()))
}
