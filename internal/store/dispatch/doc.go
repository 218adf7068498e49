// Package dispatch derives everything downstream of the commit log from it.
//
// A Dispatcher reads committed bytes of the log — never past the durable
// offset, so a consumer is never handed a record a crash could take back —
// and hands each record, in log order, to its sinks (consume queues, the key
// index) and then to listeners (long polling, timers) that the broker
// registers, so the store imports none of them. One goroutine does all of
// it, so sinks need no locking against each other.
//
// The source's durable offset may be a replication commit point
// (Options.Bounded): it can lie inside a record, which then waits until the
// bound passes its end.
//
// # Checkpoint
//
// Every CheckpointInterval the dispatcher flushes its sinks and then writes
// the checkpoint file atomically (temp file, fsync, rename, directory sync):
//
//	offset size field
//	     0    4 magic "PCKP"
//	     4    4 version (1)
//	     8    8 Dispatched: every record below it is durable in every sink
//	    16    8 LogFlushed: the commit log was durable up to here
//	    24    8 Digest: the sinks' summary at Dispatched (Options.Digest)
//	    32    4 CRC-32 (IEEE) of bytes 0..32
//
// Recovery scans the log from min(Dispatched, LogFlushed), cuts its torn
// tail, truncates the sinks back to the checkpoint and replays the rest.
package dispatch
