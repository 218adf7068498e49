package broker

// Traffic counters: messages and record bytes put and got, per topic and in
// all, and a once-a-second sample of the totals from which Throughput
// gives rates. The send and pull paths pay one map lookup and four atomic
// adds; everything else happens when somebody asks.

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
)

// Traffic is what was put and got, in messages and bytes of stored
// records (body, properties, topic and the record's fixed fields).
type Traffic struct {
	PutMsgs, PutBytes, GetMsgs, GetBytes uint64
}

// TopicTraffic is one topic's Traffic.
type TopicTraffic struct {
	Topic string
	Traffic
}

type trafficCounters struct {
	putMsgs, putBytes, getMsgs, getBytes atomic.Uint64
}

func (c *trafficCounters) load() Traffic {
	return Traffic{PutMsgs: c.putMsgs.Load(), PutBytes: c.putBytes.Load(), GetMsgs: c.getMsgs.Load(), GetBytes: c.getBytes.Load()}
}

// statsSamples is how many once-a-second samples of the totals are kept.
const statsSamples = 61

type stats struct {
	started time.Time
	total   trafficCounters
	topics  sync.Map // string → *trafficCounters
	groups  sync.Map // groupTopic → *trafficCounters (gets only)

	mu      sync.Mutex
	samples [statsSamples]Traffic // ring, one a second
	n       int                   // samples taken
	timer   clock.Timer
	closed  bool
	win     winState // statswin.go
}

func (s *stats) topic(name string) *trafficCounters { return counterOf(&s.topics, name) }

// counterOf is m's counter of key, created if missing.
func counterOf(m *sync.Map, key any) *trafficCounters {
	if c, ok := m.Load(key); ok {
		return c.(*trafficCounters)
	}
	c, _ := m.LoadOrStore(key, new(trafficCounters))
	return c.(*trafficCounters)
}

func (s *stats) put(msgs []*message.Message) {
	var n uint64
	for _, m := range msgs {
		n += uint64(m.EncodedLen())
	}
	c := s.topic(msgs[0].Topic)
	c.putMsgs.Add(uint64(len(msgs)))
	c.putBytes.Add(n)
	s.total.putMsgs.Add(uint64(len(msgs)))
	s.total.putBytes.Add(n)
}

// got counts msgs records of a topic read by a consumer group, n bytes in
// all.
func (s *stats) got(topic, group string, msgs int, n uint64) {
	if msgs <= 0 {
		return
	}
	c := s.topic(topic)
	c.getMsgs.Add(uint64(msgs))
	c.getBytes.Add(n)
	g := counterOf(&s.groups, groupTopic{topic, group})
	g.getMsgs.Add(uint64(msgs))
	g.getBytes.Add(n)
	s.total.getMsgs.Add(uint64(msgs))
	s.total.getBytes.Add(n)
}

// start begins sampling the totals once a second.
func (b *Broker) startStats() {
	b.stats.started = b.clk.Now()
	b.stats.mu.Lock()
	defer b.stats.mu.Unlock()
	b.stats.win = winState{last: b.stats.started, total: newWindows(winSample{at: b.stats.started}),
		topics: map[string]*windows{}, groups: map[groupTopic]*windows{}}
	b.stats.timer = b.clk.AfterFunc(time.Second, b.sampleStats)
}

func (b *Broker) sampleStats() {
	s := &b.stats
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.samples[s.n%statsSamples] = s.total.load()
	s.n++
	if s.n%winTickSecs == 0 {
		s.sampleWindows(s.n, b.clk.Now())
	}
	s.timer = b.clk.AfterFunc(time.Second, b.sampleStats)
}

func (b *Broker) stopStats() {
	b.stats.mu.Lock()
	defer b.stats.mu.Unlock()
	b.stats.closed = true
	if b.stats.timer != nil {
		b.stats.timer.Stop()
	}
}

// Started is when the broker started.
func (b *Broker) Started() time.Time { return b.stats.started }

// TotalTraffic is the broker's traffic since it started (put counts
// stored messages, each batch item and each timer or retry copy as one;
// get counts records answered to pulls and pops).
func (b *Broker) TotalTraffic() Traffic { return b.stats.total.load() }

// TopicTraffic is the traffic of every topic with any, sorted by name.
func (b *Broker) TopicTraffic() []TopicTraffic {
	var out []TopicTraffic
	b.stats.topics.Range(func(k, v any) bool {
		out = append(out, TopicTraffic{Topic: k.(string), Traffic: v.(*trafficCounters).load()})
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}

// Throughput returns messages put and got per second over the last window
// (1 s to 60 s, whole seconds), from the once-a-second samples; 0 before
// the first two samples.
func (b *Broker) Throughput(window time.Duration) (putPerSec, getPerSec float64) {
	s := &b.stats
	s.mu.Lock()
	defer s.mu.Unlock()
	secs := min(max(int(window/time.Second), 1), statsSamples-1, s.n-1)
	if secs <= 0 {
		return 0, 0
	}
	last := s.samples[(s.n-1)%statsSamples]
	first := s.samples[(s.n-1-secs)%statsSamples]
	return float64(last.PutMsgs-first.PutMsgs) / float64(secs), float64(last.GetMsgs-first.GetMsgs) / float64(secs)
}
