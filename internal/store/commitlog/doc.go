// Package commitlog is the broker's append-only log: every message of every
// topic is appended here first, and everything else (consume queues, the key
// index, timers) is derived from it.
//
// # Layout
//
// The log is a sequence of segment files of SegmentBytes each, named by the
// log offset of their first byte, zero-padded to 20 digits:
//
//	00000000000000000000  00000000001073741824  00000000002147483648 ...
//
// A segment holds whole records (message.Record, RocketMQ's stored layout)
// back to back. A record never straddles two segments: when the next record
// does not fit, the rest of the segment is filled with a blank record
// (TOTALSIZE, message.BlankMagic) and the record goes to the next segment;
// the writer always leaves room for the 8-byte blank header. Segments are
// preallocated, so the bytes after the last record are zeros.
//
// # Writing
//
// One writer goroutine owns the tail. Appenders hand it requests; it
// assigns each message its queue offset, commit-log offset and store time,
// encodes a group of requests into one buffer and writes it with one
// WriteAt. Under FlushSync a flusher goroutine makes each write durable with
// one fsync; the writer keeps gathering requests while that fsync runs and
// writes the next group only when the flusher is idle again (first letting
// the appenders the last fsync answered submit again), so one write and one
// fsync serve nearly every waiting appender (group commit). Appenders are
// answered only when their bytes are on disk. Under FlushAsync appenders are
// answered once the bytes are written, and the flusher syncs every
// FlushInterval.
//
// AppendMany hands the writer many appends as one submission, which it
// writes as one group (a remoting connection's sends of one socket read).
// An Appender is one caller's handle for that: under FlushAsync it writes
// the group on the caller's goroutine (the writer and Appenders take turns
// on the tail under one mutex) and has answered every append when it
// returns, so nothing is ever held for later; under FlushSync it hands the
// group to the writer. Close waits for an Appender's write in progress
// before it stops the writer.
//
// A roll-over does no I/O that can fail for lack of space: the writer
// prepares (creates and preallocates) the next segment once the tail is
// three quarters full, and writes a batch only once every segment it rolls
// into is prepared. A batch is written whole or refused with nothing of it
// in the log and none of its queue offsets used (see prepare.go). When the
// next segment cannot be prepared (full disk), appends are refused at
// admission with that error, which wraps vfs.ErrNoSpace, until a retry
// succeeds.
//
// Under FlushSync a filler goroutine zero-fills the tail segment in place
// ahead of the writer (see fill.go): an fdatasync after writing into blocks
// that were only reserved must also commit their conversion, which costs
// 1.5x.
//
// Durable() is the offset below which records may be handed to consumers:
// the synced offset under FlushSync, the written offset under FlushAsync.
//
// # Replication
//
// ReadRaw hands out the log's bytes up to Written, padding included, and
// WaitWritten waits for it to grow; AppendRaw writes such bytes on a slave
// through the writer like any append (group commit and fsync as under its
// flush mode), at the same offsets, checking every record and the segment
// layout (a master with other SegmentBytes is ErrSegmentMismatch). A chunk
// may end inside a record: Durable and Flushed stop at the last whole
// record, and a message append is refused until the record is completed
// (raw.go). An empty log may start at its master's oldest segment.
//
// # Recovery
//
// Open scans from Options.RecoverFrom (a record boundary known durable, from
// the store's checkpoint) to the end, checking each record (magic, lengths,
// body CRC, field sanity), and cuts the log at the first record that does not
// check: the tail of that segment is zeroed and later segments are removed.
// Nothing after the cut is ever served.
package commitlog
