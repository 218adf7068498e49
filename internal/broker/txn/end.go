package txn

// END_TRANSACTION (code 37). Behaviour follows Java's
// EndTransactionProcessor: find the half by commit-log offset, check the
// producer group and both offsets, then commit (store the real message and
// an op record) or roll back (op record only); type 0 does nothing.
// Unlike Java, a transaction ends once: every later End of it, whichever
// copy of the half it names, is ignored.

import (
	"fmt"

	"github.com/petrelmq/petrel/internal/message"
)

// End applies an END_TRANSACTION request and returns once its records are
// stored (durable under the store's flush mode; a flush timeout counts as
// stored).
//
// EndUnknown returns nil at once. Commit and rollback read the half at
// req.CommitLogOffset and require it to be a half (ErrHalfNotFound,
// ErrNotHalf) of req.ProducerGroup (ErrGroupMismatch) at queue offset
// req.TranStateTableOffset (ErrOffsetMismatch). If the transaction is
// still open, a commit stores the message in its real topic and queue and
// then op records for the transaction's live halves, in one append; a
// rollback stores only the op records. If the transaction has ended
// already (committed, rolled back or discarded, before a restart or not)
// End does nothing and returns nil: so a duplicate END, or the answer to
// a check racing the producer's own END, never stores the message twice.
// A store error is returned wrapped and leaves the transaction open.
// Concurrent Ends of one transaction run one after the other.
func (m *Manager) End(req EndRequest) error {
	switch req.CommitOrRollback {
	case EndUnknown:
		m.log.Debug("transaction still unknown", "group", req.ProducerGroup, "offset", req.TranStateTableOffset,
			"from_check", req.FromTransactionCheck, "msg_id", req.MsgID)
		return nil
	case EndCommit, EndRollback:
	default:
		return fmt.Errorf("%w: got %d", ErrBadEndType, req.CommitOrRollback)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	m.wg.Add(1)
	m.mu.Unlock()
	defer m.wg.Done()

	rec, err := m.st.ReadMessage(req.CommitLogOffset)
	if err != nil {
		return fmt.Errorf("%w at commit-log offset %d: %w", ErrHalfNotFound, req.CommitLogOffset, err)
	}
	if string(rec.Topic()) != HalfTopic {
		return fmt.Errorf("%w: the record at commit-log offset %d is of topic %q", ErrNotHalf, req.CommitLogOffset, rec.Topic())
	}
	h := parseHalf(rec, 0)
	if h.group == "" || h.group != req.ProducerGroup {
		return fmt.Errorf("%w: half at commit-log offset %d is of group %q, the request names %q",
			ErrGroupMismatch, req.CommitLogOffset, h.group, req.ProducerGroup)
	}
	if h.qo != req.TranStateTableOffset || h.clo != req.CommitLogOffset {
		return fmt.Errorf("%w: half at commit-log offset %d has queue offset %d, the request says %d",
			ErrOffsetMismatch, h.clo, h.qo, req.TranStateTableOffset)
	}
	var commit *message.Message
	if req.CommitOrRollback == EndCommit {
		if commit, err = committed(rec); err != nil {
			return fmt.Errorf("commit half at commit-log offset %d: %w", h.clo, err)
		}
	}

	t, targets, self, ok := m.claimEnd(h)
	if !ok {
		m.log.Debug("transaction already ended; end request ignored", "group", req.ProducerGroup,
			"offset", h.qo, "origin_offset", h.origin, "commit", req.CommitOrRollback == EndCommit)
		return nil
	}
	now := m.clk.Now().UnixMilli()
	var msgs []*message.Message
	if commit != nil {
		msgs = append(msgs, commit)
	}
	for _, x := range targets {
		msgs = append(msgs, opRecord(x, now, m.host))
	}
	if len(msgs) > 0 { // always, as a claimed transaction has a live half or h
		err = m.put(msgs)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.releaseLocked(t)
	if err != nil {
		return fmt.Errorf("end transaction of half at commit-log offset %d: %w", h.clo, err)
	}
	for len(t.halves) > 0 {
		m.removeLocked(t.halves[0])
	}
	if self && h.qo >= m.scanned {
		m.doneAhead[h.qo] = struct{}{}
	}
	return nil
}

// claimEnd claims the transaction of the half h names, waiting while a
// round or another End writes for it. It returns the queue offsets to
// write op records for: the transaction's live halves, plus h itself when
// h was stored but not scanned yet (self). ok is false when the
// transaction has ended.
func (m *Manager) claimEnd(h *half) (t *txn, targets []int64, self, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		t = m.txns[h.origin]
		if t == nil || !t.busy {
			break
		}
		m.cond.Wait()
	}
	_, done := m.doneAhead[h.qo]
	unscanned := h.qo >= m.scanned && !done && m.live[h.qo] == nil
	if t == nil {
		// Either ended, or a new half no scan has read yet: only a first
		// half can be that (copies are known from the moment a round
		// stores them).
		if !unscanned || h.origin != h.qo {
			return nil, nil, false, false
		}
		t = &txn{origin: h.origin}
		m.txns[h.origin] = t
	}
	t.busy = true
	for _, x := range t.halves {
		targets = append(targets, x.qo)
	}
	if unscanned {
		targets = append(targets, h.qo)
	}
	return t, targets, unscanned, true
}
