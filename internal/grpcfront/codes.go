package grpcfront

// Broker errors to in-band statuses. The status message is the broker's
// sentence for the client (what happened, what to do); the cause goes to
// the log.

import (
	"errors"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/petrelmq/petrel/internal/broker"
)

// kindCodes maps broker error kinds to codes; anything else is
// INTERNAL_SERVER_ERROR.
var kindCodes = map[broker.Kind]v2.Code{
	broker.KindTopicNotExist:           v2.Code_TOPIC_NOT_FOUND,
	broker.KindMessageIllegal:          v2.Code_BAD_REQUEST,
	broker.KindNoPermission:            v2.Code_FORBIDDEN,
	broker.KindSubscriptionParseFailed: v2.Code_ILLEGAL_FILTER_EXPRESSION,
	broker.KindSubscriptionNotExist:    v2.Code_ILLEGAL_FILTER_EXPRESSION,
	broker.KindSystemBusy:              v2.Code_TOO_MANY_REQUESTS,
	broker.KindInvalidReceiptHandle:    v2.Code_INVALID_RECEIPT_HANDLE,
	broker.KindReceiptHandleExpired:    v2.Code_INVALID_RECEIPT_HANDLE,
	broker.KindQueryNotFound:           v2.Code_NOT_FOUND,
	// A recall handle that does not decode or does not fit (recall.go).
	broker.KindIllegalOperation: v2.Code_BAD_REQUEST,
}

// causeCodes are the codes of broker refusals that gRPC names more
// precisely than their Kind.
var causeCodes = []struct {
	cause error
	code  v2.Code
}{
	{broker.ErrMessageType, v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE},
	{broker.ErrDeliveryTime, v2.Code_ILLEGAL_DELIVERY_TIME},
	// A write to a slave: not permitted on this broker (the clients
	// retry on another endpoint).
	{broker.ErrNotMaster, v2.Code_FORBIDDEN},
	// A slave's forward its master did not answer (forward.go).
	{errMasterUnavailable, v2.Code_HA_NOT_AVAILABLE},
}

// brokerStatus turns a broker error into a status; action names what
// failed, for the log.
func (s *Server) brokerStatus(err error, action string) *v2.Status {
	var be *broker.Error
	if !errors.As(err, &be) {
		s.log.Warn("gRPC request failed", "action", action, "err", err)
		return status(v2.Code_INTERNAL_SERVER_ERROR, "%s failed inside the broker; retry, and report it if it persists", action)
	}
	code, ok := kindCodes[be.Kind]
	if !ok {
		code = v2.Code_INTERNAL_SERVER_ERROR
	}
	for _, c := range causeCodes {
		if errors.Is(err, c.cause) {
			code = c.code
		}
	}
	if code == v2.Code_INTERNAL_SERVER_ERROR {
		s.log.Warn("gRPC request failed", "action", action, "err", err)
	} else {
		s.log.Debug("gRPC request refused", "action", action, "err", err)
	}
	return &v2.Status{Code: code, Message: be.Msg}
}

// receiveStatus is brokerStatus for a receive, where an unavailable
// broker (closing, too many parked receives) is "try again later".
func (s *Server) receiveStatus(err error) *v2.Status {
	if broker.KindOf(err) == broker.KindServiceUnavailable && !errors.Is(err, errMasterUnavailable) {
		var be *broker.Error
		errors.As(err, &be)
		return &v2.Status{Code: v2.Code_TOO_MANY_REQUESTS, Message: be.Msg}
	}
	return s.brokerStatus(err, "receive")
}
