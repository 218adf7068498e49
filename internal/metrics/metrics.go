package metrics

import (
	"bytes"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"

	"github.com/petrelmq/petrel/internal/broker"
)

// DefaultMaxLagQueues is the default of Options.MaxLagQueues.
const DefaultMaxLagQueues = 10_000

// Options configures New. Zero values take the defaults.
type Options struct {
	// Ready reports whether the broker is ready to serve clients: nil when
	// it is, else an error saying what it waits for (the body of the 503
	// answer of /readyz). Default: always ready.
	Ready func() error
	// MaxLagQueues bounds the consumer-lag series of one scrape (groups ×
	// queues). Default DefaultMaxLagQueues.
	MaxLagQueues int
	// Logger receives errors of the HTTP handler. Default: discard.
	Logger *slog.Logger
}

// Source is what the scrape-time collector reads. Broker is required (the
// store's figures are read through it); Conns may be nil (the connection
// gauge is then left out).
type Source struct {
	Broker *broker.Broker
	// Conns returns the number of open client connections.
	Conns func() int
}

// Metrics is the registry with Petrel's collectors. Its methods are safe
// for concurrent use.
type Metrics struct {
	opts         Options
	reg          *prometheus.Registry
	sendDuration prometheus.Histogram
	flushSync    prometheus.Histogram
	groupCommit  prometheus.Histogram
	authRefusals *prometheus.CounterVec
	src          atomic.Pointer[Source]
}

// New returns a registry with the hot-path histograms, the scrape-time
// collector (empty until Attach) and the Go and process collectors.
func New(opts Options) *Metrics {
	if opts.Ready == nil {
		opts.Ready = func() error { return nil }
	}
	if opts.MaxLagQueues <= 0 {
		opts.MaxLagQueues = DefaultMaxLagQueues
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Metrics{opts: opts, reg: prometheus.NewRegistry()}
	// 50 µs .. ~1.6 s: loopback sends take tens of µs, a stalled disk seconds.
	latency := prometheus.ExponentialBuckets(50e-6, 2, 16)
	m.sendDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "petrel_send_duration_seconds",
		Help:    "Time from a send reaching the broker to its answer (stored, deduplicated or refused).",
		Buckets: latency,
	})
	m.flushSync = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "petrel_commitlog_flush_duration_seconds",
		Help:    "Duration of one commit-log fsync.",
		Buckets: latency,
	})
	m.groupCommit = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "petrel_commitlog_group_commit_messages",
		Help:    "Messages acknowledged by one commit-log group commit.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14), // 1 .. 8192
	})
	m.authRefusals = newAuthRefusals()
	m.reg.MustRegister(m.sendDuration, m.flushSync, m.groupCommit, m.authRefusals, &brokerCollector{m: m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveSend records one send's duration; install it as
// broker.Config.ObserveSend. It does not allocate.
func (m *Metrics) ObserveSend(took time.Duration) { m.sendDuration.Observe(took.Seconds()) }

// ObserveGroupCommit records one group commit of messages messages, and
// its fsync's duration when synced; the daemon calls it from
// store.Config.OnGroupCommit. It does not allocate.
func (m *Metrics) ObserveGroupCommit(messages int, synced bool, sync time.Duration) {
	if messages > 0 {
		m.groupCommit.Observe(float64(messages))
	}
	if synced {
		m.flushSync.Observe(sync.Seconds())
	}
}

// Attach gives the scrape-time collector the running broker. Before it,
// /metrics has only the histograms and the runtime series (the store may
// still be recovering).
func (m *Metrics) Attach(src Source) { m.src.Store(&src) }

// Registry is the registry, for tests and for adding collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// serveMetrics writes the text exposition with plain decimal values (see
// plainNumbers). A collector that fails is logged and the rest is served,
// as promhttp's ContinueOnError does.
func (m *Metrics) serveMetrics(w http.ResponseWriter, _ *http.Request) {
	mfs, err := m.reg.Gather()
	if err != nil {
		m.opts.Logger.Warn("gathering metrics failed; serving the rest", "err", err)
	}
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, format)
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			m.opts.Logger.Warn("encoding a metric family failed", "family", mf.GetName(), "err", err)
			http.Error(w, "encoding the metrics failed; see the server's log", http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", string(format))
	w.Write(plainNumbers(buf.Bytes()))
}

// Handler serves /metrics, /healthz and /readyz.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", m.serveMetrics)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := m.opts.Ready(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("not ready: " + err.Error() + "\n"))
			return
		}
		w.Write([]byte("ready\n"))
	})
	return mux
}
