package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// MessageGetAt writes the message at offset of a topic's queue (a pull of
// one message there, as mqadmin's queryMsgByOffset): like MessageGet.
// broker names the broker when the topic lives on more than one.
func (c *CLI) MessageGetAt(ctx context.Context, topic string, queue int32, offset int64, broker string) error {
	if topic == "" {
		return fmt.Errorf("%w: give the topic with --topic", ErrUsage)
	}
	if queue < 0 || offset < 0 {
		return fmt.Errorf("%w: --queue and --offset must not be negative", ErrUsage)
	}
	rt, err := c.route(ctx, topic)
	if err != nil {
		return err
	}
	var q *queueRef
	var names []string
	for _, b := range rt {
		names = append(names, b.name)
		if broker != "" && b.name != broker {
			continue
		}
		if q != nil {
			return fmt.Errorf("%w: topic %q is on brokers %s; name one with --broker", ErrUsage, topic, strings.Join(names, ", "))
		}
		if queue >= b.q.ReadQueueNums {
			return fmt.Errorf("%w: topic %q has %d read queues on %s; --queue must be below that", ErrUsage, topic, b.q.ReadQueueNums, b.name)
		}
		q = &queueRef{b.name, b.addr, queue}
	}
	if q == nil {
		return fmt.Errorf("%w: topic %q is not on broker %q; it is on %s", ErrNotFound, topic, broker, strings.Join(names, ", "))
	}
	lo, err := c.offsetCall(ctx, *q, rmq.EncodeGetMinOffsetRequest(q.offsetRequest(topic)))
	if err != nil {
		return err
	}
	hi, err := c.offsetCall(ctx, *q, rmq.EncodeGetMaxOffsetRequest(q.offsetRequest(topic)))
	if err != nil {
		return err
	}
	if offset < lo || offset >= hi {
		return fmt.Errorf("%w: offset %d is outside queue %d of %s on %s, which holds offsets %d to %d (min %d, max %d)", ErrNotFound, offset, queue, topic, q.broker, lo, hi-1, lo, hi)
	}
	resp, err := c.call(ctx, q.addr, rmq.EncodePullRequest(rmq.PullRequest{
		ConsumerGroup: cliReaderGroup, Topic: topic, QueueID: queue, QueueOffset: offset, MaxMsgNums: 1,
		SysFlag: rmq.PullFlagSubscription, Subscription: "*", ExpressionType: "TAG",
	}))
	if err != nil {
		return err
	}
	if resp.Code != rmq.RespSuccess {
		return fmt.Errorf("%w: no message at offset %d of queue %d of %s on %s (min %d, max %d)", ErrNotFound, offset, queue, topic, q.broker, lo, hi)
	}
	msgs, err := decodeRecords(resp.Body, q.broker)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.QueueOffset == offset {
			if c.json() {
				return c.writeJSON(m)
			}
			return c.writeMessageDetail(m)
		}
	}
	return fmt.Errorf("%w: no message at offset %d of queue %d of %s on %s (min %d, max %d)", ErrNotFound, offset, queue, topic, q.broker, lo, hi)
}
