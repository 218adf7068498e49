// Package consumequeue is the per-(topic, queue id) index of the commit log:
// entry number n of a queue (its logical offset) tells where the queue's n-th
// message lies in the commit log. Pull requests read it to find messages; the
// dispatcher appends to it in commit-log order; retention deletes its old
// files; recovery cuts its tail.
//
// # Layout
//
// A queue is one directory (for example <root>/consumequeue/<topic>/<queueId>)
// holding files of EntriesPerFile fixed-size entries each (default 300,000,
// so 6,000,000 bytes). As in RocketMQ, a file is named by the byte offset of
// its first entry within the queue, that is its first logical offset times
// 20, zero-padded to 20 digits:
//
//	00000000000000000000  00000000000006000000  00000000000012000000 ...
//	(logical 0..299999)   (300000..599999)      (600000..899999)
//
// Each entry is 20 bytes, big-endian:
//
//	 0               8           12                      20
//	+---------------+-----------+-----------------------+
//	| commit-log    | size      | tag hash              |
//	| offset int64  | int32     | int64                 |
//	+---------------+-----------+-----------------------+
//
// Entry k of a file whose name is N*20 has logical offset N+k and lies at
// byte 20*k. An all-zero entry is a blank: blanks pad the front of a queue
// that starts at a non-zero logical offset (a real entry always has Size > 0,
// so it is never all zero). Files are not preallocated: a file is as long as
// the entries written to it, and every file but the last is full.
//
// # Invariants
//
//   - The files on disk are contiguous: file i+1 starts where file i ends.
//     Retention removes files from the front only; recovery from the back.
//   - Blanks only precede real entries, and the commit-log offsets of real
//     entries grow in append order (Append refuses anything else). Truncate
//     and DeleteBefore rely on both for their binary searches.
//   - MinOffset <= MaxOffset. MaxOffset is the number of entries ever
//     appended, blanks included; MinOffset is the first real entry that may
//     be read (or MaxOffset when there is none).
//   - MaxOffset never goes back across a restart: retention never removes
//     the file holding the last entry nor the last file created, and
//     Truncate keeps (or creates) the file that holds the cut point even
//     when it becomes empty.
//
// # Open and recovery
//
// Open lists the directory, ignores names that are not 20 digits, and checks
// that every file is at most EntriesPerFile entries long (otherwise the
// queue was written with another EntriesPerFile and Open fails with
// ErrCorrupt). A torn trailing entry (a file length that is not a multiple of
// 20) is cut. If a file other than the last is short, or a file is missing in
// the middle, everything after that point was not durable as a whole and the
// later files are removed: what remains is always a prefix of what was
// appended. MinOffset is then the first real entry of the first file.
// Retention state is not stored: after Open the store calls DeleteBefore with
// the commit log's minimum offset to raise MinOffset again.
//
// # Writing and durability
//
// Append encodes into an in-memory buffer of 4100 bytes (205 entries) that
// belongs to one file; readers see buffered entries at once. The buffer is
// written with one WriteAt when it is full (by the Append that would
// overflow it, before adding its entry), when the next entry belongs to the
// next file (which is created then), and on Flush. Flush also fsyncs every file written since the last Flush and syncs
// the directory when files were created or removed. Entries are durable only
// after Flush returns nil. A failed fsync makes every later Flush fail with
// ErrFailed, since what reached the disk is then unknown; reopening the
// queue (which rebuilds from the commit log) recovers.
//
// # Concurrency
//
// One writer goroutine calls Append and Truncate. Flush may be called from
// the writer or from another goroutine; DeleteBefore from a retention
// goroutine; Read, Search, MinOffset, MaxOffset and Last from any goroutine.
// No mutex that readers or Append need is held across an fsync or a read:
// readers take a reference on each file they read, so a file removed by
// retention is closed only when its last reader is done, and a Read that
// overlaps a Truncate is retried so it never mixes old and new entries.
package consumequeue
