package longpoll

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

func popReq(name, group, topic, also string, fifo bool, blocked []int32, deadlineSec int) *Request {
	return &Request{Group: group, Topic: topic, Also: also, FIFO: fifo, Blocked: blocked,
		Deadline: t0.Add(time.Duration(deadlineSec) * time.Second), Payload: name}
}

// parkAll parks rs in order and fails the test on an error.
func parkAll(t *testing.T, tb *Table, rs ...*Request) {
	t.Helper()
	for _, r := range rs {
		if err := tb.Park(r); err != nil {
			t.Fatal(err)
		}
	}
}

// TestArrivedWakesOnlyThePopsThatCanTakeIt: a message on queue 1 of T
// wakes the pulls of that queue and, per group, the oldest pop of T that
// can take it — not a second pop of the group, not a pop of another
// topic, not a FIFO pop whose queue 1 is held.
func TestArrivedWakesOnlyThePopsThatCanTakeIt(t *testing.T) {
	tb := New(100, 100)
	parkAll(t, tb,
		req("pull-q1", "T", 1, 4, 20, 1),
		req("pull-q0", "T", 0, 4, 20, 1),
		popReq("g1", "G", "T", "%RETRY%G", false, nil, 20),
		popReq("g2", "G", "T", "%RETRY%G", false, nil, 20),
		popReq("h1", "H", "T", "", false, nil, 20),
		popReq("u1", "G", "U", "", false, nil, 20),
		popReq("f-held", "F", "T", "", true, []int32{1}, 20),
		popReq("f-free", "F", "T", "", true, []int32{0}, 20),
	)
	if got := names(tb.Arrived("T", 1, 5)); !slices.Equal(got, []string{"pull-q1", "g1", "h1", "f-free"}) {
		t.Fatalf("arrival on T/1 woke %v, want pull-q1, g1, h1, f-free", got)
	}
	// The second pop of G is next in line, also for its retry topic.
	if got := names(tb.Arrived("%RETRY%G", 0, 1)); !slices.Equal(got, []string{"g2"}) {
		t.Fatalf("arrival on the retry topic woke %v, want g2", got)
	}
	// The held FIFO pop is woken by queue 0, which it does not name.
	if got := names(tb.Arrived("T", 0, 5)); !slices.Equal(got, []string{"pull-q0", "f-held"}) {
		t.Fatalf("arrival on T/0 woke %v, want pull-q0, f-held", got)
	}
	if got := names(tb.Arrived("T", 1, 6)); len(got) != 0 {
		t.Fatalf("arrival with no pop of T left woke %v", got)
	}
	if tb.Len() != 1 || len(tb.groupsOf["T"]) != 0 || len(tb.byGroup) != 1 {
		t.Fatalf("left: %d parked, groups of T %v, %d group lists; want only u1", tb.Len(), tb.groupsOf["T"], len(tb.byGroup))
	}
}

// TestAckedWakesOneFIFOPopOfTheGroup: an ack wakes one FIFO pop of its
// group and topic, preferring one its queue holds; never a pop of another
// group, nor one that is not FIFO.
func TestAckedWakesOneFIFOPopOfTheGroup(t *testing.T) {
	tb := New(100, 100)
	parkAll(t, tb,
		popReq("a-plain", "A", "T", "", false, nil, 20),
		popReq("a-q0", "A", "T", "", true, []int32{0}, 20),
		popReq("a-q2", "A", "T", "", true, []int32{2}, 20),
		popReq("b-q2", "B", "T", "", true, []int32{2}, 20),
	)
	if got := tb.Acked("C", "T", 2); len(got) != 0 {
		t.Fatalf("ack of group C woke %v", names(got))
	}
	if got := names(tb.Acked("A", "T", 2)); !slices.Equal(got, []string{"a-q2"}) {
		t.Fatalf("ack of A on queue 2 woke %v, want a-q2", got)
	}
	if got := names(tb.Acked("A", "T", 5)); !slices.Equal(got, []string{"a-q0"}) {
		t.Fatalf("ack of A on queue 5 woke %v, want the oldest FIFO pop a-q0", got)
	}
	if got := tb.Acked("A", "T", 0); len(got) != 0 {
		t.Fatalf("ack with only a plain pop of A left woke %v", names(got))
	}
	if got := names(tb.Acked("B", "T", 2)); !slices.Equal(got, []string{"b-q2"}) {
		t.Fatalf("ack of B woke %v, want b-q2", got)
	}
}

