package workload

// The broadcast workload: the queue workload's producers, and consumers
// in a BROADCASTING group: each member reads every queue with offsets of
// its own (in memory), and each must see every acknowledged message.

func init() {
	register("broadcast", func() Workload { return &pubsub{name: "broadcast", model: Broadcasting, produce: produceQueue} })
}
