package checker

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/verify/history"
)

// tally is the part of Counts a table case states; the rest (Sent,
// Deliveries, ...) has tests of its own.
type tally struct {
	Acked, InDoubt, InDoubtStored, Failed                 int
	Lost, Undelivered, Unexpected, Duplicated             int
	Reordered, Early, RolledBackDelivered, Corrupt, Holes int
}

func tallyOf(c Counts) tally {
	return tally{c.Acked, c.InDoubt, c.InDoubtStored, c.Failed, c.Lost, c.Undelivered, c.Unexpected, c.Duplicated,
		c.Reordered, c.Early, c.RolledBackDelivered, c.Corrupt, c.Holes}
}

func TestCheckAnomalies(t *testing.T) {
	due := t0.Add(time.Second)
	cases := []struct {
		name  string
		ops   []history.Op
		want  tally
		valid bool
		check func(t *testing.T, r Result)
	}{
		{
			name:  "acked, delivered and drained is clean",
			ops:   cat(sent("queue", "m1"), del("queue", "queue-c0", "m1"), drain("queue", "m1", 0, 0)),
			want:  tally{Acked: 1},
			valid: true,
		},
		{
			name: "acked, never delivered, not drained is lost",
			ops:  cat(sent("queue", "m1"), sent("queue", "m2"), del("queue", "queue-c0", "m1"), drain("queue", "m1", 0, 0)),
			want: tally{Acked: 2, Lost: 1},
			check: func(t *testing.T, r Result) {
				if want := []Miss{{Workload: "queue", ID: "m2"}}; !reflect.DeepEqual(r.Lost, want) {
					t.Errorf("Lost = %+v, want %+v", r.Lost, want)
				}
			},
		},
		{
			name: "acked, drained, never delivered is undelivered",
			ops:  cat(sent("queue", "m1"), drain("queue", "m1", 0, 0)),
			want: tally{Acked: 1, Undelivered: 1},
			check: func(t *testing.T, r Result) {
				if want := []Miss{{Workload: "queue", ID: "m1"}}; !reflect.DeepEqual(r.Undelivered, want) || r.Lost != nil {
					t.Errorf("Undelivered = %+v, Lost = %+v; want %+v and none", r.Undelivered, r.Lost, want)
				}
			},
		},
		{
			name:  "in-doubt send never delivered is not lost",
			ops:   cat(inv("queue", "m1"), doubt("queue", "m1")),
			want:  tally{InDoubt: 1},
			valid: true,
		},
		{
			name:  "in-doubt send delivered was stored",
			ops:   cat(inv("queue", "m1"), doubt("queue", "m1"), del("queue", "queue-c0", "m1"), drain("queue", "m1", 0, 0)),
			want:  tally{InDoubt: 1, InDoubtStored: 1},
			valid: true,
		},
		{
			name:  "a send never answered is in doubt",
			ops:   cat(inv("queue", "m1")),
			want:  tally{InDoubt: 1},
			valid: true,
		},
		{
			name:  "fail then in-doubt retry is in doubt",
			ops:   cat(inv("queue", "m1"), fail("queue", "m1"), inv("queue", "m1"), doubt("queue", "m1")),
			want:  tally{InDoubt: 1},
			valid: true,
		},
		{
			name:  "failed send that was delivered is not unexpected",
			ops:   cat(inv("queue", "m1"), fail("queue", "m1"), del("queue", "queue-c0", "m1"), drain("queue", "m1", 0, 0)),
			want:  tally{Failed: 1},
			valid: true,
		},
		{
			name:  "failed send never delivered is clean",
			ops:   cat(inv("queue", "m1"), fail("queue", "m1"), inv("queue", "m1"), fail("queue", "m1")),
			want:  tally{Failed: 1},
			valid: true,
		},
		{
			name:  "in-doubt then acked retry is acked once",
			ops:   cat(inv("queue", "m1"), doubt("queue", "m1"), sent("queue", "m1"), del("queue", "queue-c0", "m1")),
			want:  tally{Acked: 1},
			valid: true,
		},
		{
			name: "delivered and drained, never sent, is unexpected once",
			ops:  cat(sent("queue", "m1"), del("queue", "queue-c0", "m1"), del("queue", "queue-c0", "x1"), drain("queue", "x1", 0, 0), drain("queue", "x2", 0, 1)),
			want: tally{Acked: 1, Unexpected: 2},
			check: func(t *testing.T, r Result) {
				if len(r.Unexpected) != 2 || r.Unexpected[0].ID != "x1" || r.Unexpected[0].Index != 3 || r.Unexpected[1].ID != "x2" {
					t.Errorf("Unexpected = %+v, want x1 at line 3, then x2", r.Unexpected)
				}
			},
		},
		{
			name:  "an ack with no invoke line is still unexpected when delivered",
			ops:   cat(ok("queue", "m1"), del("queue", "queue-c0", "m1")),
			want:  tally{Acked: 1, Unexpected: 1},
			check: nil,
		},
		{
			name: "duplicates are reported but valid",
			ops: cat(sent("queue", "m1"), sent("queue", "m2"), del("queue", "queue-c0", "m1"), del("queue", "queue-c1", "m1"),
				del("queue", "queue-c0", "m1"), del("queue", "queue-c0", "m2")),
			want:  tally{Acked: 2, Duplicated: 1},
			valid: true,
			check: func(t *testing.T, r Result) {
				if want := []Dup{{Workload: "queue", ID: "m1", Deliveries: 3}}; !reflect.DeepEqual(r.Duplicated, want) {
					t.Errorf("Duplicated = %+v, want %+v", r.Duplicated, want)
				}
				if r.Total.Deliveries != 4 || r.Total.Delivered != 2 || r.Total.DuplicateRatio != 1 {
					t.Errorf("deliveries %d, delivered %d, ratio %v; want 4, 2, 1", r.Total.Deliveries, r.Total.Delivered, r.Total.DuplicateRatio)
				}
			},
		},
		{
			name: "broadcast: every member gets every message",
			ops: cat(start("broadcast", "b-c0", history.RoleConsumer), start("broadcast", "b-c1", history.RoleConsumer),
				sent("broadcast", "m1"), del("broadcast", "b-c0", "m1"), del("broadcast", "b-c1", "m1"), drain("broadcast", "m1", 0, 0)),
			want:  tally{Acked: 1},
			valid: true,
		},
		{
			name: "broadcast: a member that missed it, message not in the log, is lost for that member",
			ops: cat(start("broadcast", "b-c0", history.RoleConsumer), start("broadcast", "b-c1", history.RoleConsumer),
				start("broadcast", "b-c2", history.RoleConsumer), start("broadcast", "b-p0", history.RoleProducer),
				sent("broadcast", "m1"), del("broadcast", "b-c0", "m1")),
			want: tally{Acked: 1, Lost: 2},
			check: func(t *testing.T, r Result) {
				want := []Miss{{Workload: "broadcast", ID: "m1", Member: "b-c1"}, {Workload: "broadcast", ID: "m1", Member: "b-c2"}}
				if !reflect.DeepEqual(r.Lost, want) {
					t.Errorf("Lost = %+v, want %+v", r.Lost, want)
				}
			},
		},
		{
			name: "broadcast: a member known only by its deliveries, in the log, is undelivered",
			ops: cat(sent("broadcast", "m1"), sent("broadcast", "m2"), del("broadcast", "b-c0", "m1"), del("broadcast", "b-c1", "m1"),
				del("broadcast", "b-c0", "m2"), drain("broadcast", "m1", 0, 0), drain("broadcast", "m2", 0, 1)),
			want: tally{Acked: 2, Undelivered: 1},
			check: func(t *testing.T, r Result) {
				if want := []Miss{{Workload: "broadcast", ID: "m2", Member: "b-c1"}}; !reflect.DeepEqual(r.Undelivered, want) {
					t.Errorf("Undelivered = %+v, want %+v", r.Undelivered, want)
				}
			},
		},
		{
			name:  "broadcast: one delivery to each of two members is no duplicate",
			ops:   cat(sent("broadcast", "m1"), del("broadcast", "b-c0", "m1"), del("broadcast", "b-c1", "m1")),
			want:  tally{Acked: 1},
			valid: true,
		},
		{
			name: "broadcast: a member that got it twice is a duplicate of that member",
			ops: cat(sent("broadcast", "m1"), del("broadcast", "b-c0", "m1"), del("broadcast", "b-c1", "m1"),
				del("broadcast", "b-c1", "m1")),
			want:  tally{Acked: 1, Duplicated: 1},
			valid: true,
			check: func(t *testing.T, r Result) {
				if want := []Dup{{Workload: "broadcast", ID: "m1", Member: "b-c1", Deliveries: 2}}; !reflect.DeepEqual(r.Duplicated, want) {
					t.Errorf("Duplicated = %+v, want %+v", r.Duplicated, want)
				}
			},
		},
		{
			name: "broadcast: no member known at all, acked and not in the log, is lost once",
			ops:  cat(sent("broadcast", "m1")),
			want: tally{Acked: 1, Lost: 1},
		},
		{
			name: "delivered to another workload only is lost to its own",
			ops:  cat(sent("queue", "m1"), del("grpc", "grpc-c0", "m1")),
			want: tally{Acked: 1, Lost: 1},
		},
		{
			name: "ordered: sent after the ack, delivered before, is reordered",
			ops: cat(keyed(inv("ordered", "a"), "k1", 1), ok("ordered", "a"), keyed(inv("ordered", "b"), "k1", 2), ok("ordered", "b"),
				del("ordered", "o-c0", "b"), del("ordered", "o-c0", "a")),
			want: tally{Acked: 2, Reordered: 1},
			check: func(t *testing.T, r Result) {
				want := []Reorder{{Workload: "ordered", Key: "k1", Earlier: "a", EarlierSeq: 1, Later: "b", LaterSeq: 2}}
				if !reflect.DeepEqual(r.Reordered, want) {
					t.Errorf("Reordered = %+v, want %+v", r.Reordered, want)
				}
			},
		},
		{
			name: "ordered: two overtaken by one count twice, listed with the earliest overtaker",
			ops: cat(keyed(inv("ordered", "a"), "k1", 1), ok("ordered", "a"), keyed(inv("ordered", "b"), "k1", 2), ok("ordered", "b"),
				keyed(inv("ordered", "c"), "k1", 3), ok("ordered", "c"), keyed(inv("ordered", "d"), "k1", 4), ok("ordered", "d"),
				del("ordered", "o-c0", "d"), del("ordered", "o-c0", "c"), del("ordered", "o-c0", "a"), del("ordered", "o-c0", "b")),
			want: tally{Acked: 4, Reordered: 3},
			check: func(t *testing.T, r Result) {
				var got []string
				for _, p := range r.Reordered {
					got = append(got, p.Earlier+"<"+p.Later)
				}
				if want := []string{"a<d", "b<d", "c<d"}; !slices.Equal(got, want) {
					t.Errorf("pairs %v, want %v", got, want)
				}
			},
		},
		{
			name: "ordered: a consumer rewind after a crash (5,6,7,5,6,7) is not a reorder",
			ops: cat(keyed(inv("ordered", "s5"), "k1", 5), ok("ordered", "s5"), keyed(inv("ordered", "s6"), "k1", 6), ok("ordered", "s6"),
				keyed(inv("ordered", "s7"), "k1", 7), ok("ordered", "s7"),
				del("ordered", "o-c0", "s5"), del("ordered", "o-c0", "s6"), del("ordered", "o-c0", "s7"),
				del("ordered", "o-c1", "s5"), del("ordered", "o-c1", "s6"), del("ordered", "o-c1", "s7")),
			want:  tally{Acked: 3, Duplicated: 3},
			valid: true,
		},
		{
			name: "ordered: concurrent sends (b sent before a's ack) may arrive either way",
			ops: cat(keyed(inv("ordered", "a"), "k1", 1), keyed(inv("ordered", "b"), "k1", 2), ok("ordered", "a"), ok("ordered", "b"),
				del("ordered", "o-c0", "b"), del("ordered", "o-c0", "a")),
			want:  tally{Acked: 2},
			valid: true,
		},
		{
			name: "ordered: keys are checked apart",
			ops: cat(keyed(inv("ordered", "a"), "k1", 1), ok("ordered", "a"), keyed(inv("ordered", "b"), "k2", 1), ok("ordered", "b"),
				del("ordered", "o-c0", "b"), del("ordered", "o-c0", "a")),
			want:  tally{Acked: 2},
			valid: true,
		},
		{
			name:  "ordered: a message acked before its invoke line is not reordered against itself",
			ops:   cat(ok("ordered", "a"), keyed(inv("ordered", "a"), "k1", 1), del("ordered", "o-c0", "a")),
			want:  tally{Acked: 1},
			valid: true,
		},
		{
			name: "ordered: the earlier one lost is lost, not reordered",
			ops: cat(keyed(inv("ordered", "a"), "k1", 1), ok("ordered", "a"), keyed(inv("ordered", "b"), "k1", 2), ok("ordered", "b"),
				del("ordered", "o-c0", "b")),
			want: tally{Acked: 2, Lost: 1},
		},
		{
			name: "ordered: an in-doubt earlier one is not held to order",
			ops: cat(keyed(inv("ordered", "a"), "k1", 1), doubt("ordered", "a"), keyed(inv("ordered", "b"), "k1", 2), ok("ordered", "b"),
				del("ordered", "o-c0", "b"), del("ordered", "o-c0", "a")),
			want:  tally{Acked: 1, InDoubt: 1, InDoubtStored: 1},
			valid: true,
		},
		{
			name: "delay: delivered before DeliverAt is early",
			ops: cat(dueAt(inv("delay", "m1"), due), ok("delay", "m1"), at(del("delay", "d-c0", "m1"), due.Add(-time.Millisecond)),
				at(del("delay", "d-c0", "m1"), due.Add(-3*time.Millisecond))),
			want: tally{Acked: 1, Early: 1, Duplicated: 1},
			check: func(t *testing.T, r Result) {
				if len(r.Early) != 1 || r.Early[0].Index != 3 || r.Early[0].By != 3*time.Millisecond || !r.Early[0].DeliverAt.Equal(due) {
					t.Errorf("Early = %+v, want line 3 early by 3ms", r.Early)
				}
			},
		},
		{
			name:  "delay: delivered at exactly DeliverAt is not early",
			ops:   cat(dueAt(inv("delay", "m1"), due), ok("delay", "m1"), at(del("delay", "d-c0", "m1"), due)),
			want:  tally{Acked: 1},
			valid: true,
		},
		{
			name: "txn: rolled back and drained is rolled_back_delivered",
			ops: cat(txn(inv("txn", "r1"), history.Rollback), ok("txn", "r1"), txn(inv("txn", "r2"), history.CheckRollback), ok("txn", "r2"),
				txn(inv("txn", "r3"), history.Rollback), ok("txn", "r3"),
				drain("txn", "r1", 0, 0), del("txn", "t-c0", "r2")),
			want: tally{Acked: 3, RolledBackDelivered: 2},
			check: func(t *testing.T, r Result) {
				if len(r.RolledBackDelivered) != 2 || r.RolledBackDelivered[0].ID != "r1" || r.RolledBackDelivered[1].ID != "r2" {
					t.Errorf("RolledBackDelivered = %+v, want r1, r2", r.RolledBackDelivered)
				}
			},
		},
		{
			name: "txn: rolled back never delivered is not lost; committed ones must arrive",
			ops: cat(txn(inv("txn", "r1"), history.Rollback), ok("txn", "r1"), txn(inv("txn", "r2"), history.CheckRollback), ok("txn", "r2"),
				txn(inv("txn", "c1"), history.Commit), ok("txn", "c1"), txn(inv("txn", "c2"), history.CheckCommit), ok("txn", "c2"),
				txn(inv("txn", "c3"), history.Commit), ok("txn", "c3"),
				del("txn", "t-c0", "c1"), drain("txn", "c1", 0, 0), drain("txn", "c2", 0, 1)),
			want: tally{Acked: 5, Lost: 1, Undelivered: 1},
			check: func(t *testing.T, r Result) {
				if len(r.Lost) != 1 || r.Lost[0].ID != "c3" || len(r.Undelivered) != 1 || r.Undelivered[0].ID != "c2" {
					t.Errorf("Lost %+v, Undelivered %+v; want c3 and c2", r.Lost, r.Undelivered)
				}
			},
		},
		{
			name: "corrupt: flagged, without an id, or with a sum never sent",
			ops: cat(sent("queue", "m1"), sent("queue", "m2"), del("queue", "queue-c0", "m1"),
				func() history.Op { op := del("queue", "queue-c0", "m2"); op.Corrupt = true; return op }(),
				withSum(drain("queue", "m1", 0, 0), 7), drain("queue", "", 0, 1), withSum(del("queue", "queue-c1", "m1"), 7)),
			want: tally{Acked: 2, Corrupt: 4, Duplicated: 1},
			check: func(t *testing.T, r Result) {
				var got []string
				for _, l := range r.Corrupt {
					got = append(got, fmt.Sprintf("%d:%s", l.Index, l.Why))
				}
				// Lines 6 and 8 share id, sum and workload: listed once.
				if want := []string{"5:flag", "6:sum", "7:no id"}; !slices.Equal(got, want) {
					t.Errorf("Corrupt lines %v, want %v", got, want)
				}
			},
		},
		{
			name: "corrupt: a sum any retry was sent with is fine",
			ops: cat(inv("queue", "m1"), doubt("queue", "m1"), withSum(inv("queue", "m1"), 9), ok("queue", "m1"),
				withSum(del("queue", "queue-c0", "m1"), 9), del("queue", "queue-c0", "m1")),
			want:  tally{Acked: 1, Duplicated: 1},
			valid: true,
		},
		{
			name: "holes: offsets the drain skipped between the least and greatest it found",
			ops: cat(drain("queue", "", 0, 0), drain("queue", "", 0, 1), drain("queue", "", 0, 3), drain("queue", "", 0, 4),
				drain("queue", "", 0, 7), drain("queue", "", 1, 5), drain("queue", "", 1, 6)),
			want: tally{Corrupt: 7, Holes: 3},
			check: func(t *testing.T, r Result) {
				want := []Hole{{Workload: "queue", Topic: "t-queue", Queue: 0, From: 2, To: 2}, {Workload: "queue", Topic: "t-queue", Queue: 0, From: 5, To: 6}}
				if !reflect.DeepEqual(r.Holes, want) || r.Total.HoleRanges != 2 {
					t.Errorf("Holes %+v (%d ranges), want %+v", r.Holes, r.Total.HoleRanges, want)
				}
			},
		},
		{
			name: "holes: a queue read from a later first offset, with offsets repeated, has none",
			ops: cat(sent("queue", "m1"), sent("queue", "m2"), del("queue", "queue-c0", "m1"), del("queue", "queue-c0", "m2"),
				drain("queue", "m1", 2, 40), drain("queue", "m2", 2, 41), drain("queue", "m1", 2, 40)),
			want:  tally{Acked: 2},
			valid: true,
		},
		{
			name: "faults, phases and end_txn lines change nothing",
			ops: cat(func() history.Op {
				op := history.New(history.Info, history.Fault)
				op.Process, op.Fault, op.Target = "nemesis", "kill", "broker-0"
				return op
			}(),
				sent("queue", "m1"),
				func() history.Op {
					op := history.New(history.Invoke, history.EndTxn)
					op.ID, op.Txn = "m1", history.Commit
					return op
				}(),
				func() history.Op {
					op := history.New(history.Info, history.Heal)
					op.Process, op.Fault = "nemesis", "kill"
					return op
				}(),
				del("queue", "queue-c0", "m1"),
				func() history.Op {
					op := history.New(history.Info, history.Phase)
					op.Value = history.PhaseDone
					return op
				}()),
			want:  tally{Acked: 1},
			valid: true,
			check: func(t *testing.T, r Result) {
				if !r.Complete {
					t.Error("Complete = false after a done phase")
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.ops)
			if got := tallyOf(r.Total); got != tc.want {
				t.Errorf("counts\n got %+v\nwant %+v", got, tc.want)
			}
			if r.Valid != tc.valid {
				t.Errorf("Valid = %v, want %v (reasons %q)", r.Valid, tc.valid, r.Reasons)
			}
			if r.Valid != (len(r.Reasons) == 0) {
				t.Errorf("Valid = %v with reasons %q", r.Valid, r.Reasons)
			}
			assertConsistent(t, r, Options{})
			if tc.check != nil {
				tc.check(t, r)
			}
			if again := Check(tc.ops); !reflect.DeepEqual(again, r) {
				t.Errorf("a second Check differs:\n%+v\n%+v", again, r)
			}
		})
	}
}

