package brokerfront

import (
	"errors"
	"fmt"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
)

// Request codes.
const (
	codeSendMessage               int16 = 10
	codePullMessage               int16 = 11
	codeQueryMessage              int16 = 12
	codeQueryConsumerOffset       int16 = 14
	codeUpdateConsumerOffset      int16 = 15
	codeUpdateAndCreateTopic      int16 = 17
	codeSearchOffsetByTimestamp   int16 = 29
	codeGetMaxOffset              int16 = 30
	codeGetMinOffset              int16 = 31
	codeViewMessageByID           int16 = 33
	codeHeartBeat                 int16 = 34
	codeUnregisterClient          int16 = 35
	codeGetConsumerListByGroup    int16 = 38
	codeNotifyConsumerIDsChanged  int16 = 40
	codeLockBatchMQ               int16 = 41
	codeUnlockBatchMQ             int16 = 42
	codeGetAllSubscriptionGroup   int16 = 201
	codeDeleteTopicInBroker       int16 = 215
	codeSendMessageV2             int16 = 310
	codeSendBatchMessage          int16 = 320
	codeGetAllTopicConfig         int16 = 21
	codeGetBrokerRuntimeInfo      int16 = 28
	codeGetConsumerConnectionList int16 = 203
)

// Response codes.
const (
	respSuccess                 int16 = 0
	respSystemError             int16 = 1
	respSystemBusy              int16 = 2
	respFlushDiskTimeout        int16 = 10
	respMessageIllegal          int16 = 13
	respServiceNotAvailable     int16 = 14
	respNoPermission            int16 = 16
	respTopicNotExist           int16 = 17
	respPullNotFound            int16 = 19
	respPullRetryImmediately    int16 = 20
	respPullOffsetMoved         int16 = 21
	respQueryNotFound           int16 = 22
	respSubscriptionParseFailed int16 = 23
	respSubscriptionNotExist    int16 = 24
)

// kindCodes maps broker error kinds to response codes; anything else is
// SYSTEM_ERROR (1), which producers retry on another queue.
var kindCodes = map[broker.Kind]int16{
	broker.KindTopicNotExist:           respTopicNotExist,
	broker.KindMessageIllegal:          respMessageIllegal,
	broker.KindNoPermission:            respNoPermission,
	broker.KindServiceUnavailable:      respServiceNotAvailable,
	broker.KindSubscriptionNotExist:    respSubscriptionNotExist,
	broker.KindSubscriptionParseFailed: respSubscriptionParseFailed,
	broker.KindQueryNotFound:           respQueryNotFound,
	broker.KindSystemBusy:              respSystemBusy,
	broker.KindGroupNotExist:           respSubscriptionGroupNotExist,
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
		return remoting.NewResponse(req, respSystemError, fmt.Sprintf("request code %d failed inside the broker; retry, and report it if it persists", req.Code))
	}
	code, ok := kindCodes[be.Kind]
	if !ok {
		code = respSystemError
	}
	if code == respSystemError || be.Kind == broker.KindServiceUnavailable {
		f.log.Warn("request failed", "code", req.Code, "err", err)
	} else {
		f.log.Debug("request refused", "code", req.Code, "err", err)
	}
	return remoting.NewResponse(req, code, be.Msg)
}
