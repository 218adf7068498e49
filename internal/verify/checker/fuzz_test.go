package checker

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/verify/history"
)

// fuzzOps decodes fuzz bytes into a history, four bytes a line, over few
// ids, workloads, processes, queues and offsets so that lines collide:
//
//	b0: what the line is (fuzzKinds), and bit 7: Corrupt on a Deliver/Drain
//	b1: id (low 3 bits; 7 = no id), workload (bits 3-5), process (bits 6-7)
//	b2: queue (low 2 bits, 3 = -1), offset (bits 2-5, 15 = -1), key (bit 6),
//	    sum flipped (bit 7)
//	b3: time step −3..+12 ms (low 4 bits), txn intent (bits 4-6), DeliverAt
//	    set (bit 7, due 0..14 ms after the line's time by the low 4 bits)
func fuzzOps(data []byte) []history.Op {
	kinds := []struct {
		t history.Type
		f history.Func
	}{
		{history.Invoke, history.Send}, {history.OK, history.Send}, {history.Fail, history.Send}, {history.InDoubt, history.Send},
		{history.Info, history.Deliver}, {history.Info, history.Deliver}, {history.Info, history.Drain},
		{history.Info, history.Start}, {history.Info, history.Phase}, {history.Invoke, history.EndTxn},
		{history.Info, history.CheckTxn}, {history.Info, history.Fault},
	}
	ids := []string{"a", "b", "c", "d", "e", "f", "g", ""}
	wls := []string{"queue", "broadcast", "ordered", "delay", "txn", "grpc", "", "queue"}
	procs := []string{"c0", "c1", "p0", "drain"}
	txns := []string{"", history.Commit, history.Rollback, history.CheckCommit, history.CheckRollback, "", "", "other"}
	var ops []history.Op
	now := t0
	for i := 0; i+4 <= len(data); i += 4 {
		b0, b1, b2, b3 := data[i], data[i+1], data[i+2], data[i+3]
		k := kinds[int(b0&0x7f)%len(kinds)]
		op := history.New(k.t, k.f)
		op.Index = int64(len(ops))
		op.ID = ids[b1&7]
		op.Workload = wls[(b1>>3)&7]
		op.Process = op.Workload + "-" + procs[b1>>6]
		op.Topic = "t-" + op.Workload
		if q := int32(b2 & 3); q != 3 {
			op.Queue = q
		}
		if off := int64(b2>>2) & 15; off != 15 {
			op.Offset = off
		}
		if b2&0x40 != 0 {
			op.Key, op.Seq = "k", int64(b2&3)
		}
		op.Sum = sumOf(op.ID)
		if b2&0x80 != 0 {
			op.Sum ^= 1
		}
		now = now.Add(time.Duration(int(b3&15)-3) * time.Millisecond)
		op.Time = now
		op.Txn = txns[(b3>>4)&7]
		if b3&0x80 != 0 {
			op.DeliverAt = now.Add(time.Duration(b3&15) * time.Millisecond)
		}
		switch k.f {
		case history.Deliver, history.Drain:
			op.Corrupt = b0&0x80 != 0
		case history.Start:
			op.Role = []string{history.RoleConsumer, history.RoleProducer}[b0>>7]
		case history.Phase:
			op.Value = []string{history.PhaseDone, history.PhaseDrain}[b0>>7]
		}
		ops = append(ops, op)
	}
	return ops
}

// fuzzSeeds are the starting points of FuzzCheck (also committed under
// testdata/fuzz/FuzzCheck): a clean send, a loss, a reorder, an early
// delivery, a hole.
var fuzzSeeds = [][]byte{
	{},
	{0, 0x00, 0x00, 0x01, 1, 0x00, 0x00, 0x01, 4, 0x00, 0x00, 0x01, 6, 0xc0, 0x00, 0x01},
	{0, 0x00, 0x00, 0x01, 1, 0x00, 0x00, 0x01, 0, 0x01, 0x00, 0x01, 1, 0x01, 0x00, 0x01},
	{0, 0x10, 0x40, 0x01, 1, 0x10, 0x40, 0x01, 0, 0x11, 0x40, 0x01, 1, 0x11, 0x40, 0x01, 4, 0x11, 0x00, 0x01, 4, 0x10, 0x00, 0x01},
	{0, 0x18, 0x00, 0x8f, 1, 0x18, 0x00, 0x01, 4, 0x18, 0x00, 0x01},
	{6, 0xc7, 0x00, 0x01, 6, 0xc7, 0x04, 0x01, 6, 0xc7, 0x10, 0x01},
	{7, 0x08, 0x00, 0x01, 7, 0x48, 0x00, 0x01, 0, 0x08, 0x00, 0x01, 1, 0x08, 0x00, 0x01, 4, 0x08, 0x00, 0x01},
}

func FuzzCheck(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// 512 lines over 7 ids is plenty to collide; longer inputs only
		// slow the naive checker (and the minimizer) down.
		if len(data) > 4*512 {
			return
		}
		ops := fuzzOps(data)
		before := slices.Clone(ops)
		r := Check(ops)
		assertConsistent(t, r, Options{})
		if !reflect.DeepEqual(before, ops) {
			t.Fatal("Check modified its input")
		}
		if again := Check(ops); !reflect.DeepEqual(again, r) {
			t.Fatalf("Check is not deterministic:\n%+v\n%+v", r, again)
		}
		all := CheckWith(ops, Options{MaxItems: -1})
		assertConsistent(t, all, Options{MaxItems: -1})
		if all.Total != r.Total || all.Valid != r.Valid {
			t.Fatalf("MaxItems changed the counts: %+v vs %+v", all.Total, r.Total)
		}
		naive := naiveCheck(ops)
		if got := (naiveCounts{all.Total.Acked, all.Total.Lost, all.Total.Undelivered, all.Total.Unexpected, all.Total.Reordered,
			all.Total.Early, all.Total.Holes}); got != naive {
			t.Fatalf("counts %+v, the naive checker says %+v", got, naive)
		}
	})
}

