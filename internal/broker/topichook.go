package broker

import (
	"sync"
)

// TopicChange is the state of one topic after a change, read atomically
// with the version of the topic table at which it holds: of several
// TopicChanges of a topic, the one with the highest Version is current,
// whatever order they arrive in.
type TopicChange struct {
	Name string
	// Topic is the topic's config; zero when Deleted.
	Topic   TopicConfig
	Deleted bool
	Version DataVersion
}

// OnTopicChanged registers fn, called like the OnTopicsChanged hooks
// (after a topic is created, changed or deleted, once that is durable, on
// the caller's goroutine, possibly concurrently with itself) with the
// changed topic. Concurrent changes may reach fn in any order; compare
// Versions.
func (b *Broker) OnTopicChanged(fn func(TopicChange)) {
	b.changeHooks.add(fn)
}

// TopicsAt returns every topic config sorted by name and the version of
// the topic table they are, read atomically.
func (b *Broker) TopicsAt() ([]TopicConfig, DataVersion) {
	ts, v := b.meta.TopicsAt()
	return topicsFromMeta(ts), versionFromMeta(v)
}

// hookList is a list of callbacks of one kind: registered (add) at any
// time, run (over list) with no lock held. list returns the slice as it
// is; add only appends under the lock, so a list taken earlier never
// changes under its reader.
type hookList[F any] struct {
	mu  sync.Mutex
	fns []F
}

func (h *hookList[F]) add(fn F) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fns = append(h.fns, fn)
}

func (h *hookList[F]) list() []F {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fns
}
