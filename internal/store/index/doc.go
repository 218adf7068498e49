// Package index is the message-key index: it maps (topic, key) to the
// commit-log offsets of the messages carrying that key in their KEYS or
// UNIQ_KEY property, with their store time, for query by key, by unique id
// and by time range. It is RocketMQ's IndexFile idea in our own code.
//
// The dispatcher (one goroutine) calls Add for every key of every record in
// commit-log order, then Flush before it writes its checkpoint. Query runs
// from any goroutine and returns candidate offsets: keys are told apart
// only by a 32-bit hash, so the caller reads each record and checks its
// topic, keys and store time. The index never misses an entry that was
// added and not since truncated or deleted.
//
// # Files
//
// The directory holds a sequence of files, each named by the commit-log
// offset of its first entry, zero-padded to 20 digits. Only the newest (the
// active file) is written; when it is full, or a store time no longer fits
// its 32-bit time delta (about ±24.8 days from its first entry), it is
// sealed and the next Add starts a new file. Sealed files never change,
// except that Truncate may make the newest remaining one active again.
// Offsets never decrease from one entry to the next, within and across
// files. All integers are big-endian.
//
//	offset                   size            field
//	     0                    512            header copy 0
//	   512                    512            header copy 1
//	  1024          SlotCount × 4            slot table
//	  1024 + SlotCount×4   EntryCap × 20     entries 1..EntryCap
//
// Header copy (76 bytes used, the rest of its 512 zero):
//
//	offset size field
//	     0    4 magic "PIDX"
//	     4    2 version (1)
//	     6    2 flags: bit 0 sealed
//	     8    8 Seq: 1 for the first header of a file, +1 for each later one
//	    16    4 SlotCount
//	    20    4 EntryCap
//	    24    4 Count: entries 1..Count are valid
//	    28    4 EntriesCRC: CRC-32C of the bytes of entries 1..Count
//	    32    8 BeginPhys: offset of entry 1 (equals the file name)
//	    40    8 EndPhys: offset of entry Count
//	    48    8 BaseTime: store time (ms) that entry time deltas are from
//	    56    8 MinTime: lowest store time (ms) of entries 1..Count
//	    64    8 MaxTime: highest store time (ms) of entries 1..Count
//	    72    4 CRC-32C of bytes 0..72 of this copy
//
// Slot i (4 bytes) holds the number (1-based) of the newest entry whose
// hash modulo SlotCount is i, 0 when there is none. Entry (20 bytes):
//
//	offset size field
//	     0    4 Hash: FNV-1a (32 bits) of topic, '#', key
//	     4    8 commit-log offset of the record
//	    12    4 store time minus BaseTime, ms, signed
//	    16    4 Prev: number of the previous entry of the same slot, 0 = none
//
// A slot's chain runs from the slot through Prev links to lower entry
// numbers; a query walks it and keeps entries whose hash and time match.
// Walks stop at any link that does not go down, so a damaged file cannot
// make one loop.
//
// # Writing and durability
//
// The active file's slot table lives in memory and its newest entries in an
// append buffer, so Add makes no syscall and no allocation. The buffer is
// written (not synced) every 64Ki entries; Flush writes it, then a new
// header into the copy that does not hold the newest durable header, and
// syncs the file (one fsync), then the directory if files were created.
// The slot table is written only when the file is sealed: sealing writes the
// rest of the entries, the slot table and a sealed header and syncs, all
// before the next file is created. A file that is not the newest therefore
// always has a complete, synced slot table and sealed header.
//
// Recovery (Open) trusts the newest header of each sealed file. For the
// newest file it takes the newest header copy whose EntriesCRC matches the
// entries on disk (a crash can tear the header being written, or leave it
// durable while the entries it covers are not, but never both copies) and
// rebuilds the slot table from those entries, checking each entry's Prev
// against the rebuilt chain. A newest file on which no flush completed is
// removed. Anything else is reported as ErrCorrupt.
//
// # Concurrency
//
// Writer operations (Add, Flush, Truncate, DeleteBefore, Close) are
// serialised on a writer lock, which Flush, Truncate and a sealing Add hold
// across their writes and syncs; DeleteBefore holds it only to take its
// files out of the list and removes them without it. Queries never take
// the writer lock. They take a short lock to read the
// in-memory slots and buffered entries and to pin the files they need
// (reference counts), then read the files with ReadAt without any lock, so
// they never wait for a write or a sync. A file removed by DeleteBefore
// stays open until the last query using it is done. Truncate bumps a
// generation number; a query that sees it change starts over.
package index