// TestRescheduleAndUpdate: a message of a group visible sooner brings the
// deadline of that group's pops on the topic forward, and only theirs.
func TestRescheduleAndUpdate(t *testing.T) {
	tb := New(100, 100)
	a1 := popReq("a1", "A", "T", "%RETRY%A", false, nil, 20)
	a2 := popReq("a2", "A", "T", "%RETRY%A", false, nil, 3)
	parkAll(t, tb, a1, a2,
		popReq("b1", "B", "T", "", false, nil, 20),
		req("pull", "T", 0, 0, 20, 1))
	if n := tb.Reschedule("A", "%RETRY%A", t0.Add(5*time.Second)); n != 1 {
		t.Fatalf("reschedule moved %d deadlines, want 1 (a2's is earlier)", n)
	}
	if d, _ := tb.NextDeadline(); !d.Equal(t0.Add(3 * time.Second)) {
		t.Fatalf("next deadline %v", d)
	}
	if got := names(tb.Expired(t0.Add(5 * time.Second))); !slices.Equal(got, []string{"a2", "a1"}) {
		t.Fatalf("expired %v, want a2, a1", got)
	}
	if tb.Update(a1, t0, nil) {
		t.Fatal("Update of a request handed back reported it parked")
	}
	parkAll(t, tb, a1)
	if !tb.Update(a1, t0.Add(time.Second), []int32{4}) || !slices.Equal(a1.Blocked, []int32{4}) {
		t.Fatal("Update of a parked request")
	}
	if got := names(tb.Expired(t0.Add(time.Second))); !slices.Equal(got, []string{"a1"}) {
		t.Fatalf("expired after Update %v, want a1", got)
	}
	if got := names(tb.Expired(t0.Add(19 * time.Second))); len(got) != 0 {
		t.Fatalf("the pops of B and the pull expired early: %v", got)
	}
}

func TestNextAndTopic(t *testing.T) {
	tb := New(100, 100)
	parkAll(t, tb,
		popReq("a1", "A", "T", "%RETRY%A", false, nil, 20),
		popReq("a2", "A", "T", "%RETRY%A", false, nil, 20),
		popReq("b1", "B", "T", "", false, nil, 20),
		popReq("u1", "A", "U", "", false, nil, 20),
		req("pull", "T", 0, 0, 20, 1))
	if got := names(tb.Next("A", "%RETRY%A")); !slices.Equal(got, []string{"a1"}) {
		t.Fatalf("next of A on its retry topic %v, want a1", got)
	}
	if got := tb.Next("Z", "T"); len(got) != 0 {
		t.Fatalf("next of an unknown group %v", names(got))
	}
	if got := names(tb.Topic("T")); !slices.Equal(got, []string{"a2", "b1"}) {
		t.Fatalf("topic wake %v, want a2, b1 (pulls are not woken so)", got)
	}
	if tb.Len() != 2 {
		t.Fatalf("%d left, want u1 and the pull", tb.Len())
	}
}

