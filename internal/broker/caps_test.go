package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/store"
)

// TestLongPollCaps: the broker caps how long a pull (4.x: 25 s, below the
// clients' 30 s request timeout) and a pop (2 min) are held, whatever the
// request asks; the caps are Config fields.
func TestLongPollCaps(t *testing.T) {
	for _, c := range []struct {
		name              string
		wantPull, wantPop time.Duration
		configure         bool
	}{
		{"defaults", 25 * time.Second, 2 * time.Minute, false},
		{"configured", 3 * time.Second, 7 * time.Second, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newPopEnv(t, func(_ *store.Config, bc *Config) {
				if c.configure {
					bc.PullMaxSuspend, bc.PopMaxWait = c.wantPull, c.wantPop
				}
			})
			if got := e.b.Config(); got.PullMaxSuspend != c.wantPull || got.PopMaxWait != c.wantPop {
				t.Fatalf("config caps %v, %v; want %v, %v", got.PullMaxSuspend, got.PopMaxWait, c.wantPull, c.wantPop)
			}
			e.createTopic("T", 1)
			pr := suspendReq("g", "T", 0, 0, 1)
			pr.SuspendTimeout = time.Hour
			pull := e.startPull(context.Background(), pr)
			e.waitParked(1)
			req := popReq("g", "T", 1)
			req.Wait = time.Hour
			pop := e.parkPop(req)

			e.clk.Advance(c.wantPull - time.Millisecond)
			if pull.answered() {
				t.Fatalf("pull answered before %v", c.wantPull)
			}
			e.clk.Advance(time.Millisecond)
			if p := pull.wait(t); p.res.Status != PullNoNewMsg {
				t.Fatalf("capped pull: %v, want NO_NEW_MSG", p.res.Status)
			}
			e.clk.Advance(c.wantPop - c.wantPull - time.Millisecond)
			select {
			case <-pop:
				t.Fatalf("pop answered before %v", c.wantPop)
			default:
			}
			e.clk.Advance(time.Millisecond)
			if got := waitPop(t, "capped pop", pop); len(got) != 0 {
				t.Fatalf("capped pop got %d messages", len(got))
			}
		})
	}
}

func TestConfigRefusesNegativeCaps(t *testing.T) {
	for _, set := range []func(*Config){
		func(c *Config) { c.PullMaxSuspend = -time.Second },
		func(c *Config) { c.PopMaxWait = -time.Second },
	} {
		c := DefaultConfig()
		set(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("Validate = %v, want a refusal of a negative cap", err)
		}
	}
}
