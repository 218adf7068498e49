package broker

// Send policy that is the same for every front: the message types a topic
// accepts (RocketMQ 5's message.type topic attribute), the queue of a
// FIFO message (from its sharding key), and what a front needs to name
// of transactions without importing broker/txn.
//
// Message types: a send that declares a type (the gRPC front always does)
// is refused when the topic's message.type attribute names another one
// (NORMAL, FIFO, DELAY or TRANSACTION; MIXED, none or anything else
// accepts every type). A 4.x send declares none and is not checked: Petrel
// never checked them, and Java's broker does not either (its proxy infers
// a type from the properties and checks that, for remoting clients too).

import (
	"errors"
	"hash/fnv"
	"strings"

	"github.com/petrelmq/petrel/internal/broker/pop"
	"github.com/petrelmq/petrel/internal/broker/txn"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// MessageType is the type a producer declares for a message.
type MessageType uint8

// Message types.
const (
	// MessageTypeUnspecified: the send declares no type (4.x); the topic's
	// type is not checked.
	MessageTypeUnspecified MessageType = iota
	MessageTypeNormal
	MessageTypeFIFO
	MessageTypeDelay
	MessageTypeTransaction
)

var messageTypeNames = [...]string{"UNSPECIFIED", "NORMAL", "FIFO", "DELAY", "TRANSACTION"}

func (t MessageType) String() string {
	if int(t) < len(messageTypeNames) {
		return messageTypeNames[t]
	}
	return "UNKNOWN"
}

// TopicTypeAttribute is RocketMQ 5's topic attribute naming the one
// message type a topic accepts (NORMAL, FIFO, DELAY, TRANSACTION or
// MIXED); without it a topic accepts every type.
const TopicTypeAttribute = "message.type"

var allMessageTypes = []MessageType{MessageTypeNormal, MessageTypeFIFO, MessageTypeDelay, MessageTypeTransaction}

// AcceptedTypes are the message types topic t accepts, in the order
// NORMAL, FIFO, DELAY, TRANSACTION. The caller must not change the slice.
func AcceptedTypes(t TopicConfig) []MessageType {
	switch strings.ToUpper(t.Attributes[TopicTypeAttribute]) {
	case "NORMAL":
		return allMessageTypes[0:1]
	case "FIFO":
		return allMessageTypes[1:2]
	case "DELAY":
		return allMessageTypes[2:3]
	case "TRANSACTION":
		return allMessageTypes[3:4]
	}
	return allMessageTypes
}

// Sentinels in the chain of a send's *Error, for fronts whose protocol
// has a code of its own for them (the 4.x front answers MESSAGE_ILLEGAL,
// the Error's Kind).
var (
	// ErrMessageType: the declared message type is not one the topic
	// accepts.
	ErrMessageType = errors.New("broker: message type not accepted by the topic")
	// ErrDeliveryTime: the delay is beyond MaxTimerDelay.
	ErrDeliveryTime = errors.New("broker: delivery time beyond the limit")
)

// checkMessageType refuses a declared type topic t does not accept.
func checkMessageType(t meta.Topic, typ MessageType) error {
	if typ == MessageTypeUnspecified {
		return nil
	}
	accepted := AcceptedTypes(topicFromMeta(t))
	for _, a := range accepted {
		if a == typ {
			return nil
		}
	}
	return errorf(KindMessageIllegal, ErrMessageType, "topic %q accepts %v messages, not %v; send to a topic of that type", t.Name, accepted, typ)
}

// PropertyShardingKey holds a FIFO message's sharding key (Java's
// MessageConst.PROPERTY_SHARDING_KEY, what the 5.x clients' message group
// becomes); the broker writes it for a send with a ShardingKey and map
// properties.
const PropertyShardingKey = "__SHARDINGKEY"

// ShardQueue is the queue of a sharding key among writeQueues: FNV-1a of
// the key modulo the write queues, so one key always lands on one queue,
// in send order.
func ShardQueue(key string, writeQueues int32) int32 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int32(h.Sum32() % uint32(max(writeQueues, 1)))
}

// Transactions, as fronts name them.
const (
	// EndCommit, EndRollback and EndUnknown are the resolutions of an
	// EndTransactionRequest (CommitOrRollback).
	EndCommit   = txn.EndCommit
	EndRollback = txn.EndRollback
	EndUnknown  = txn.EndUnknown
	// PropertyTransactionID is a half's transaction id property (its
	// UNIQ_KEY), kept on the committed message.
	PropertyTransactionID = txn.PropertyTransactionID
)

// Causes in the chain of EndTransaction's error.
var (
	// ErrHalfNotFound: no record at the commit-log offset.
	ErrHalfNotFound = txn.ErrHalfNotFound
	// ErrNotHalf: the record at the offset is not a live half message.
	ErrNotHalf = txn.ErrNotHalf
	// ErrGroupMismatch: the half belongs to another producer group.
	ErrGroupMismatch = txn.ErrGroupMismatch
	// ErrOffsetMismatch: the request's offsets do not match the half.
	ErrOffsetMismatch = txn.ErrOffsetMismatch
)

// TransactionCheckHeader is the header of a check-back (TransactionCheck),
// as a front that relays a master's check-backs builds it.
type TransactionCheckHeader = txn.CheckHeader

// ReceiptHandle is what a pop receipt handle says: queue, offset, attempt
// and invisible-until time of one delivery.
type ReceiptHandle = pop.Handle

// DecodeReceiptHandle reads a receipt handle the broker issued (an error
// for anything else; it never panics).
func DecodeReceiptHandle(s string) (ReceiptHandle, error) { return pop.DecodeHandle(s) }
