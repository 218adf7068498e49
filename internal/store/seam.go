package store

import (
	"context"

	"github.com/petrelmq/petrel/internal/message"
)

// MessageStore is what the broker (and its subpackages) use of a message
// store: *Store, the file store, and memstore.Store, its in-memory twin,
// implement it, and storetest.Run holds both to the same contract.
//
// The contract, as the broker relies on it:
//   - A put returns (or calls done) once its messages are durable under the
//     store's flush mode, with QueueOffset, PhysicalOffset, StoreTimestamp
//     and StoreHost set; the messages of one put get consecutive queue
//     offsets in their queues and consecutive records. A failed put uses up
//     no queue offset.
//   - Reads (GetMessages, MaxOffset, ReadMessage, QueryByKey, ...) only
//     ever see durable messages; a message becomes readable at some point
//     after it is durable, and WaitDispatched waits for that point.
//   - Listeners hear of each message once it is readable, in store order,
//     every listener in the order they were added, one message at a time,
//     on a store goroutine (the file store's in-memory topics excepted,
//     whose puts call them on the putter's goroutine).
//   - PhysicalOffset is the message's commit-log offset: ReadMessage finds
//     the record there, and offset message ids are built from it.
type MessageStore interface {
	// Put stores one message and returns once it is durable. The message
	// must not be modified until Put returns.
	Put(m *message.Message) error
	// PutBatch stores msgs as consecutive records, of one queue or not, and
	// waits like Put; they succeed or fail together.
	PutBatch(msgs []*message.Message) error
	// PutBatches stores each of groups as PutBatch does (a group's
	// messages consecutive records, all or none) with one submission to
	// the store's writer (one group commit), and calls done(i, err) once
	// per group, on a store goroutine or the caller's; done must not block.
	// The messages must not be modified until their done runs.
	PutBatches(groups [][]*message.Message, done func(i int, err error))
	// NewAppender returns one caller's handle for PutBatches, which may
	// write on that caller's goroutine (the file store under async flush)
	// and serves one call at a time.
	NewAppender() BatchAppender

	// GetMessages reads up to maxCount records (and about maxBytes, always
	// at least one whole record) of a queue from offset, skipping entries
	// whose tag hash filter rejects (nil passes all); the status says what
	// was found (see GetStatus). Release the result when done with Body.
	GetMessages(topic string, queueID int32, offset int64, maxCount, maxBytes int, filter TagFilter) (*GetResult, error)
	// GetMessagesFiltered is GetMessages that also drops the records rec
	// rejects; maxCount and maxBytes bound the records read, and a read
	// whose records were all dropped is NoMatchedMessage with NextOffset
	// past them.
	GetMessagesFiltered(topic string, queueID int32, offset int64, maxCount, maxBytes int, filter TagFilter, rec RecordFilter) (*GetResult, error)
	// MinOffset is a queue's first readable offset (0 if unknown).
	MinOffset(topic string, queueID int32) int64
	// MaxOffset is the offset the next readable message of a queue will
	// have (0 if unknown).
	MaxOffset(topic string, queueID int32) int64
	// OffsetByTime is the first queue offset whose message was stored at
	// or after ts (ms since the epoch), or MaxOffset when none was; 0 for
	// an unknown queue.
	OffsetByTime(topic string, queueID int32, ts int64) (int64, error)
	// ReadMessage returns the record a message id's commit-log offset
	// names (the caller's to keep), or an error wrapping ErrNotFound.
	ReadMessage(physOffset int64) (message.Record, error)
	// QueryByKey returns up to max records of topic whose KEYS hold key or
	// whose UNIQ_KEY is key (case-insensitively), stored between beginMS
	// and endMS inclusive, newest first. The records are the caller's.
	QueryByKey(topic, key string, beginMS, endMS int64, max int) ([]message.Record, error)
	// QueueIDs lists, sorted, the queue ids of a topic that hold or held
	// messages.
	QueueIDs(topic string) []int32
	// DeleteTopic forgets a topic's queues: they read as NoMessageInQueue
	// and QueueIDs no longer lists them. A later put starts a queue again
	// (the file store goes on from the deleted queue's max offset until it
	// restarts, and so does the twin); its records stay where they are.
	DeleteTopic(topic string) error

	// CommitLogMinOffset is the oldest commit-log offset still stored:
	// records below it were removed by retention.
	CommitLogMinOffset() int64
	// Durable is the commit-log offset below which every record is
	// durable: past the end of every message a put has answered.
	Durable() int64
	// WaitDispatched returns once every message durable at the call is
	// readable and its listeners have run, or with ctx's error.
	WaitDispatched(ctx context.Context) error
	// RemovedUnconsumed is, per topic and group, the messages retention
	// removed early while unconsumed, since the store opened (see
	// Store.RemovedUnconsumed).
	RemovedUnconsumed() []RemovedUnconsumed
	// AddListener registers l for every message readable from now on.
	AddListener(l Listener)
	// Config is the configuration in force. The broker reads StoreHost,
	// FileReservedTime, and FS and Dir (it keeps its timer and pop state
	// there).
	Config() Config
}

// A BatchAppender is one caller's handle for PutBatches
// (MessageStore.NewAppender): it serves one call at a time.
type BatchAppender interface {
	PutBatches(groups [][]*message.Message, done func(i int, err error))
}

// Replica is what replication uses of a store, besides MessageStore: the
// raw log for shipping and the commit point (replica.go). *Store and
// memstore.Store implement it; storetest.Run holds both to it. The broker
// and the replication code reach it through small interfaces of their own.
type Replica interface {
	AppendRaw(off int64, b []byte) error
	ReadRaw(off int64, max int) ([]byte, error)
	WaitWritten(ctx context.Context, off int64) error
	Written() int64
	Durable() int64
	CommitLogMinOffset() int64
	EnableCommitPoint()
	SetCommitPoint(off int64)
	CommitPoint() int64
	// ResetAt drops the log and what is derived from it and starts the
	// log empty at start (a slave below its master's retention; see
	// Store.ResetAt); AddResetListener hears of each reset.
	ResetAt(start int64) error
	AddResetListener(fn func(start int64))
	// TruncateTo drops the log above off (an old master rejoining as a
	// slave; see Store.TruncateTo), never below the commit point.
	TruncateTo(off int64) (Truncated, error)
	// PrepareMaster cuts a torn tail and recomputes the queues' next
	// offsets from the log (a slave becoming master; see
	// Store.PrepareMaster).
	PrepareMaster() (cut int64, err error)
}

var (
	_ MessageStore = (*Store)(nil)
	_ Replica      = (*Store)(nil)
)
