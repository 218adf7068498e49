// Package epoch keeps a broker group's epoch history: the list of
// (epoch, start offset) pairs that says which master epoch wrote which range
// of the commit log, as RocketMQ 5's epoch file and Kafka's leader-epoch
// checkpoint do. Epoch e covers the commit-log bytes [Start(e), Start(e+1)),
// the last epoch everything from its start on. A slave compares its history
// with the master's to tell whether its log is a prefix of the master's; the
// failover issue uses it to truncate a divergent tail (TruncateAfter).
//
// # File
//
// The history is one file of fixed-size 16-byte entries, in order, written
// only by appending one entry (or by cutting whole entries off the end):
//
//	offset 0   uint32  epoch        (big-endian, ≥ 1)
//	offset 4   int64   start offset (big-endian, ≥ 0)
//	offset 12  uint32  CRC-32C (Castagnoli) of bytes 0..11, big-endian
//
// There is no file header: an empty or missing file is an empty history.
//
// # Durability
//
// Append writes the entry at the end and fsyncs the file, and the first
// time a History writes it also fsyncs its directory, all before it returns;
// TruncateAfter cuts the file and fsyncs it before it returns. A crash during
// an Append can leave a torn last entry (a short write, or a whole-length one
// whose checksum does not match): Open cuts it, as it was never
// acknowledged. Open fsyncs the file and its directory before it returns,
// so an entry it reports (perhaps an unsynced write of a killed process) is
// durable from then on.
//
// A bad entry that is not the last one, or whole entries that break the
// ordering rules (epochs strictly increasing, starts non-decreasing), cannot
// come from a crash and make Open fail with ErrCorrupt.
//
// After a write or sync of the file fails, what is on disk is unknown (a
// failed fsync may even have dropped the dirty pages), so the History refuses
// every further change with ErrBroken; its in-memory entries stay those of
// the last successful change. Reopening the file recovers.
//
// A History is safe for concurrent use.
package epoch
