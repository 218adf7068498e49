package store

import (
	"errors"

	"github.com/petrelmq/petrel/internal/message"
)

// A truncation (TruncateTo) drops the tail of the commit log above an
// offset: an old master that rejoins its group as a slave holds records of
// its last epoch that the new master never had, and cuts them before it
// copies the new master's log (replication.md §2.7). A slave that becomes
// master cuts a record a replicated chunk left torn at the end
// (PrepareMaster).

// TruncateMarker is the file, in the data directory, that records a
// truncation in progress.
const TruncateMarker = "truncate-in-progress"

// MaxTruncatedIDs bounds Truncated.MsgIDs.
const MaxTruncatedIDs = 1000

// ErrBelowCommitPoint: TruncateTo was asked to cut below the commit point
// (records a failover may not take away, which consumers may have read);
// nothing was changed.
var ErrBelowCommitPoint = errors.New("store: a truncation may not cut below the commit point")

// ErrTruncateOffset: TruncateTo was given an offset that is neither a
// record boundary nor the log's end.
var ErrTruncateOffset = errors.New("store: a truncation must cut at a record boundary")

// Truncated says what a truncation dropped.
type Truncated struct {
	// From is where the log ends now; Bytes the bytes dropped above it
	// (a torn record at the end included).
	From  int64
	Bytes int64
	// Messages is the number of whole records dropped (blank padding not
	// counted); MsgIDs their message ids (UNIQ_KEY, or the broker-made
	// offset id of a record without one), oldest first, at most
	// MaxTruncatedIDs of them.
	Messages int
	MsgIDs   []string
}

// msgID is the id a truncation reports for rec: the client's UNIQ_KEY, or
// the broker-made offset id.
func msgID(rec message.Record) string {
	if u, ok := rec.Property(message.PropertyUniqKey); ok && len(u) > 0 {
		return string(u)
	}
	return message.OffsetID(rec.StoreHost(), rec.PhysicalOffset())
}

// TruncateTo drops the commit log above off, which must be a record
// boundary (or a segment start, or the log's end) at or above the commit
// point (ErrBelowCommitPoint, ErrTruncateOffset: nothing changed). The
// consume-queue and index entries of the dropped records go with them, and
// the queues' next offsets are recomputed from the consume queues and the
// records left above the dispatch point, so the next record of a queue gets
// the offset after the last one kept. off == Written() changes nothing.
//
// Crash safety: TruncateMarker (off and its checksum, synced) is written
// before any file is cut and removed after the last; Open finishes a
// truncation whose marker it finds and drops a torn marker. After a crash
// at any file operation the store opens either as before or as truncated.
//
// Concurrency: as ResetAt, TruncateTo stops the dispatcher, waits for the
// methods in flight and holds new ones off while it cuts; replicated
// appends must have stopped (the slave's fetch loop calls it between
// sessions). On an error after the old files were closed the store serves
// nothing and must be closed.
func (s *Store) TruncateTo(off int64) (Truncated, error) {
	return Truncated{}, errors.New("store: TruncateTo is not built yet")
}

// PrepareMaster readies a slave's store to take message appends as master:
// it cuts a torn record at the end of the log (a replicated chunk may end
// inside one) with TruncateTo's machinery — allowed above the commit point
// only — and recomputes every queue's next offset from its consume queue
// and the records above the dispatch point, read from disk, never from
// what the writer learnt in memory (rocketmq #7689): the next put to a
// queue gets the offset after its last record in the log. cut is where the
// log ends afterwards. Replicated appends must have stopped.
func (s *Store) PrepareMaster() (cut int64, err error) {
	return 0, errors.New("store: PrepareMaster is not built yet")
}
