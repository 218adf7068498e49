package namesrv

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/remoting"
)

// history is a broker's topic table through a random run of creates,
// changes and deletes: states[i] is the table at version(i).
type history struct {
	states []map[string]TopicConfig
}

func version(i int) DataVersion {
	// Several changes share a millisecond, as they do on a busy broker.
	return DataVersion{Timestamp: 1_700_000_000_000 + int64(i/3), Counter: int64(i)}
}

// randomHistory makes n changes over a pool of names small enough that
// most topics change several times.
func randomHistory(rng *rand.Rand, n, names int) (history, []string) {
	h := history{states: []map[string]TopicConfig{{}}}
	changed := []string{""} // changed[i]: the topic change i touched
	for i := 1; i <= n; i++ {
		cur := maps.Clone(h.states[i-1])
		name := fmt.Sprintf("T%02d", rng.IntN(names))
		if _, ok := cur[name]; ok && rng.IntN(3) == 0 {
			delete(cur, name)
		} else {
			cur[name] = topic(name, int32(1+rng.IntN(16)), 6)
		}
		h.states = append(h.states, cur)
		changed = append(changed, name)
	}
	return h, changed
}

// event is one hand-over to a Registrar: a topic read at a version (what
// a change hook reads, possibly well after its change) or a whole table.
type event struct {
	change *TopicChange
	table  map[string]TopicConfig
	v      DataVersion
}

// randomEvents returns, shuffled, one read per change at a random later
// version (the hook of change i reads the topic at some j ≥ i) and a few
// whole tables at random versions.
func randomEvents(rng *rand.Rand, h history, changed []string) []event {
	n := len(h.states) - 1
	var evs []event
	for i := 1; i <= n; i++ {
		j := i + rng.IntN(n-i+1)
		if rng.IntN(2) == 0 {
			j = i // most hooks read at once
		}
		tc, ok := h.states[j][changed[i]]
		evs = append(evs, event{change: &TopicChange{Name: changed[i], Config: tc, Deleted: !ok, Version: version(j)}})
	}
	for range 1 + rng.IntN(4) {
		j := rng.IntN(n + 1)
		evs = append(evs, event{table: maps.Clone(h.states[j]), v: version(j)})
	}
	rng.Shuffle(len(evs), func(a, b int) { evs[a], evs[b] = evs[b], evs[a] })
	return evs
}

func (e event) deliver(r *Registrar) {
	if e.change != nil {
		r.Apply(*e.change)
	} else {
		r.Update(e.table, e.v)
	}
}

func heldTopics(r *Registrar) (map[string]TopicConfig, DataVersion) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.liveTopicsLocked(), r.version
}

// TestRegistrarNewestVersionWinsInAnyOrder (property): changes and whole
// tables handed to the Registrar in random order leave it holding exactly
// the broker's newest table at the newest version.
func TestRegistrarNewestVersionWinsInAnyOrder(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 13))
	for round := range 500 {
		h, changed := randomHistory(rng, 1+rng.IntN(60), 1+rng.IntN(12))
		evs := randomEvents(rng, h, changed)
		r := NewRegistrar(nil, []string{"127.0.0.1:1"}, BrokerInfo{Cluster: "c", Name: "a", Addr: "127.0.0.1:10911"}, RegistrarOptions{})
		for _, e := range evs {
			e.deliver(r)
		}
		n := len(h.states) - 1
		got, v := heldTopics(r)
		if want := h.states[n]; !maps.Equal(got, want) || v != version(n) {
			t.Fatalf("round %d (seed %d): after %d events the registrar holds %v at %+v, want %v at %+v",
				round, seed, len(evs), got, v, want, version(n))
		}
		// Nothing older moves it back.
		for _, e := range evs {
			e.deliver(r)
		}
		if got, v := heldTopics(r); !maps.Equal(got, h.states[n]) || v != version(n) {
			t.Fatalf("round %d: delivering every event again changed the held table to %v at %+v", round, got, v)
		}
	}
}

