package checker

import (
	"slices"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/verify/history"
)

// TestModelHistoryIsValid: whatever the seed, the model broker's history
// is valid, and across the seeds it exercises what the checker must
// allow: duplicates, in-doubt sends stored and not, failed sends,
// retries, deliveries at exactly DeliverAt, check-backs.
func TestModelHistoryIsValid(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 50
	}
	var tot Counts
	atDue, retries := 0, 0
	for seed := uint64(0); seed < uint64(seeds); seed++ {
		ops := modelHistory(seed, defaultModel())
		r := Check(ops)
		if !r.Valid || !r.Complete {
			t.Fatalf("seed %d: valid %v complete %v, reasons %q", seed, r.Valid, r.Complete, r.Reasons)
		}
		assertConsistent(t, r, Options{})
		tot.Acked += r.Total.Acked
		tot.InDoubt += r.Total.InDoubt
		tot.InDoubtStored += r.Total.InDoubtStored
		tot.Failed += r.Total.Failed
		tot.Duplicated += r.Total.Duplicated
		tot.Lateness.Count += r.Total.Lateness.Count
		due := map[string]time.Time{}
		invokes := map[string]int{}
		for _, op := range ops {
			if op.F == history.Send && op.Type == history.Invoke {
				invokes[op.ID]++
				if invokes[op.ID] == 2 {
					retries++
				}
				due[op.ID] = op.DeliverAt
			}
			if op.F == history.Deliver && !due[op.ID].IsZero() && op.Time.Equal(due[op.ID]) {
				atDue++
			}
		}
	}
	t.Logf("over %d seeds: %+v; %d deliveries at DeliverAt, %d retries", seeds, tot, atDue, retries)
	if tot.Acked == 0 || tot.Failed == 0 || tot.InDoubtStored == 0 || tot.InDoubt == tot.InDoubtStored ||
		tot.Duplicated == 0 || tot.Lateness.Count == 0 || atDue == 0 || retries == 0 {
		t.Errorf("the model missed a case the checker must allow: %+v, %d at DeliverAt, %d retries", tot, atDue, retries)
	}
}

// renumber gives lines their position as Index again after an edit.
func renumber(ops []history.Op) []history.Op {
	for i := range ops {
		ops[i].Index = int64(i)
	}
	return ops
}

// acked finds an acked id of the workload that the predicate accepts.
func ackedID(ops []history.Op, wl string, pred func(inv history.Op) bool) (string, bool) {
	invs := map[string]history.Op{}
	for _, op := range ops {
		if op.F != history.Send || op.Workload != wl {
			continue
		}
		if op.Type == history.Invoke {
			invs[op.ID] = op
		}
		if inv, ok := invs[op.ID]; op.Type == history.OK && ok && pred(inv) {
			return op.ID, true
		}
	}
	return "", false
}

func without(ops []history.Op, drop func(op history.Op) bool) []history.Op {
	return renumber(slices.DeleteFunc(slices.Clone(ops), drop))
}

func anyOp(history.Op) bool { return true }

