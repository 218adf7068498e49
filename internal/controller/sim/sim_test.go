package sim

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

var (
	seedFlag  = flag.Uint64("seed", 0, "run only this seed (TestSim), with its event trace on failure")
	seedsFlag = flag.Int("seeds", 2000, "how many seeds TestSim runs")
	soakFlag  = flag.Duration("soak", 0, "TestSoak: run random seeds for this long (e.g. -soak=1h)")
)

func runSeed(t *testing.T, o Options) Result {
	t.Helper()
	res := Run(o)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	return res
}

// TestSim runs seeds 1..-seeds (default 2000) with every rule intact: no
// invariant may break. A failure prints the one-line reproduction.
func TestSim(t *testing.T) {
	if *seedFlag != 0 {
		res := runSeed(t, Options{Seed: *seedFlag, Trace: testing.Verbose()})
		for _, l := range res.Trace {
			t.Log(l)
		}
		res.Trace = nil
		t.Logf("seed %d: %+v", *seedFlag, res)
		return
	}
	start := time.Now()
	var total Result
	stuck := 0
	for seed := uint64(1); seed <= uint64(*seedsFlag); seed++ {
		res := runSeed(t, Options{Seed: seed})
		total.Events += res.Events
		total.Sends += res.Sends
		total.Acked += res.Acked
		total.InDoubt += res.InDoubt
		total.Elections += res.Elections
		total.Truncated += res.Truncated
		total.Faults += res.Faults
		if res.AckedAfterHeal == 0 {
			stuck++
			if stuck < 5 {
				t.Logf("seed %d: no ack after healing", seed)
			}
		}
	}
	t.Logf("%d seeds in %v: %d events, %d sends, %d acked, %d in doubt, %d elections, %d records truncated, %d faults; %d seeds without an ack after healing",
		*seedsFlag, time.Since(start).Round(time.Millisecond), total.Events, total.Sends, total.Acked, total.InDoubt,
		total.Elections, total.Truncated, total.Faults, stuck)
	// The runs must exercise what they check.
	if total.Acked < 100**seedsFlag || total.Elections < *seedsFlag/2 || total.Truncated == 0 {
		t.Fatalf("the simulation exercised too little: %+v", total)
	}
}

// TestSoak runs random seeds until -soak has passed (skipped without it):
//
//	go test ./internal/controller/sim -run TestSoak -soak=1h
func TestSoak(t *testing.T) {
	if *soakFlag == 0 {
		t.Skip("soak: set -soak=DURATION to run random seeds for that long")
	}
	end := time.Now().Add(*soakFlag)
	n := 0
	for time.Now().Before(end) {
		runSeed(t, Options{Seed: rand.Uint64()})
		n++
	}
	t.Logf("soak: %d seeds in %v", n, *soakFlag)
}

// TestDeterministic: a seed is a reproduction: the same seed gives the same
// run.
func TestDeterministic(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		a, b := Run(Options{Seed: seed}), Run(Options{Seed: seed})
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("seed %d ran twice differently:\n%+v\n%+v", seed, a, b)
		}
	}
}

// TestBrokenRulesAreCaught breaks each rule in turn: some seed must make
// the simulation report a violation.
func TestBrokenRulesAreCaught(t *testing.T) {
	for br := Break(1); br < numBreaks; br++ {
		t.Run(br.String(), func(t *testing.T) {
			for seed := uint64(1); seed <= 300; seed++ {
				res := Run(Options{Seed: seed, Break: br})
				var v *Violation
				if errors.As(res.Err, &v) {
					t.Logf("caught at seed %d: %s: %s", seed, v.Invariant, v.Detail)
					return
				}
			}
			t.Fatalf("no seed out of 300 caught %v", br)
		})
	}
}
