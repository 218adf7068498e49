package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/commitlog"
)

type serverFlags struct {
	dataDir       string
	flush         string
	flushInterval time.Duration
	segmentBytes  int64
	maxMessage    int
	reserve       time.Duration
	logLevel      string
}

func newServerCmd() *cobra.Command {
	f := serverFlags{}
	def := store.DefaultConfig("")
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the broker (store, and later name server and network fronts) in one process",
		Long: `Run Petrel in one process on a local data directory.

The store is opened (and recovered after a crash) in --data-dir. The process
runs until SIGINT or SIGTERM, then stops gracefully: it finishes the writes in
flight, flushes and closes the store.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServer(cmd.Context(), f, cmd.OutOrStdout(), nil)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dataDir, "data-dir", "./petrel-data", "directory for the commit log, queues, index and metadata")
	fl.StringVar(&f.flush, "flush", "sync", "when a send is acknowledged: sync (after fsync) or async (after the write; fsync every --flush-interval)")
	fl.DurationVar(&f.flushInterval, "flush-interval", def.FlushInterval, "fsync period under --flush async")
	fl.Int64Var(&f.segmentBytes, "segment-bytes", def.SegmentBytes, "size of each commit-log segment file in bytes")
	fl.IntVar(&f.maxMessage, "max-message-bytes", def.MaxMessageBytes, "largest stored message in bytes; larger sends are refused")
	fl.DurationVar(&f.reserve, "file-reserved-time", def.FileReservedTime, "delete commit-log segments older than this")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	return cmd
}

// runServer runs until ctx ends or a signal arrives. started, when set, is
// called once the store is open.
func runServer(ctx context.Context, f serverFlags, out io.Writer, started func()) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	mode, err := commitlog.ParseFlushMode(f.flush)
	if err != nil {
		return fmt.Errorf("--flush: %w", err)
	}
	dir, err := filepath.Abs(f.dataDir)
	if err != nil {
		return fmt.Errorf("--data-dir %q: %w", f.dataDir, err)
	}
	cfg := store.DefaultConfig(dir)
	cfg.FlushMode = mode
	cfg.FlushInterval = f.flushInterval
	cfg.SegmentBytes = f.segmentBytes
	cfg.MaxMessageBytes = f.maxMessage
	cfg.FileReservedTime = f.reserve
	cfg.Logger = logger
	st, err := store.Open(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "petrel: data dir %s (flush %s)\n", dir, mode)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if started != nil {
		started()
	}
	<-ctx.Done()
	logger.Info("stopping")
	if err := st.Close(); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	logger.Info("stopped")
	return nil
}
