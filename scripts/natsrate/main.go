// Command natsrate publishes to NATS JetStream at a fixed rate and reports
// the send latency, for scripts/bench-peers.sh's p99-half scenario (the
// peer's own natsbench has no rate flag).
//
// Message i is due at start + i/rate. It is published asynchronously (up to
// -window unacknowledged) and its latency runs from its due time to its
// PubAck, so a stall of the server or the client delays every message due
// in the meantime and is counted for each of them (no coordinated
// omission). One result line on stdout:
//
//	nats p99-half 1024B msgs=N secs=S msgs/s=X rate=R p50_us=.. p90_us=.. p99_us=.. p999_us=.. max_us=.. errors=E
//
// It is a module of its own so that the main module's build, vet and tests
// do not depend on the NATS client.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	var (
		addr    = flag.String("url", "nats://127.0.0.1:14222", "server URL (loopback addresses only)")
		stream  = flag.String("stream", "BENCHRATE", "stream to (re)create and publish to; deleted at the end")
		subject = flag.String("subject", "benchrate.data", "subject to publish to (the stream binds its first token.>)")
		size    = flag.Int("size", 1024, "payload size in bytes")
		msgs    = flag.Int("msgs", 100000, "messages to publish")
		rate    = flag.Float64("rate", 10000, "messages per second")
		window  = flag.Int("window", 1000, "most unacknowledged publishes at once; a full window delays the next")
		grace   = flag.Duration("grace", 30*time.Second, "how long to wait for outstanding acks once all are published")
		label   = flag.String("label", "p99-half", "scenario name in the result line")
	)
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: natsrate [flags]\n\nPublish -msgs messages of -size bytes to a JetStream file stream at -rate\nmessages per second and print msgs/s and the latency from each message's\nscheduled time to its PubAck.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *msgs < 1 || *rate <= 0 || *size < 0 || *window < 1 {
		fail("-msgs and -window must be at least 1, -rate above 0, -size not negative")
	}
	if err := loopback(*addr); err != nil {
		fail("%v", err)
	}
	r, err := run(*addr, *stream, *subject, *size, *msgs, *rate, *window, *grace)
	if err != nil {
		fail("%v", err)
	}
	fmt.Println(r.line(*label, *size, *rate))
}

// loopback refuses a URL whose host is not a loopback address.
func loopback(addr string) error {
	u, err := url.Parse(addr)
	if err != nil {
		return fmt.Errorf("-url %q: %v", addr, err)
	}
	h := u.Hostname()
	if ip := net.ParseIP(h); h != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-url %q: only loopback addresses are used (127.0.0.1, ::1, localhost)", addr)
	}
	return nil
}

type result struct {
	acked   int
	errs    int
	elapsed time.Duration
	lat     []time.Duration // sorted
}

func run(addr, stream, subject string, size, n int, rate float64, window int, grace time.Duration) (*result, error) {
	nc, err := nats.Connect(addr)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %v", addr, err)
	}
	defer nc.Close()

	var (
		mu   sync.Mutex
		due  = make(map[*nats.Msg]time.Time, window) // in flight: message -> its due time
		lat  = make([]time.Duration, 0, n)
		errs int
	)
	done := func(m *nats.Msg, ok bool) {
		now := time.Now()
		mu.Lock()
		if t, found := due[m]; found {
			delete(due, m)
			if ok {
				lat = append(lat, now.Sub(t))
			} else {
				errs++
			}
		}
		mu.Unlock()
	}
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(window),
		jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) { done(m, true) }),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, _ error) { done(m, false) }))
	if err != nil {
		return nil, fmt.Errorf("jetstream: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := js.DeleteStream(ctx, stream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("delete stream %s: %v", stream, err)
	}
	first, _, _ := strings.Cut(subject, ".")
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{first + ".>"}, Storage: jetstream.FileStorage}); err != nil {
		return nil, fmt.Errorf("create stream %s: %v", stream, err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = js.DeleteStream(ctx, stream)
	}()

	payload := make([]byte, size)
	interval := float64(time.Second) / rate
	start := time.Now()
	for i := range n {
		t := start.Add(time.Duration(float64(i) * interval))
		if d := time.Until(t); d > 0 {
			time.Sleep(d)
		}
		m := &nats.Msg{Subject: subject, Data: payload}
		mu.Lock()
		due[m] = t
		mu.Unlock()
		// A full window blocks here (the stall wait is the grace); the
		// messages due meanwhile count the wait in their latency.
		if _, err := js.PublishMsgAsync(m, jetstream.WithStallWait(grace)); err != nil {
			done(m, false)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(grace):
	}
	elapsed := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	errs += len(due) // never answered within the grace
	slices.Sort(lat)
	return &result{acked: len(lat), errs: errs, elapsed: elapsed, lat: lat}, nil
}

// quantile is the nearest-rank q-quantile of the sorted lat, in µs.
func quantile(lat []time.Duration, q float64) int64 {
	if len(lat) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(lat)))) - 1
	return lat[max(i, 0)].Microseconds()
}

func (r *result) line(label string, size int, rate float64) string {
	secs := r.elapsed.Seconds()
	return "nats " + label + " " + strconv.Itoa(size) + "B" +
		fmt.Sprintf(" msgs=%d secs=%.3f msgs/s=%.0f rate=%.0f", r.acked, secs, float64(r.acked)/secs, rate) +
		fmt.Sprintf(" p50_us=%d p90_us=%d p99_us=%d p999_us=%d max_us=%d errors=%d",
			quantile(r.lat, 0.50), quantile(r.lat, 0.90), quantile(r.lat, 0.99), quantile(r.lat, 0.999), quantile(r.lat, 1), r.errs)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "natsrate: "+format+"\n", args...)
	os.Exit(1)
}
