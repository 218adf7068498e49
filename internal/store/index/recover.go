package index

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"path"
	"sort"

	"github.com/petrelmq/petrel/internal/vfs"
)

// errUnverified: a header's entry CRC does not match the entries on disk.
var errUnverified = errors.New("index: entries do not match the header")

// recover loads the files of x.dir into x.
func (x *Index) recover() error {
	names, err := x.fs.ReadDir(x.dir)
	if err != nil {
		return fmt.Errorf("index: read dir %s: %w", x.dir, err)
	}
	var bases []int64
	for _, n := range names {
		if b, ok := parseName(n); ok {
			bases = append(bases, b)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })

	for i, b := range bases {
		p := path.Join(x.dir, fileName(b))
		if i < len(bases)-1 {
			s, err := x.openSealed(p, b)
			if err != nil {
				return err
			}
			x.sealed = append(x.sealed, s)
			continue
		}
		s, ld, err := x.openLast(p, b)
		if err != nil {
			return err
		}
		if s == nil {
			// No flush of the newest file completed: nothing in it was
			// promised. Remove it so the next Add starts afresh.
			if err := x.fs.Remove(p); err != nil {
				return fmt.Errorf("index: remove unflushed %s: %w", p, err)
			}
			if err := x.fs.SyncDir(x.dir); err != nil {
				return fmt.Errorf("index: sync dir %s: %w", x.dir, err)
			}
			continue
		}
		x.install(s, ld)
	}
	// Offsets never decrease from one file to the next.
	all := x.sealed
	if x.act != nil {
		all = append(all[:len(all):len(all)], x.act)
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].endPhys > all[i].base {
			return fmt.Errorf("%w: %s ends at offset %d after the start of %s", ErrCorrupt, all[i-1].path, all[i-1].endPhys, all[i].path)
		}
	}
	switch {
	case x.act != nil:
		x.maxPhys.Store(x.act.endPhys)
	case len(x.sealed) > 0:
		x.maxPhys.Store(x.sealed[len(x.sealed)-1].endPhys)
	}
	return nil
}

// readHeaders opens p and returns the file, its size and its CRC-valid
// header copies, newest first. second reports whether copy 1 was ever
// written (is not all zeros).
func (x *Index) readHeaders(p string) (f vfs.File, size int64, hs []header, second bool, err error) {
	f, err = x.fs.Open(p)
	if err != nil {
		return nil, 0, nil, false, fmt.Errorf("index: open %s: %w", p, err)
	}
	size, err = f.Size()
	if err != nil {
		f.Close()
		return nil, 0, nil, false, fmt.Errorf("index: size of %s: %w", p, err)
	}
	b := make([]byte, headerBytes)
	n, err := f.ReadAt(b, 0)
	if err != nil && err != io.EOF {
		f.Close()
		return nil, 0, nil, false, fmt.Errorf("index: read header of %s: %w", p, err)
	}
	for i := 0; i < 2; i++ {
		at := i * hdrCopyBytes
		if at+hdrUsedBytes > n {
			continue
		}
		if h, ok := decodeHeader(b[at : at+hdrUsedBytes]); ok {
			hs = append(hs, h)
		}
	}
	if len(hs) == 2 && hs[1].seq > hs[0].seq {
		hs[0], hs[1] = hs[1], hs[0]
	}
	for _, c := range b[min(n, hdrCopyBytes):min(n, hdrCopyBytes+hdrUsedBytes)] {
		if c != 0 {
			second = true
		}
	}
	return f, size, hs, second, nil
}

// openSealed opens a file that is not the newest: its newest header must be
// sealed and sane, since it was synced before the next file was created.
func (x *Index) openSealed(p string, base int64) (*segment, error) {
	f, size, hs, _, err := x.readHeaders(p)
	if err != nil {
		return nil, err
	}
	if len(hs) == 0 || !hs[0].sealed || !hs[0].sane(base, size) {
		f.Close()
		return nil, fmt.Errorf("%w: %s has no sealed header", ErrCorrupt, p)
	}
	h := hs[0]
	return &segment{
		path:       p,
		base:       base,
		f:          f,
		refs:       1,
		slotCount:  h.slotCount,
		entryCap:   h.entryCap,
		count:      h.count,
		entriesCRC: h.entriesCRC,
		baseTime:   h.baseTime,
		minTime:    h.minTime,
		maxTime:    h.maxTime,
		endPhys:    h.endPhys,
		hdrSeq:     h.seq,
		hdrSlot:    headerSlot(h.seq),
	}, nil
}