// TestRegistrarNewestVersionReachesTheNameServer (property): the same
// random hand-overs, from 8 goroutines at once while registrations are in
// flight, leave the name server routing the broker's newest table once
// WaitPublished returns.
func TestRegistrarNewestVersionReachesTheNameServer(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 14))
	clk := clock.NewManual(t0)
	ns := startNS(t, clk, "")
	cl := newClient(t)
	for round := range 8 {
		h, changed := randomHistory(rng, 200, 40)
		evs := randomEvents(rng, h, changed)
		broker := BrokerInfo{Cluster: "c", Name: fmt.Sprintf("b%d", round), Addr: fmt.Sprintf("127.0.0.1:%d", 20000+round)}
		r := NewRegistrar(cl, []string{ns.addr}, broker, RegistrarOptions{Clock: clk, Logger: testLogger(t)})
		r.Start()
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; i < len(evs); i += 8 {
					evs[i].deliver(r)
				}
			}()
		}
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := r.WaitPublished(ctx); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		cancel()
		want := h.states[len(h.states)-1]
		ns.mu.Lock()
		held, _ := ns.table.BrokerVersion(BrokerID{Cluster: "c", Name: broker.Name})
		var wrong []string
		for i := range 40 {
			name := fmt.Sprintf("T%02d", i)
			rd, ok := ns.table.Route(name)
			tc, should := want[name]
			var has bool
			for _, q := range rd.QueueDatas {
				if q.BrokerName == broker.Name {
					has = true
					if q.WriteQueueNums != tc.WriteQueueNums {
						wrong = append(wrong, fmt.Sprintf("%s has %d queues, want %d", name, q.WriteQueueNums, tc.WriteQueueNums))
					}
				}
			}
			if has != should {
				wrong = append(wrong, fmt.Sprintf("%s routed %v (route found %v), want %v", name, has, ok, should))
			}
		}
		ns.mu.Unlock()
		if len(wrong) > 0 || held != version(len(h.states)-1) {
			t.Fatalf("round %d (seed %d): name server holds version %+v (want %+v): %v", round, seed, held, version(len(h.states)-1), wrong)
		}
		r.Close()
	}
}

// TestTableNewestFullRegistrationWinsInAnyOrder (property): full
// registrations of one broker process delivered in random order leave the
// route table at the newest one delivered so far; a broker that restarted
// with a reset counter (later timestamp) still replaces the old table.
func TestTableNewestFullRegistrationWinsInAnyOrder(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 15))
	id := BrokerID{Cluster: "c", Name: "a"}
	for round := range 200 {
		h, _ := randomHistory(rng, 1+rng.IntN(30), 8)
		order := rng.Perm(len(h.states))
		tb := NewTable()
		newest := -1
		for _, i := range order {
			res := tb.Register(Registration{Broker: id, Addr: "127.0.0.1:10911", Version: version(i), Topics: maps.Clone(h.states[i])}, t0)
			if res.Stale != (i < newest) {
				t.Fatalf("round %d: registration at %d after %d: stale %v", round, i, newest, res.Stale)
			}
			newest = max(newest, i)
			if v, _ := tb.BrokerVersion(id); v != version(newest) {
				t.Fatalf("round %d (seed %d): table at %+v after delivering %d, newest so far %d", round, seed, v, i, newest)
			}
			if got := slices.Sorted(maps.Keys(h.states[newest])); !slices.Equal(tb.Topics(), got) {
				t.Fatalf("round %d (seed %d): routes %v, want the newest table's %v", round, seed, tb.Topics(), got)
			}
		}
		// A restart with a fresh topic table: counter 1, later timestamp.
		fresh := DataVersion{Timestamp: version(newest).Timestamp + 1, Counter: 1}
		if res := tb.Register(Registration{Broker: id, Addr: "127.0.0.1:10911", Version: fresh, Topics: map[string]TopicConfig{"New": topic("New", 1, 6)}}, t0); res.Stale {
			t.Fatalf("round %d: the registration of a restarted broker (%+v after %+v) was taken as stale", round, fresh, version(newest))
		}
		if !slices.Equal(tb.Topics(), []string{"New"}) {
			t.Fatalf("round %d: after the restart the routes are %v", round, tb.Topics())
		}
	}
}

