package rmq

import "github.com/petrelmq/petrel/internal/remoting"

// Transactions: 37 END_TRANSACTION (oneway from producers: commit or roll
// back a half message) and 39 CHECK_TRANSACTION_STATE (oneway from the
// broker to a producer: what became of this half message? The body is the
// half message as stored).

// Values of EndTransactionRequest.CommitOrRollback (Java's
// MessageSysFlag transaction types).
const (
	TransactionNotType  int32 = 0
	TransactionPrepared int32 = 1 << 2
	TransactionCommit   int32 = 2 << 2
	TransactionRollback int32 = 3 << 2
)

// EndTransactionRequest is the header of END_TRANSACTION. Required:
// producerGroup, tranStateTableOffset, commitLogOffset, commitOrRollback
// (Java's @CFNotNull). Java marks msgId too, but accepts it empty, and the
// official Go client sends the message's unique key there, which can be
// empty: it is optional here.
type EndTransactionRequest struct {
	ProducerGroup        string
	TranStateTableOffset int64 // the half message's queue offset
	CommitLogOffset      int64 // the half message's commit-log offset
	CommitOrRollback     int32
	FromTransactionCheck bool
	MsgID                string
	TransactionID        string
}

// DecodeEndTransactionRequest reads an END_TRANSACTION header.
func DecodeEndTransactionRequest(c *remoting.Command) (EndTransactionRequest, error) {
	f := fields{c: c}
	h := EndTransactionRequest{
		ProducerGroup:        f.need("producerGroup"),
		TranStateTableOffset: f.needI64("tranStateTableOffset"),
		CommitLogOffset:      f.needI64("commitLogOffset"),
		CommitOrRollback:     f.needI32("commitOrRollback"),
		FromTransactionCheck: f.boolean("fromTransactionCheck"),
		MsgID:                f.str("msgId"),
		TransactionID:        f.str("transactionId"),
	}
	return h, f.result()
}

// EncodeEndTransactionRequest returns an END_TRANSACTION request.
func EncodeEndTransactionRequest(h EndTransactionRequest) *remoting.Command {
	return remoting.NewRequest(CodeEndTransaction, map[string]string{
		"producerGroup":        h.ProducerGroup,
		"tranStateTableOffset": itoa(h.TranStateTableOffset),
		"commitLogOffset":      itoa(h.CommitLogOffset),
		"commitOrRollback":     itoa(h.CommitOrRollback),
		"fromTransactionCheck": btoa(h.FromTransactionCheck),
		"msgId":                h.MsgID,
		"transactionId":        h.TransactionID,
	}, nil)
}

// CheckTransactionStateRequest is the header of CHECK_TRANSACTION_STATE;
// tranStateTableOffset and commitLogOffset are required (Java's
// @CFNotNull).
type CheckTransactionStateRequest struct {
	TranStateTableOffset int64
	CommitLogOffset      int64
	MsgID                string // the unique key
	TransactionID        string
	OffsetMsgID          string
}

// DecodeCheckTransactionState reads a CHECK_TRANSACTION_STATE header; the
// half message is the command's body.
func DecodeCheckTransactionState(c *remoting.Command) (CheckTransactionStateRequest, error) {
	f := fields{c: c}
	h := CheckTransactionStateRequest{
		TranStateTableOffset: f.needI64("tranStateTableOffset"),
		CommitLogOffset:      f.needI64("commitLogOffset"),
		MsgID:                f.str("msgId"),
		TransactionID:        f.str("transactionId"),
		OffsetMsgID:          f.str("offsetMsgId"),
	}
	return h, f.result()
}

// EncodeCheckTransactionState returns a CHECK_TRANSACTION_STATE request
// carrying the half message (a stored record) as its body.
func EncodeCheckTransactionState(h CheckTransactionStateRequest, halfMessage []byte) *remoting.Command {
	return remoting.NewRequest(CodeCheckTransactionState, map[string]string{
		"tranStateTableOffset": itoa(h.TranStateTableOffset),
		"commitLogOffset":      itoa(h.CommitLogOffset),
		"msgId":                h.MsgID,
		"transactionId":        h.TransactionID,
		"offsetMsgId":          h.OffsetMsgID,
	}, halfMessage)
}