// headerSlot is the copy a header of sequence seq was written to: a new
// file's first header (seq 1) goes to copy 0 and they alternate.
func headerSlot(seq uint64) int { return int((seq + 1) % 2) }

// openLast opens the newest file. Its slot table on disk is not trusted (it
// is written only when the file is sealed, and a crash may have cut that
// short): the entries covered by the newest header whose CRC matches are
// loaded and the slots rebuilt from them. It returns a nil segment when no
// flush of the file completed.
func (x *Index) openLast(p string, base int64) (*segment, *loaded, error) {
	f, size, hs, second, err := x.readHeaders(p)
	if err != nil {
		return nil, nil, err
	}
	var newest uint64
	for _, h := range hs {
		newest = max(newest, h.seq)
		if !h.sane(base, size) {
			continue
		}
		s := &segment{
			path:      p,
			base:      base,
			f:         f,
			refs:      1,
			slotCount: h.slotCount,
			entryCap:  h.entryCap,
			baseTime:  h.baseTime,
			hdrSeq:    h.seq,
			hdrSlot:   headerSlot(h.seq),
		}
		ld, err := x.loadEntries(s, h.count, h.entriesCRC, math.MaxInt64)
		if errors.Is(err, errUnverified) {
			continue
		}
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		return s, ld, nil
	}
	f.Close()
	// Headers alternate between two copies and a new one is written only
	// after the previous one is durable, so once a second header has been
	// written one of the two always checks. Failing that, only a first
	// flush that did not complete explains it.
	if newest > 1 || second {
		return nil, nil, fmt.Errorf("%w: no header of %s matches its entries", ErrCorrupt, p)
	}
	return nil, nil, nil
}

// loaded is the state of an active file rebuilt from its entries.
type loaded struct {
	slots   []uint32
	count   uint32
	crc     uint32
	minTime int64
	maxTime int64
	endPhys int64
}

// loadEntries reads entries 1..count of s, checks their CRC against
// wantCRC (errUnverified when it differs) and their consistency (each
// entry's prev must be the head of its slot chain at that point, offsets
// must not decrease and start at s.base: else ErrCorrupt), and rebuilds the
// slot table from the entries with offset below cut.
func (x *Index) loadEntries(s *segment, count, wantCRC uint32, cut int64) (*loaded, error) {
	ld := &loaded{
		slots:   make([]uint32, s.slotCount),
		minTime: math.MaxInt64,
		maxTime: math.MinInt64,
	}
	var crc uint32
	var bad error
	stopped := false
	last := s.base
	for i := uint32(0); i < count; i += chunkEntries {
		n := min(chunkEntries, count-i)
		b := x.scratch[:n*entryBytes]
		if _, err := s.f.ReadAt(b, s.entriesOff()+int64(i)*entryBytes); err != nil {
			if err == io.EOF {
				return nil, errUnverified
			}
			return nil, fmt.Errorf("index: read entries of %s: %w", s.path, err)
		}
		crc = crc32.Update(crc, castagnoli, b)
		if stopped || bad != nil {
			continue
		}
		kept := 0
		for j := uint32(0); j < n; j++ {
			e := getEntry(b[j*entryBytes:])
			num := i + j + 1
			if e.phys >= cut {
				stopped = true
				break
			}
			slot := &ld.slots[e.hash%s.slotCount]
			if e.phys < last || (num == 1 && e.phys != s.base) || e.prev != *slot {
				bad = fmt.Errorf("%w: entry %d of %s does not follow its predecessors", ErrCorrupt, num, s.path)
				break
			}
			last = e.phys
			*slot = num
			t := s.baseTime + int64(e.delta)
			ld.minTime = min(ld.minTime, t)
			ld.maxTime = max(ld.maxTime, t)
			ld.endPhys = e.phys
			ld.count = num
			kept++
		}
		ld.crc = crc32.Update(ld.crc, castagnoli, b[:kept*entryBytes])
	}
	if crc != wantCRC {
		return nil, errUnverified
	}
	if bad != nil {
		return nil, bad
	}
	return ld, nil
}

// install makes s, loaded as ld, the active file.
func (x *Index) install(s *segment, ld *loaded) {
	s.count = ld.count
	s.minTime, s.maxTime, s.endPhys = ld.minTime, ld.maxTime, ld.endPhys
	x.act = s
	x.slots = ld.slots
	x.written = ld.count
	x.buf = x.buf[:0]
	x.crc = ld.crc
	x.dirty = false
}
