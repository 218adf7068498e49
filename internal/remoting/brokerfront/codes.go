package brokerfront

import (
	"errors"
	"fmt"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
)

// Request codes.
const (
	codeSendMessageV2 int16 = 310
)

// Response codes.
const ()

// kindCodes maps broker error kinds to response codes; anything else is
// SYSTEM_ERROR (1), which producers retry on another queue.
var kindCodes = map[broker.Kind]int16{
	broker.KindTopicNotExist:           rmq.RespTopicNotExist,
	broker.KindMessageIllegal:          rmq.RespMessageIllegal,
	broker.KindNoPermission:            rmq.RespNoPermission,
	broker.KindServiceUnavailable:      rmq.RespServiceNotAvailable,
	broker.KindSubscriptionNotExist:    rmq.RespSubscriptionNotExist,
	broker.KindSubscriptionParseFailed: rmq.RespSubscriptionParseFailed,
	broker.KindQueryNotFound:           rmq.RespQueryNotFound,
	broker.KindSystemBusy:              rmq.RespSystemBusy,
	broker.KindGroupNotExist:           rmq.RespSubscriptionGroupNotExist,
	broker.KindIllegalOperation:        rmq.RespIllegalOperation,
	// Pop acknowledgements and changes of invisible time (pop.go).
	broker.KindInvalidReceiptHandle: rmq.RespInvalidParameter,
	broker.KindReceiptHandleExpired: rmq.RespNoMessage,
}

// errorResponse maps a broker error to a response code and remark. The
// remark is the broker's sentence for the client (what happened, what to
// do), never the cause behind it (file paths, Go error chains): that goes
// to the log, at Warn when the broker failed and at Debug when it refused
// the request.
func (f *Front) errorResponse(req *remoting.Command, err error) *remoting.Command {
	var be *broker.Error
	if !errors.As(err, &be) {
		f.log.Warn("request failed", "code", req.Code, "err", err)
		return remoting.NewResponse(req, rmq.RespSystemError, fmt.Sprintf("request code %d failed inside the broker; retry, and report it if it persists", req.Code))
	}
	code, ok := kindCodes[be.Kind]
	if !ok {
		code = rmq.RespSystemError
	}
	if errors.Is(err, broker.ErrNotMaster) || errors.Is(err, broker.ErrLeaseExpired) {
		// Every write of a slave or a fenced master is refused: the broker
		// logs the role change and the lapse once; not each request.
		f.log.Debug("request refused by a slave or a fenced master", "code", req.Code, "err", err)
	} else if code == rmq.RespSystemError || be.Kind == broker.KindServiceUnavailable {
		f.log.Warn("request failed", "code", req.Code, "err", err)
	} else {
		f.log.Debug("request refused", "code", req.Code, "err", err)
	}
	return remoting.NewResponse(req, code, be.Msg)
}
