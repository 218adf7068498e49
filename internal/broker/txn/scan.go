package txn

// Reading the system queues: the rebuild at New, the scan of new halves
// each round, and the progress offsets.

import (
	"fmt"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
)

// rebuild loads the state: every op record from the op progress on marks
// its half done, then the halves from the half progress on are scanned.
func (m *Manager) rebuild() error {
	progress, ok := m.meta.Offset(ProgressGroup, HalfTopic, 0)
	if !ok {
		progress = m.st.MinOffset(HalfTopic, 0)
	}
	opFrom, ok := m.meta.Offset(ProgressGroup, OpTopic, 0)
	if !ok {
		opFrom = m.st.MinOffset(OpTopic, 0)
	}
	// Offsets past a queue's end (its tail was lost in a crash under
	// asynchronous flush) would skip the records stored there next.
	if mx := m.st.MaxOffset(HalfTopic, 0); progress > mx {
		m.log.Warn("half progress beyond the half queue; moving it back to the queue end", "progress", progress, "max_offset", mx)
		progress = mx
	}
	if mx := m.st.MaxOffset(OpTopic, 0); opFrom > mx {
		m.log.Warn("op progress beyond the op queue; moving it back to the queue end", "progress", opFrom, "max_offset", mx)
		opFrom = mx
	}
	m.scanned, m.opNext = progress, opFrom
	m.savedHalf, m.savedOp = -1, -1
	m.opRead = opFrom
	err := m.readOps(opFrom, func(r message.Record) bool {
		opOffsets(r.Body(), func(qo int64) {
			if qo >= progress {
				m.doneAhead[qo] = struct{}{}
			}
		})
		m.opRead = r.QueueOffset() + 1
		return true
	})
	if err != nil {
		return fmt.Errorf("txn: read op records: %w", err)
	}
	if err := m.scan(); err != nil {
		return fmt.Errorf("txn: read half messages: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for qo := range m.doneAhead {
		if qo < m.scanned {
			delete(m.doneAhead, qo)
		}
	}
	return nil
}

// readOps calls fn for the op records from offset from on, in order, until
// fn returns false or the queue ends.
func (m *Manager) readOps(from int64, fn func(message.Record) bool) error {
	for {
		res, err := m.st.GetMessages(OpTopic, 0, from, readBatch, readBytes, nil)
		if err != nil {
			return err
		}
		next, more := res.NextOffset, true
		switch res.Status {
		case store.Found:
			res.Records(func(r message.Record) {
				if more && !fn(r) {
					more = false
					next = r.QueueOffset()
				}
			})
		case store.OffsetTooSmall, store.OffsetFoundNull:
			// Retention removed them.
		default:
			more = false
		}
		res.Release()
		if !more || next <= from {
			return nil
		}
		from = next
	}
}

// scan reads the halves stored since the last scan into the state. Only
// rounds and New call it, never two at once.
func (m *Manager) scan() error {
	firstDelay := m.cfg.Timeout.Milliseconds()
	for {
		m.mu.Lock()
		from := m.scanned
		m.mu.Unlock()
		res, err := m.st.GetMessages(HalfTopic, 0, from, readBatch, readBytes, nil)
		if err != nil {
			return err
		}
		var hs []*half
		next := res.NextOffset
		switch res.Status {
		case store.Found:
			res.Records(func(r message.Record) { hs = append(hs, parseHalf(r, firstDelay)) })
		case store.OffsetTooSmall, store.OffsetFoundNull:
			m.log.Warn("half messages removed by retention before they were checked", "from", from, "to", next)
		case store.OffsetOverflowBadly:
			// The progress is past the queue's end (the queue was lost or
			// cut): go on from its end, never back to older halves.
			next = res.MaxOffset
			m.log.Warn("half progress beyond the half queue; moving it back to the queue end", "progress", from, "max_offset", next)
		default:
			next = from
		}
		res.Release()
		if next <= from {
			return nil
		}
		m.mu.Lock()
		for _, h := range hs {
			if _, done := m.doneAhead[h.qo]; done {
				delete(m.doneAhead, h.qo)
				continue
			}
			if m.live[h.qo] != nil {
				continue // a copy a round stored and already knows
			}
			m.addLocked(h)
		}
		m.scanned = next
		m.mu.Unlock()
	}
}

// followOps takes into the state the op records stored since the last
// look: those a slave replicated from its master (its master ended or
// discarded the halves they name), and on a master its own, whose halves
// it already forgot. A half whose transaction is busy is left to its
// claimer (an End in progress removes it itself). Only rounds call it.
func (m *Manager) followOps() error {
	from := m.opRead
	if lo := m.st.MinOffset(OpTopic, 0); from < lo {
		from = lo
	}
	var done []int64
	next := from
	err := m.readOps(from, func(r message.Record) bool {
		opOffsets(r.Body(), func(qo int64) { done = append(done, qo) })
		next = r.QueueOffset() + 1
		return true
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, qo := range done {
		h := m.live[qo]
		switch {
		case h != nil && !h.t.busy:
			t := h.t
			m.removeLocked(h)
			if len(t.halves) == 0 && m.txns[t.origin] == t {
				delete(m.txns, t.origin)
			}
		case h == nil && qo >= m.scanned:
			m.doneAhead[qo] = struct{}{}
		}
	}
	m.opRead = max(m.opRead, next)
	return err
}

// progressLocked is the half progress: every half below it is done.
func (m *Manager) progressLocked() int64 {
	p := m.scanned
	for qo := range m.live {
		p = min(p, qo)
	}
	return p
}

// saveProgress records both progress offsets. The half offset goes first:
// a flush between the two then saves an op offset that is old, which
// only makes the next rebuild read more op records. The op offset moves
// past op records that only name halves below the half progress.
func (m *Manager) saveProgress() {
	m.mu.Lock()
	p := m.progressLocked()
	from := m.opNext
	m.mu.Unlock()
	if p != m.savedHalf {
		// Only changes: each commit makes the meta store write its file.
		m.meta.CommitOffset(ProgressGroup, HalfTopic, 0, p)
		m.savedHalf = p
	}
	next := from
	err := m.readOps(from, func(r message.Record) bool {
		below := true
		opOffsets(r.Body(), func(qo int64) { below = below && qo < p })
		if below {
			next = r.QueueOffset() + 1
		}
		return below
	})
	if err != nil {
		m.log.Warn("reading op records failed", "err", err)
	}
	if next < from {
		return
	}
	if lo := m.st.MinOffset(OpTopic, 0); next < lo {
		next = lo // retention removed op records (and their older halves)
	}
	m.mu.Lock()
	m.opNext = next
	m.mu.Unlock()
	if next != m.savedOp {
		m.meta.CommitOffset(ProgressGroup, OpTopic, 0, next)
		m.savedOp = next
	}
}
