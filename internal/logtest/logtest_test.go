package logtest

import (
	"fmt"
	"log/slog"
	"sync"
	"testing"
)

func TestBufferCollectsConcurrentLogLines(t *testing.T) {
	var buf Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			log.Info("hello", "i", i)
			_ = buf.String()
		})
	}
	wg.Wait()
	log.Warn("other")
	if got := buf.Lines("msg=hello"); len(got) != 8 {
		t.Fatalf("%d hello lines, want 8:\n%s", len(got), buf.String())
	}
	for i := range 8 {
		if got := buf.Lines(fmt.Sprintf("msg=hello i=%d", i)); len(got) != 1 {
			t.Fatalf("i=%d: %d lines, want 1:\n%s", i, len(got), buf.String())
		}
	}
	if got := buf.Lines("level=WARN"); len(got) != 1 || got[0] == "" {
		t.Fatalf("warn lines %q", got)
	}
	if got := buf.Lines("absent"); got != nil {
		t.Fatalf("lines of an absent text: %q", got)
	}
}
