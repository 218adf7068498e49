package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/petrelmq/petrel/internal/store/dispatch"
	"github.com/petrelmq/petrel/internal/vfs"
)

// The end-of-run check of a replicated run: once the brokers are stopped,
// every replica of a group must hold the same commit-log bytes up to the
// group's commit point (a slave's log is the master's, byte for byte,
// segment padding included; a failover keeps that, with the divergent
// tails truncated). CompareLogs reads the data directories.

// ReplicaLog is one replica's data directory.
type ReplicaLog struct {
	Name string // the process name
	Dir  string // its --data-dir (the store's directory)
}

// LogComparison is the outcome of comparing one group's replicas.
type LogComparison struct {
	Group    string
	Replicas []string
	// CommitPoint is the group's commit point: the highest dispatch point
	// a replica's checkpoint records (every record below it was
	// acknowledged by the group, so every replica that is whole holds it).
	// From is where the comparison starts: the newest first retained
	// byte of any replica.
	CommitPoint, From int64
	// Reference is the replica the others were compared with (the one
	// with the highest dispatch point).
	Reference string
	// Diverged is the first replica found different ("" when all agree),
	// Offset the first offset where it differs from Reference, Why what
	// differs (a byte, or a replica that does not hold the bytes).
	Diverged string
	Offset   int64
	Why      string
}

// OK reports whether every replica agreed.
func (c LogComparison) OK() bool { return c.Diverged == "" }

func (c LogComparison) String() string {
	if c.OK() {
		return fmt.Sprintf("%s: %d replicas identical over [%d, %d)", c.Group, len(c.Replicas), c.From, c.CommitPoint)
	}
	return fmt.Sprintf("%s: %s differs from %s at offset %d (commit point %d): %s", c.Group, c.Diverged, c.Reference, c.Offset, c.CommitPoint, c.Why)
}

// compareChunk is how many bytes CompareLogs reads at once per replica.
const compareChunk = 1 << 20

// CompareLogs compares the commit logs of a group's replicas (stopped:
// nothing may write them meanwhile) over [From, CommitPoint). With strict
// (a topology with controllers, whose end-of-run check waits for every
// replica to be in the in-sync set before the stop) every replica must hold
// every byte up to the commit point; without, a replica is compared up to
// its own dispatch point (a slave of a fixed master may be behind). An
// error means a directory could not be read (no comparison was made).
func CompareLogs(group string, replicas []ReplicaLog, strict bool) (LogComparison, error) {
	out := LogComparison{Group: group}
	if len(replicas) < 2 {
		for _, r := range replicas {
			out.Replicas = append(out.Replicas, r.Name)
		}
		return out, nil
	}
	logs := make([]*replicaLog, len(replicas))
	for i, r := range replicas {
		l, err := openReplicaLog(r)
		if err != nil {
			closeAll(logs)
			return out, err
		}
		logs[i] = l
		out.Replicas = append(out.Replicas, r.Name)
	}
	defer closeAll(logs)
	ref := logs[0]
	for _, l := range logs {
		out.From = max(out.From, l.first())
		if l.dispatched > ref.dispatched {
			ref = l
		}
	}
	out.CommitPoint, out.Reference = ref.dispatched, ref.name
	a, b := make([]byte, compareChunk), make([]byte, compareChunk)
	for _, l := range logs {
		if l == ref {
			continue
		}
		end := out.CommitPoint
		if !strict {
			end = min(end, l.dispatched)
		}
		for off := out.From; off < end; {
			n := int(min(int64(compareChunk), end-off))
			na, err := ref.readAt(a[:n], off)
			if err != nil {
				return out, fmt.Errorf("cluster: read %s's commit log at %d: %w", ref.name, off, err)
			}
			if na < n {
				return out, fmt.Errorf("cluster: %s's commit log ends at %d, below its own dispatch point %d", ref.name, off+int64(na), ref.dispatched)
			}
			nb, err := l.readAt(b[:n], off)
			if err != nil {
				return out, fmt.Errorf("cluster: read %s's commit log at %d: %w", l.name, off, err)
			}
			if i := firstDiff(a[:nb], b[:nb]); i >= 0 {
				out.Diverged, out.Offset = l.name, off+int64(i)
				out.Why = fmt.Sprintf("byte %#02x, %s has %#02x", b[i], ref.name, a[i])
				return out, nil
			}
			if nb < n {
				out.Diverged, out.Offset = l.name, off+int64(nb)
				out.Why = fmt.Sprintf("%s's log ends there, below the commit point", l.name)
				return out, nil
			}
			off += int64(n)
		}
	}
	return out, nil
}

func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// replicaLog reads one replica's commit-log segments.
type replicaLog struct {
	name       string
	dispatched int64
	starts     []int64 // segment starts, ascending
	files      map[int64]*os.File
}

func openReplicaLog(r ReplicaLog) (*replicaLog, error) {
	cp, err := dispatch.ReadCheckpoint(vfs.OS, r.Dir)
	if err != nil && !errors.Is(err, dispatch.ErrNoCheckpoint) {
		return nil, fmt.Errorf("cluster: %s: %w", r.Name, err)
	}
	l := &replicaLog{name: r.Name, dispatched: cp.Dispatched, files: map[int64]*os.File{}}
	dir := filepath.Join(r.Dir, "commitlog")
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cluster: %s: %w", r.Name, err)
	}
	for _, e := range ents {
		start, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil || len(e.Name()) != 20 || e.IsDir() {
			continue // not a segment (a temporary or marker file)
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			l.close()
			return nil, fmt.Errorf("cluster: %s: %w", r.Name, err)
		}
		l.files[start] = f
		l.starts = append(l.starts, start)
	}
	sort.Slice(l.starts, func(i, j int) bool { return l.starts[i] < l.starts[j] })
	return l, nil
}

// first is the offset of the oldest byte the replica keeps.
func (l *replicaLog) first() int64 {
	if len(l.starts) == 0 {
		return 0
	}
	return l.starts[0]
}

// readAt reads up to len(p) bytes at off from the segment holding off
// (and the next ones); fewer bytes than asked means the log ends (or has
// a gap) there.
func (l *replicaLog) readAt(p []byte, off int64) (int, error) {
	done := 0
	for done < len(p) {
		i := sort.Search(len(l.starts), func(i int) bool { return l.starts[i] > off }) - 1
		if i < 0 {
			return done, nil
		}
		start := l.starts[i]
		n, err := l.files[start].ReadAt(p[done:], off-start)
		done += n
		off += int64(n)
		if err != nil && !errors.Is(err, io.EOF) {
			return done, err
		}
		if n == 0 {
			// The segment's file ends here and no segment starts here:
			// the log ends (or has a gap).
			return done, nil
		}
	}
	return done, nil
}

func (l *replicaLog) close() {
	for _, f := range l.files {
		_ = f.Close()
	}
}

func closeAll(ls []*replicaLog) {
	for _, l := range ls {
		if l != nil {
			l.close()
		}
	}
}
