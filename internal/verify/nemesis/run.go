package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/verify/history"
)

// Target applies faults to a cluster. The lead implements it over the
// cluster and the fault proxy: kill is Kill then (Heal) Start; pause is
// Pause then Resume; partition cuts links then heals them; restart is Stop
// then Start. kill-master and kill-slave are kill aimed at a master or a
// slave, pause-master pause at a master, partition-slave cuts one slave's
// replication link to its master.
type Target interface {
	// Inject starts the fault e. detail says what was done ("pid 4242",
	// "links: a→b, c→b"), for the history.
	Inject(ctx context.Context, e Event) (detail string, err error)
	// Heal ends the fault e: it is called after every Inject, even a
	// failed one. ctx is not the run's: it outlives the run's end, bounded
	// by HealTimeout.
	Heal(ctx context.Context, e Event) (detail string, err error)
}

// Process is the history Process of the nemesis's lines.
const Process = "nemesis"

// HealTimeout bounds one Heal (a restart waits for the process to get
// ready).
const HealTimeout = 2 * time.Minute

// Run applies plan through t, each event at its At after Run starts (by
// clk; an event whose time has passed, because the previous one took
// longer, starts at once). For every event it appends to rec a Fault line
// (Process "nemesis", Fault the kind, Target, Value the planned hold)
// before Inject, and a Heal line after Heal (Value: the details Inject and
// Heal gave, Error: why either failed). When ctx ends, Run starts no more
// events; a fault that is on is healed at once; then it returns nil.
//
// Run returns an error when a history line could not be written (the
// event is then not injected) or when a heal failed (the cluster may not
// be whole again); a failed inject is only recorded.
func Run(ctx context.Context, plan []Event, t Target, rec *history.Writer, clk clock.Clock) error {
	start := clk.Now()
	var healErrs []error
	for _, e := range plan {
		if !sleep(ctx, clk, start.Add(e.At).Sub(clk.Now())) {
			break
		}
		healErr, err := apply(ctx, e, t, rec, clk)
		if err != nil {
			return errors.Join(append(healErrs, err)...)
		}
		if healErr != nil {
			healErrs = append(healErrs, fmt.Errorf("nemesis: heal %v: %w", e, healErr))
		}
	}
	return errors.Join(healErrs...)
}

// apply runs one event: Fault line, Inject, hold, Heal, Heal line. It
// returns the heal's error, and an error when a line could not be
// written.
func apply(ctx context.Context, e Event, t Target, rec *history.Writer, clk clock.Clock) (healErr, err error) {
	fault := line(history.Fault, e)
	if e.Hold > 0 {
		fault.Value = "hold " + e.Hold.String()
	}
	if _, err := rec.Append(fault); err != nil {
		return nil, fmt.Errorf("nemesis: record %v: %w", e, err)
	}
	detail, injectErr := t.Inject(ctx, e)
	if injectErr == nil && e.Hold > 0 {
		sleep(ctx, clk, e.Hold) // a run ending cuts the hold short
	}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), HealTimeout)
	healDetail, healErr := t.Heal(hctx, e)
	cancel()

	heal := line(history.Heal, e)
	heal.Value = join(detail, healDetail)
	var why []string
	if injectErr != nil {
		why = append(why, "inject: "+injectErr.Error())
	}
	if healErr != nil {
		why = append(why, "heal: "+healErr.Error())
	}
	heal.Error = strings.Join(why, "; ")
	if _, err := rec.Append(heal); err != nil {
		return healErr, fmt.Errorf("nemesis: record heal of %v: %w", e, err)
	}
	return healErr, nil
}

func line(f history.Func, e Event) history.Op {
	op := history.New(history.Info, f)
	op.Process = Process
	op.Fault = string(e.Kind)
	op.Target = e.Target
	op.Group = e.Group
	return op
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// sleep waits d on clk; it reports false, at once, when ctx ends first.
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	if d <= 0 {
		return true
	}
	return clock.Sleep(ctx, clk, d) == nil
}
