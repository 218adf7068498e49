package broker

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/logtest"
	"github.com/petrelmq/petrel/internal/store"
)

// TestPopBelowMinContinuesFromMinAndLogsOnce: a group whose committed offset
// retention passed pops from the queue's new min offset, and the jump is
// logged once.
func TestPopBelowMinContinuesFromMinAndLogsOnce(t *testing.T) {
	logs := &logtest.Buffer{}
	e := newDiskPopEnv(t, func(sc *store.Config, bc *Config) {
		sc.SegmentBytes = 8 << 10
		sc.MaxMessageBytes = 4 << 10
		sc.RetentionInterval = 1000 * sc.FileReservedTime
		bc.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	e.createTopic("T", 1)
	for i := range 60 {
		e.send("T", 0, fmt.Sprint(strings.Repeat("p", 500), i))
	}
	e.b.UpdateConsumerOffset("g", "T", 0, 2)
	e.waitMax("T", 0, 60)
	u, _ := e.fs.Usage("/")
	e.fs.SetCapacity(int64(float64(u.UsedBytes) / 0.85))
	if rep, err := e.file.RunRetention(); err != nil || rep.SegmentsRemoved == 0 {
		t.Fatalf("retention: %+v %v", rep, err)
	}
	e.fs.SetCapacity(0)
	minOff := e.b.MinOffset("T", 0)
	if minOff <= 2 {
		t.Fatalf("min offset %d, want past the committed 2", minOff)
	}
	got := e.pop(popReq("g", "T", 1))
	if len(got) != 1 || got[0].Record.QueueOffset() != minOff {
		t.Fatalf("pop below the min: %d messages, want one at %d", len(got), minOff)
	}
	if n := strings.Count(logs.String(), "below the queue's min offset"); n != 1 {
		t.Fatalf("%d jump lines, want 1:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), fmt.Sprintf("offset=2 min_offset=%d", minOff)) {
		t.Fatalf("jump line lacks the offsets:\n%s", logs.String())
	}
}
