package rmq

import "github.com/petrelmq/petrel/internal/remoting"

// PULL_MESSAGE (11). The answer always carries the four offsets of
// PullResponse (a client that finds no nextBeginOffset goes back to offset
// 0); its body, on FOUND, is the stored records back to back, which the
// front hands the connection without copying (Command.BodyParts and
// Release).

// Bits of PullRequest.SysFlag.
const (
	PullFlagCommitOffset int32 = 1 << 0 // store CommitOffset as the group's offset
	PullFlagSuspend      int32 = 1 << 1 // long polling allowed
	PullFlagSubscription int32 = 1 << 2 // Subscription and ExpressionType are in this request
	PullFlagClassFilter  int32 = 1 << 3
)

// PullRequest is the header of PULL_MESSAGE. Required, as Java's
// @CFNotNull: consumerGroup, topic, queueId, queueOffset, maxMsgNums,
// sysFlag, commitOffset, suspendTimeoutMillis and subVersion (the official
// clients send every one).
type PullRequest struct {
	ConsumerGroup        string
	Topic                string
	QueueID              int32
	QueueOffset          int64
	MaxMsgNums           int32
	SysFlag              int32
	CommitOffset         int64
	SuspendTimeoutMillis int64
	Subscription         string // the expression; with PullFlagSubscription
	SubVersion           int64
	ExpressionType       string // TAG (also when empty) or SQL92
}

// DecodePullRequest reads a PULL_MESSAGE header. It does not allocate
// unless a field is refused: a pull is on the hot path of consumption.
func DecodePullRequest(c *remoting.Command) (PullRequest, error) {
	f := fields{c: c}
	h := PullRequest{
		ConsumerGroup:        f.need("consumerGroup"),
		Topic:                f.need("topic"),
		QueueID:              f.needI32("queueId"),
		QueueOffset:          f.needI64("queueOffset"),
		MaxMsgNums:           f.needI32("maxMsgNums"),
		SysFlag:              f.needI32("sysFlag"),
		CommitOffset:         f.needI64("commitOffset"),
		SuspendTimeoutMillis: f.needI64("suspendTimeoutMillis"),
		Subscription:         f.str("subscription"),
		SubVersion:           f.needI64("subVersion"),
		ExpressionType:       f.str("expressionType"),
	}
	return h, f.result()
}

// EncodePullRequest returns a PULL_MESSAGE request.
func EncodePullRequest(h PullRequest) *remoting.Command {
	return remoting.NewRequest(CodePullMessage, map[string]string{
		"consumerGroup":        h.ConsumerGroup,
		"topic":                h.Topic,
		"queueId":              itoa(h.QueueID),
		"queueOffset":          itoa(h.QueueOffset),
		"maxMsgNums":           itoa(h.MaxMsgNums),
		"sysFlag":              itoa(h.SysFlag),
		"commitOffset":         itoa(h.CommitOffset),
		"suspendTimeoutMillis": itoa(h.SuspendTimeoutMillis),
		"subscription":         h.Subscription,
		"subVersion":           itoa(h.SubVersion),
		"expressionType":       h.ExpressionType,
	}, nil)
}

// PullResponse is the header of a pull answer (codes RespSuccess (FOUND),
// RespPullNotFound, RespPullRetryImmediately, RespPullOffsetMoved). All
// four fields are required.
type PullResponse struct {
	NextBeginOffset      int64
	MinOffset            int64
	MaxOffset            int64
	SuggestWhichBrokerID int64 // 0: the master
}

// EncodePullResponse returns the answer to req with code and r's fields;
// the caller adds the body.
func EncodePullResponse(req *remoting.Command, code int16, r PullResponse) *remoting.Command {
	resp := remoting.NewResponse(req, code, "")
	resp.ExtFields = map[string]string{
		"nextBeginOffset":      itoa(r.NextBeginOffset),
		"minOffset":            itoa(r.MinOffset),
		"maxOffset":            itoa(r.MaxOffset),
		"suggestWhichBrokerId": itoa(r.SuggestWhichBrokerID),
	}
	return resp
}

// DecodePullResponse reads a pull answer's header. Only answers with one of
// the pull codes carry it; other codes are refusals with a remark.
func DecodePullResponse(c *remoting.Command) (PullResponse, error) {
	f := fields{c: c}
	r := PullResponse{
		NextBeginOffset:      f.needI64("nextBeginOffset"),
		MinOffset:            f.needI64("minOffset"),
		MaxOffset:            f.needI64("maxOffset"),
		SuggestWhichBrokerID: f.needI64("suggestWhichBrokerId"),
	}
	return r, f.result()
}
