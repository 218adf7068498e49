package broker

import "github.com/petrelmq/petrel/internal/store/meta"

// TopicChange is the state of one topic after a change, read atomically
// with the version of the topic table at which it holds: of several
// TopicChanges of a topic, the one with the highest Version is current,
// whatever order they arrive in.
type TopicChange struct {
	Name string
	// Topic is the topic's config; zero when Deleted.
	Topic   meta.Topic
	Deleted bool
	Version meta.DataVersion
}

// OnTopicChanged registers fn, called like the OnTopicsChanged hooks
// (after a topic is created, changed or deleted, once that is durable, on
// the caller's goroutine, possibly concurrently with itself) with the
// changed topic. Concurrent changes may reach fn in any order; compare
// Versions.
func (b *Broker) OnTopicChanged(fn func(TopicChange)) {
	b.hooksMu.Lock()
	defer b.hooksMu.Unlock()
	b.changeHooks = append(b.changeHooks, fn)
}

// TopicsAt returns every topic config sorted by name and the version of
// the topic table they are, read atomically.
func (b *Broker) TopicsAt() ([]meta.Topic, meta.DataVersion) { return b.meta.TopicsAt() }
