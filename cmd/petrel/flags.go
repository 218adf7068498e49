package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/commitlog"
)

// options holds every flag of the server commands. The flag names are a
// contract that tests and operators rely on; the YAML config file (--config)
// uses the same names as keys.
type options struct {
	config        string
	dataDir       string
	namesrvListen string
	brokerListen  string
	namesrv       string
	brokerName    string
	cluster       string
	flush         string
	flushInterval time.Duration
	autoCreate    bool
	typeCheck     bool
	advertise     string
	segmentBytes  int64
	pageCache     int64
	maxMessage    int
	reserve       time.Duration
	diskMaxUsed   int // percent
	delayLevels   string
	maxTimerDelay time.Duration
	dedupWindow   time.Duration
	lockExpiry    time.Duration
	txnTimeout    time.Duration
	txnInterval   time.Duration
	txnMaxChecks  int
	logLevel      string
	logFormat     string
	httpListen    string
	cpuProfile    string
	grpc          grpcOptions
	remoting      remotingOptions
	repl          replOptions       // replication.go
	ctl           controllerOptions // controller.go
	ctlMode       ctlOptions        // ctlmode.go
	sec           securityOptions   // auth.go, tls.go
}

func addCommonFlags(fl *pflag.FlagSet, o *options) {
	fl.StringVar(&o.config, "config", "", "YAML file with any of these flags as keys (command-line flags win)")
	fl.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fl.StringVar(&o.logFormat, "log-format", "text", "log format on stderr: text (key=value) or json (one object per line)")
	fl.StringVar(&o.cpuProfile, "cpu-profile", "", "write a CPU profile (pprof) to this file until the process stops")
}

// startProfile starts the CPU profile when --cpu-profile is set; the
// returned function stops it.
func startProfile(o *options) (func(), error) { return startCPUProfile(o.cpuProfile) }

// startCPUProfile writes a CPU profile to path (nothing when it is empty)
// until the returned function runs.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func addNamesrvFlags(fl *pflag.FlagSet, o *options) {
	fl.StringVar(&o.namesrvListen, "namesrv-listen", ":9876", "address the name server listens on")
}

func addBrokerFlags(fl *pflag.FlagSet, o *options) {
	def := store.DefaultConfig("")
	fl.StringVar(&o.dataDir, "data-dir", "./petrel-data", "directory for the commit log, queues, index and metadata")
	fl.StringVar(&o.brokerListen, "broker-listen", ":10911", "address the broker listens on for clients")
	fl.StringVar(&o.httpListen, "http-listen", ":8080", "address of the HTTP listener for /metrics (Prometheus), /healthz and /readyz; empty turns it off")
	fl.StringVar(&o.brokerName, "broker-name", "broker-a", "name of this broker group (shared by its master and slaves)")
	fl.StringVar(&o.cluster, "cluster", "DefaultCluster", "cluster this broker belongs to")
	fl.StringVar(&o.flush, "flush", "sync", "when a send is acknowledged: sync (after fsync) or async (after the write; fsync every --flush-interval)")
	fl.DurationVar(&o.flushInterval, "flush-interval", def.FlushInterval, "fsync period under --flush async")
	fl.BoolVar(&o.autoCreate, "auto-create-topics", true, "create a topic when a producer first sends to it")
	fl.StringVar(&o.advertise, "advertise", "", "ip:port put into routes for clients (default: the listen address, or the first non-loopback address when listening on all)")
	fl.Int64Var(&o.segmentBytes, "segment-bytes", def.SegmentBytes, "size of each commit-log segment file in bytes")
	fl.Int64Var(&o.pageCache, "page-cache-bytes", def.PageCacheBytes, "how many bytes of the commit log behind its newest durable byte to leave in the OS page cache; older pages are freed once on disk, so reads that far back go to the disk (0 leaves every page to the OS)")
	fl.IntVar(&o.maxMessage, "max-message-bytes", def.MaxMessageBytes, "largest message body in bytes; larger sends are refused")
	fl.DurationVar(&o.reserve, "file-reserved-time", def.FileReservedTime, "delete commit-log segments older than this")
	fl.IntVar(&o.diskMaxUsed, "disk-max-used-ratio", int(def.DiskHighWater*100+0.5), fmt.Sprintf("while more than this percentage of the data dir's disk is in use, delete the oldest commit-log segments before their reserved time (1-%d; writes are refused above %d)", int(def.DiskHardLimit*100+0.5)-1, int(def.DiskHardLimit*100+0.5)))
	bdef := broker.DefaultConfig()
	fl.StringVar(&o.delayLevels, "delay-levels", formatDelayLevels(bdef.DelayLevels), "delays of the DELAY property's levels 1, 2, ...; retries wait level 3 + attempts")
	fl.BoolVar(&o.typeCheck, "topic-message-type-check", true, "refuse a message whose type (normal, FIFO, delayed, transactional; a 4.x client's is inferred from its properties) is not the one its topic's message.type attribute names, on both protocols (RocketMQ's enableTopicMessageTypeCheck); topics without the attribute take every type")
	fl.DurationVar(&o.maxTimerDelay, "max-timer-delay", bdef.MaxTimerDelay, "refuse delayed messages due later than this")
	fl.DurationVar(&o.lockExpiry, "lock-expiry", bdef.LockExpiry, "an orderly consumer's queue lock not renewed for this long can be taken by another member (the Go client renews every 20 s and does not unlock queues it rebalances away)")
	fl.DurationVar(&o.txnTimeout, "transaction-timeout", 6*time.Second, "check back an undecided transaction this long after its half message was stored")
	fl.DurationVar(&o.txnInterval, "transaction-check-interval", time.Minute, "time between the check-backs of one transaction")
	fl.IntVar(&o.txnMaxChecks, "transaction-max-checks", 15, "discard a half message after this many check-backs without an answer")
	fl.DurationVar(&o.dedupWindow, "dedup-window", bdef.DedupWindow, "answer a resend of a message (same UNIQ_KEY and topic) within this long with the original result instead of storing it again; 0 turns it off")
	addGRPCFlags(fl, &o.grpc)
}

