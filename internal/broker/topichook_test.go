package broker

import (
	"fmt"
	"maps"
	"sync"
	"testing"
)

// TestOnTopicChangedCarriesTheTopicAtItsVersion: creates, a change and a
// delete, concurrent ones included, each reach the hook with the topic's
// state and a table version that includes the change; of the changes of one
// topic, the one with the highest version is the topic's final state.
func TestOnTopicChangedCarriesTheTopicAtItsVersion(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	got := map[string]TopicChange{} // newest per topic
	calls := 0
	e.b.OnTopicChanged(func(c TopicChange) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if cur, ok := got[c.Name]; !ok || cur.Version.Counter < c.Version.Counter {
			got[c.Name] = c
		}
	})
	before := e.b.TopicsVersion()
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("H%02d", i%10) // four creates or changes per topic
			if err := e.b.CreateTopic(topicCfg(name, int32(1+i/10), 6)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := e.b.DeleteTopic("H00"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls < 11 {
		t.Fatalf("%d hook calls for 10 topics created and one deleted", calls)
	}
	for i := range 10 {
		name := fmt.Sprintf("H%02d", i)
		c, ok := got[name]
		cur, exists := e.b.Topic(name)
		switch {
		case !ok:
			t.Fatalf("no change reached the hook for %s", name)
		case c.Version.Counter <= before.Counter:
			t.Fatalf("%s: change at version %+v, not after %+v", name, c.Version, before)
		case c.Deleted == exists:
			t.Fatalf("%s: newest change says deleted=%v, the broker has it: %v", name, c.Deleted, exists)
		case exists && !sameTopic(c.Topic, cur):
			t.Fatalf("%s: newest change %+v, the broker holds %+v", name, c.Topic, cur)
		}
	}
	if v := e.b.TopicsVersion(); got["H00"].Version != v {
		t.Fatalf("the delete came last at %+v, the table is at %+v", got["H00"].Version, v)
	}
}

func sameTopic(a, b TopicConfig) bool {
	return a.Name == b.Name && a.ReadQueueNums == b.ReadQueueNums && a.WriteQueueNums == b.WriteQueueNums &&
		a.Perm == b.Perm && a.TopicFilterType == b.TopicFilterType && a.TopicSysFlag == b.TopicSysFlag &&
		a.Order == b.Order && maps.Equal(a.Attributes, b.Attributes)
}
