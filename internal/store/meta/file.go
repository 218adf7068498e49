package meta

import (
	"context"
	"fmt"
	"sync"

	"github.com/petrelmq/petrel/internal/vfs"
)

// tmpSuffix marks a file being written; it is never loaded.
const tmpSuffix = vfs.TmpSuffix

// writer serialises the writes of one file and lets concurrent callers share
// them (group commit). Changes to the file's table are numbered 1, 2, ... by
// the table; sync(ctx, seq) returns once a write whose snapshot covers seq is
// durable.
type writer struct {
	name string // the file, for errors and logs
	// write runs with no writer lock held, one call at a time. It makes
	// the table's changes durable and returns the highest change number the
	// write covers (also when it fails: the changes it tried).
	write func() (covered uint64, err error)

	mu       sync.Mutex
	writing  bool
	done     chan struct{} // closed when the running write ends
	durable  uint64        // every change ≤ durable is on disk
	gen      uint64        // writes finished, failed ones included
	failGen  uint64        // gen of the last failed write
	failSeq  uint64        // the changes that write covered
	failErr  error
	waiting  int    // callers parked on done (tests watch it)
	attempts uint64 // writes started (tests and logs)
}

// sync returns once every change numbered ≤ seq is durable, writing the file
// itself if no write is under way. It returns the error of a failed write
// that covered seq and ended after sync was called; an error older than the
// call is never returned: the write is tried again.
// If ctx ends first it returns ctx.Err(); a write it started still runs to
// the end.
func (w *writer) sync(ctx context.Context, seq uint64) error {
	w.mu.Lock()
	gen0 := w.gen
	for {
		if w.durable >= seq {
			w.mu.Unlock()
			return nil
		}
		if w.failGen > gen0 && w.failSeq >= seq {
			err := w.failErr
			w.mu.Unlock()
			return err
		}
		if !w.writing {
			w.writing = true
			done := make(chan struct{})
			w.done = done
			w.attempts++
			w.mu.Unlock()

			covered, err := w.write()

			w.mu.Lock()
			w.writing = false
			w.done = nil
			close(done)
			w.gen++
			if err != nil {
				w.failGen, w.failSeq, w.failErr = w.gen, covered, err
			} else if covered > w.durable {
				w.durable = covered
			}
			continue
		}
		done := w.done
		w.waiting++
		w.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			w.mu.Lock()
			w.waiting--
			w.mu.Unlock()
			return ctx.Err()
		}
		w.mu.Lock()
		w.waiting--
	}
}

// exclusive runs fn as the file's one write (waiting for a running write to
// end first) and records its result like a write of sync's.
func (w *writer) exclusive(fn func() (uint64, error)) error {
	w.mu.Lock()
	for w.writing {
		done := w.done
		w.mu.Unlock()
		<-done
		w.mu.Lock()
	}
	w.writing = true
	done := make(chan struct{})
	w.done = done
	w.attempts++
	w.mu.Unlock()

	covered, err := fn()

	w.mu.Lock()
	w.writing = false
	w.done = nil
	close(done)
	w.gen++
	if err != nil {
		w.failGen, w.failSeq, w.failErr = w.gen, covered, err
	} else if covered > w.durable {
		w.durable = covered
	}
	w.mu.Unlock()
	return err
}

// writeWhole returns a writer.write that replaces the whole file by what
// snapshot encodes. snapshot copies the table under the table's own lock and
// returns the highest change number the copy covers and a function that
// encodes the copy (called outside every lock).
func writeWhole(fsys vfs.FS, dir, name string, snapshot func() (uint64, func() ([]byte, error))) func() (uint64, error) {
	return func() (uint64, error) {
		seq, encode := snapshot()
		data, err := encode()
		if err != nil {
			return seq, fmt.Errorf("meta: encode %s: %w", name, err)
		}
		if err := vfs.WriteFileAtomic(fsys, dir, name, data); err != nil {
			return seq, fmt.Errorf("meta: %w", err)
		}
		return seq, nil
	}
}

// durableSeq reports the highest change number known durable.
func (w *writer) durableSeq() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.durable
}
