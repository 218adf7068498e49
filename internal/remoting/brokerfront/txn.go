package brokerfront

// Transactions (headers in rmq/txn.go): END_TRANSACTION (37, oneway from
// producers) and CHECK_TRANSACTION_STATE (39, oneway to a producer; body
// the half message as stored).

import (
	"context"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
)

func (f *Front) endTransaction(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeEndTransactionRequest(req)
	if err != nil {
		resp := refuseHeader(req, err)
		f.log.Warn("END_TRANSACTION refused", "remote", c.RemoteAddr().String(), "group", h.ProducerGroup, "remark", resp.Remark)
		return resp // dropped for oneway requests
	}
	err = f.b.EndTransaction(broker.EndTransactionRequest{
		ProducerGroup:        h.ProducerGroup,
		TranStateTableOffset: h.TranStateTableOffset,
		CommitLogOffset:      h.CommitLogOffset,
		CommitOrRollback:     h.CommitOrRollback,
		FromTransactionCheck: h.FromTransactionCheck,
		MsgID:                h.MsgID,
		TransactionID:        h.TransactionID,
	})
	if err != nil {
		f.log.Warn("END_TRANSACTION failed", "remote", c.RemoteAddr().String(), "group", h.ProducerGroup, "err", err)
		return f.errorResponse(req, err) // dropped for oneway requests
	}
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

// sendCheck sends a CHECK_TRANSACTION_STATE to the producer connection c
// (the one the broker routed the check to).
func (f *Front) sendCheck(c *remoting.Conn, chk broker.TransactionCheck) bool {
	h := chk.Header
	req := rmq.EncodeCheckTransactionState(rmq.CheckTransactionStateRequest{
		TranStateTableOffset: h.TranStateTableOffset,
		CommitLogOffset:      h.CommitLogOffset,
		MsgID:                h.MsgID,
		TransactionID:        h.TransactionID,
		OffsetMsgID:          h.OffsetMsgID,
	}, chk.Body)
	if err := c.InvokeOneway(req); err != nil {
		f.log.Debug("transaction check not sent", "group", chk.Group, "remote", c.RemoteAddr().String(), "err", err)
		return false
	}
	return true
}
