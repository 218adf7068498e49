package broker

import (
	"errors"
	"fmt"
)

// Kind classifies a client-facing error. Fronts map kinds to protocol
// codes; the broker never deals in codes.
type Kind int

// Kinds of Error. The RocketMQ remoting code each maps to is given for the
// front's benefit.
const (
	// KindSystemError: anything else (code 1 SYSTEM_ERROR). Also a queue id
	// outside the topic's queues, as in Java, so that producers retry on
	// another queue.
	KindSystemError Kind = iota + 1
	// KindTopicNotExist: the topic is unknown and was not auto-created
	// (code 17 TOPIC_NOT_EXIST).
	KindTopicNotExist
	// KindMessageIllegal: bad topic name, body too large, properties too
	// long or malformed, malformed batch (code 13 MESSAGE_ILLEGAL).
	KindMessageIllegal
	// KindNoPermission: the topic is not writable (send) or readable (pull),
	// or the group may not consume (code 16 NO_PERMISSION).
	KindNoPermission
	// KindServiceUnavailable: disk full, broker or store closing, too many
	// parked pulls (code 14 SERVICE_NOT_AVAILABLE).
	KindServiceUnavailable
	// KindSubscriptionNotExist: a pull without its own subscription from a
	// group with no heartbeat subscription for the topic (code 24
	// SUBSCRIPTION_NOT_EXIST).
	KindSubscriptionNotExist
	// KindSubscriptionParseFailed: the pull's subscription expression does
	// not parse (code 23 SUBSCRIPTION_PARSE_FAILED).
	KindSubscriptionParseFailed
	// KindQueryNotFound: QueryByKey found nothing (code 22 QUERY_NOT_FOUND).
	KindQueryNotFound
	// KindSystemBusy: the broker is overloaded (its disk is not keeping up)
	// and refused the request without doing it (code 2 SYSTEM_BUSY, which
	// producers retry, on another broker when there is one).
	KindSystemBusy
	// KindInvalidReceiptHandle: a pop acknowledgement's receipt handle does
	// not decode, or names another group, topic or message.
	KindInvalidReceiptHandle
	// KindReceiptHandleExpired: the popped message's invisible time passed
	// before the acknowledgement (it may have been delivered again).
	KindReceiptHandleExpired
	// KindGroupNotExist: an admin request names a consumer group the
	// broker has no config, offsets or members for (code 26
	// SUBSCRIPTION_GROUP_NOT_EXIST).
	KindGroupNotExist
	// KindIllegalOperation: a recall whose handle does not decode, names
	// another topic or broker, or a time already passed or beyond the
	// timer's limit (code 604 ILLEGAL_OPERATION).
	KindIllegalOperation
)

var kindNames = map[Kind]string{
	KindSystemError:             "system error",
	KindTopicNotExist:           "topic not exist",
	KindMessageIllegal:          "message illegal",
	KindNoPermission:            "no permission",
	KindServiceUnavailable:      "service unavailable",
	KindSubscriptionNotExist:    "subscription not exist",
	KindSubscriptionParseFailed: "subscription parse failed",
	KindQueryNotFound:           "query not found",
	KindSystemBusy:              "system busy",
	KindInvalidReceiptHandle:    "invalid receipt handle",
	KindReceiptHandleExpired:    "receipt handle expired",
	KindGroupNotExist:           "group not exist",
	KindIllegalOperation:        "illegal operation",
}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Error is the error every broker operation returns to a client: a Kind
// for the front to map to a response code, and Msg, a sentence for the
// response remark that says what is wrong and what to do. Err is the
// underlying cause, if any, for the front's log; it is not meant for the
// client.
type Error struct {
	Kind Kind
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return "broker: " + e.Msg + ": " + e.Err.Error()
	}
	return "broker: " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the Kind of the *Error in err's chain, or KindSystemError
// when there is none (and 0 for a nil err).
func KindOf(err error) Kind {
	if err == nil {
		return 0
	}
	var be *Error
	if errors.As(err, &be) {
		return be.Kind
	}
	return KindSystemError
}

func errorf(k Kind, cause error, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...), Err: cause}
}
