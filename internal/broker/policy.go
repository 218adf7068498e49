package broker

// Send policy that is the same for every front: the message types a topic
// accepts (RocketMQ 5's message.type topic attribute), the queue of a
// FIFO message (from its sharding key), and what a front needs to name
// of transactions without importing broker/txn.
//
// Message types: a send is refused when the topic's message.type
// attribute names one type (NORMAL, FIFO, DELAY or TRANSACTION) and the
// message is of another; MIXED, no attribute or anything else accepts
// every type. A gRPC send declares its type; a 4.x send declares none, so
// its type is inferred from what it asks for, in RocketMQ 5's order
// (TopicMessageType.parseFromMessageProperty): a transaction's half is
// TRANSACTION, else a delay (DELAY, TIMER_DELIVER_MS, TIMER_DELAY_SEC,
// TIMER_DELAY_MS) makes it DELAY, else a sharding key (__SHARDINGKEY)
// FIFO, else it is NORMAL. As RocketMQ's proxy, which applies the check
// to remoting and gRPC clients alike, sends to %RETRY% and %DLQ% topics
// and messages with TRANSFER_FLAG are not checked. The refusal is
// KindMessageIllegal (MESSAGE_ILLEGAL on remoting, as the proxy answers;
// MESSAGE_PROPERTY_CONFLICT_WITH_TYPE on gRPC). Config's
// NoTopicMessageTypeCheck (RocketMQ's enableTopicMessageTypeCheck=false)
// turns the check off on both.

import (
	"errors"
	"hash/fnv"
	"strings"

	"github.com/petrelmq/petrel/internal/broker/pop"
	"github.com/petrelmq/petrel/internal/broker/txn"
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

// PropertyTransferFlag marks a message a broker moves on its own behalf
// (RocketMQ's MessageConst.PROPERTY_TRANSFER_FLAG); its type is not
// checked against the topic.
const PropertyTransferFlag = "TRANSFER_FLAG"

// CheckMessageType refuses req when topic t's message.type does not
// accept its type (see the file comment): the declared MessageType, or
// for a send that declares none (4.x) the type its fields and properties
// make it. Nil when the broker's NoTopicMessageTypeCheck is set.
func (b *Broker) CheckMessageType(t TopicConfig, req *SendRequest) error {
	if b.cfg.NoTopicMessageTypeCheck {
		return nil
	}
	return checkMessageType(t, req)
}

// checkMessageType is CheckMessageType regardless of the broker's setting.
func checkMessageType(t TopicConfig, req *SendRequest) error {
	accepted := AcceptedTypes(t)
	if len(accepted) == len(allMessageTypes) {
		return nil // no single type: the common case costs one map lookup
	}
	typ, why := req.MessageType, ""
	if typ == MessageTypeUnspecified {
		if strings.HasPrefix(req.Topic, RetryGroupTopicPrefix) || strings.HasPrefix(req.Topic, DLQGroupTopicPrefix) {
			return nil
		}
		if _, ok := req.Properties.Get(PropertyTransferFlag); ok {
			return nil
		}
		typ, why = inferMessageType(req)
	}
	if typ == accepted[0] {
		return nil
	}
	if why != "" {
		return errorf(KindMessageIllegal, ErrMessageType, "topic %q accepts %v messages only (its message.type), and this is a %v message (%s); send it to a topic of that type, or change the topic's message.type (MIXED accepts every type)", t.Name, accepted[0], typ, why)
	}
	return errorf(KindMessageIllegal, ErrMessageType, "topic %q accepts %v messages, not %v; send to a topic of that type", t.Name, accepted, typ)
}

// inferMessageType is the type of a send that declares none, and what
// made it so.
func inferMessageType(req *SendRequest) (MessageType, string) {
	if req.Transactional {
		return MessageTypeTransaction, "it is a transaction's half message"
	}
	if !req.Delay.IsZero() {
		return MessageTypeDelay, "it has a delivery delay"
	}
	for _, d := range req.ItemDelays {
		if !d.IsZero() {
			return MessageTypeDelay, "a batch item has a delivery delay"
		}
	}
	if req.ShardingKey != "" {
		return MessageTypeFIFO, "it has a sharding key"
	}
	if _, ok := req.Properties.Get(PropertyShardingKey); ok {
		return MessageTypeFIFO, "it has the " + PropertyShardingKey + " property"
	}
	return MessageTypeNormal, "it has no delay, sharding key or transaction"
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
