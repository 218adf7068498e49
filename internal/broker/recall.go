package broker

// Recall: RocketMQ 5.3's RECALL_MESSAGE (remoting 370, gRPC RecallMessage).
// A single delayed send is answered with a recall handle
// (SendResult.RecallHandle, message.EncodeRecallHandle); its producer
// recalls the message with it before it is due. The checks follow
// RocketMQ's RecallMessageProcessor in its order; the cancel itself is
// CancelDelayed's (a cancel record of the timer topic), for a message of
// the handle's topic only, so that Pub on one topic cannot recall a
// message of another.

import (
	"context"
	"errors"

	"github.com/petrelmq/petrel/internal/message"
)

// Recall cancels the delayed message that handle names, sent to topic on
// this broker, and returns its message id (UNIQ_KEY). Errors, in the
// order checked: the broker closed (KindServiceUnavailable); a slave
// (KindServiceUnavailable with ErrNotMaster in the chain: the remoting
// front answers 11 SLAVE_NOT_AVAILABLE, as RocketMQ does); an unknown
// topic (KindTopicNotExist); a handle that does not decode, names another
// topic or another broker, or a time already passed or MaxTimerDelay or
// more away (KindIllegalOperation); then CancelDelayed's: no such pending
// message of topic (KindQueryNotFound), due already (KindMessageIllegal).
// A message already recalled is recalled again without error.
func (b *Broker) Recall(ctx context.Context, topic, handle string) (string, error) {
	if b.closed.Load() {
		return "", b.errClosed()
	}
	if err := b.refuseOnSlave(KindServiceUnavailable, "recalls of delayed messages"); err != nil {
		return "", err
	}
	if _, ok := b.meta.Topic(topic); !ok {
		return "", errorf(KindTopicNotExist, nil, "recall failed: topic %q does not exist on broker %s", topic, b.cfg.BrokerName)
	}
	h, err := message.DecodeRecallHandle(handle)
	if err != nil {
		return "", errorf(KindIllegalOperation, nil, "recall failed: the recall handle is invalid; pass the recallHandle of the delayed message's send answer unchanged")
	}
	if h.Topic != topic {
		return "", errorf(KindIllegalOperation, nil, "recall failed: the recall handle names topic %q, not %q", h.Topic, topic)
	}
	if h.BrokerName != b.cfg.BrokerName {
		return "", errorf(KindIllegalOperation, nil, "recall failed: the recall handle names broker %q, not this broker (%s); send the recall to that broker", h.BrokerName, b.cfg.BrokerName)
	}
	// In milliseconds: a Duration of any int64 handle time could wrap.
	if left := h.At - b.clk.Now().UnixMilli(); h.At < 0 || left <= 0 || left >= b.cfg.MaxTimerDelay.Milliseconds() {
		return "", errorf(KindIllegalOperation, nil, "recall failed: the recall handle's time is invalid (passed, or beyond the broker's timer limit of %v); a message already due cannot be recalled", b.cfg.MaxTimerDelay)
	}
	// A second recall succeeds, as in RocketMQ (whose recall only writes
	// a delete marker).
	if err := b.CancelDelayedIn(ctx, h.UniqID, topic); err != nil && !errors.Is(err, ErrCancelledAlready) {
		return "", err
	}
	return h.UniqID, nil
}
