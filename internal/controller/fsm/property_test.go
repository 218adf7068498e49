package fsm

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

var (
	propSeeds = flag.Int("fsm.seeds", 100, "seeds of TestApplyRandomSequences")
	propSeed  = flag.Int64("fsm.seed", -1, "run TestApplyRandomSequences with this one seed")
)

// gen builds random commands against the current state: mostly plausible
// ones (current expectations, real members), sometimes wrong in one field,
// so that every kind is both accepted and refused.
type gen struct {
	rng *rand.Rand
}

var genGroups = []string{"a", "b", "c"}

func (g gen) pct(p int) bool { return g.rng.IntN(100) < p }

func (g gen) pick(ids []int64) int64 {
	if len(ids) == 0 {
		return int64(g.rng.IntN(6))
	}
	return ids[g.rng.IntN(len(ids))]
}

func replicaIDs(gr *Group) []int64 {
	var ids []int64
	for _, r := range gr.Replicas {
		ids = append(ids, r.ID)
	}
	return ids
}

func (g gen) command(s *State) Command {
	name := genGroups[g.rng.IntN(len(genGroups))]
	if g.pct(2) {
		name = []string{"", "unknown"}[g.rng.IntN(2)]
	}
	gr := s.Groups[name]
	if gr == nil || g.pct(15) {
		return g.register(name, gr)
	}
	c := Command{Group: name}
	switch g.rng.IntN(10) {
	case 0, 1:
		return g.register(name, gr)
	case 2, 3, 4:
		c.Kind = KindAlterISR
		c.Master, c.Epoch, c.ISRVersion = gr.Master, gr.Epoch, gr.ISRVersion
		c.ISR = []int64{gr.Master}
		c.Incarnations = map[int64]uint64{}
		for _, r := range gr.Replicas {
			if g.pct(60) {
				c.ISR = append(c.ISR, r.ID)
			}
			c.Incarnations[r.ID] = r.Incarnation
		}
		switch g.rng.IntN(12) {
		case 0:
			c.Master = g.pick(replicaIDs(gr))
		case 1:
			c.Epoch += uint32(g.rng.IntN(3)) - 1
		case 2:
			c.ISRVersion += uint64(g.rng.IntN(3)) - 1
		case 3:
			c.Incarnations[g.pick(c.ISR)]++
		case 4:
			delete(c.Incarnations, g.pick(c.ISR))
		case 5:
			c.ISR = slices.DeleteFunc(c.ISR, func(id int64) bool { return id == gr.Master })
		case 6:
			c.ISR = append(c.ISR, 40+int64(g.rng.IntN(3)))
		}
	case 5, 6, 7:
		c.Kind = KindElect
		c.Epoch = gr.Epoch
		others := slices.DeleteFunc(slices.Clone(gr.ISR), func(id int64) bool { return id == gr.Master })
		switch {
		case gr.Master == 0 && g.pct(70):
			c.NewMaster, c.Reason = g.pick(gr.ISR), ReasonOffline
		case gr.TransferTo != 0 && g.pct(60):
			c.NewMaster, c.Reason = gr.TransferTo, ReasonTransfer
		case g.pct(60):
			c.NewMaster, c.Reason = g.pick(others), ReasonMasterLost
		default:
			c.NewMaster = g.pick(replicaIDs(gr))
			c.Reason = []string{ReasonMasterLost, ReasonOperator, ReasonOffline, ReasonTransfer, "", "other"}[g.rng.IntN(6)]
		}
		c.Unclean = g.pct(25)
		if g.pct(40) {
			c.ISRVersion = gr.ISRVersion
		}
		if g.pct(20) {
			c.Master = gr.Master
		}
		if r, ok := gr.Replica(c.NewMaster); ok && g.pct(30) {
			c.Incarnation = r.Incarnation
		}
		switch g.rng.IntN(12) {
		case 0:
			c.Epoch += uint32(g.rng.IntN(3)) - 1
		case 1:
			c.ISRVersion = gr.ISRVersion + 1
		case 2:
			c.Incarnation = 1<<40 + 1
		case 3:
			c.NewMaster = 40 + int64(g.rng.IntN(3))
		}
	case 8:
		c.Kind = KindUnregister
		c.ID = g.pick(replicaIDs(gr))
		if r, ok := gr.Replica(c.ID); ok && g.pct(85) {
			c.Incarnation = r.Incarnation
		}
	case 9:
		c.Kind = KindTransfer
		switch {
		case g.pct(20):
			c.NewMaster = 0
		case g.pct(70):
			c.NewMaster = g.pick(gr.ISR)
		default:
			c.NewMaster = g.pick(replicaIDs(gr))
		}
		if g.pct(30) {
			c.Epoch = gr.Epoch + uint32(g.rng.IntN(2))
		}
	}
	if g.pct(1) {
		c.Kind = Kind(g.rng.IntN(8))
	}
	if g.pct(2) {
		c.Cluster = "other"
	}
	return c
}

func (g gen) register(name string, gr *Group) Command {
	c := Command{Kind: KindRegister, Cluster: "c", Group: name, LastEpoch: uint32(g.rng.IntN(4))}
	switch {
	case gr != nil && g.pct(60):
		c.Replica.ID = g.pick(replicaIDs(gr))
	case g.pct(10):
		c.Replica.ID = int64(g.rng.IntN(30)) - 2
	}
	c.Replica.Addr = fmt.Sprintf("h%d:1", g.rng.IntN(100))
	c.Replica.HAAddr = fmt.Sprintf("h%d:2", g.rng.IntN(100))
	return c
}

