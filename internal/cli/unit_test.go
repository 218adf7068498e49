package cli

import (
	"bytes"
	"io"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/message"
)

func parseOffsetID(t *testing.T, id string) (netip.AddrPort, int64, error) {
	t.Helper()
	h, off, err := message.ParseOffsetID(id)
	if err != nil {
		t.Fatalf("offset id %q: %v", id, err)
	}
	return h, off, nil
}

func TestParsePermAndFormatPerm(t *testing.T) {
	for in, want := range map[string]int32{"rw": 6, "r": 4, "w": 2, "-": 0, "6": 6, "wr": 6} {
		got, err := ParsePerm(in)
		if err != nil || got != want {
			t.Fatalf("ParsePerm(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "rx", "9"} {
		if _, err := ParsePerm(bad); err == nil {
			t.Fatalf("ParsePerm(%q): no error", bad)
		}
	}
	if FormatPerm(6) != "rw" || FormatPerm(4) != "r-" || FormatPerm(7) != "rw" || FormatPerm(0) != "--" {
		t.Fatal("FormatPerm")
	}
}

func TestParseTimeForms(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-11-29T10:00:00Z":      time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC),
		"2026-11-29T10:00:00+01:00": time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC),
		"2026-11-29 10:00:00":       time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC),
		"10m":                       now.Add(-10 * time.Minute),
	} {
		got, err := ParseTime(in, now)
		if err != nil || !got.Equal(want) {
			t.Fatalf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseTime("yesterday", now); err == nil {
		t.Fatal("ParseTime(yesterday): no error")
	}
}

func TestTagSetAndNameServers(t *testing.T) {
	if tagSet("*") != nil || tagSet("") != nil {
		t.Fatal("* must match all")
	}
	s := tagSet("A || B")
	if !s["A"] || !s["B"] || s["C"] {
		t.Fatalf("tag set %v", s)
	}
	got := ParseNameServers(" 10.0.0.1:9876;10.0.0.2:9876, ")
	if len(got) != 2 || got[1] != "10.0.0.2:9876" {
		t.Fatalf("name servers %v", got)
	}
}

func TestFormatUptimeAndClip(t *testing.T) {
	for d, want := range map[time.Duration]string{9 * time.Second: "9s", 68 * time.Second: "1m8s", 3*time.Hour + 5*time.Minute: "3h5m", 50 * time.Hour: "2d2h"} {
		if got := formatUptime(d); got != want {
			t.Fatalf("formatUptime(%v) = %q, want %q", d, got, want)
		}
	}
	if got := clip("a\nbcdef", 4); got != `a\n…` {
		t.Fatalf("clip: %q", got)
	}
}

func TestProgressBarOnlyOnATerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "progress")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, w := range []io.Writer{nil, &bytes.Buffer{}, f} {
		if isTerminal(w) {
			t.Fatalf("%T counted as a terminal", w)
		}
		c := &CLI{cfg: Config{Progress: w}}
		if c.progressBar(3, "x") != nil {
			t.Fatalf("progress bar drawn on %T", w)
		}
	}
}
