package sim

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

var (
	seedFlag  = flag.Uint64("seed", 0, "run only this seed (TestSim), with its event trace on failure")
	seedsFlag = flag.Int("seeds", 2000, "how many seeds TestSim runs")
	soakFlag  = flag.Duration("soak", 0, "TestSim: run random seeds for this long instead (e.g. -soak=1h)")
	breakFlag = flag.String("break", "", "with -seed: break this rule (a Break name, e.g. RestartKeepsEpoch)")
)

func breakByName(t *testing.T, name string) Break {
	t.Helper()
	for br := BreakNone; br < numBreaks; br++ {
		if br.String() == name {
			return br
		}
	}
	t.Fatalf("-break=%s: no such rule (want one of %v)", name, breakNames)
	return BreakNone
}

func notLive(seed uint64) string {
	return fmt.Sprintf("seed %d: no send acked in the %v after every fault healed (liveness)\nreproduce: go test ./internal/controller/sim -run 'TestSim$' -seed=%d -v",
		seed, Options{}.withDefaults().Heal, seed)
}

// soak runs random seeds on every core until d has passed.
func soak(t *testing.T, d time.Duration) {
	end := time.Now().Add(d)
	var mu sync.Mutex
	var failed []string
	n := 0
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for time.Now().Before(end) {
				seed := rand.Uint64()
				res := Run(Options{Seed: seed})
				mu.Lock()
				n++
				if res.Err != nil {
					failed = append(failed, res.Err.Error())
				} else if res.AckedAfterHeal == 0 {
					failed = append(failed, notLive(seed))
				}
				stop := len(failed) > 0
				mu.Unlock()
				if stop {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, f := range failed {
		t.Error(f)
	}
	t.Logf("soak: %d random seeds in %v", n, d)
}

// TestSim runs seeds 1..-seeds (default 2000) with every rule intact: no
// invariant may break and every run takes writes again once its faults
// healed. A failure prints the one-line reproduction. -seed=N runs one seed
// (with its trace under -v); -soak=DURATION runs random seeds until then:
//
//	go test ./internal/controller/sim -run 'TestSim$' -soak=1h
func TestSim(t *testing.T) {
	if *soakFlag > 0 {
		soak(t, *soakFlag)
		return
	}
	if *seedFlag != 0 {
		br := BreakNone
		if *breakFlag != "" {
			br = breakByName(t, *breakFlag)
		}
		res := Run(Options{Seed: *seedFlag, Break: br, Trace: testing.Verbose()})
		if res.Err == nil {
			for _, l := range res.Trace {
				t.Log(l)
			}
		}
		res.Trace = nil
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if res.AckedAfterHeal == 0 && br == BreakNone {
			t.Error(notLive(res.Seed))
		}
		t.Logf("seed %d: %+v", *seedFlag, res)
		return
	}
	start := time.Now()
	n := *seedsFlag
	results := make([]Result, n)
	// Each run is one goroutine of its own; independent runs share the
	// cores.
	var wg sync.WaitGroup
	next := make(chan int)
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := range next {
				results[i] = Run(Options{Seed: uint64(i + 1)})
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	var total Result
	stuck := 0
	for _, res := range results {
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		total.Events += res.Events
		total.Sends += res.Sends
		total.Acked += res.Acked
		total.InDoubt += res.InDoubt
		total.Elections += res.Elections
		total.Truncated += res.Truncated
		total.Faults += res.Faults
		if res.AckedAfterHeal == 0 {
			stuck++
			if stuck <= 5 {
				t.Error(notLive(res.Seed))
			}
		}
	}
	t.Logf("%d seeds in %v: %d events, %d sends, %d acked, %d in doubt, %d elections, %d records truncated, %d faults",
		n, time.Since(start).Round(time.Millisecond), total.Events, total.Sends, total.Acked, total.InDoubt,
		total.Elections, total.Truncated, total.Faults)
	// The runs must exercise what they check.
	if total.Acked < 30*n || total.Elections < n/4 || total.Truncated == 0 {
		t.Fatalf("the simulation exercised too little: %+v", total)
	}
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

const (
	invLost      = "no acked record lost"
	invOnISR     = "acked record on every ISR member"
	invIdentical = "replicas identical up to the commit point"
	invOneMaster = "one master acks at a time"
	invLeases    = "no two leases valid at once"
	invDense     = "queue offsets dense"
	invEpochs    = "epochs monotonic"
	invBelowCP   = "no truncation below the commit point"
)

// caughtBy lists, per broken rule, the invariants that are its
// consequences: a break must be caught by one of them, not by the model's
// own bookkeeping.
var caughtBy = map[Break][]string{
	ElectOutsideISR:        {invLost, invOnISR, invIdentical, invBelowCP},
	AckWithoutLease:        {invOneMaster, invLost},
	SkipLeaseWait:          {invLeases, invOneMaster},
	SkipLeaderWait:         {invLeases, invOneMaster},
	HWIgnoresISR:           {invOnISR, invLost},
	SkipDivergenceCheck:    {invIdentical, invDense, invEpochs, invLost, invOnISR},
	QueueOffsetsFromMemory: {invDense},
	RestartKeepsEpoch:      {invIdentical, invDense, invLost, invOnISR, invBelowCP},
	ISRAddAfterCommit:      {invOnISR, invLost},
	ISRRevertOnError:       {invOnISR, invLost},
	JoinByLag:              {invOnISR, invLost},
	VoteWithoutSilence:     {invLeases, invOneMaster},
}

// breakSeeds bounds the seeds TestBrokenRulesAreCaught tries per rule.
const breakSeeds = 1000

// TestBrokenRulesAreCaught breaks each rule in turn: within breakSeeds the
// simulation must report a violation of an invariant the rule protects.
func TestBrokenRulesAreCaught(t *testing.T) {
	for br := Break(1); br < numBreaks; br++ {
		t.Run(br.String(), func(t *testing.T) {
			t.Parallel() // each run is its own goroutine; the rules share the cores
			want := caughtBy[br]
			if len(want) == 0 {
				t.Fatalf("no expected invariants listed for %v", br)
			}
			for seed := uint64(1); seed <= breakSeeds; seed++ {
				res := Run(Options{Seed: seed, Break: br})
				var v *Violation
				if res.Err == nil {
					continue
				}
				if !errors.As(res.Err, &v) || !slices.Contains(want, v.Invariant) {
					t.Fatalf("seed %d broke an unexpected invariant (want one of %q): %v", seed, want, res.Err)
				}
				t.Logf("caught at seed %d: %s: %s", seed, v.Invariant, v.Detail)
				return
			}
			t.Fatalf("no seed out of %d caught %v", breakSeeds, br)
		})
	}
}

// TestLiteralContract runs the contract to the letter (no fixes F1, F2):
// safety must hold; the seeds whose group never took a write again after
// healing show the liveness gaps the fixes close.
func TestLiteralContract(t *testing.T) {
	stuck := 0
	const n = 150
	for seed := uint64(1); seed <= n; seed++ {
		res := Run(Options{Seed: seed, Literal: true})
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if res.AckedAfterHeal == 0 {
			stuck++
		}
	}
	t.Logf("literal contract: %d of %d seeds took no write after every fault healed", stuck, n)
}