type naiveCounts struct{ Acked, Lost, Undelivered, Unexpected, Reordered, Early, Holes int }

// naiveCheck recomputes some anomalies straight from the definitions in
// the package doc, by scanning the whole history for every question
// (quadratic: fuzz-sized histories only).
func naiveCheck(ops []history.Op) naiveCounts {
	var n naiveCounts
	firstInv := func(id string) int {
		return slices.IndexFunc(ops, func(op history.Op) bool { return op.ID == id && op.F == history.Send && op.Type == history.Invoke })
	}
	firstOf := func(id string, f history.Func, t history.Type, wl *string) int {
		return slices.IndexFunc(ops, func(op history.Op) bool {
			return op.ID == id && op.F == f && op.Type == t && (wl == nil || op.Workload == *wl)
		})
	}
	var ids []string
	for _, op := range ops {
		if op.ID != "" && !slices.Contains(ids, op.ID) && (op.F == history.Send || op.F == history.Deliver || op.F == history.Drain) {
			ids = append(ids, op.ID)
		}
	}
	sendWL := func(id string) string {
		if i := firstInv(id); i >= 0 {
			return ops[i].Workload
		}
		for _, op := range ops {
			if op.ID == id && op.F == history.Send && op.Workload != "" {
				return op.Workload
			}
		}
		return ""
	}
	for _, id := range ids {
		inv := firstInv(id)
		seen := slices.ContainsFunc(ops, func(op history.Op) bool { return op.ID == id && (op.F == history.Deliver || op.F == history.Drain) })
		if inv < 0 && seen {
			n.Unexpected++
		}
		acked := firstOf(id, history.Send, history.OK, nil) >= 0
		if acked {
			n.Acked++
		}
		if inv >= 0 && !ops[inv].DeliverAt.IsZero() && slices.ContainsFunc(ops, func(op history.Op) bool {
			return op.ID == id && op.F == history.Deliver && op.Time.Before(ops[inv].DeliverAt)
		}) {
			n.Early++
		}
		if !acked || (inv >= 0 && (ops[inv].Txn == history.Rollback || ops[inv].Txn == history.CheckRollback)) {
			continue
		}
		wl := sendWL(id)
		drained := firstOf(id, history.Drain, history.Info, nil) >= 0
		var missing int
		if wl == "broadcast" {
			var members []string
			for _, op := range ops {
				if op.Workload == wl && ((op.F == history.Start && op.Role == history.RoleConsumer) || op.F == history.Deliver) &&
					!slices.Contains(members, op.Process) {
					members = append(members, op.Process)
				}
			}
			for _, m := range members {
				if !slices.ContainsFunc(ops, func(op history.Op) bool {
					return op.ID == id && op.F == history.Deliver && op.Workload == wl && op.Process == m
				}) {
					missing++
				}
			}
			if len(members) == 0 {
				missing = 1
			}
		} else if firstOf(id, history.Deliver, history.Info, &wl) < 0 {
			missing = 1
		}
		if drained {
			n.Undelivered += missing
		} else {
			n.Lost += missing
		}
	}
	// Reordered: every pair of acked ids of one workload and key.
	for _, a := range ids {
		ia, oa, da := firstInv(a), firstOf(a, history.Send, history.OK, nil), firstOf(a, history.Deliver, history.Info, nil)
		if ia < 0 || oa < 0 || da < 0 || ops[ia].Key == "" {
			continue
		}
		for _, b := range ids {
			ib, ob, db := firstInv(b), firstOf(b, history.Send, history.OK, nil), firstOf(b, history.Deliver, history.Info, nil)
			if b == a || ib < 0 || ob < 0 || db < 0 || ops[ib].Key != ops[ia].Key || ops[ib].Workload != ops[ia].Workload {
				continue
			}
			if ib > oa && db < da {
				n.Reordered++
				break
			}
		}
	}
	// Holes: per topic and queue, offsets from the least to the greatest.
	type qk struct {
		topic string
		queue int32
	}
	offs := map[qk][]int64{}
	for _, op := range ops {
		if op.F == history.Drain && op.Queue >= 0 && op.Offset >= 0 {
			k := qk{op.Topic, op.Queue}
			offs[k] = append(offs[k], op.Offset)
		}
	}
	for _, o := range offs {
		lo, hi := slices.Min(o), slices.Max(o)
		for x := lo; x <= hi; x++ {
			if !slices.Contains(o, x) {
				n.Holes++
			}
		}
	}
	return n
}

// TestFuzzSeedsCoverAnomalies keeps the fuzz seeds meaningful: between
// them they are valid, lost, reordered, early and holed.
func TestFuzzSeedsCoverAnomalies(t *testing.T) {
	var valid bool
	var got Counts
	for _, s := range fuzzSeeds {
		r := Check(fuzzOps(s))
		valid = valid || (r.Valid && r.Total.Acked > 0)
		got.Lost += r.Total.Lost
		got.Reordered += r.Total.Reordered
		got.Early += r.Total.Early
		got.Holes += r.Total.Holes
		got.Unexpected += r.Total.Unexpected
	}
	if !valid || got.Lost == 0 || got.Reordered == 0 || got.Early == 0 || got.Holes == 0 {
		t.Errorf("seeds: a valid one %v, counts %+v", valid, got)
	}
}