// assertConsistent checks what holds of every Result: the verdict follows
// the counts, the workloads add up to the total, and every list is as
// long as its count allows.
func assertConsistent(t testing.TB, r Result, o Options) {
	t.Helper()
	tot := r.Total
	if r.Valid == tot.Invalid() {
		t.Errorf("Valid = %v with counts %+v", r.Valid, tot)
	}
	if r.Valid != (len(r.Reasons) == 0) {
		t.Errorf("Valid = %v with reasons %q", r.Valid, r.Reasons)
	}
	if tot.Acked+tot.InDoubt+tot.Failed != tot.Sent || tot.InDoubtStored > tot.InDoubt {
		t.Errorf("acked %d + in doubt %d + failed %d != sent %d, or in doubt stored %d > in doubt", tot.Acked, tot.InDoubt, tot.Failed, tot.Sent, tot.InDoubtStored)
	}
	var sum Counts
	sv := reflect.ValueOf(&sum).Elem()
	for i, w := range r.Workloads {
		if i > 0 && r.Workloads[i-1].Name >= w.Name {
			t.Errorf("workloads not sorted: %q then %q", r.Workloads[i-1].Name, w.Name)
		}
		wv := reflect.ValueOf(w.Counts)
		for f := 0; f < wv.NumField(); f++ {
			if wv.Field(f).Kind() == reflect.Int {
				sv.Field(f).SetInt(sv.Field(f).Int() + wv.Field(f).Int())
			}
		}
	}
	tv := reflect.ValueOf(tot)
	for f := 0; f < tv.NumField(); f++ {
		if tv.Field(f).Kind() == reflect.Int && tv.Field(f).Int() != sv.Field(f).Int() {
			t.Errorf("total %s = %d, workloads add up to %d", tv.Type().Field(f).Name, tv.Field(f).Int(), sv.Field(f).Int())
		}
	}
	max := o.MaxItems
	if max == 0 {
		max = DefaultMaxItems
	}
	bounded := func(n int) int {
		if max < 0 || n < max {
			return n
		}
		return max
	}
	for _, l := range []struct {
		name      string
		got, want int
	}{
		{"lost", len(r.Lost), bounded(tot.Lost)},
		{"undelivered", len(r.Undelivered), bounded(tot.Undelivered)},
		{"unexpected", len(r.Unexpected), bounded(tot.Unexpected)},
		{"duplicated", len(r.Duplicated), bounded(tot.Duplicated)},
		{"reordered", len(r.Reordered), bounded(tot.Reordered)},
		{"early", len(r.Early), bounded(tot.Early)},
		{"rolled_back_delivered", len(r.RolledBackDelivered), bounded(tot.RolledBackDelivered)},
		{"holes", len(r.Holes), bounded(tot.HoleRanges)},
	} {
		if l.got != l.want {
			t.Errorf("%s: %d listed, want %d", l.name, l.got, l.want)
		}
	}
	if len(r.Corrupt) > bounded(tot.Corrupt) || (tot.Corrupt > 0) != (len(r.Corrupt) > 0) {
		t.Errorf("corrupt: %d listed for %d", len(r.Corrupt), tot.Corrupt)
	}
	if tot.Holes < tot.HoleRanges {
		t.Errorf("%d holes in %d ranges", tot.Holes, tot.HoleRanges)
	}
}

