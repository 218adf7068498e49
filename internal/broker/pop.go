package broker

// Pop consumption (RocketMQ 5.x simple consumers): a group receives
// messages of a topic without owning queues; each received message stays
// invisible to the group for a while and is acknowledged one by one by
// its receipt handle. A message not acknowledged in time becomes visible
// again with its delivery attempt incremented; after the group's maximum
// attempts it goes to %DLQ%<group>.

import (
	"context"
	"time"

	"github.com/petrelmq/petrel/internal/message"
)

// PopRequest is a receive of a pop (simple-consumer) group.
type PopRequest struct {
	Group, Topic string
	// Expression and ExpressionType filter the messages: ExpressionType
	// "TAG" (or "") with a tag expression ("*", "" or "A || B"), or
	// "SQL92" with a SQL92 property filter.
	Expression, ExpressionType string
	// MaxMsgs caps the messages returned; ≤ 0 means 1, above 32 means 32.
	MaxMsgs int
	// Invisible is how long each returned message stays invisible to the
	// group; ≤ 0 means 30 s.
	Invisible time.Duration
	// Wait: when nothing is visible, hold the request up to this long for a
	// message to arrive (long polling; no busy polling); ≤ 0 answers at once.
	Wait time.Duration
	// FIFO: the group consumes in order; a queue's next message is not
	// delivered while an earlier one of the same queue is in flight.
	FIFO bool
	// MaxAttempts is the deliveries a message gets before it goes to the
	// group's dead-letter queue; ≤ 0 means DefaultMaxReconsumeTimes + 1.
	MaxAttempts int
}

// PoppedMessage is one received message.
type PoppedMessage struct {
	// Record is the stored record (a copy the caller owns).
	Record message.Record
	// Handle acknowledges the message or changes its invisible time.
	Handle string
	// Attempt counts deliveries of this message to the group, 1 for the
	// first.
	Attempt int32
	// InvisibleUntil is when the message becomes visible again unless it
	// is acknowledged first.
	InvisibleUntil time.Time
}

// Pop receives up to MaxMsgs visible messages of the topic for the group.
// Errors (*Error): KindTopicNotExist, KindNoPermission (topic not
// readable, group may not consume), KindSubscriptionParseFailed (bad
// expression), KindServiceUnavailable (closing, too many parked requests).
// No message within Wait returns an empty slice and no error.
func (b *Broker) Pop(ctx context.Context, req *PopRequest) ([]PoppedMessage, error) {
	return nil, errorf(KindSystemError, nil, "pop consumption is not built yet")
}

// AckPop acknowledges a popped message by its receipt handle. Errors:
// KindInvalidReceiptHandle when the handle does not decode or names
// another group or topic; KindReceiptHandleExpired when the message's
// invisible time has passed (it may have been delivered again).
func (b *Broker) AckPop(group, topic, handle string) error {
	return errorf(KindSystemError, nil, "pop consumption is not built yet")
}

// ChangeInvisible sets a popped message's invisible time to d from now and
// returns its new receipt handle (the old one no longer acknowledges it).
// Errors as AckPop.
func (b *Broker) ChangeInvisible(group, topic, handle string, d time.Duration) (string, error) {
	return "", errorf(KindSystemError, nil, "pop consumption is not built yet")
}

// ForwardPopToDLQ moves a popped message to the group's dead-letter queue
// at once and acknowledges it. Errors as AckPop.
func (b *Broker) ForwardPopToDLQ(group, topic, handle string) error {
	return errorf(KindSystemError, nil, "pop consumption is not built yet")
}
