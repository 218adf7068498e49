package longpoll

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func req(name string, topic string, qid int32, off int64, deadlineSec int, conn uint64) *Request {
	return &Request{Topic: topic, QueueID: qid, Offset: off, Deadline: t0.Add(time.Duration(deadlineSec) * time.Second), Conn: conn, Payload: name}
}

func names(rs []*Request) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.Payload.(string))
	}
	return out
}

// Each case parks a fixed set of requests, runs one operation and checks
// what it returned and what stays parked.
func TestTableOperations(t *testing.T) {
	park := func() []*Request {
		return []*Request{
			req("a", "T", 0, 5, 20, 1),
			req("b", "T", 0, 7, 10, 2),
			req("c", "T", 1, 5, 30, 1),
			req("d", "U", 0, 0, 10, 3),
			req("e", "T", 0, 3, 40, 2),
		}
	}
	cases := []struct {
		name string
		op   func(tb *Table, rs []*Request) []*Request
		want []string
		left int
	}{
		{"arrived wakes lower offsets in park order", func(tb *Table, _ []*Request) []*Request { return tb.Arrived("T", 0, 6) }, []string{"a", "e"}, 3},
		{"arrived at the parked offset wakes nothing", func(tb *Table, _ []*Request) []*Request { return tb.Arrived("T", 0, 3) }, []string{}, 5},
		{"arrived on another queue of the topic", func(tb *Table, _ []*Request) []*Request { return tb.Arrived("T", 1, 6) }, []string{"c"}, 4},
		{"arrived on an unknown queue", func(tb *Table, _ []*Request) []*Request { return tb.Arrived("T", 9, 100) }, []string{}, 5},
		{"arrived wakes all of the queue", func(tb *Table, _ []*Request) []*Request { return tb.Arrived("T", 0, 100) }, []string{"a", "b", "e"}, 2},
		{"expired before any deadline", func(tb *Table, _ []*Request) []*Request { return tb.Expired(t0.Add(9 * time.Second)) }, []string{}, 5},
		{"expired at the deadline, ties in park order", func(tb *Table, _ []*Request) []*Request { return tb.Expired(t0.Add(10 * time.Second)) }, []string{"b", "d"}, 3},
		{"expired in deadline order", func(tb *Table, _ []*Request) []*Request { return tb.Expired(t0.Add(35 * time.Second)) }, []string{"b", "d", "a", "c"}, 1},
		{"remove conn in park order", func(tb *Table, _ []*Request) []*Request { return tb.RemoveConn(2) }, []string{"b", "e"}, 3},
		{"remove unknown conn", func(tb *Table, _ []*Request) []*Request { return tb.RemoveConn(99) }, []string{}, 5},
		{"remove all in park order", func(tb *Table, _ []*Request) []*Request { return tb.RemoveAll() }, []string{"a", "b", "c", "d", "e"}, 0},
		{"remove one", func(tb *Table, rs []*Request) []*Request {
			if !tb.Remove(rs[1]) || tb.Remove(rs[1]) {
				t.Error("Remove should report true once, then false")
			}
			return tb.Arrived("T", 0, 100)
		}, []string{"a", "e"}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := New(100, 100)
			rs := park()
			for _, r := range rs {
				if err := tb.Park(r); err != nil {
					t.Fatal(err)
				}
			}
			got := names(c.op(tb, rs))
			if !slices.Equal(got, c.want) {
				t.Errorf("returned %v, want %v", got, c.want)
			}
			if tb.Len() != c.left {
				t.Errorf("Len = %d, want %d", tb.Len(), c.left)
			}
			// Whatever is left comes out exactly once by expiry.
			rest := tb.Expired(t0.Add(time.Hour))
			if len(rest) != c.left || tb.Len() != 0 {
				t.Errorf("after expiring all: %d returned, %d left; want %d, 0", len(rest), tb.Len(), c.left)
			}
			for _, r := range append(rest, rs...) {
				if r.parked {
					t.Errorf("request %v still marked parked", r.Payload)
				}
			}
		})
	}
}