// TestModelMutationsAreFound breaks one thing in a valid model history and
// expects the checker to name exactly that.
func TestModelMutationsAreFound(t *testing.T) {
	type mutation struct {
		name   string
		mutate func(t *testing.T, ops []history.Op) ([]history.Op, string) // "" when the history lacks what it needs
		want   func(r Result, id string) bool
	}
	only := func(r Result, c Counts) bool {
		got := tallyOf(r.Total)
		got.Acked, got.InDoubt, got.InDoubtStored, got.Failed, got.Duplicated = 0, 0, 0, 0, 0
		return got == tallyOf(c) && !r.Valid
	}
	muts := []mutation{
		{
			name: "an acked message neither delivered nor drained is lost",
			mutate: func(t *testing.T, ops []history.Op) ([]history.Op, string) {
				id, _ := ackedID(ops, "queue", anyOp)
				return without(ops, func(op history.Op) bool { return op.ID == id && (op.F == history.Deliver || op.F == history.Drain) }), id
			},
			want: func(r Result, id string) bool {
				return r.Total.Lost == 1 && r.Lost[0].ID == id && r.Total.Undelivered+r.Total.Unexpected+r.Total.Corrupt == 0
			},
		},
		{
			name: "an acked broadcast message no member got, not drained, is lost for every member",
			mutate: func(t *testing.T, ops []history.Op) ([]history.Op, string) {
				id, _ := ackedID(ops, "broadcast", anyOp)
				return without(ops, func(op history.Op) bool { return op.ID == id && (op.F == history.Deliver || op.F == history.Drain) }), id
			},
			want: func(r Result, id string) bool {
				return r.Total.Lost == defaultModel().Consumers && r.Lost[0].ID == id && r.Lost[0].Member != ""
			},
		},
		{
			name: "an acked message drained and never delivered is undelivered",
			mutate: func(t *testing.T, ops []history.Op) ([]history.Op, string) {
				id, _ := ackedID(ops, "txn", func(inv history.Op) bool { return inv.Txn == history.Commit })
				return without(ops, func(op history.Op) bool { return op.ID == id && op.F == history.Deliver }), id
			},
			want: func(r Result, id string) bool { return only(r, Counts{Undelivered: 1}) && r.Undelivered[0].ID == id },
		},
		{
			name: "a delivery of a message never sent is unexpected",
			mutate: func(t *testing.T, ops []history.Op) ([]history.Op, string) {
				op := del("queue", "queue-c0", "never-sent")
				i := len(ops) / 2
				return renumber(slices.Insert(slices.Clone(ops), i, op)), "never-sent"
			},
			want: func(r Result, id string) bool { return only(r, Counts{Unexpected: 1}) && r.Unexpected[0].ID == id },
		},
		{
			name: "a delivery whose sum was never sent is corrupt",
			mutate: func(t *testing.T, ops []history.Op) ([]history.Op, string) {
				out := slices.Clone(ops)
				for i, op := range out {
					if op.F == history.Deliver {
						out[i].Sum ^= 1
						return out, op.ID
					}
				}
				return out, ""
			},
			want: func(r Result, id string) bool { return only(r, Counts{Corrupt: 1}) && r.Corrupt[0].ID == id },
		},
		{
			name: "a delayed message delivered before its time is early",
			mutate: func(t *testing.T, ops []history.Op) ([]history.Op, string) {
				out := slices.Clone(ops)
				due := map[string]time.Time{}
				for i, op := range out {
					if op.F == history.Send && op.Type == history.Invoke {
						due[op.ID] = op.DeliverAt
					}
					if op.F == history.Deliver && !due[op.ID].IsZero() {
						out[i].Time = due[op.ID].Add(-time.Microsecond)
						return out, op.ID
					}
				}
				return out, ""
			},
			want: func(r Result, id string) bool {
				return only(r, Counts{Early: 1}) && r.Early[0].ID == id && r.Early[0].By == time.Microsecond
			},
		},
		{
			name: "a rolled-back message found by the drain is rolled_back_delivered",
			mutate: func(t *testing.T, ops []history.Op) ([]history.Op, string) {
				id, ok := ackedID(ops, "txn", func(inv history.Op) bool { return inv.Txn == history.Rollback || inv.Txn == history.CheckRollback })
				if !ok {
					return ops, ""
				}
				op := drain("txn", id, -1, -1)
				op.Sum = 0
				for _, s := range ops {
					if s.ID == id && s.F == history.Send && s.Type == history.Invoke {
						op.Sum = s.Sum
					}
				}
				return renumber(slices.Insert(slices.Clone(ops), len(ops)-1, op)), id
			},
			want: func(r Result, id string) bool {
				return only(r, Counts{RolledBackDelivered: 1}) && r.RolledBackDelivered[0].ID == id
			},
		},
		{
			name: "a drain line missing between others is a hole",
			mutate: func(t *testing.T, ops []history.Op) ([]history.Op, string) {
				// The second drain line of a queue that has a third.
				seen := map[[2]any]int{}
				for i, op := range ops {
					if op.F != history.Drain {
						continue
					}
					k := [2]any{op.Topic, op.Queue}
					seen[k]++
					if seen[k] == 2 && i+1 < len(ops) && ops[i+1].F == history.Drain && ops[i+1].Topic == op.Topic && ops[i+1].Queue == op.Queue {
						return renumber(slices.Delete(slices.Clone(ops), i, i+1)), op.ID
					}
				}
				return ops, ""
			},
			want: func(r Result, id string) bool {
				return only(r, Counts{Holes: 1}) && r.Holes[0].From == 1 && r.Holes[0].To == 1
			},
		},
		{
			name: "a key's later message delivered first is reordered",
			mutate: func(t *testing.T, ops []history.Op) ([]history.Op, string) {
				// Two acked sends of one key, the second sent after the
				// first's ack; swap their first deliveries.
				type st struct {
					key                string
					okAt, invAt, delAt int
				}
				msgs := map[string]*st{}
				var order []string
				for i, op := range ops {
					if op.Workload != "ordered" {
						continue
					}
					m := msgs[op.ID]
					if m == nil {
						m = &st{okAt: -1, invAt: -1, delAt: -1}
						msgs[op.ID] = m
						order = append(order, op.ID)
					}
					switch {
					case op.F == history.Send && op.Type == history.Invoke && m.invAt < 0:
						m.key, m.invAt = op.Key, i
					case op.F == history.Send && op.Type == history.OK && m.okAt < 0:
						m.okAt = i
					case op.F == history.Deliver && m.delAt < 0:
						m.delAt = i
					}
				}
				for ai, a := range order {
					for _, b := range order[ai+1:] {
						ma, mb := msgs[a], msgs[b]
						if ma.key == "" || ma.key != mb.key || ma.okAt < 0 || mb.okAt < 0 || mb.invAt < ma.okAt || ma.delAt < 0 || mb.delAt < 0 {
							continue
						}
						out := slices.Clone(ops)
						out[ma.delAt], out[mb.delAt] = out[mb.delAt], out[ma.delAt]
						out[ma.delAt].Time, out[mb.delAt].Time = ops[ma.delAt].Time, ops[mb.delAt].Time
						return renumber(out), a
					}
				}
				return ops, ""
			},
			want: func(r Result, id string) bool {
				return r.Total.Reordered >= 1 && !r.Valid && slices.ContainsFunc(r.Reordered, func(p Reorder) bool { return p.Earlier == id }) &&
					r.Total.Lost+r.Total.Unexpected+r.Total.Corrupt+r.Total.Holes+r.Total.Early == 0
			},
		},
	}
	for _, mu := range muts {
		t.Run(mu.name, func(t *testing.T) {
			tried := 0
			for seed := uint64(0); seed < 40; seed++ {
				ops := modelHistory(seed, defaultModel())
				bad, id := mu.mutate(t, ops)
				if id == "" {
					continue
				}
				tried++
				r := Check(bad)
				assertConsistent(t, r, Options{})
				if !mu.want(r, id) {
					t.Fatalf("seed %d, %s: counts %+v, reasons %q", seed, id, tallyOf(r.Total), r.Reasons)
				}
			}
			if tried < 10 {
				t.Fatalf("only %d of 40 seeds had what the mutation needs", tried)
			}
		})
	}
}
