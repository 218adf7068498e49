package broker

// Which broker of the group a consumer should pull from next: every pull
// answer's suggestWhichBrokerId, RocketMQ's rule (PullMessageProcessor and
// DefaultMessageStore.getMessage):
//
//   - A pull is "slow" when the records it read lie further behind the
//     log's write point than AccessMessageInMemoryMaxRatio percent of the
//     machine's physical memory: the master is then serving it from disk
//     rather than from the page cache, at the cost of its writers.
//   - With SlaveReadEnable, a slow pull is told the group's
//     whichBrokerWhenConsumeSlowly (default 1, the first slave) and any
//     other the group's brokerId (default 0, the master). Without it every
//     answer suggests the master.
//   - A slave answering a pull that is not slow sends the consumer back to
//     the master (0) while its master is reachable.
//
// Only found records count (as in Java the check looks at the records a
// read scanned; Petrel's store does not report the offsets of records a
// filter dropped, so a read that matched nothing is not slow).
//
// Two departures, both so that a consumer never stays on a slave for good:
//   - Java's slave turns a "not found" answer into PULL_RETRY_IMMEDIATELY
//     when it sends the consumer back to the master, so that it does not
//     long-poll on the slave. Petrel keeps the long poll: a client whose
//     route does not list the master yet (it refreshes routes every 30 s,
//     the master having just come back) pulls from the slave again, and
//     with "retry immediately" it would spin there until the refresh. A
//     long-polled answer comes with the same suggestion (0) at the next
//     message or the poll's timeout.
//   - Java's slave refuses pulls altogether when slaveReadEnable is off;
//     Petrel's slave always serves them, so that consumers keep reading a
//     group whose master is down (the clients pull from any listed replica
//     when the suggested id is not in the route, and return to the master
//     as soon as it is listed and suggested).

import (
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
)

// slaveKeepsOffset reports whether a slave leaves a pull's offset as it is
// for a read of status st at offset, instead of answering
// PULL_OFFSET_MOVED: an offset past the queue's end (OFFSET_OVERFLOW_BADLY),
// or a queue it holds no message of yet. The consumer read that far on the
// master, whose log the slave has not dispatched as far yet (async
// replication, or a slave catching up after a failover); moving it back
// to the slave's end — or to 0 — would make the official clients take
// that as their new offset and consume again what they had (after a 10 s
// pause). The slave answers "nothing new" at the offset instead and long
// polls until it holds it, as RocketMQ's slave corrects no offset
// (offsetCheckInSlave off). An offset below the queue's first one still
// moves forward: those records are gone from the slave, and the master
// keeps no more than it does.
func slaveKeepsOffset(st store.GetStatus, offset int64) bool {
	return st == store.OffsetOverflowBadly || st == store.NoMessageInQueue && offset != 0
}

// DefaultAccessMessageInMemoryMaxRatio is RocketMQ's default percent of
// physical memory a pull may read behind the write point before it counts
// as slow.
const DefaultAccessMessageInMemoryMaxRatio = 40

// withReadDefaults sets the defaults of the slave-read settings in c.
func withReadDefaults(c Config) Config {
	c.AccessMessageInMemoryMaxRatio = DefaultAccessMessageInMemoryMaxRatio
	return c
}

// suggestion is what suggestBrokerID decides on.
type suggestion struct {
	slaveRead bool // Config.SlaveReadEnable
	slave     bool // this broker is a slave
	masterUp  bool // on a slave: its master is reachable
	slow      bool // readingSlowly
	// The group's brokerId and whichBrokerWhenConsumeSlowly.
	groupBrokerID, whenSlowly int64
}

// suggestBrokerID is the broker id a pull answer suggests (see the file
// comment).
func suggestBrokerID(s suggestion) int64 {
	id := int64(0)
	if s.slaveRead {
		id = s.groupBrokerID
		if s.slow {
			id = s.whenSlowly
		}
	}
	if s.slave && !s.slow && s.masterUp {
		id = 0
	}
	return id
}

// readingSlowly reports whether a read whose last record starts at
// lastRecord lies more than ratio percent of memory behind writePoint.
// memory ≤ 0 (unknown) is never slow.
func readingSlowly(writePoint, lastRecord, memory int64, ratio int) bool {
	if memory <= 0 || lastRecord < 0 {
		return false
	}
	r := int64(ratio)
	limit := memory/100*r + memory%100*r/100 // memory*ratio/100 without overflow
	return writePoint-lastRecord > limit
}

// lastRecordOffset is the highest commit-log offset of the records in body
// (stored records back to back), or -1 when it holds none.
func lastRecordOffset(body []byte) int64 {
	last := int64(-1)
	for len(body) > 0 {
		n, err := message.Check(body)
		if err != nil || n <= 0 {
			break
		}
		last = max(last, message.Record(body[:n]).PhysicalOffset())
		body = body[n:]
	}
	return last
}

// writePoint is the commit-log offset the store writes next (its
// Durable end for a store that does not report what it wrote).
func (b *Broker) writePoint() int64 {
	if w, ok := b.st.(interface{ Written() int64 }); ok {
		return w.Written()
	}
	return b.st.Durable()
}

// masterReachable reports, on a slave, whether its master answers its
// fetches (RocketMQ's slave asks whether the group's smallest registered
// broker id is 0). Without replication status the master is taken to be
// there.
func (b *Broker) masterReachable() bool {
	info, ok := b.ReplicationStatus()
	if !ok {
		return true
	}
	for _, r := range info.Replicas {
		if r.ID == b.BrokerID() {
			return r.InSync
		}
	}
	return len(info.Replicas) == 0
}

// suggestFor fills res.SuggestWhichBrokerID for a pull of group. Without
// SlaveReadEnable the answer is always the master, and nothing is looked at.
func (b *Broker) suggestFor(group string, res *PullResult) {
	if !b.cfg.SlaveReadEnable {
		res.SuggestWhichBrokerID = 0
		return
	}
	// A group not created yet has RocketMQ's defaults.
	s := suggestion{slaveRead: true, slave: b.Role() == RoleSlave, groupBrokerID: 0, whenSlowly: 1}
	if g, ok := b.meta.Group(group); ok {
		s.groupBrokerID, s.whenSlowly = g.BrokerID, g.WhichBrokerWhenConsumeSlowly
	}
	if res.Status == PullFound {
		s.slow = readingSlowly(b.writePoint(), lastRecordOffset(res.Body), b.cfg.PhysicalMemory, b.cfg.AccessMessageInMemoryMaxRatio)
	}
	if s.slave && !s.slow {
		s.masterUp = b.masterReachable()
	}
	res.SuggestWhichBrokerID = suggestBrokerID(s)
}
