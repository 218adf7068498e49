package remoting

import (
	"bufio"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// TestGuardBatchRefusesInTheMiddle: the guard checks a batch's requests;
// the refused ones, in the middle of the batch, are answered with the
// guard's refusal, and the handler gets the others, in arrival order,
// its replies reaching the right callers.
func TestGuardBatchRefusesInTheMiddle(t *testing.T) {
	refuse := map[string]bool{"3": true, "4": true, "7": true, "12": true}
	guard := func(_ *Conn, req *Command) *Command {
		if refuse[req.Ext("i")] {
			return NewResponse(req, 16, "refused "+req.Ext("i"))
		}
		return nil
	}
	for _, n := range []int{3, 12} { // one goroutine, and spread checks
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			_, calls, nc := memServer(t, ServerOptions{Guard: guard})
			if _, err := nc.Write(frames(t, 1, repeat(codeAsync, n)...)); err != nil {
				t.Fatal(err)
			}
			got := readAnswers(t, bufio.NewReader(nc), n)
			var want []string
			for i := 1; i <= n; i++ {
				id := strconv.Itoa(i)
				c := got[int32(i)]
				switch {
				case c == nil:
					t.Fatalf("request %d not answered", i)
				case refuse[id] && (c.Code != 16 || c.Remark != "refused "+id):
					t.Errorf("request %d answered %d %q, want the guard's refusal", i, c.Code, c.Remark)
				case !refuse[id] && (c.Code != CodeSuccess || c.Remark != "re "+id):
					t.Errorf("request %d answered %d %q, want the handler's answer", i, c.Code, c.Remark)
				}
				if !refuse[id] {
					want = append(want, id)
				}
			}
			calls.mu.Lock()
			defer calls.mu.Unlock()
			if len(calls.calls) != 1 || !slices.Equal(calls.calls[0], want) {
				t.Fatalf("handler calls %v, want one with %v", calls.calls, want)
			}
		})
	}
}

// TestGuardBatchAllRefused: a batch the guard refuses entirely does not
// reach the handler, and every request gets its refusal.
func TestGuardBatchAllRefused(t *testing.T) {
	guard := func(_ *Conn, req *Command) *Command { return NewResponse(req, 16, "no") }
	_, calls, nc := memServer(t, ServerOptions{Guard: guard})
	if _, err := nc.Write(frames(t, 1, repeat(codeAsync, 6)...)); err != nil {
		t.Fatal(err)
	}
	for i, c := range readAnswers(t, bufio.NewReader(nc), 6) {
		if c.Code != 16 || c.Remark != "no" {
			t.Errorf("request %d answered %d %q", i, c.Code, c.Remark)
		}
	}
	if s := calls.sizes(); len(s) != 0 {
		t.Fatalf("handler called with %v requests, want no call", s)
	}
}

// TestGuardBatchChecksInParallel: a batch's checks run on several
// goroutines at once (the reader's share waits for another share's
// check to start), sharing the guard's state under the race detector,
// and every request of many batches is answered right.
func TestGuardBatchChecksInParallel(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	otherShare := make(chan struct{})
	var checked atomic.Int64
	var inside, peak atomic.Int32
	guard := func(_ *Conn, req *Command) *Command {
		now := inside.Add(1)
		defer inside.Add(-1)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
		checked.Add(1)
		id, _ := strconv.Atoi(req.Ext("i"))
		switch id {
		case 1: // the reader's share: wait for the last share to start
			select {
			case <-otherShare:
			case <-time.After(oneReadWait):
				t.Error("no other goroutine checked the batch's last requests while the first was checked")
			}
		case 7:
			close(otherShare)
		}
		if id%5 == 0 {
			return NewResponse(req, 16, "refused "+req.Ext("i"))
		}
		return nil
	}
	_, calls, nc := memServer(t, ServerOptions{Guard: guard, MaxInFlightPerConn: 1024})
	br := bufio.NewReader(nc)
	total := 0
	for round, n := range []int{8, 40, 5, 64, 4} {
		if _, err := nc.Write(frames(t, total+1, repeat(codeAsync, n)...)); err != nil {
			t.Fatal(err)
		}
		got := readAnswers(t, br, n)
		for i := total + 1; i <= total+n; i++ {
			c := got[int32(i)]
			id := strconv.Itoa(i)
			refused := i%5 == 0
			if c == nil || (refused && c.Remark != "refused "+id) || (!refused && c.Remark != "re "+id) {
				t.Fatalf("round %d request %d answered %+v", round, i, c)
			}
		}
		total += n
	}
	if c := checked.Load(); c != int64(total) {
		t.Errorf("guard ran %d times for %d requests", c, total)
	}
	if p := peak.Load(); p < 2 {
		t.Errorf("at most %d checks at once, want parallel checks", p)
	}
	calls.mu.Lock()
	defer calls.mu.Unlock()
	handled := 0
	for _, ids := range calls.calls {
		handled += len(ids)
		if !slices.IsSortedFunc(ids, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y }) {
			t.Errorf("batch %v not in arrival order", ids)
		}
	}
	if want := total - total/5; handled != want {
		t.Errorf("handler got %d requests, want %d", handled, want)
	}
}
