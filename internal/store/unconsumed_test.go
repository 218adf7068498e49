package store

import (
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/logtest"
	"github.com/petrelmq/petrel/internal/vfs"
)

const earlyMsg = "removed the oldest commit-log segment before its reserve time"

// TestEarlyDeletionCountsUnconsumedMessages fills a disk past the high-water
// mark with two topics and three groups at different offsets: each segment
// removed early is logged once at Warn with what each group lost, and the
// totals equal how far each group's offset fell below the new min offset.
func TestEarlyDeletionCountsUnconsumedMessages(t *testing.T) {
	clk := clock.NewManual(t0)
	fsys := vfs.NewMem()
	cfg := smallConfig(fsys, clk)
	logs := &logtest.Buffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s := mustOpen(t, cfg)
	defer s.Close()
	body := strings.Repeat("y", 500)
	for i := range 60 {
		for _, topic := range []string{"A", "B"} {
			if err := s.Put(newMsg(topic, 0, fmt.Sprint(body, i), "")); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitDispatched(t, s)
	m := s.Meta()
	m.CommitOffset("slow", "A", 0, 0)   // consumed nothing
	m.CommitOffset("slow", "B", 0, 3)   // consumed 3 of B
	m.CommitOffset("mid", "A", 0, 10)   // consumed 10 of A
	m.CommitOffset("done", "A", 0, 60)  // consumed everything
	m.CommitOffset("ahead", "B", 0, 59) // one left, the newest: never removed
	segsBefore := len(s.clog.Segments())

	u, _ := fsys.Usage("/")
	fsys.SetCapacity(int64(float64(u.UsedBytes) / 0.85))
	rep, err := s.RunRetention()
	if err != nil {
		t.Fatal(err)
	}
	removed := segsBefore - len(s.clog.Segments())
	if removed < 2 || rep.SegmentsRemoved != removed {
		t.Fatalf("removed %d segments (report %d), want at least 2 for this test", removed, rep.SegmentsRemoved)
	}
	minA, minB := s.MinOffset("A", 0), s.MinOffset("B", 0)
	if minA <= 10 || minB <= 3 || minA >= 59 || minB >= 59 {
		t.Fatalf("min offsets A %d, B %d: the test needs them past every slow offset and below 59", minA, minB)
	}
	want := []RemovedUnconsumed{
		{Topic: "A", Group: "mid", Messages: uint64(minA - 10)},
		{Topic: "A", Group: "slow", Messages: uint64(minA)},
		{Topic: "B", Group: "slow", Messages: uint64(minB - 3)},
	}
	if got := s.RemovedUnconsumed(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("RemovedUnconsumed %v, want %v", got, want)
	}
	if fmt.Sprint(rep.RemovedUnconsumed) != fmt.Sprint(want) {
		t.Fatalf("report %v, want %v", rep.RemovedUnconsumed, want)
	}

	// One Warn line per removed segment; the per-pair counts of all lines
	// add up to the totals, and each line's total is its pairs' sum.
	lines := logs.Lines(earlyMsg)
	if len(lines) != removed {
		t.Fatalf("%d early-deletion lines for %d segments:\n%s", len(lines), removed, strings.Join(lines, "\n"))
	}
	pairRE := regexp.MustCompile(`([A-Za-z%]+)/([A-Za-z]+)=(\d+)`)
	sums := map[string]uint64{}
	for _, line := range lines {
		if !strings.Contains(line, "level=WARN") {
			t.Fatalf("early deletion not at Warn: %s", line)
		}
		total := regexp.MustCompile(`unconsumed_messages=(\d+)`).FindStringSubmatch(line)
		if total == nil {
			t.Fatalf("no unconsumed_messages in %s", line)
		}
		var lineSum uint64
		for _, p := range pairRE.FindAllStringSubmatch(line[strings.Index(line, "unconsumed_by_topic_group="):], -1) {
			n, _ := strconv.ParseUint(p[3], 10, 64)
			sums[p[1]+"/"+p[2]] += n
			lineSum += n
		}
		if strconv.FormatUint(lineSum, 10) != total[1] {
			t.Fatalf("line total %s, pairs add up to %d: %s", total[1], lineSum, line)
		}
	}
	for _, w := range want {
		if sums[w.Topic+"/"+w.Group] != w.Messages {
			t.Fatalf("logged %v, want %v", sums, want)
		}
	}
	if len(sums) != len(want) {
		t.Fatalf("logged pairs %v, want only %v (done and ahead lost nothing)", sums, want)
	}

	// A second pass below the mark removes nothing and counts nothing more.
	fsys.SetCapacity(0)
	if rep, err := s.RunRetention(); err != nil || rep.SegmentsRemoved != 0 || len(rep.RemovedUnconsumed) != 0 {
		t.Fatalf("pass below the mark: %+v %v", rep, err)
	}
	if got := s.RemovedUnconsumed(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("RemovedUnconsumed after a quiet pass %v, want %v", got, want)
	}
}

// TestDeletionByAgeIsNotCountedAsUnconsumed: segments past their reserve
// time go without the early-deletion line or counts.
func TestDeletionByAgeIsNotCountedAsUnconsumed(t *testing.T) {
	clk := clock.NewManual(t0)
	fsys := vfs.NewMem()
	cfg := smallConfig(fsys, clk)
	logs := &logtest.Buffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	cfg.FileReservedTime = time.Hour
	cfg.RetentionInterval = 100 * time.Hour // passes run when the test says
	s := mustOpen(t, cfg)
	defer s.Close()
	for i := range 40 {
		if err := s.Put(newMsg("A", 0, fmt.Sprint(strings.Repeat("y", 500), i), "")); err != nil {
			t.Fatal(err)
		}
	}
	waitDispatched(t, s)
	s.Meta().CommitOffset("slow", "A", 0, 0)
	clk.Advance(2 * time.Hour)
	rep, err := s.RunRetention()
	if err != nil || rep.SegmentsRemoved == 0 {
		t.Fatalf("age pass: %+v %v", rep, err)
	}
	if got := s.RemovedUnconsumed(); len(got) != 0 {
		t.Fatalf("RemovedUnconsumed %v after deletion by age", got)
	}
	if l := logs.Lines(earlyMsg); len(l) != 0 {
		t.Fatalf("early-deletion line for deletion by age: %v", l)
	}
}

// TestHighWaterLeavesReservedBlocksOut: with 5% of the disk reserved for
// root and df showing 73% used, the 75% mark is not reached, though
// 1 − free/total would say 78%.
func TestHighWaterLeavesReservedBlocksOut(t *testing.T) {
	clk := clock.NewManual(t0)
	fsys := vfs.NewMem()
	s := mustOpen(t, smallConfig(fsys, clk))
	defer s.Close()
	for i := range 60 {
		if err := s.Put(newMsg("A", 0, fmt.Sprint(strings.Repeat("y", 500), i), "")); err != nil {
			t.Fatal(err)
		}
	}
	waitDispatched(t, s)
	u, _ := fsys.Usage("/")
	// used / (capacity − reserved) = 0.73 with reserved = 5% of capacity.
	capacity := int64(float64(u.UsedBytes) / 0.73 / 0.95)
	fsys.SetCapacity(capacity)
	fsys.SetReserved(capacity / 20)
	segs := len(s.clog.Segments())
	rep, err := s.RunRetention()
	if err != nil {
		t.Fatal(err)
	}
	if rep.SegmentsRemoved != 0 || len(s.clog.Segments()) != segs {
		t.Fatalf("at df's 73%% (%.3f) retention removed %d segments early", rep.UsedFraction, rep.SegmentsRemoved)
	}
	if rep.UsedFraction < 0.72 || rep.UsedFraction > 0.74 {
		t.Fatalf("UsedFraction %.4f, want ≈ 0.73 (used / (used + available))", rep.UsedFraction)
	}
}

// TestRetentionReadsTheInjectedStatfs: a store on the OS FS with a fake
// statfs (5% reserved, df's 74%) acts on df's figure, and still locks its
// directory.
func TestRetentionReadsTheInjectedStatfs(t *testing.T) {
	var full atomic.Bool
	fsys := vfs.OSWithStatfs(func(_ string, st *unix.Statfs_t) error {
		*st = unix.Statfs_t{Bsize: 4096, Blocks: 100_000, Bfree: 30_000, Bavail: 25_000} // 70,000 / 95,000
		if full.Load() {
			st.Bfree, st.Bavail = 8_000, 3_000 // 92,000 / 95,000
		}
		return nil
	})
	cfg := smallConfig(fsys, clock.NewManual(t0))
	cfg.Dir = t.TempDir()
	s := mustOpen(t, cfg)
	defer s.Close()
	if _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second open of the directory: %v, want it locked", err)
	}
	rep, err := s.RunRetention()
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(rep.UsedFraction-70_000.0/95_000) > 1e-9 || rep.WritesRefused {
		t.Fatalf("report %+v, want UsedFraction %.4f and writes accepted", rep, 70_000.0/95_000)
	}
	full.Store(true)
	if rep, err := s.RunRetention(); err != nil || !rep.WritesRefused {
		t.Fatalf("at df's 97%%: %+v %v, want writes refused", rep, err)
	}
}