func TestCheckLateness(t *testing.T) {
	due := t0.Add(time.Second)
	var parts []any
	// Ten delayed messages first delivered 1..10 ms late (a later
	// duplicate does not count), one never delivered, one early.
	for i := 1; i <= 10; i++ {
		id := fmt.Sprintf("d%d", i)
		parts = append(parts, dueAt(inv("delay", id), due), ok("delay", id),
			at(del("delay", "d-c0", id), due.Add(time.Duration(i)*time.Millisecond)),
			at(del("delay", "d-c0", id), due.Add(time.Hour)))
	}
	parts = append(parts, dueAt(inv("delay", "never"), due), doubt("delay", "never"),
		dueAt(inv("delay", "early"), due), ok("delay", "early"), at(del("delay", "d-c0", "early"), due.Add(-5*time.Millisecond)))
	r := Check(cat(parts...))
	want := Lateness{Count: 11, Median: 5 * time.Millisecond, P99: 10 * time.Millisecond, Max: 10 * time.Millisecond}
	if r.Total.Lateness != want {
		t.Errorf("lateness %+v, want %+v", r.Total.Lateness, want)
	}
	if c, _ := r.Workload("delay"); c.Lateness != want || c.Early != 1 {
		t.Errorf("delay workload lateness %+v early %d, want %+v and 1", c.Lateness, c.Early, want)
	}
	if r.Valid || len(r.Reasons) != 1 || !strings.Contains(r.Reasons[0], "early") || !strings.Contains(r.Reasons[0], "early by 5ms") {
		t.Errorf("Valid %v, reasons %q; want one naming the early id", r.Valid, r.Reasons)
	}
}

