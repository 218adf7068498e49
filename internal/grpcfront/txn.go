package grpcfront

// EndTransaction and the transaction id.
//
// A transactional send stores a half message (broker/txn); its
// transaction id, made here, names the half for EndTransaction:
//
//	transaction id = 32 uppercase hex digits
//	                 [0:16]  commit-log offset of the half (big-endian int64)
//	                 [16:32] its queue offset in the half topic
//
// The producer group of a 5.x transaction is its topic (PGROUP), so
// EndTransaction's topic names the group. A check-back carries the id of
// the half the broker checked, which EndTransaction accepts like the
// original.

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/broker/txn"
)

// transactionIDLen is the length of a transaction id.
const transactionIDLen = 32

// ErrTransactionID: a transaction id is not one this front made.
var ErrTransactionID = errors.New("grpcfront: malformed transaction id")

// encodeTransactionID makes the transaction id of the half at commit-log
// offset phys and half-topic queue offset qo.
func encodeTransactionID(phys, qo int64) string {
	return fmt.Sprintf("%016X%016X", uint64(phys), uint64(qo))
}

// decodeTransactionID parses a transaction id (errors wrap
// ErrTransactionID).
func decodeTransactionID(id string) (phys, qo int64, err error) {
	if len(id) != transactionIDLen {
		return 0, 0, fmt.Errorf("%w: %d characters, want %d", ErrTransactionID, len(id), transactionIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < '0' || c > '9') && (c < 'A' || c > 'F') {
			return 0, 0, fmt.Errorf("%w: character %q at %d is not an uppercase hex digit", ErrTransactionID, c, i)
		}
	}
	p, err1 := strconv.ParseUint(id[:16], 16, 64)
	q, err2 := strconv.ParseUint(id[16:], 16, 64)
	if err1 != nil || err2 != nil || int64(p) < 0 || int64(q) < 0 {
		return 0, 0, fmt.Errorf("%w: offsets out of range", ErrTransactionID)
	}
	return int64(p), int64(q), nil
}

// EndTransaction commits or rolls back a half message;
// TRANSACTION_RESOLUTION_UNSPECIFIED leaves it open (it is checked back
// again). A repeated resolution is answered OK.
func (s *Server) EndTransaction(ctx context.Context, req *v2.EndTransactionRequest) (*v2.EndTransactionResponse, error) {
	topic, st := checkTopic(req.GetTopic())
	if st != nil {
		return &v2.EndTransactionResponse{Status: st}, nil
	}
	if req.GetTransactionId() == "" {
		return &v2.EndTransactionResponse{Status: status(v2.Code_INVALID_TRANSACTION_ID, "the request has no transaction id; use the one the send returned")}, nil
	}
	phys, qo, err := decodeTransactionID(req.GetTransactionId())
	if err != nil {
		return &v2.EndTransactionResponse{Status: status(v2.Code_INVALID_TRANSACTION_ID,
			"transaction id %q was not issued by this broker (%v); use the one the send or the check-back gave", req.GetTransactionId(), err)}, nil
	}
	var kind int32
	switch req.GetResolution() {
	case v2.TransactionResolution_COMMIT:
		kind = txn.EndCommit
	case v2.TransactionResolution_ROLLBACK:
		kind = txn.EndRollback
	case v2.TransactionResolution_TRANSACTION_RESOLUTION_UNSPECIFIED:
		kind = txn.EndUnknown
	default:
		return &v2.EndTransactionResponse{Status: status(v2.Code_BAD_REQUEST, "resolution %v is not COMMIT, ROLLBACK or TRANSACTION_RESOLUTION_UNSPECIFIED", req.GetResolution())}, nil
	}
	err = s.b.EndTransaction(broker.EndTransactionRequest{
		ProducerGroup:        topic,
		TranStateTableOffset: qo,
		CommitLogOffset:      phys,
		CommitOrRollback:     kind,
		FromTransactionCheck: req.GetSource() == v2.TransactionSource_SOURCE_SERVER_CHECK,
		MsgID:                req.GetMessageId(),
		TransactionID:        req.GetTransactionId(),
	})
	switch {
	case err == nil:
		return &v2.EndTransactionResponse{Status: okStatus()}, nil
	case errors.Is(err, txn.ErrHalfNotFound), errors.Is(err, txn.ErrNotHalf), errors.Is(err, txn.ErrOffsetMismatch):
		return &v2.EndTransactionResponse{Status: status(v2.Code_INVALID_TRANSACTION_ID,
			"transaction %s names no half message on this broker; use the id the send or the check-back gave", req.GetTransactionId())}, nil
	case errors.Is(err, txn.ErrGroupMismatch):
		return &v2.EndTransactionResponse{Status: status(v2.Code_INVALID_TRANSACTION_ID,
			"transaction %s belongs to another topic than %q; end it with the topic it was sent to", req.GetTransactionId(), topic)}, nil
	}
	return &v2.EndTransactionResponse{Status: s.brokerStatus(err, "end transaction")}, nil
}
