package cli

// petrel message cancel: a delayed message that is not delivered yet is
// cancelled by its message id (PETREL_CANCEL_DELAYED, 10102, on each
// master of the topic's route, or of the cluster without a topic) or by
// the recall handle its send answered (RECALL_MESSAGE, 370, on the broker
// the handle names).

import (
	"context"
	"fmt"
	"strings"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// Cancelled is the result of `message cancel`.
type Cancelled struct {
	// ID is the message's unique id (UNIQ_KEY).
	ID    string `json:"msgId"`
	Topic string `json:"topic,omitempty"`
	// Brokers are the brokers where the message was pending and is now
	// cancelled (one, normally).
	Brokers []string `json:"brokers"`
}

// MessageCancel cancels the delayed message with unique id id (the msgId
// of its send), on the masters of topic, or of the cluster when topic is
// "". A message pending on none of them is an ErrNotFound error that says
// why: unknown there, or due already (delivered or being delivered).
func (c *CLI) MessageCancel(ctx context.Context, id, topic string) error {
	if id == "" {
		return fmt.Errorf("%w: give the message id (the msgId of its send), or --handle with its recall handle", ErrUsage)
	}
	var brokers []masterBroker
	if topic != "" {
		rt, err := c.route(ctx, topic)
		if err != nil {
			return err
		}
		for _, b := range rt {
			if len(brokers) == 0 || brokers[len(brokers)-1].name != b.name {
				brokers = append(brokers, masterBroker{b.name, b.addr})
			}
		}
	} else {
		var err error
		if brokers, err = c.masters(ctx); err != nil {
			return err
		}
	}
	res := Cancelled{ID: id, Topic: topic, Brokers: []string{}}
	var why []string
	for _, b := range brokers {
		resp, err := c.call(ctx, b.addr, rmq.EncodeCancelDelayedRequest(rmq.CancelDelayedRequest{MsgID: id, Topic: topic}))
		if err != nil {
			return err
		}
		switch resp.Code {
		case rmq.RespSuccess:
			res.Brokers = append(res.Brokers, b.name)
		case rmq.RespQueryNotFound, rmq.RespMessageIllegal:
			why = append(why, b.name+": "+resp.Remark)
		default:
			return c.refused(b.addr, "cancel delayed message "+id, resp)
		}
	}
	if len(res.Brokers) == 0 {
		where := "any broker of the cluster"
		if topic != "" {
			where = "the brokers of topic " + topic
		}
		return fmt.Errorf("%w: delayed message %s is not (or no longer) pending on %s; nothing was changed (%s)", ErrNotFound, id, where, strings.Join(why, "; "))
	}
	return c.writeCancelled(res, "")
}

// MessageRecall cancels the delayed message a recall handle names (the
// recallHandle of its send answer) on the broker the handle names; topic
// "" means the handle's own.
func (c *CLI) MessageRecall(ctx context.Context, handle, topic string) error {
	h, err := message.DecodeRecallHandle(handle)
	if err != nil {
		return fmt.Errorf("%w: %q is not a recall handle; pass the recallHandle of the delayed message's send answer unchanged", ErrUsage, handle)
	}
	if topic == "" {
		topic = h.Topic
	}
	ms, err := c.masters(ctx)
	if err != nil {
		return err
	}
	addr := ""
	for _, b := range ms {
		if b.name == h.BrokerName {
			addr = b.addr
		}
	}
	if addr == "" {
		return fmt.Errorf("%w: the recall handle names broker %s, which has no live master in this cluster; start it, or point --namesrv at its cluster", ErrNotFound, h.BrokerName)
	}
	resp, err := c.call(ctx, addr, rmq.EncodeRecallRequest(rmq.RecallRequest{Topic: topic, RecallHandle: handle}))
	if err != nil {
		return err
	}
	switch resp.Code {
	case rmq.RespSuccess:
	case rmq.RespTopicNotExist:
		return fmt.Errorf("%w: topic %q does not exist on broker %s", ErrNotFound, topic, h.BrokerName)
	case rmq.RespQueryNotFound, rmq.RespMessageIllegal:
		return fmt.Errorf("%w: delayed message %s is not (or no longer) pending on broker %s: %s", ErrNotFound, h.UniqID, h.BrokerName, resp.Remark)
	case rmq.RespIllegalOperation:
		// The handle does not fit, or its time passed: the remark says which.
		return fmt.Errorf("%w: broker %s refused to recall delayed message %s: %s", ErrRefused, h.BrokerName, h.UniqID, resp.Remark)
	default:
		return c.refused(addr, "recall delayed message "+h.UniqID, resp)
	}
	r, err := rmq.DecodeRecallResponse(resp)
	if err != nil {
		return fmt.Errorf("%w: recall answer from %s: %w", ErrRefused, addr, err)
	}
	return c.writeCancelled(Cancelled{ID: r.MsgID, Topic: topic, Brokers: []string{h.BrokerName}}, "recalled")
}

func (c *CLI) writeCancelled(res Cancelled, verb string) error {
	if c.json() {
		return c.writeJSON(res)
	}
	if verb == "" {
		verb = "cancelled"
	}
	_, err := fmt.Fprintf(c.cfg.Out, "%s delayed message %s on %s; it will not be delivered\n", verb, res.ID, strings.Join(res.Brokers, ", "))
	return err
}