func TestCheckCountsPerWorkload(t *testing.T) {
	ops := cat(sent("queue", "q1"), sent("queue", "q2"), del("queue", "queue-c0", "q1"), drain("queue", "q1", 0, 0), drain("queue", "q2", 0, 2),
		sent("grpc", "g1"), del("grpc", "grpc-c0", "g1"), del("grpc", "grpc-c0", "g1"), drain("grpc", "g1", 0, 0),
		del("grpc", "grpc-c0", "stray"))
	r := Check(ops)
	q, okq := r.Workload("queue")
	g, okg := r.Workload("grpc")
	if !okq || !okg {
		t.Fatalf("workloads %+v", r.Workloads)
	}
	if q.Acked != 2 || q.Undelivered != 1 || q.Holes != 1 || q.Drained != 2 || q.Unexpected != 0 {
		t.Errorf("queue counts %+v", q)
	}
	if g.Acked != 1 || g.Duplicated != 1 || g.Unexpected != 1 || g.Deliveries != 3 || g.Delivered != 2 || g.DuplicateRatio != 0.5 {
		t.Errorf("grpc counts %+v", g)
	}
	if _, ok := r.Workload("nope"); ok {
		t.Error("Workload found a workload the history lacks")
	}
	assertConsistent(t, r, Options{})
	if len(r.Reasons) != 3 {
		t.Errorf("reasons %q, want undelivered, unexpected and holes", r.Reasons)
	}
}