// TestTableWithPopsMatchesModel runs random operations on pulls and pops
// against a naive list and compares every result.
func TestTableWithPopsMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tb := New(60, 60)
	var model []*Request // park order
	var all []*Request
	topics := []string{"A", "B", "%RETRY%g0"}
	groups := []string{"g0", "g1", "g2"}
	takes := func(m *Request, topic string) bool {
		return m.Group != "" && (m.Topic == topic || m.Also == topic)
	}
	remove := func(want []*Request) {
		model = slices.DeleteFunc(model, func(m *Request) bool { return slices.Contains(want, m) })
	}
	for step := range 20000 {
		switch op := rng.IntN(12); {
		case op < 4:
			r := &Request{Deadline: t0.Add(time.Duration(rng.IntN(50)) * time.Second), Payload: step}
			if rng.IntN(2) == 0 {
				r.Topic, r.QueueID, r.Offset = topics[rng.IntN(2)], int32(rng.IntN(3)), int64(rng.IntN(10))
			} else {
				r.Group, r.Topic = groups[rng.IntN(3)], topics[rng.IntN(2)]
				if rng.IntN(2) == 0 {
					r.Also = "%RETRY%" + r.Group
				} else if r.FIFO = rng.IntN(2) == 0; r.FIFO {
					r.Blocked = []int32{int32(rng.IntN(3))}
				}
			}
			err := tb.Park(r)
			if full := len(model) >= 60; full != (err != nil) {
				t.Fatalf("step %d: park err = %v, model full = %v", step, err, full)
			}
			if err == nil {
				model = append(model, r)
				all = append(all, r)
			}
		case op < 6:
			topic, qid, maxOff := topics[rng.IntN(3)], int32(rng.IntN(3)), int64(rng.IntN(12))
			got := tb.Arrived(topic, qid, maxOff)
			var want []*Request
			woke := map[string]bool{}
			for _, m := range model {
				switch {
				case m.Group == "" && m.Topic == topic && m.QueueID == qid && m.Offset < maxOff:
					want = append(want, m)
				case takes(m, topic) && !woke[m.Group] && !(m.FIFO && m.Topic == topic && slices.Contains(m.Blocked, qid)):
					woke[m.Group] = true
					want = append(want, m)
				}
			}
			// Pulls first, then pops, each in park order.
			slices.SortStableFunc(want, func(a, b *Request) int {
				if (a.Group == "") != (b.Group == "") {
					if a.Group == "" {
						return -1
					}
					return 1
				}
				return 0
			})
			remove(want)
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: arrived %v, want %v", step, names2(got), names2(want))
			}
		case op < 7:
			group, topic, qid := groups[rng.IntN(3)], topics[rng.IntN(2)], int32(rng.IntN(3))
			got := tb.Acked(group, topic, qid)
			var want []*Request
			for _, m := range model {
				if m.Group == group && takes(m, topic) && m.FIFO {
					if m.Topic == topic && slices.Contains(m.Blocked, qid) {
						want = []*Request{m}
						break
					}
					if want == nil {
						want = []*Request{m}
					}
				}
			}
			remove(want)
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: acked %v, want %v", step, names2(got), names2(want))
			}
		case op < 8:
			group, topic := groups[rng.IntN(3)], topics[rng.IntN(3)]
			got := tb.Next(group, topic)
			var want []*Request
			for _, m := range model {
				if m.Group == group && takes(m, topic) {
					want = []*Request{m}
					break
				}
			}
			remove(want)
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: next %v, want %v", step, names2(got), names2(want))
			}
		case op < 9:
			group, topic := groups[rng.IntN(3)], topics[rng.IntN(3)]
			at := t0.Add(time.Duration(rng.IntN(50)) * time.Second)
			n, want := tb.Reschedule(group, topic, at), 0
			for _, m := range model {
				if m.Group == group && takes(m, topic) && m.Deadline.Equal(at) {
					want++ // already moved by the table: count those at at
				}
			}
			if n > want {
				t.Fatalf("step %d: reschedule moved %d, only %d are at %v", step, n, want, at)
			}
			for _, m := range model {
				if m.Group == group && takes(m, topic) && m.Deadline.After(at) {
					t.Fatalf("step %d: reschedule left %v at %v, after %v", step, m.Payload, m.Deadline, at)
				}
			}
		case op < 10:
			now := t0.Add(time.Duration(rng.IntN(50)) * time.Second)
			got := tb.Expired(now)
			var want []*Request
			for _, m := range model {
				if !m.Deadline.After(now) {
					want = append(want, m)
				}
			}
			slices.SortStableFunc(want, func(a, b *Request) int { return a.Deadline.Compare(b.Deadline) })
			remove(want)
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: expired %v, want %v", step, names2(got), names2(want))
			}
		case op < 11:
			topic := topics[rng.IntN(3)]
			got := tb.Topic(topic)
			var want []*Request
			for _, m := range model {
				if takes(m, topic) {
					want = append(want, m)
				}
			}
			remove(want)
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: topic %v, want %v", step, names2(got), names2(want))
			}
		default:
			if len(all) == 0 {
				continue
			}
			r := all[rng.IntN(len(all))]
			i := slices.Index(model, r)
			if got := tb.Remove(r); got != (i >= 0) {
				t.Fatalf("step %d: remove = %v, model has it = %v", step, got, i >= 0)
			}
			if i >= 0 {
				model = slices.Delete(model, i, i+1)
			}
		}
		if tb.Len() != len(model) {
			t.Fatalf("step %d: Len %d, model %d", step, tb.Len(), len(model))
		}
	}
	tb.RemoveAll()
	if len(tb.byGroup) != 0 || len(tb.groupsOf) != 0 || len(tb.byQueue) != 0 {
		t.Fatal("indexes not empty after RemoveAll")
	}
}

