package rmq

// 28 GET_BROKER_RUNTIME_INFO: no header; answer a KVTable of string values
// (rates as "10s 1min 10min" triples of two-decimal numbers).

import "github.com/petrelmq/petrel/internal/remoting"

// Keys of the runtime info table that Petrel writes and its CLI reads.
// RocketMQ's tools read them by these names.
const (
	RuntimeBrokerVersionDesc      = "brokerVersionDesc"
	RuntimeBrokerVersion          = "brokerVersion"
	RuntimeBootTimestamp          = "bootTimestamp"
	RuntimeBrokerActive           = "brokerActive"
	RuntimePutTps                 = "putTps"
	RuntimeGetTransferredTps      = "getTransferredTps"
	RuntimeGetTransferedTps       = "getTransferedTps" // RocketMQ's misspelling, read by older tools
	RuntimeMsgPutTotalTodayNow    = "msgPutTotalTodayNow"
	RuntimeMsgGetTotalTodayNow    = "msgGetTotalTodayNow"
	RuntimePutMessageSizeTotal    = "putMessageSizeTotal"
	RuntimeBrokerName             = "brokerName"
	RuntimeClusterName            = "clusterName"
	RuntimeBrokerID               = "brokerId"
	RuntimeCommitLogDiskRatio     = "commitLogDiskRatio"
	RuntimeCommitLogDirCapacity   = "commitLogDirCapacity"
	RuntimeCommitLogDirTotalBytes = "commitLogDirTotalBytes"
	RuntimeCommitLogDirFreeBytes  = "commitLogDirFreeBytes"
	RuntimeCommitLogDirUsedBytes  = "commitLogDirUsedBytes"
	// RuntimeRemovedUnconsumedMsgs is Petrel's own: messages retention
	// removed early before a group consumed them, since start.
	RuntimeRemovedUnconsumedMsgs = "removedUnconsumedMsgs"
)

// EncodeRuntimeInfoRequest is a 28 request.
func EncodeRuntimeInfoRequest() *remoting.Command {
	return remoting.NewRequest(CodeGetBrokerRuntimeInfo, nil, nil)
}

// EncodeRuntimeInfoBody writes the answer body of 28.
func EncodeRuntimeInfoBody(table map[string]string) []byte {
	return EncodeKVTableBody(KVTable{Table: table})
}

// DecodeRuntimeInfoBody reads the answer body of 28.
func DecodeRuntimeInfoBody(body []byte) (map[string]string, error) {
	t, err := DecodeKVTableBody(body)
	return t.Table, err
}
