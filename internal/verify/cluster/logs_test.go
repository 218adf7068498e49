package cluster

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/store/dispatch"
	"github.com/petrelmq/petrel/internal/vfs"
)

const testSegment = 4096

// writeReplica writes a data directory: log as segments of testSegment
// bytes from first (each file padded to the segment size with pad, as a
// preallocated segment), and a checkpoint at dispatched.
func writeReplica(t *testing.T, log []byte, first, dispatched int64, pad byte) string {
	t.Helper()
	dir := t.TempDir()
	cl := filepath.Join(dir, "commitlog")
	if err := os.MkdirAll(cl, 0o755); err != nil {
		t.Fatal(err)
	}
	for start := first; start < int64(len(log)); start += testSegment {
		seg := make([]byte, testSegment)
		for i := range seg {
			seg[i] = pad
		}
		copy(seg, log[start:min(start+testSegment, int64(len(log)))])
		if err := os.WriteFile(filepath.Join(cl, commitlog.SegmentName(start)), seg, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := dispatch.WriteCheckpoint(vfs.OS, dir, dispatch.Checkpoint{Dispatched: dispatched, LogFlushed: dispatched}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func randomLog(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.IntN(255) + 1) // no zero: a zero byte is padding
	}
	return b
}

func TestCompareLogsIdentical(t *testing.T) {
	log := randomLog(3*testSegment + 100)
	cp := int64(3*testSegment + 50)
	reps := []ReplicaLog{
		{Name: "broker-a-0", Dir: writeReplica(t, log, 0, cp, 0)},
		// Past the commit point a replica may hold anything (a tail the
		// group never acknowledged, padding of another value).
		{Name: "broker-a-1", Dir: writeReplica(t, append(log[:cp:cp], []byte("tail")...), 0, cp-10, 0xff)},
		// Retention removed this one's first segment: compared from there.
		{Name: "broker-a-2", Dir: writeReplica(t, log, testSegment, cp, 0)},
	}
	got, err := CompareLogs("broker-a", reps, true)
	if err != nil {
		t.Fatal(err)
	}
	if !got.OK() || got.CommitPoint != cp || got.From != testSegment || got.Reference != "broker-a-0" {
		t.Errorf("comparison %+v; want identical over [%d, %d)", got, testSegment, cp)
	}
	if !strings.Contains(got.String(), "3 replicas identical over [4096, 12338)") {
		t.Errorf("String() = %q", got)
	}
}

func TestCompareLogsFindsTheFirstDifference(t *testing.T) {
	log := randomLog(2*testSegment + 10)
	cp := int64(len(log))
	other := append([]byte(nil), log...)
	at := int64(testSegment + 77) // in the second segment
	other[at] ^= 0x5a
	other[at+3] ^= 0x5a
	reps := []ReplicaLog{
		{Name: "broker-a-0", Dir: writeReplica(t, log, 0, cp, 0)},
		{Name: "broker-a-1", Dir: writeReplica(t, log, 0, cp, 0)},
		{Name: "broker-a-2", Dir: writeReplica(t, other, 0, cp-5, 0)},
	}
	got, err := CompareLogs("broker-a", reps, true)
	if err != nil {
		t.Fatal(err)
	}
	if got.OK() || got.Diverged != "broker-a-2" || got.Offset != at {
		t.Fatalf("comparison %+v; want broker-a-2 differing at %d", got, at)
	}
	if !strings.Contains(got.String(), "broker-a-2 differs from broker-a-0 at offset 4173") {
		t.Errorf("String() = %q", got)
	}
}

func TestCompareLogsShortReplica(t *testing.T) {
	log := randomLog(2*testSegment + 10)
	cp := int64(len(log))
	short := log[:testSegment+5]
	mk := func() []ReplicaLog {
		return []ReplicaLog{
			{Name: "broker-a-0", Dir: writeReplica(t, log, 0, cp, 0)},
			// Its second segment file exists but holds only 5 bytes of
			// the log (a truncated file, no padding).
			{Name: "broker-a-1", Dir: func() string {
				d := writeReplica(t, short[:testSegment], 0, testSegment+5, 0)
				if err := os.WriteFile(filepath.Join(d, "commitlog", commitlog.SegmentName(testSegment)), short[testSegment:], 0o644); err != nil {
					t.Fatal(err)
				}
				return d
			}()},
		}
	}
	strict, err := CompareLogs("broker-a", mk(), true)
	if err != nil {
		t.Fatal(err)
	}
	if strict.OK() || strict.Diverged != "broker-a-1" || strict.Offset != testSegment+5 || !strings.Contains(strict.Why, "ends there") {
		t.Errorf("strict: %+v; want broker-a-1 ending at %d", strict, testSegment+5)
	}
	// Without strict, a slave is compared up to its own dispatch point.
	loose, err := CompareLogs("broker-a", mk(), false)
	if err != nil || !loose.OK() {
		t.Errorf("loose: %+v, %v; want identical", loose, err)
	}
}

func TestCompareLogsOneReplicaAndBadDirs(t *testing.T) {
	got, err := CompareLogs("broker-b", []ReplicaLog{{Name: "broker-b-0", Dir: t.TempDir()}}, true)
	if err != nil || !got.OK() {
		t.Errorf("one replica: %+v, %v", got, err)
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, dispatch.CheckpointFile), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := CompareLogs("broker-b", []ReplicaLog{{Name: "x", Dir: t.TempDir()}, {Name: "y", Dir: bad}}, true); err == nil {
		t.Error("a damaged checkpoint compared")
	}
}