// BenchmarkArrivedWithParkedPops parks pops of one group on a topic and
// stores messages one at a time: each wakes one pop (which parks again),
// where the waiter set before this table woke every pop of the topic.
func BenchmarkArrivedWithParkedPops(b *testing.B) {
	for _, n := range []int{1, 100, 10000} {
		b.Run("pops="+strconv.Itoa(n), func(b *testing.B) {
			tb := New(n, n)
			for i := range n {
				if err := tb.Park(popReq("p", "G", "T", "%RETRY%G", false, nil, 20+i)); err != nil {
					b.Fatal(err)
				}
			}
			woken := 0
			b.ResetTimer()
			for i := range b.N {
				rs := tb.Arrived("T", int32(i%8), int64(i+1))
				woken += len(rs)
				for _, r := range rs {
					if err := tb.Park(r); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(woken)/float64(b.N), "wakeups/msg")
		})
	}
}

// TestParkedCountsAGroupsPopsOfATopic: Parked counts the pops of a group
// parked with the topic as theirs (not as the retry topic they also read),
// those match accepts, and none once they are woken.
func TestParkedCountsAGroupsPopsOfATopic(t *testing.T) {
	tb := New(100, 100)
	parkAll(t, tb,
		popReq("g1", "G", "T", "%RETRY%G", false, nil, 20),
		popReq("n1", "G", "T", "%RETRY%G", false, nil, 20),
		popReq("h1", "H", "T", "", false, nil, 20),
		popReq("r1", "G", "%RETRY%G", "", false, nil, 20),
	)
	if n := tb.Parked("G", "T", nil); n != 2 {
		t.Fatalf("G on T: %d parked, want 2", n)
	}
	if n := tb.Parked("G", "T", func(r *Request) bool { return r.Payload != "n1" }); n != 1 {
		t.Fatalf("G on T without n1: %d, want 1", n)
	}
	if n := tb.Parked("G", "%RETRY%G", nil); n != 1 {
		t.Fatalf("G on its retry topic: %d, want 1 (r1; g1 and n1 read it as Also)", n)
	}
	if n := tb.Parked("X", "T", nil); n != 0 {
		t.Fatalf("an unknown group: %d", n)
	}
	tb.Topic("T")
	if n := tb.Parked("G", "T", nil); n != 0 {
		t.Fatalf("after Topic woke them: %d", n)
	}
}