func TestCheckBoundsLists(t *testing.T) {
	var parts []any
	for i := 0; i < 150; i++ {
		parts = append(parts, sent("queue", fmt.Sprintf("m%03d", i)))
	}
	ops := cat(parts...)
	for _, tc := range []struct {
		o    Options
		want int
	}{{Options{}, DefaultMaxItems}, {Options{MaxItems: 5}, 5}, {Options{MaxItems: -1}, 150}} {
		r := CheckWith(ops, tc.o)
		if r.Total.Lost != 150 || len(r.Lost) != tc.want {
			t.Errorf("MaxItems %d: lost %d with %d listed, want 150 with %d", tc.o.MaxItems, r.Total.Lost, len(r.Lost), tc.want)
		}
		if len(r.Lost) > 0 && (r.Lost[0].ID != "m000" || r.Lost[len(r.Lost)-1].ID != fmt.Sprintf("m%03d", tc.want-1)) {
			t.Errorf("MaxItems %d: listed %s..%s, want the first sent", tc.o.MaxItems, r.Lost[0].ID, r.Lost[len(r.Lost)-1].ID)
		}
		assertConsistent(t, r, tc.o)
	}
}

func TestCheckBroadcastOption(t *testing.T) {
	ops := cat(sent("fanout", "m1"), del("fanout", "f-c0", "m1"), del("fanout", "f-c1", "m1"), sent("fanout", "m2"),
		del("fanout", "f-c0", "m2"))
	if r := Check(ops); !r.Valid || r.Total.Duplicated != 1 {
		t.Errorf("as a clustering group: valid %v, duplicated %d; want valid with m1 duplicated", r.Valid, r.Total.Duplicated)
	}
	r := CheckWith(ops, Options{Broadcast: []string{"fanout"}})
	if want := []Miss{{Workload: "fanout", ID: "m2", Member: "f-c1"}}; !reflect.DeepEqual(r.Lost, want) || r.Total.Duplicated != 0 {
		t.Errorf("as broadcast: lost %+v, duplicated %d; want %+v and none", r.Lost, r.Total.Duplicated, want)
	}
	// An empty, non-nil list: "broadcast" is a clustering group too.
	bops := cat(sent("broadcast", "m1"), del("broadcast", "b-c0", "m1"), del("broadcast", "b-c1", "m1"))
	if r := CheckWith(bops, Options{Broadcast: []string{}}); r.Total.Duplicated != 1 {
		t.Errorf("broadcast off: duplicated %d, want 1", r.Total.Duplicated)
	}
}

func TestCheckEmptyHistory(t *testing.T) {
	r := Check(nil)
	if !r.Valid || r.Complete || r.Ops != 0 || len(r.Workloads) != 0 {
		t.Errorf("empty history: %+v", r)
	}
}

func TestCheckDoesNotModifyOps(t *testing.T) {
	ops := cat(sent("queue", "m1"), drain("queue", "m1", 0, 3), drain("queue", "m1", 0, 1), del("queue", "queue-c0", "m1"))
	before := slices.Clone(ops)
	Check(ops)
	if !reflect.DeepEqual(before, ops) {
		t.Error("Check modified its input")
	}
}
