// Package store is the broker's storage facade: it puts messages into the
// commit log, serves them back through consume queues, finds them by key and
// by message id, recovers after a crash and enforces retention.
//
// # Directory layout
//
//	<dir>/commitlog/<20-digit start offset>     segments (package commitlog)
//	<dir>/consumequeue/<topic>/<queue id>/...   consume queues (package consumequeue)
//	<dir>/index/<20-digit first offset>         key index files (package index)
//	<dir>/meta/{topics,groups,offsets}.json     metadata (package meta)
//	<dir>/checkpoint                            dispatch checkpoint (package dispatch)
//	<dir>/lock                                  held while a process has the store open
//	<dir>/reset-in-progress                     a slave's log reset under way (reset.go)
//	<dir>/truncate-in-progress                  a truncation of the log's tail under way (truncate.go)
//
// # Recovery
//
// Open reads the checkpoint, recovers the commit log from
// min(Dispatched, LogFlushed) (cutting a torn tail), truncates consume queues
// and the index back to the checkpoint — they may run ahead of it — and
// replays the log from there. If a consume queue turns out to lag the
// checkpoint (a gap), or the checkpoint is missing or damaged, every consume
// queue and the index are rebuilt from the oldest segment.
//
// # In-memory topics
//
// A topic whose attribute "persistent" is "false" keeps its messages in
// memory only (see memtopic.go): same Put and Get, bounded by
// Config.MemTopicMaxBytes per topic with the oldest dropped first, nothing on
// disk, gone after a restart.
//
// # Replication
//
// A master's commit log is shipped to its slaves byte for byte (see
// replica.go): ReadRaw and WaitWritten on the master, AppendRaw on a slave,
// whose dispatcher builds the same consume queues and index from the same
// records. With the commit point enabled (Config.CommitPoint or
// EnableCommitPoint) consume queues, the index and listeners get records
// only up to min(commit point, durable end) (SetCommitPoint); without it
// nothing changes. In-memory topics are not in the commit log and are
// neither shipped nor bounded. A slave whose log ends below its master's
// first retained byte starts over there: ResetAt (reset.go) drops the log
// and everything derived from it, crash-safely, and the consume queues
// start again at the queue offsets of the master's records. An old master
// rejoining as a slave cuts the records of its last epoch the new master
// never had: TruncateTo (truncate.go) drops the log above a record
// boundary at or above the commit point, crash-safely, and a slave turning
// master cuts a torn tail and takes every queue's next offset from the log
// (PrepareMaster).
//
// # The seam
//
// The broker depends on MessageStore (seam.go), the methods it uses of a
// message store, not on *Store. Package memstore is the in-memory twin of
// *Store that broker-level tests run on, and package storetest holds both
// to one conformance suite (storetest.Run); Replica (seam.go) is what
// replication uses of either.
package store