func TestParkBounds(t *testing.T) {
	cases := []struct {
		name            string
		total, perConn  int
		conns           []uint64
		wantErrAt       int
		wantErrContains string
	}{
		{"total limit", 3, 10, []uint64{1, 2, 3, 4}, 3, "limit is 3"},
		{"per connection limit", 10, 2, []uint64{1, 1, 2, 1}, 3, "per-connection limit is 2"},
		{"within limits", 4, 2, []uint64{1, 1, 2, 2}, -1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := New(c.total, c.perConn)
			for i, conn := range c.conns {
				err := tb.Park(req("x", "T", 0, 0, 10, conn))
				if i == c.wantErrAt {
					if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), c.wantErrContains) {
						t.Fatalf("park %d: err = %v, want ErrFull naming %q", i, err, c.wantErrContains)
					}
					continue
				}
				if err != nil {
					t.Fatalf("park %d: %v", i, err)
				}
			}
		})
	}
}

func TestParkTwiceAndRepark(t *testing.T) {
	tb := New(10, 10)
	r := req("a", "T", 0, 5, 10, 1)
	if err := tb.Park(r); err != nil {
		t.Fatal(err)
	}
	if err := tb.Park(r); !errors.Is(err, ErrParked) {
		t.Fatalf("second park: %v, want ErrParked", err)
	}
	if got := tb.Arrived("T", 0, 6); len(got) != 1 {
		t.Fatalf("arrived returned %d", len(got))
	}
	r.Offset = 6
	if err := tb.Park(r); err != nil {
		t.Fatalf("re-park: %v", err)
	}
	if got := tb.Arrived("T", 0, 6); len(got) != 0 {
		t.Fatal("re-parked request woke at its own offset")
	}
	if d, ok := tb.NextDeadline(); !ok || !d.Equal(r.Deadline) {
		t.Fatalf("NextDeadline = %v, %v", d, ok)
	}
	if tb.ConnLen(1) != 1 {
		t.Fatalf("ConnLen = %d", tb.ConnLen(1))
	}
	tb.RemoveConn(1)
	if _, ok := tb.NextDeadline(); ok || tb.ConnLen(1) != 0 {
		t.Fatal("table not empty after RemoveConn")
	}
}

// TestTableMatchesModel runs random operations against the table and a
// naive list and compares every result.
func TestTableMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tb := New(40, 8)
	var model []*Request // park order
	var all []*Request
	for step := range 20000 {
		switch op := rng.IntN(10); {
		case op < 4:
			r := &Request{Topic: []string{"A", "B"}[rng.IntN(2)], QueueID: int32(rng.IntN(3)), Offset: int64(rng.IntN(10)),
				Deadline: t0.Add(time.Duration(rng.IntN(50)) * time.Second), Conn: uint64(rng.IntN(6)), Payload: step}
			perConn := 0
			for _, m := range model {
				if m.Conn == r.Conn {
					perConn++
				}
			}
			err := tb.Park(r)
			if wantFull := len(model) >= 40 || perConn >= 8; wantFull != (err != nil) {
				t.Fatalf("step %d: park err = %v, model full = %v", step, err, wantFull)
			}
			if err == nil {
				model = append(model, r)
				all = append(all, r)
			}
		case op < 6:
			topic, qid, maxOff := []string{"A", "B"}[rng.IntN(2)], int32(rng.IntN(3)), int64(rng.IntN(12))
			got := tb.Arrived(topic, qid, maxOff)
			var want []*Request
			model = slices.DeleteFunc(model, func(m *Request) bool {
				if m.Topic == topic && m.QueueID == qid && m.Offset < maxOff {
					want = append(want, m)
					return true
				}
				return false
			})
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: arrived %v, want %v", step, got, want)
			}
		case op < 7:
			now := t0.Add(time.Duration(rng.IntN(50)) * time.Second)
			got := tb.Expired(now)
			var want []*Request
			model = slices.DeleteFunc(model, func(m *Request) bool {
				if !m.Deadline.After(now) {
					want = append(want, m)
					return true
				}
				return false
			})
			slices.SortStableFunc(want, func(a, b *Request) int { return a.Deadline.Compare(b.Deadline) })
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: expired %v, want %v", step, names2(got), names2(want))
			}
		case op < 8:
			conn := uint64(rng.IntN(6))
			got := tb.RemoveConn(conn)
			var want []*Request
			model = slices.DeleteFunc(model, func(m *Request) bool {
				if m.Conn == conn {
					want = append(want, m)
					return true
				}
				return false
			})
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: removeConn %v, want %v", step, got, want)
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
}

func names2(rs []*Request) []any {
	var out []any
	for _, r := range rs {
		out = append(out, r.Payload)
	}
	return out
}