// TestRegistrarCoalescesChangesInFlight: while one registration is in
// flight, 250 changes pile up and go out as one delta; WaitPublished of each
// returns once that delta was accepted, with every topic routed.
func TestRegistrarCoalescesChangesInFlight(t *testing.T) {
	clk := clock.NewManual(t0)
	ns := startNS(t, clk, "")
	cl := newClient(t)
	var deltas, fulls atomic.Int32
	hold := make(chan struct{})
	var holdOnce sync.Once
	r := NewRegistrar(cl, []string{ns.addr}, BrokerInfo{Cluster: "c", Name: "a", Addr: "127.0.0.1:10911"}, RegistrarOptions{
		Clock: clk, Logger: testLogger(t), OnSent: func(s Sent) {
			if s.Err != nil && !errors.Is(s.Err, context.Canceled) { // Close cancels one in flight
				t.Errorf("registration: %v", s.Err)
			}
			if s.Full {
				fulls.Add(1)
				return
			}
			deltas.Add(1)
			holdOnce.Do(func() { <-hold }) // the first delta's goroutine waits here
		}})
	defer r.Close()
	r.Start()
	if err := r.WaitRegistered(context.Background()); err != nil {
		t.Fatal(err)
	}
	const n = 250
	var wg, applied sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		applied.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("C%03d", i)
			r.Apply(TopicChange{Name: name, Config: topic(name, 4, 6), Version: DataVersion{Timestamp: 1, Counter: int64(2 + i)}})
			applied.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := r.WaitPublished(ctx); err != nil {
				errs <- err
				return
			}
			if _, ok := routeOf(t, ns, name); !ok {
				errs <- fmt.Errorf("WaitPublished returned before %s was routed", name)
			}
		}()
	}
	// Every change is in (they wait now), then the held registration ends.
	applied.Wait()
	close(hold)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if d := deltas.Load(); d > 2 || fulls.Load() != 1 {
		t.Fatalf("%d changes went out in %d deltas and %d full registrations, want at most 2 deltas after the first full one", n, d, fulls.Load())
	}
}

// TestRegistrarWaitPublishedWithAnUnreachableNameServer: WaitPublished
// does not wait for a name server that failed the registration carrying
// the change, and says so; the reachable one routes the topic.
func TestRegistrarWaitPublishedWithAnUnreachableNameServer(t *testing.T) {
	clk := clock.NewManual(t0)
	ns := startNS(t, clk, "")
	cl := newClient(t)
	r := NewRegistrar(cl, []string{"127.0.0.1:1", ns.addr}, BrokerInfo{Cluster: "c", Name: "a", Addr: "127.0.0.1:10911"},
		RegistrarOptions{Clock: clk, Logger: testLogger(t)})
	defer r.Close()
	r.Start()
	r.Apply(TopicChange{Name: "T", Config: topic("T", 4, 6), Version: DataVersion{Timestamp: 1, Counter: 1}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.WaitPublished(ctx); !errors.Is(err, ErrNotPublished) {
		t.Fatalf("WaitPublished with one name server down: %v, want ErrNotPublished", err)
	}
	if _, ok := routeOf(t, ns, "T"); !ok {
		t.Fatal("the reachable name server has no route for T")
	}
	r.Close()
	if err := r.WaitPublished(context.Background()); !errors.Is(err, ErrNotPublished) {
		t.Fatalf("WaitPublished after Close: %v", err)
	}
}

// BenchmarkApplyAndWait10k is the registration path of 10,000 topic
// creates with 250 in flight: each hands its change over and waits until
// the name server accepted it (go test -run X -bench ApplyAndWait10k
// -benchtime 1x).
func BenchmarkApplyAndWait10k(b *testing.B) {
	clk := clock.NewManual(t0)
	ln := startBenchNS(b, clk)
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	for i := range b.N {
		r := NewRegistrar(cl, []string{ln}, BrokerInfo{Cluster: "c", Name: fmt.Sprintf("b%d", i), Addr: fmt.Sprintf("127.0.0.1:%d", 30000+i)},
			RegistrarOptions{Clock: clk})
		r.Start()
		var counter atomic.Int64
		work := make(chan int)
		var wg sync.WaitGroup
		start := time.Now()
		for range 250 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := range work {
					name := fmt.Sprintf("B%05d", n)
					r.Apply(TopicChange{Name: name, Config: topic(name, 4, 6), Version: DataVersion{Timestamp: 1, Counter: counter.Add(1)}})
					if err := r.WaitPublished(context.Background()); err != nil {
						b.Error(err)
					}
				}
			}()
		}
		for n := range 10_000 {
			work <- n
		}
		close(work)
		wg.Wait()
		b.ReportMetric(time.Since(start).Seconds(), "s/10k")
		r.Close()
	}
}

func startBenchNS(b *testing.B, clk clock.Clock) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := New(Options{Clock: clk})
	go s.Serve(ln)
	b.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}