// loadConfig applies the YAML file's keys to the flags not set on the
// command line.
func loadConfig(cmd *cobra.Command, o *options) error {
	if o.config == "" {
		return nil
	}
	raw, err := os.ReadFile(o.config)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var kv map[string]any
	if err := yaml.Unmarshal(raw, &kv); err != nil {
		return fmt.Errorf("--config %s is not valid YAML: %w", o.config, err)
	}
	fl := cmd.Flags()
	for k, v := range kv {
		if name, ok := yamlAliases[k]; ok {
			k = name
		}
		f := fl.Lookup(k)
		if f == nil {
			return fmt.Errorf("--config %s: unknown key %q; use the flag names of 'petrel %s --help'", o.config, k, cmd.Name())
		}
		if f.Changed || k == "config" {
			continue
		}
		if err := fl.Set(k, fmt.Sprint(v)); err != nil {
			return fmt.Errorf("--config %s: key %q: %w", o.config, k, err)
		}
	}
	return nil
}

// newLogger builds the logger of --log-level and --log-format, writing to
// stderr.
func newLogger(o *options) (*slog.Logger, error) {
	return buildLogger(os.Stderr, o.logLevel, o.logFormat)
}

func buildLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	ho := &slog.HandlerOptions{Level: l}
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, ho)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

func (o *options) storeConfig(logger *slog.Logger) (store.Config, error) {
	mode, err := commitlog.ParseFlushMode(o.flush)
	if err != nil {
		return store.Config{}, fmt.Errorf("--flush: %w", err)
	}
	cfg := store.DefaultConfig(o.dataDir)
	cfg.FlushMode = mode
	cfg.FlushInterval = o.flushInterval
	cfg.SegmentBytes = o.segmentBytes
	switch {
	case o.pageCache < 0:
		return store.Config{}, fmt.Errorf("--page-cache-bytes %d: give a size in bytes, or 0 to leave the page cache to the OS", o.pageCache)
	case o.pageCache == 0:
		cfg.PageCacheBytes = -1 // the flag's 0 means off
	default:
		cfg.PageCacheBytes = o.pageCache
	}
	cfg.MaxMessageBytes = o.maxMessage + 64<<10 // room for the record's header, topic and properties
	cfg.FileReservedTime = o.reserve
	if hard := int(cfg.DiskHardLimit*100 + 0.5); o.diskMaxUsed < 1 || o.diskMaxUsed >= hard {
		return store.Config{}, fmt.Errorf("--disk-max-used-ratio %d: give a percentage from 1 to %d (at %d%% writes are refused)", o.diskMaxUsed, hard-1, hard)
	}
	cfg.DiskHighWater = float64(o.diskMaxUsed) / 100
	cfg.Logger = logger
	return cfg, nil
}

func (o *options) brokerConfig(logger *slog.Logger) (broker.Config, error) {
	cfg := broker.DefaultConfig()
	if o.delayLevels != "" {
		levels, err := broker.ParseDelayLevels(o.delayLevels)
		if err != nil {
			return cfg, fmt.Errorf("--delay-levels: %w", err)
		}
		cfg.DelayLevels = levels
	}
	if o.maxTimerDelay != 0 {
		cfg.MaxTimerDelay = o.maxTimerDelay
	}
	if o.lockExpiry != 0 {
		cfg.LockExpiry = o.lockExpiry
	}
	cfg.TransactionTimeout, cfg.TransactionCheckInterval, cfg.TransactionMaxChecks = o.txnTimeout, o.txnInterval, o.txnMaxChecks
	cfg.DedupWindow = o.dedupWindow
	if o.dedupWindow == 0 {
		cfg.DedupWindow = -1 // the flag's 0 means off
	}
	cfg.BrokerName = o.brokerName
	cfg.ClusterName = o.cluster
	cfg.AutoCreateTopics = o.autoCreate
	cfg.NoTopicMessageTypeCheck = !o.typeCheck
	cfg.MaxMessageBytes = o.maxMessage
	cfg.Logger = logger
	return cfg, nil
}

// formatDelayLevels writes levels as --delay-levels takes them: "1s 5s
// ... 1h 2h".
func formatDelayLevels(levels []time.Duration) string {
	parts := make([]string, len(levels))
	for i, d := range levels {
		switch {
		case d%time.Hour == 0:
			parts[i] = fmt.Sprintf("%dh", d/time.Hour)
		case d%time.Minute == 0:
			parts[i] = fmt.Sprintf("%dm", d/time.Minute)
		default:
			parts[i] = d.String()
		}
	}
	return strings.Join(parts, " ")
}

func splitNameServers(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
