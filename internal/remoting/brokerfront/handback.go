package brokerfront

import (
	"context"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// handBack serves rmq.CodePetrelHandBackOffsets on a master: a slave's
// offsets committed while the master was away (broker.TakeHandedBackOffsets
// applies the rule). A slave answers it with the refusal of a slave.
func (f *Front) handBack(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	offs, err := rmq.DecodeHandBackRequest(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	in := make([]broker.OffsetEntry, len(offs))
	for i, o := range offs {
		in[i] = broker.OffsetEntry{Group: o.Group, Topic: o.Topic, QueueID: o.QueueID, Offset: o.Offset}
	}
	ans, err := f.b.TakeHandedBackOffsets(ctx, in)
	if err != nil {
		return f.errorResponse(req, err)
	}
	return rmq.EncodeHandBackResponse(req, ans.Offsets, ans.StateEnd)
}
