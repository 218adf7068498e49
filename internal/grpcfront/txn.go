package grpcfront

// EndTransaction and the transaction id.
//
// A transactional send stores a half message (the broker's) whose
// __transactionId__ property is its UNIQ_KEY, the client's message id.
// That id is the transaction id, as with RocketMQ: the send answers it
// (for every send, as RocketMQ's proxy does), check-backs carry it, and
// EndTransaction finds the half by it in the broker's index
// (Broker.FindHalf), which also works after a restart.
//
// The producer group of a 5.x transaction is its topic (PGROUP), so
// EndTransaction's topic names the group.

import (
	"context"
	"errors"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/petrelmq/petrel/internal/broker"
)

// EndTransaction commits or rolls back a half message;
// TRANSACTION_RESOLUTION_UNSPECIFIED leaves it open (it is checked back
// again). A repeated resolution is answered OK.
func (s *Server) EndTransaction(ctx context.Context, req *v2.EndTransactionRequest) (*v2.EndTransactionResponse, error) {
	topic, st := checkTopic(req.GetTopic())
	if st != nil {
		return &v2.EndTransactionResponse{Status: st}, nil
	}
	id := req.GetTransactionId()
	if id == "" {
		return &v2.EndTransactionResponse{Status: status(v2.Code_INVALID_TRANSACTION_ID, "the request has no transaction id; use the one the send returned")}, nil
	}
	if why := validMessageID(id); why != "" {
		return &v2.EndTransactionResponse{Status: status(v2.Code_INVALID_TRANSACTION_ID, "%q is not a transaction id: %s", id, why)}, nil
	}
	var kind int32
	switch req.GetResolution() {
	case v2.TransactionResolution_COMMIT:
		kind = broker.EndCommit
	case v2.TransactionResolution_ROLLBACK:
		kind = broker.EndRollback
	case v2.TransactionResolution_TRANSACTION_RESOLUTION_UNSPECIFIED:
		// Still undecided: nothing to find; it is checked back again.
		return &v2.EndTransactionResponse{Status: okStatus()}, nil
	default:
		return &v2.EndTransactionResponse{Status: status(v2.Code_BAD_REQUEST, "resolution %v is not COMMIT, ROLLBACK or TRANSACTION_RESOLUTION_UNSPECIFIED", req.GetResolution())}, nil
	}
	phys, qo, err := s.findHalf(ctx, topic, id)
	var be *broker.Error
	if errors.As(err, &be) && be.Kind == broker.KindQueryNotFound {
		return &v2.EndTransactionResponse{Status: status(v2.Code_INVALID_TRANSACTION_ID,
			"transaction %s names no half message on this broker; use the id the send or the check-back gave", id)}, nil
	}
	if err != nil {
		return &v2.EndTransactionResponse{Status: s.brokerStatus(err, "end transaction")}, nil
	}
	err = s.endTransaction(broker.EndTransactionRequest{
		ProducerGroup:        topic,
		TranStateTableOffset: qo,
		CommitLogOffset:      phys,
		CommitOrRollback:     kind,
		FromTransactionCheck: req.GetSource() == v2.TransactionSource_SOURCE_SERVER_CHECK,
		MsgID:                req.GetMessageId(),
		TransactionID:        id,
	})
	switch {
	case err == nil:
		return &v2.EndTransactionResponse{Status: okStatus()}, nil
	case errors.Is(err, broker.ErrHalfNotFound), errors.Is(err, broker.ErrNotHalf), errors.Is(err, broker.ErrOffsetMismatch):
		return &v2.EndTransactionResponse{Status: status(v2.Code_INVALID_TRANSACTION_ID,
			"transaction %s names no half message on this broker; use the id the send or the check-back gave", req.GetTransactionId())}, nil
	case errors.Is(err, broker.ErrGroupMismatch):
		return &v2.EndTransactionResponse{Status: status(v2.Code_INVALID_TRANSACTION_ID,
			"transaction %s belongs to another topic than %q; end it with the topic it was sent to", req.GetTransactionId(), topic)}, nil
	}
	return &v2.EndTransactionResponse{Status: s.brokerStatus(err, "end transaction")}, nil
}
