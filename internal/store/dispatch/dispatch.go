package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/vfs"
)

// Source is the commit log as the dispatcher reads it.
type Source interface {
	// ReadAt fills p from the log; the range lies in one segment.
	ReadAt(p []byte, off int64) error
	// Durable is the offset below which records may be served.
	Durable() int64
	// Flushed is the offset below which bytes are on disk.
	Flushed() int64
	// SegmentStart returns the start of the segment holding off.
	SegmentStart(off int64) int64
}

// minOffsetSource is a Source that knows where its log starts. Dispatching
// that stands below it moves up to it.
type minOffsetSource interface {
	Source
	MinOffset() int64
}

// Sink receives every record in log order. Dispatch may keep nothing of r
// after it returns. Flush makes what was dispatched durable.
type Sink interface {
	Dispatch(r message.Record) error
	Flush() error
}

// Listener learns of each dispatched record, after every sink has it. It
// runs on the dispatcher goroutine and must not block.
type Listener func(r message.Record)

// Options configure a Dispatcher.
type Options struct {
	FS  vfs.FS
	Dir string // where the checkpoint lives
	// SegmentBytes of the source log (records never cross a segment).
	SegmentBytes int64
	// MaxRecordBytes bounds one record; the read buffer grows up to it.
	MaxRecordBytes int
	// Digest, when set, is called after the sinks are flushed and its value
	// is stored in the checkpoint.
	Digest func() int64
	// CheckpointInterval between checkpoints. Default 1 s.
	CheckpointInterval time.Duration
	// Bounded, when set and true, says the source's Durable may lie inside
	// a record (a commit point bounds it): a record that ends past it waits
	// for the bound to pass it, instead of stopping the dispatcher as a
	// damaged log does.
	Bounded func() bool
	Clock   clock.Clock
	Logger  *slog.Logger
}

// ErrStopped is returned by waits on a closed dispatcher.
var ErrStopped = errors.New("dispatch: stopped")

// Dispatcher feeds sinks and listeners from the log.
type Dispatcher struct {
	src   Source
	sinks []Sink
	opts  Options
	log   *slog.Logger

	lmu       sync.RWMutex
	listeners []Listener

	dispatched atomic.Int64
	// covered is the highest bound a run finished at: every whole record
	// below it is dispatched, though a record cut by it may not be.
	covered atomic.Int64
	failed  atomic.Pointer[error]

	wake    chan struct{}
	ckpt    chan struct{}
	quit    chan struct{}
	done    chan struct{}
	timer   clock.Timer
	tmu     sync.Mutex
	closed  bool
	started bool

	// Waiters for Dispatched to pass an offset.
	wmu     sync.Mutex
	waiters []waiter

	buf []byte
}

type waiter struct {
	off int64
	ch  chan struct{}
}

