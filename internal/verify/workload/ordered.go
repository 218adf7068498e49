package workload

// The ordered workload: sharding keys k0..k(N-1), each owned by one
// producer, which sends each of its keys' messages in sequence (seq 1, 2,
// 3, ... in the body and on the Invoke line, the next only once the last
// was acknowledged) to queue hash(key) % queues, as a MessageQueueSelector
// by hash does. An orderly consumer locks its queues and reads each in
// order, one batch at a time, committing after each batch; after a broker
// restart it resumes from the committed offset (a rewind: deliveries
// again, which the checker allows).

import (
	"context"
	"strconv"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// KeysPerProducer is how many sharding keys each ordered producer owns.
const KeysPerProducer = 4

func init() {
	register("ordered", func() Workload {
		return &pubsub{name: "ordered", model: Orderly, order: true, produce: produceOrdered}
	})
}

// javaHash is Java's String.hashCode, which RocketMQ's selectors hash
// keys with.
func javaHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 { // a surrogate pair in UTF-16
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// KeyQueue is the queue index of key among n queues.
func KeyQueue(key string, n int) int {
	h := int64(javaHash(key))
	if h < 0 {
		h = -h
	}
	return int(h % int64(n))
}

// produceOrdered sends the producer's keys round robin, each key's
// messages in sequence, until ctx ends.
func produceOrdered(ctx context.Context, w *pubsub, p *Producer) {
	var keys []string
	for i := range KeysPerProducer * w.env.Producers {
		if i%w.env.Producers == p.index {
			keys = append(keys, "k"+strconv.Itoa(i))
		}
	}
	seq := make([]int64, len(keys))
	for ctx.Err() == nil {
		for i, key := range keys {
			n := seq[i] + 1
			id := p.NextID()
			m := Outgoing{
				ID:         id,
				Body:       Body(id, w.env.BodyBytes, Field{"key", key}, Field{"seq", strconv.FormatInt(n, 10)}),
				Properties: idProperties(id, message.PropertyShardingKey, key),
				Queue: func(r *Route, _ int) rmq.MessageQueue {
					return r.Queues[KeyQueue(key, len(r.Queues))]
				},
			}
			m.Invoke.Key, m.Invoke.Seq = key, n
			if _, ok := p.Send(ctx, m); !ok {
				return
			}
			seq[i] = n
		}
	}
}
