package broker

// Traffic windows, as RocketMQ's StatsItem keeps them for VIEW_BROKER_STATS_DATA
// (mqadmin statsAll): for the broker's totals, each topic's puts and each
// (topic, consumer group)'s gets, samples of the cumulative counters every
// 10 s (the last 7: a minute), every 10 minutes (the last 7: an hour) and
// every hour (the last 25: a day). A window's figure is the live counter
// less the oldest sample of its ring, over the time since that sample; a
// broker younger than the window reports what it saw since start.
//
// The sampling rides on the once-a-second stats timer; the send and pull
// paths pay nothing more than the counters they already bump (a consumer
// group's counter is one more map lookup and two atomic adds per pull).

import (
	"sync"
	"time"
)

// Window sampling periods and ring sizes (RocketMQ's StatsItem).
const (
	winTickSecs   = 10   // a 10 s sample every this many one-second ticks
	winTenMinSecs = 600  // a 10 min sample every this many ticks
	winHourSecs   = 3600 // an hour sample every this many ticks
	winMinuteLen  = 7
	winHourLen    = 7
	winDayLen     = 25
)

// WindowStat is a count over a window: Sum over Span.
type WindowStat struct {
	Sum  uint64
	Span time.Duration
}

// TPS is Sum per second of Span (0 for an empty span).
func (w WindowStat) TPS() float64 {
	if w.Span <= 0 {
		return 0
	}
	return float64(w.Sum) / w.Span.Seconds()
}

// StatsWindows is a counter over the last minute, hour and day.
type StatsWindows struct {
	Minute, Hour, Day WindowStat
}

// groupTopic keys a consumer group's gets of a topic.
type groupTopic struct{ topic, group string }

type winSample struct {
	at time.Time
	t  Traffic
}

// winRing keeps the last len(s) samples.
type winRing struct {
	s    []winSample
	next int
	n    int
}

func newWinRing(size int) winRing { return winRing{s: make([]winSample, size)} }

func (r *winRing) push(x winSample) {
	r.s[r.next] = x
	r.next = (r.next + 1) % len(r.s)
	r.n = min(r.n+1, len(r.s))
}

// oldest is the oldest sample kept (the ring is never empty: it is seeded).
func (r *winRing) oldest() winSample {
	if r.n < len(r.s) {
		return r.s[0]
	}
	return r.s[r.next]
}

// windows are one counter's three rings.
type windows struct {
	minute, hour, day winRing
}

func newWindows(seed winSample) *windows {
	w := &windows{minute: newWinRing(winMinuteLen), hour: newWinRing(winHourLen), day: newWinRing(winDayLen)}
	w.minute.push(seed)
	w.hour.push(seed)
	w.day.push(seed)
	return w
}

// sample records cur at now in the rings whose period tick completes.
func (w *windows) sample(tick int, x winSample) {
	w.minute.push(x)
	if tick%winTenMinSecs == 0 {
		w.hour.push(x)
	}
	if tick%winHourSecs == 0 {
		w.day.push(x)
	}
}

// winState is the stats' windows (guarded by stats.mu).
type winState struct {
	last   time.Time // the last 10 s sample (start before the first)
	total  *windows
	topics map[string]*windows
	groups map[groupTopic]*windows
}

// sampleWindows takes the 10 s samples (and the 10 min and hour ones when
// due) of every counter; tick is the count of one-second ticks. A counter
// first seen is seeded with zero at the previous sample, when it did not
// yet exist; the windows of counters gone (a deleted topic) go too.
// Called with s.mu held.
func (s *stats) sampleWindows(tick int, now time.Time) {
	w := &s.win
	seed := winSample{at: w.last}
	w.total.sample(tick, winSample{at: now, t: s.total.load()})
	sampleKeys(&s.topics, w.topics, tick, now, seed)
	sampleKeys(&s.groups, w.groups, tick, now, seed)
	w.last = now
}

// forget drops the group counters of a deleted topic (group "") or a
// deleted group (topic ""); their windows go at the next sample.
func (s *stats) forget(topic, group string) {
	s.groups.Range(func(k, _ any) bool {
		if key := k.(groupTopic); (topic != "" && key.topic == topic) || (group != "" && key.group == group) {
			s.groups.Delete(k)
		}
		return true
	})
}

// sampleKeys samples every counter of counters (K → *trafficCounters)
// into its windows in win, seeding the windows of a counter first seen,
// and drops the windows of counters gone.
func sampleKeys[K comparable](counters *sync.Map, win map[K]*windows, tick int, now time.Time, seed winSample) {
	seen := make(map[K]bool, len(win))
	counters.Range(func(k, v any) bool {
		key := k.(K)
		seen[key] = true
		w := win[key]
		if w == nil {
			w = newWindows(seed)
			win[key] = w
		}
		w.sample(tick, winSample{at: now, t: v.(*trafficCounters).load()})
		return true
	})
	for key := range win {
		if !seen[key] {
			delete(win, key)
		}
	}
}

// StatsKind names a counter of StatsWindows.
type StatsKind int

// The counters StatsWindows reads (RocketMQ's BrokerStatsManager names in
// the comments).
const (
	StatsTopicPutMsgs  StatsKind = iota // TOPIC_PUT_NUMS, key a topic
	StatsTopicPutBytes                  // TOPIC_PUT_SIZE, key a topic
	StatsGroupGetMsgs                   // GROUP_GET_NUMS, key topic and group
	StatsGroupGetBytes                  // GROUP_GET_SIZE, key topic and group
	StatsBrokerPutMsgs                  // BROKER_PUT_NUMS
	StatsBrokerGetMsgs                  // BROKER_GET_NUMS
)

// StatsWindows reads a counter's last minute, hour and day: of topic's
// puts, of group's gets of topic, or of the broker's totals (topic and
// group ignored). False when the counter has no traffic.
func (b *Broker) StatsWindows(kind StatsKind, topic, group string) (StatsWindows, bool) {
	s := &b.stats
	var live Traffic
	switch kind {
	case StatsTopicPutMsgs, StatsTopicPutBytes:
		c, ok := s.topics.Load(topic)
		if !ok {
			return StatsWindows{}, false
		}
		live = c.(*trafficCounters).load()
	case StatsGroupGetMsgs, StatsGroupGetBytes:
		c, ok := s.groups.Load(groupTopic{topic, group})
		if !ok {
			return StatsWindows{}, false
		}
		live = c.(*trafficCounters).load()
	default:
		live = s.total.load()
	}
	now := b.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var w *windows
	switch kind {
	case StatsTopicPutMsgs, StatsTopicPutBytes:
		w = s.win.topics[topic]
	case StatsGroupGetMsgs, StatsGroupGetBytes:
		w = s.win.groups[groupTopic{topic, group}]
	default:
		w = s.win.total
	}
	if w == nil {
		// Counted since the last sample, which it did not exist at.
		w = newWindows(winSample{at: s.win.last})
	}
	field := func(t Traffic) uint64 {
		switch kind {
		case StatsTopicPutBytes:
			return t.PutBytes
		case StatsGroupGetMsgs, StatsBrokerGetMsgs:
			return t.GetMsgs
		case StatsGroupGetBytes:
			return t.GetBytes
		default:
			return t.PutMsgs
		}
	}
	over := func(r *winRing) WindowStat {
		o := r.oldest()
		return WindowStat{Sum: field(live) - field(o.t), Span: now.Sub(o.at)}
	}
	return StatsWindows{Minute: over(&w.minute), Hour: over(&w.hour), Day: over(&w.day)}, true
}
