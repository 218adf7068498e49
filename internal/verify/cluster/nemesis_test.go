package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/verify/history"
	"github.com/petrelmq/petrel/internal/verify/nemesis"
)

// processFaults is the nemesis.Target the lead builds over a cluster, for
// the process faults (partition goes through the proxy, not here).
type processFaults struct{ c *Cluster }

func (f processFaults) Inject(ctx context.Context, e nemesis.Event) (string, error) {
	pid := f.c.PID(e.Target)
	var err error
	switch e.Kind {
	case nemesis.Kill:
		err = f.c.Kill(e.Target)
	case nemesis.Pause:
		err = f.c.Pause(e.Target)
	case nemesis.Restart:
		err = f.c.Stop(e.Target)
	default:
		err = fmt.Errorf("no %s here", e.Kind)
	}
	return fmt.Sprintf("pid %d", pid), err
}

func (f processFaults) Heal(ctx context.Context, e nemesis.Event) (string, error) {
	if e.Kind == nemesis.Pause {
		return "", f.c.Resume(e.Target)
	}
	err := f.c.Start(ctx, e.Target)
	return fmt.Sprintf("pid %d", f.c.PID(e.Target)), err
}

// TestNemesisPlanAgainstASingleCluster runs a short real-time plan of
// kills, pauses and restarts: every fault heals, and the process is ready
// at the end.
func TestNemesisPlanAgainstASingleCluster(t *testing.T) {
	c := startSingle(t, Options{})
	p := only(t, c)
	plan := nemesis.Plan(1, []nemesis.Kind{nemesis.Kill, nemesis.Pause, nemesis.Restart}, time.Second, 6500*time.Millisecond, []string{p.Name})
	if len(plan) != 6 {
		t.Fatalf("plan %v, want 6 events", plan)
	}
	rec := history.NewWriter(io.Discard)
	rec.Keep()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := nemesis.Run(ctx, plan, processFaults{c}, rec, clock.Real); err != nil {
		t.Fatalf("nemesis run: %v", err)
	}
	ops := rec.Ops()
	if len(ops) != 2*len(plan) {
		t.Fatalf("%d history lines, want %d", len(ops), 2*len(plan))
	}
	for _, op := range ops {
		if op.Error != "" {
			t.Errorf("%s %s of %s failed: %s", op.F, op.Fault, op.Target, op.Error)
		}
	}
	if code, err := readyz(p, 5*time.Second); err != nil || code != http.StatusOK {
		t.Errorf("GET /readyz after the faults: %d %v", code, err)
	}
	if ex := c.Exits(); len(ex) != 0 {
		t.Errorf("exits nobody asked for: %v", ex)
	}
}
