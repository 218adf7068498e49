package index

import (
	"errors"
	"fmt"
)

// Truncate drops every entry with offset >= physEnd, durably: files that
// start at or after physEnd are removed, and the file holding physEnd
// becomes the active one, cut after its last entry below physEnd, with its
// slots rebuilt from the remaining entries. Recovery calls it before
// replaying the commit log from physEnd. Queries running meanwhile start
// over once it is done, so none mixes old and new contents.
func (x *Index) Truncate(physEnd int64) error {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	if x.closed {
		return ErrClosed
	}
	if x.failed != nil {
		return x.failed
	}
	physEnd = max(physEnd, 0)
	if x.maxPhys.Load() < physEnd {
		return nil
	}
	// Under wmu only the writer changes the file list: read it freely.
	all := x.sealed
	if x.act != nil {
		all = append(all[:len(all):len(all)], x.act)
	}
	k := len(all)
	for k > 0 && all[k-1].base >= physEnd {
		k--
	}
	removed := all[k:]
	var last *segment
	if k > 0 {
		last = all[k-1]
	}

	// Remove the later files first, durably: if we crash before the cut
	// below is durable, the file to cut is then the newest and is simply
	// cut again by the next recovery.
	for i := len(removed) - 1; i >= 0; i-- {
		if err := x.fs.Remove(removed[i].path); err != nil {
			return x.fail(fmt.Errorf("remove %s: %w", removed[i].path, err))
		}
	}
	if len(removed) > 0 {
		if err := x.fs.SyncDir(x.dir); err != nil {
			return x.fail(fmt.Errorf("sync dir %s: %w", x.dir, err))
		}
	}

	var ld *loaded
	if last != nil && last.endPhys >= physEnd {
		count, crc := last.count, last.entriesCRC
		if last == x.act {
			if err := x.writeBuffered(); err != nil {
				return err
			}
			count, crc = last.count, x.crc
		}
		var err error
		ld, err = x.loadEntries(last, count, crc, physEnd)
		if errors.Is(err, errUnverified) {
			err = fmt.Errorf("%w: entries of %s do not match their header", ErrCorrupt, last.path)
		}
		if err != nil {
			return x.fail(err)
		}
		// Write the cut header before publishing the cut state.
		h := headerOf(last, false, ld.crc)
		h.count, h.minTime, h.maxTime, h.endPhys = ld.count, ld.minTime, ld.maxTime, ld.endPhys
		if err := x.writeHeader(last, h); err != nil {
			return err
		}
	}

	x.mu.Lock()
	x.gen++
	switch {
	case last == nil:
		x.sealed, x.act = nil, nil
	case last == x.act:
		x.install(last, ld)
	case ld != nil:
		x.sealed = x.sealed[:k-1]
		x.install(last, ld)
	default:
		x.sealed = x.sealed[:k]
		x.act = nil
	}
	x.mu.Unlock()

	switch {
	case x.act != nil:
		x.maxPhys.Store(x.act.endPhys)
	case len(x.sealed) > 0:
		x.maxPhys.Store(x.sealed[len(x.sealed)-1].endPhys)
	default:
		x.maxPhys.Store(-1)
	}
	for _, s := range removed {
		x.release(s)
	}
	return nil
}

// DeleteBefore removes the sealed files whose last entry has an offset
// below physMin (retention), oldest first, and syncs the directory. The
// active file, and the newest file in any case, is never removed, so
// MaxPhysOffset does not change. Queries reading a removed file finish on
// it. It returns how many files it removed.
func (x *Index) DeleteBefore(physMin int64) (removed int, err error) {
	x.wmu.Lock()
	if x.closed {
		x.wmu.Unlock()
		return 0, ErrClosed
	}
	x.mu.Lock()
	limit := len(x.sealed)
	if x.act == nil {
		limit-- // the newest file stays, whether active or not
	}
	k := 0
	for k < limit && x.sealed[k].endPhys < physMin {
		k++
	}
	victims := x.sealed[:k:k]
	x.sealed = append([]*segment(nil), x.sealed[k:]...)
	x.mu.Unlock()
	// The victims are out of the list, so no writer operation touches them
	// again: remove them without holding up the writer.
	x.wmu.Unlock()

	for _, s := range victims {
		if err == nil {
			if rerr := x.fs.Remove(s.path); rerr != nil {
				err = fmt.Errorf("index: remove %s: %w", s.path, rerr)
			} else {
				removed++
			}
		}
		x.release(s)
	}
	if removed > 0 {
		if serr := x.fs.SyncDir(x.dir); serr != nil && err == nil {
			err = fmt.Errorf("index: sync dir %s: %w", x.dir, serr)
		}
	}
	return removed, err
}