// New returns a dispatcher that will continue from offset from.
func New(src Source, sinks []Sink, from int64, opts Options) *Dispatcher {
	if opts.CheckpointInterval == 0 {
		opts.CheckpointInterval = time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxRecordBytes == 0 {
		opts.MaxRecordBytes = 4 << 20
	}
	d := &Dispatcher{
		src:   src,
		sinks: sinks,
		opts:  opts,
		log:   opts.Logger.With("component", "dispatch"),
		wake:  make(chan struct{}, 1),
		ckpt:  make(chan struct{}, 1),
		quit:  make(chan struct{}),
		done:  make(chan struct{}),
		buf:   make([]byte, 1<<20),
	}
	d.dispatched.Store(from)
	return d
}

// AddListener registers l for every record dispatched from now on.
func (d *Dispatcher) AddListener(l Listener) {
	d.lmu.Lock()
	defer d.lmu.Unlock()
	d.listeners = append(d.listeners, l)
}

// Dispatched returns the offset up to which every record has reached every
// sink.
func (d *Dispatcher) Dispatched() int64 { return d.dispatched.Load() }

// Err returns the error that stopped dispatching, if any.
func (d *Dispatcher) Err() error {
	if p := d.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Replay dispatches synchronously up to the source's durable offset. It is
// for recovery, before Start; it returns the first sink error.
func (d *Dispatcher) Replay() error {
	return d.run(d.src.Durable())
}

// Start runs the dispatcher goroutine.
func (d *Dispatcher) Start() {
	d.tmu.Lock()
	d.started = true
	d.tmu.Unlock()
	d.armCheckpoint()
	go d.loop()
}

// Notify tells the dispatcher the durable offset moved. It never blocks.
func (d *Dispatcher) Notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *Dispatcher) armCheckpoint() {
	d.tmu.Lock()
	defer d.tmu.Unlock()
	if d.closed {
		return
	}
	d.timer = d.opts.Clock.AfterFunc(d.opts.CheckpointInterval, func() {
		select {
		case d.ckpt <- struct{}{}:
		default:
		}
	})
}

func (d *Dispatcher) loop() {
	defer close(d.done)
	for {
		select {
		case <-d.wake:
			d.step()
		case <-d.ckpt:
			d.step()
			if err := d.Checkpoint(); err != nil {
				d.log.Error("checkpoint failed", "err", err)
			}
			d.armCheckpoint()
		case <-d.quit:
			d.step()
			return
		}
	}
}

func (d *Dispatcher) step() {
	if d.Err() != nil {
		return
	}
	if err := d.run(d.src.Durable()); err != nil {
		d.failed.Store(&err)
		d.log.Error("dispatch stopped; consumers will not see new messages until restart", "err", err, "offset", d.dispatched.Load())
		d.releaseWaiters(true)
	}
}

// run dispatches [Dispatched, to).
func (d *Dispatcher) run(to int64) error {
	pos := d.dispatched.Load()
	if m, ok := d.src.(minOffsetSource); ok && pos < to {
		if first := m.MinOffset(); pos < first && first <= to {
			// The log starts past where dispatching stood: a replica's log
			// that begins at its master's oldest byte.
			pos = first
			d.dispatched.Store(pos)
		}
	}
	for pos < to {
		segEnd := d.src.SegmentStart(pos) + d.opts.SegmentBytes
		end := min(to, segEnd, pos+int64(len(d.buf)))
		chunk := d.buf[:end-pos]
		if err := d.src.ReadAt(chunk, pos); err != nil {
			return fmt.Errorf("dispatch: read log at %d: %w", pos, err)
		}
		off := 0
		for off < len(chunk) {
			n, err := message.Check(chunk[off:])
			if errors.Is(err, message.ErrBlank) {
				off = len(chunk)
				pos = segEnd
				break
			}
			if errors.Is(err, message.ErrShort) {
				if off == 0 {
					if end == to && end != segEnd && d.opts.Bounded != nil && d.opts.Bounded() {
						// The bound cuts this record: it waits.
						d.dispatched.Store(pos)
						d.cover(to)
						return nil
					}
					if end == to || end == segEnd {
						return fmt.Errorf("dispatch: record at %d ends past the durable offset %d", pos, to)
					}
					if len(d.buf) >= 2*d.opts.MaxRecordBytes {
						return fmt.Errorf("dispatch: record at %d is larger than %d bytes", pos, d.opts.MaxRecordBytes)
					}
					d.buf = make([]byte, 2*len(d.buf))
				}
				break
			}
			if err != nil {
				return fmt.Errorf("dispatch: record at %d: %w", pos+int64(off), err)
			}
			r := message.Record(chunk[off : off+n])
			for _, s := range d.sinks {
				if err := s.Dispatch(r); err != nil {
					d.dispatched.Store(pos + int64(off))
					return fmt.Errorf("dispatch: record at %d: %w", pos+int64(off), err)
				}
			}
			d.lmu.RLock()
			for _, l := range d.listeners {
				l(r)
			}
			d.lmu.RUnlock()
			off += n
		}
		if pos < segEnd || off < len(chunk) {
			pos += int64(off)
		}
		d.dispatched.Store(pos)
		d.releaseWaiters(false)
	}
	d.cover(to)
	return nil
}

// cover records that every whole record below to is dispatched, and
// releases the waiters it satisfies.
func (d *Dispatcher) cover(to int64) {
	for {
		cur := d.covered.Load()
		if to <= cur {
			return
		}
		if d.covered.CompareAndSwap(cur, to) {
			d.releaseWaiters(false)
			return
		}
	}
}

// progress is how far dispatching has come: Dispatched, or the bound the
// last run stopped at when a record cut by it waits.
func (d *Dispatcher) progress() int64 { return max(d.dispatched.Load(), d.covered.Load()) }

// WaitDispatched returns once every whole record below off is dispatched
// (Dispatched ≥ off, or a run reached off with only a record cut by it
// left), or with ctx's error.
func (d *Dispatcher) WaitDispatched(ctx context.Context, off int64) error {
	if d.progress() >= off {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ch := make(chan struct{})
	d.wmu.Lock()
	if d.progress() >= off {
		d.wmu.Unlock()
		return nil
	}
	d.waiters = append(d.waiters, waiter{off, ch})
	d.wmu.Unlock()
	select {
	case <-ch:
		if d.progress() >= off {
			return nil
		}
		if err := d.Err(); err != nil {
			return err
		}
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *Dispatcher) releaseWaiters(all bool) {
	pos := d.progress()
	d.wmu.Lock()
	defer d.wmu.Unlock()
	keep := d.waiters[:0]
	for _, w := range d.waiters {
		if all || w.off <= pos {
			close(w.ch)
		} else {
			keep = append(keep, w)
		}
	}
	d.waiters = keep
}

// Checkpoint flushes every sink and records the dispatched offset. Called
// by the dispatcher goroutine, or by the owner when it is not running.
func (d *Dispatcher) Checkpoint() error {
	c := Checkpoint{Dispatched: d.dispatched.Load(), LogFlushed: d.src.Flushed()}
	for _, s := range d.sinks {
		if err := s.Flush(); err != nil {
			return err
		}
	}
	if d.opts.Digest != nil {
		c.Digest = d.opts.Digest()
	}
	return WriteCheckpoint(d.opts.FS, d.opts.Dir, c)
}

// Close dispatches what is durable, stops the goroutine and writes a final
// checkpoint. Idempotent; Start need not have been called.
func (d *Dispatcher) Close() error {
	d.tmu.Lock()
	if d.closed {
		d.tmu.Unlock()
		return nil
	}
	d.closed = true
	started := d.started
	if d.timer != nil {
		d.timer.Stop()
	}
	d.tmu.Unlock()
	if started {
		close(d.quit)
		<-d.done
	}
	d.releaseWaiters(true)
	if d.Err() != nil {
		return d.Err()
	}
	return d.Checkpoint()
}