// TestApplyRandomSequences applies seeded random command sequences (through
// the codec) to two states, one of which is replaced by Restore(Snapshot())
// now and then, and checks after every command: Check, CheckStep, a refusal
// leaves the state unchanged, both states give the same result and stay
// equal (Apply is deterministic, also on a restored state), and a replay of
// the log from NewState ends in the same state.
func TestApplyRandomSequences(t *testing.T) {
	seeds := make([]int64, 0, *propSeeds)
	if *propSeed >= 0 {
		seeds = append(seeds, *propSeed)
	} else {
		for i := range *propSeeds {
			seeds = append(seeds, int64(i))
		}
	}
	accepted := map[Kind]int{}
	refused := map[error]int{}
	reasons := map[string]int{}
	for _, seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 0xf5a))
		g := gen{rng: rng}
		a, b := NewState(), NewState()
		var log []Command
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d step %d (go test ./internal/controller/fsm -run TestApplyRandomSequences -fsm.seed=%d): %s",
				seed, len(log), seed, fmt.Sprintf(format, args...))
		}
		for step := range 250 {
			if seed%2 == 0 && step == 120 {
				// The group loses its master without a successor (a state
				// an older controller may have left): Register and Elect
				// must handle a group without one.
				takeOffline(a, "a")
				takeOffline(b, "a")
				log = append(log, Command{})
			}
			c := g.command(a)
			enc, err := EncodeCommand(c)
			if err != nil {
				fail("EncodeCommand(%+v): %v", c, err)
			}
			d, err := DecodeCommand(enc)
			if err != nil || !equalCommand(c, d) {
				fail("DecodeCommand(EncodeCommand(%+v)) = %+v, %v", c, d, err)
			}
			log = append(log, d)
			prev := a.Clone()
			ra, erra := a.Apply(d)
			rb, errb := b.Apply(d)
			if fmt.Sprint(erra) != fmt.Sprint(errb) || !reflect.DeepEqual(ra, rb) {
				fail("%+v: %+v, %v on one state, %+v, %v on the other", d, ra, erra, rb, errb)
			}
			if erra != nil {
				if !isSentinel(erra) {
					fail("%+v: error %v is none of the fsm errors", d, erra)
				}
				if !reflect.DeepEqual(prev, a) {
					fail("refused %+v (%v) changed the state", d, erra)
				}
				for _, e := range sentinels {
					if errors.Is(erra, e) {
						refused[e]++
					}
				}
			} else {
				accepted[d.Kind]++
				if d.Kind == KindElect {
					reasons[d.Reason]++
					if !prev.Groups[d.Group].InISR(d.NewMaster) {
						reasons["unclean"]++
					}
				}
			}
			if err := a.Check(); err != nil {
				fail("Check after %+v: %v", d, err)
			}
			if err := CheckStep(prev, a, d); err != nil {
				fail("CheckStep after %+v: %v", d, err)
			}
			if !reflect.DeepEqual(a, b) {
				fail("the states differ after %+v", d)
			}
			if step%37 == 36 {
				snap, err := b.Snapshot()
				if err != nil {
					fail("Snapshot: %v", err)
				}
				if n := b.snapshotSize(); n != len(snap) {
					fail("snapshotSize %d, Snapshot %d bytes", n, len(snap))
				}
				if b, err = Restore(snap); err != nil {
					fail("Restore(Snapshot()): %v", err)
				}
				if !reflect.DeepEqual(a, b) {
					fail("Restore(Snapshot()) differs from the state")
				}
				if again, _ := b.Snapshot(); string(again) != string(snap) {
					fail("Snapshot of the restored state differs")
				}
			}
		}
		replay := NewState()
		for _, c := range log {
			if c.Kind == 0 && c.Group == "" {
				takeOffline(replay, "a")
			}
			_, _ = replay.Apply(c)
		}
		if !reflect.DeepEqual(replay, a) {
			fail("a replay of the log ends in another state")
		}
	}
	if *propSeed >= 0 {
		return
	}
	for k := KindRegister; k <= KindTransfer; k++ {
		if accepted[k] < 100 {
			t.Errorf("only %d accepted commands of kind %d: the generator is too weak", accepted[k], k)
		}
	}
	for _, e := range sentinels {
		if refused[e] < 100 {
			t.Errorf("only %d refusals with %v: the generator is too weak", refused[e], e)
		}
	}
	for _, r := range []string{ReasonMasterLost, ReasonTransfer, ReasonOperator, ReasonOffline, "unclean"} {
		if reasons[r] < 20 {
			t.Errorf("only %d accepted elections %s: the generator is too weak", reasons[r], r)
		}
	}
	t.Logf("accepted %v (elections %v), refused %v", accepted, reasons, refused)
}

// takeOffline removes group name's master (its ISR keeps the rest).
func takeOffline(s *State, name string) {
	if g := s.Groups[name]; g != nil && g.Master != 0 {
		g.ISR = slices.DeleteFunc(g.ISR, func(id int64) bool { return id == g.Master })
		if len(g.ISR) == 0 {
			g.ISR = nil
		}
		g.Master, g.TransferTo = 0, 0
		g.ISRVersion++
	}
}
