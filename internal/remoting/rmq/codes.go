package rmq

// Request codes (RocketMQ's RequestCode), the ones Petrel serves or sends.
const (
	CodeSendMessage                      int16 = 10
	CodePullMessage                      int16 = 11
	CodeQueryMessage                     int16 = 12
	CodeQueryConsumerOffset              int16 = 14
	CodeUpdateConsumerOffset             int16 = 15
	CodeUpdateAndCreateTopic             int16 = 17
	CodeGetAllTopicConfig                int16 = 21
	CodeGetBrokerRuntimeInfo             int16 = 28
	CodeSearchOffsetByTimestamp          int16 = 29
	CodeGetMaxOffset                     int16 = 30
	CodeGetMinOffset                     int16 = 31
	CodeViewMessageByID                  int16 = 33
	CodeHeartBeat                        int16 = 34
	CodeUnregisterClient                 int16 = 35
	CodeConsumerSendMsgBack              int16 = 36
	CodeEndTransaction                   int16 = 37
	CodeGetConsumerListByGroup           int16 = 38
	CodeCheckTransactionState            int16 = 39 // broker → producer
	CodeNotifyConsumerIDsChanged         int16 = 40 // broker → consumer
	CodeLockBatchMQ                      int16 = 41
	CodeUnlockBatchMQ                    int16 = 42
	CodePutKVConfig                      int16 = 100
	CodeGetKVConfig                      int16 = 101
	CodeDeleteKVConfig                   int16 = 102
	CodeRegisterBroker                   int16 = 103
	CodeUnregisterBroker                 int16 = 104
	CodeGetRouteInfoByTopic              int16 = 105
	CodeGetBrokerClusterInfo             int16 = 106
	CodeUpdateAndCreateSubscriptionGroup int16 = 200
	CodeGetAllSubscriptionGroup          int16 = 201
	CodeGetTopicStatsInfo                int16 = 202
	CodeGetConsumerConnectionList        int16 = 203
	CodeGetAllTopicList                  int16 = 206
	CodeDeleteSubscriptionGroup          int16 = 207
	CodeGetConsumeStats                  int16 = 208
	CodeDeleteTopicInBroker              int16 = 215
	CodeDeleteTopicInNamesrv             int16 = 216
	CodeGetKVListByNamespace             int16 = 219
	CodeResetConsumerClientOffset        int16 = 220 // broker → consumer
	CodeInvokeBrokerToResetOffset        int16 = 222
	CodeSendMessageV2                    int16 = 310
	CodeSendBatchMessage                 int16 = 320
	CodeQueryDataVersion                 int16 = 322
	CodeRecallMessage                    int16 = 370 // RocketMQ 5.3+ (recall.go)

	// Petrel's own requests, above RocketMQ's range.
	CodePetrelResendDLQ     int16 = 10101
	CodePetrelCancelDelayed int16 = 10102
	// CodePetrelHandBackOffsets: a slave hands the consumer offsets
	// committed on it while its master was away to the master (handback.go).
	CodePetrelHandBackOffsets int16 = 10103
	// CodePetrelForwardPopToDLQ moves a popped message to its group's
	// dead-letter queue (a slave's gRPC front forwards the 5.x
	// ForwardMessageToDeadLetterQueue with it; pop.go).
	CodePetrelForwardPopToDLQ int16 = 10104
)

// RocketMQ 5's request codes above int16: JSON headers only
// (remoting.NewWideRequest, Server.HandleWide); see pop.go.
const (
	CodePopMessage          int32 = 200050
	CodeAckMessage          int32 = 200051
	CodePeekMessage         int32 = 200052 // popmore.go
	CodeChangeInvisibleTime int32 = 200053
	CodeNotification        int32 = 200054 // popmore.go
	CodePollingInfo         int32 = 200055 // popmore.go
	CodeBatchAckMessage     int32 = 200151 // popmore.go
)

// Response codes (RocketMQ's ResponseCode). 0 to 3 are also
// remoting.CodeSuccess … CodeRequestCodeNotSupported.
const (
	RespSuccess                   int16 = 0
	RespSystemError               int16 = 1
	RespSystemBusy                int16 = 2
	RespRequestCodeNotSupported   int16 = 3
	RespFlushDiskTimeout          int16 = 10
	RespSlaveNotAvailable         int16 = 11
	RespFlushSlaveTimeout         int16 = 12
	RespMessageIllegal            int16 = 13
	RespServiceNotAvailable       int16 = 14
	RespNoPermission              int16 = 16
	RespTopicNotExist             int16 = 17
	RespPullNotFound              int16 = 19
	RespPullRetryImmediately      int16 = 20
	RespPullOffsetMoved           int16 = 21
	RespQueryNotFound             int16 = 22
	RespSubscriptionParseFailed   int16 = 23
	RespSubscriptionNotExist      int16 = 24
	RespSubscriptionGroupNotExist int16 = 26
	RespInvalidParameter          int16 = 29
	RespConsumerNotOnline         int16 = 206
	RespNoMessage                 int16 = 208
	RespPollingFull               int16 = 209
	RespPollingTimeout            int16 = 210
	RespIllegalOperation          int16 = 604
)
