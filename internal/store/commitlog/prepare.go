package commitlog

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"sync/atomic"

	"github.com/petrelmq/petrel/internal/vfs"
)

// Under FlushSync the next segment is prepared in the background by writing
// zeros through it and syncing it, so that the writer's fdatasync calls find
// every block already allocated and written: on ext4 a write into a
// fallocated (unwritten) extent makes each fdatasync commit a metadata
// change too, which measured 1.5x slower here. Under FlushAsync, where disk
// bandwidth matters more than sync latency, segments are only fallocated.

// prepSuffix marks a segment being prepared; Open removes leftovers.
const prepSuffix = ".prep"

// prepChunk is the size of each zero write, and prepSyncEvery bounds the
// dirty data the preparer leaves for the kernel between its own syncs.
const (
	prepChunk     = 1 << 20
	prepSyncEvery = 64 << 20
)

var errPrepCanceled = errors.New("commitlog: segment preparation canceled")

// prepJob is one segment to prepare. done is closed when f or err is set.
type prepJob struct {
	start  int64
	cancel atomic.Bool
	done   chan struct{}
	f      vfs.File
	err    error
}

func prepName(start int64) string { return SegmentName(start) + prepSuffix }

// removePrepared deletes segments left half-prepared by an earlier process.
func (l *Log) removePrepared(names []string) {
	for _, n := range names {
		if strings.HasSuffix(n, prepSuffix) {
			l.fs.Remove(path.Join(l.dir, n))
		}
	}
}

// requestPrepare asks the preparer for the segment after start. Writer only.
func (l *Log) requestPrepare(start int64) {
	if l.prepc == nil {
		return
	}
	j := &prepJob{start: start, done: make(chan struct{})}
	l.nextPrep = j
	l.prepc <- j // the preparer holds at most one job, so this never waits long
}

// takePrepared returns the prepared file for the segment at start, or nil
// when none is ready; an unfinished preparation is canceled. Writer only.
func (l *Log) takePrepared(start int64) (vfs.File, error) {
	j := l.nextPrep
	l.nextPrep = nil
	if j == nil || j.start != start {
		if j != nil {
			j.cancel.Store(true)
		}
		return nil, nil
	}
	select {
	case <-j.done:
	default:
		j.cancel.Store(true)
		return nil, nil
	}
	if j.err != nil {
		return nil, nil
	}
	tmp, final := path.Join(l.dir, prepName(start)), path.Join(l.dir, SegmentName(start))
	if err := l.fs.Rename(tmp, final); err != nil {
		j.f.Close()
		l.fs.Remove(tmp)
		return nil, fmt.Errorf("commitlog: rename prepared segment %s: %w", SegmentName(start), err)
	}
	return j.f, nil
}

// preparer runs the preparation jobs one at a time.
func (l *Log) preparer() {
	defer l.wg.Done()
	zeros := make([]byte, prepChunk)
	for {
		select {
		case j := <-l.prepc:
			j.f, j.err = l.prepare(j, zeros)
			close(j.done)
		case <-l.quit:
			return
		}
	}
}

func (l *Log) prepare(j *prepJob, zeros []byte) (vfs.File, error) {
	tmp := path.Join(l.dir, prepName(j.start))
	f, err := l.fs.Create(tmp)
	if err != nil {
		return nil, err
	}
	abort := func(err error) (vfs.File, error) {
		f.Close()
		l.fs.Remove(tmp)
		return nil, err
	}
	sinceSync := int64(0)
	for off := int64(0); off < l.opts.SegmentBytes; off += prepChunk {
		if j.cancel.Load() || l.stopping.Load() {
			return abort(errPrepCanceled)
		}
		// Pace the zeros with the data: stay at most one chunk ahead of
		// the writer's position in the segment before this one, so the
		// extra writes are spread out instead of competing in a burst.
		for off > l.written.Load()-(j.start-l.opts.SegmentBytes)+prepChunk {
			select {
			case <-l.prepKick:
			case <-l.quit:
				return abort(errPrepCanceled)
			}
			if j.cancel.Load() {
				return abort(errPrepCanceled)
			}
		}
		n := min(int64(prepChunk), l.opts.SegmentBytes-off)
		if err := l.writeZeros(f, tmp, off, n, zeros); err != nil {
			return abort(err)
		}
		if sinceSync += n; sinceSync >= prepSyncEvery {
			if err := f.Sync(); err != nil {
				return abort(err)
			}
			sinceSync = 0
		}
	}
	if err := f.Sync(); err != nil {
		return abort(err)
	}
	if j.cancel.Load() {
		return abort(errPrepCanceled)
	}
	return f, nil
}

// dropPrepared releases a finished but unused preparation. It runs in Close
// after the writer and the preparer have stopped; a job the preparer never
// started created no file.
func (l *Log) dropPrepared() {
	j := l.nextPrep
	if j == nil {
		return
	}
	select {
	case <-j.done:
		if j.err == nil {
			j.f.Close()
			l.fs.Remove(path.Join(l.dir, prepName(j.start)))
		}
	default:
	}
}

// writeZeros zero-fills [off, off+n) of the file being prepared, the cheap
// way when the file system offers one.
func (l *Log) writeZeros(f vfs.File, name string, off, n int64, zeros []byte) error {
	if zf, ok := l.fs.(vfs.ZeroFiller); ok {
		return zf.ZeroFill(name, off, n)
	}
	_, err := f.WriteAt(zeros[:n], off)
	return err
}
