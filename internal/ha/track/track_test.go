package track

import (
	"context"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
)

func newManual() *clock.Manual { return clock.NewManual(time.Unix(1_000_000, 0)) }

func TestOneSyncSlaveCommitsAtTheMinimum(t *testing.T) {
	tr := New(DefaultConfig(), newManual(), nil)
	tr.MasterProgress(0, 0)
	tr.MasterProgress(100, 100)
	if err := tr.Wait(context.Background(), 50); err != ErrNotEnoughReplicas {
		t.Fatalf("no slave: Wait = %v, want ErrNotEnoughReplicas", err)
	}
	if err := tr.SlaveProgress(1, 80, 60); err != nil {
		t.Fatal(err)
	}
	if hw := tr.HW(); hw != 60 {
		t.Fatalf("HW %d, want 60", hw)
	}
	if err := tr.Wait(context.Background(), 60); err != nil {
		t.Fatalf("Wait(60) = %v", err)
	}
}
