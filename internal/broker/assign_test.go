package broker

import (
	"reflect"
	"testing"
)

// TestAllocateMatchesRocketMQsStrategies: AVG gives each member a
// contiguous run (the first members one more when the queues do not
// divide evenly), AVG_BY_CIRCLE deals the queues round robin; a member
// not in the list gets nothing; an unknown strategy is no answer.
func TestAllocateMatchesRocketMQsStrategies(t *testing.T) {
	qs := []int32{0, 1, 2, 3, 4, 5, 6, 7}
	cids := []string{"a", "b", "c"}
	for _, tc := range []struct {
		strategy, cid string
		queues        []int32
		cids          []string
		want          []int32
	}{
		{StrategyAvg, "a", qs, cids, []int32{0, 1, 2}},
		{StrategyAvg, "b", qs, cids, []int32{3, 4, 5}},
		{StrategyAvg, "c", qs, cids, []int32{6, 7}},
		{StrategyAvgByCircle, "a", qs, cids, []int32{0, 3, 6}},
		{StrategyAvgByCircle, "c", qs, cids, []int32{2, 5}},
		{StrategyAvg, "c", []int32{0, 1}, cids, []int32{}}, // more members than queues: the last gets none
		{StrategyAvg, "b", []int32{0, 1}, cids, []int32{1}},
		{StrategyAvg, "x", qs, cids, []int32{}},
	} {
		got, ok := Allocate(tc.strategy, tc.cid, tc.queues, tc.cids)
		if !ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s of %v among %v: %v %v, want %v", tc.strategy, tc.cid, tc.queues, tc.cids, got, ok, tc.want)
		}
	}
	if _, ok := Allocate("CONSISTENT_HASH", "a", qs, cids); ok {
		t.Error("an unknown strategy answered")
	}
}

// TestAllocateCoversEveryQueueOnce: over the members, each strategy hands
// out every queue exactly once (a property of both).
func TestAllocateCoversEveryQueueOnce(t *testing.T) {
	for _, s := range []string{StrategyAvg, StrategyAvgByCircle} {
		for nq := 1; nq <= 9; nq++ {
			for nc := 1; nc <= 5; nc++ {
				qs := make([]int32, nq)
				for i := range qs {
					qs[i] = int32(i)
				}
				cids := make([]string, nc)
				for i := range cids {
					cids[i] = string(rune('a' + i))
				}
				seen := map[int32]int{}
				for _, c := range cids {
					got, _ := Allocate(s, c, qs, cids)
					for _, q := range got {
						seen[q]++
					}
				}
				for _, q := range qs {
					if seen[q] != 1 {
						t.Fatalf("%s, %d queues, %d members: queue %d given %d times", s, nq, nc, q, seen[q])
					}
				}
			}
		}
	}
}

// TestAllocatePop: POP with no share (or one covering every other
// member) is every broker's queues, each broker once as queue -1; with a
// share, the member's own queues plus those of the next members; with
// more members than queues, one each.
func TestAllocatePop(t *testing.T) {
	qs := []RouteQueue{{"a", 0}, {"a", 1}, {"b", 0}, {"b", 1}}
	cids := []string{"a", "b", "c", "d"}
	every := []RouteQueue{{"a", -1}, {"b", -1}}
	if got, _ := allocatePop(StrategyAvg, "a", qs, cids, 0); !reflect.DeepEqual(got, every) {
		t.Errorf("share 0: %v", got)
	}
	if got, _ := allocatePop(StrategyAvg, "a", qs, cids, 3); !reflect.DeepEqual(got, every) {
		t.Errorf("share covering all: %v", got)
	}
	if got, _ := allocatePop(StrategyAvg, "d", qs, cids, 1); !reflect.DeepEqual(got, []RouteQueue{{"b", 1}, {"a", 0}}) {
		t.Errorf("share 1 of d: %v", got)
	}
	many := []string{"a", "b", "c", "d", "e", "f"}
	if got, _ := allocatePop(StrategyAvg, "f", qs, many, 1); !reflect.DeepEqual(got, []RouteQueue{{"a", 1}}) {
		t.Errorf("more members than queues: %v", got)
	}
}
