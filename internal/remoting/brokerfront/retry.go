package brokerfront

// CONSUMER_SEND_MSG_BACK (36): ext group, offset (commit-log offset of the
// failed message), delayLevel, originMsgId, originTopic, unitMode,
// maxReconsumeTimes, bname. Answered with code 0 and no fields.

import (
	"context"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
)

const codeConsumerSendMsgBack int16 = 36

func (f *Front) sendBack(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ext := req.ExtFields
	_, err := f.b.SendBack(ctx, &broker.SendBackRequest{
		Offset:            parseInt64(ext["offset"]),
		Group:             ext["group"],
		DelayLevel:        parseInt32(ext["delayLevel"]),
		OriginMsgID:       ext["originMsgId"],
		OriginTopic:       ext["originTopic"],
		MaxReconsumeTimes: parseInt32(ext["maxReconsumeTimes"]),
	})
	if err != nil {
		return errorResponse(req, err)
	}
	return remoting.NewResponse(req, respSuccess, "")
}
