package brokerfront

// Transactions: END_TRANSACTION (37, oneway from producers: ext
// producerGroup, tranStateTableOffset, commitLogOffset, commitOrRollback,
// fromTransactionCheck, msgId, transactionId) and CHECK_TRANSACTION_STATE
// (39, oneway to a producer: ext tranStateTableOffset, commitLogOffset,
// msgId, transactionId, offsetMsgId; body the half message as stored).

import (
	"context"
	"strconv"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
)

const ()

func (f *Front) endTransaction(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	ext := req.ExtFields
	var n numbers
	et := broker.EndTransactionRequest{
		ProducerGroup:        ext["producerGroup"],
		TranStateTableOffset: n.int64("tranStateTableOffset", ext["tranStateTableOffset"]),
		CommitLogOffset:      n.int64("commitLogOffset", ext["commitLogOffset"]),
		CommitOrRollback:     n.int32("commitOrRollback", ext["commitOrRollback"]),
		FromTransactionCheck: ext["fromTransactionCheck"] == "true",
		MsgID:                ext["msgId"],
		TransactionID:        ext["transactionId"],
	}
	if resp := n.refused(req, rmq.RespSystemError); resp != nil {
		f.log.Warn("END_TRANSACTION refused", "remote", c.RemoteAddr().String(), "group", ext["producerGroup"], "remark", resp.Remark)
		return resp // dropped for oneway requests
	}
	err := f.b.EndTransaction(et)
	if err != nil {
		f.log.Warn("END_TRANSACTION failed", "remote", c.RemoteAddr().String(), "group", ext["producerGroup"], "err", err)
		return f.errorResponse(req, err) // dropped for oneway requests
	}
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

// sendCheck sends a CHECK_TRANSACTION_STATE to the producer connection c
// (the one the broker routed the check to).
func (f *Front) sendCheck(c *remoting.Conn, chk broker.TransactionCheck) bool {
	h := chk.Header
	req := remoting.NewRequest(rmq.CodeCheckTransactionState, map[string]string{
		"tranStateTableOffset": strconv.FormatInt(h.TranStateTableOffset, 10),
		"commitLogOffset":      strconv.FormatInt(h.CommitLogOffset, 10),
		"msgId":                h.MsgID,
		"transactionId":        h.TransactionID,
		"offsetMsgId":          h.OffsetMsgID,
	}, chk.Body)
	if err := c.InvokeOneway(req); err != nil {
		f.log.Debug("transaction check not sent", "group", chk.Group, "remote", c.RemoteAddr().String(), "err", err)
		return false
	}
	return true
}
