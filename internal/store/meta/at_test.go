package meta

import (
	"fmt"
	"sync"
	"testing"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/vfs"
)

// TestTopicsAtIsOneRead: while topics are added concurrently (each add one
// change), every TopicsAt answer holds exactly as many topics as its
// version counts changes, and TopicAt of an added topic finds it at a
// version that includes its change.
func TestTopicsAtIsOneRead(t *testing.T) {
	s := openT(t, vfs.NewMem(), clock.NewManual(epoch))
	defer s.Close()
	base := s.TopicsVersion().Counter
	const writers, each = 4, 50
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				name := fmt.Sprintf("T%d-%d", w, i)
				if err := s.PutTopic(topic(name, 1)); err != nil {
					t.Error(err)
					return
				}
				_, ok, v := s.TopicAt(name)
				if !ok || v.Counter < base+1 {
					t.Errorf("TopicAt(%s) after its put: found %v at version %+v", name, ok, v)
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	reads := 0
	for {
		ts, v := s.TopicsAt()
		if int64(len(ts)) != v.Counter-base {
			t.Fatalf("TopicsAt: %d topics at version %+v, which counts %d changes", len(ts), v, v.Counter-base)
		}
		reads++
		select {
		case <-done:
			if ts, v := s.TopicsAt(); len(ts) != writers*each || v.Counter-base != writers*each {
				t.Fatalf("at the end: %d topics at version %+v", len(ts), v)
			}
			if _, ok, _ := s.TopicAt("missing"); ok {
				t.Fatal("TopicAt found a topic never added")
			}
			t.Logf("%d consistent reads", reads)
			return
		default:
		}
	}
}
