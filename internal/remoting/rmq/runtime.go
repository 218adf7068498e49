package rmq

// 28 GET_BROKER_RUNTIME_INFO: no header; answer a KVTable of string values
// (rates as "10s 1min 10min" triples of two-decimal numbers).

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/petrelmq/petrel/internal/remoting"
)

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
	// Petrel's replication keys. RuntimeRole is "master" or "slave" (the
	// role now, which failover may change while the broker id stays).
	// The others are present on a broker of a replicated group:
	// RuntimeEpoch its master epoch, RuntimeCommitPoint the commit point,
	// RuntimeReplicas its replicas' state (a master: every slave it
	// tracks; a slave: itself) as FormatReplicas writes it.
	RuntimeRole        = "petrelRole"
	RuntimeEpoch       = "petrelEpoch"
	RuntimeCommitPoint = "petrelCommitPoint"
	RuntimeReplicas    = "petrelReplicas"
	// RuntimeLogRestarts (a slave) counts the times its log started over
	// from its master's first retained byte since it started.
	RuntimeLogRestarts = "petrelLogRestarts"
)

// ReplicaState is one slave's entry of RuntimeReplicas.
type ReplicaState struct {
	ID         int64
	LagBytes   int64
	LagSeconds float64
	InSync     bool
}

// FormatReplicas writes replicas as "id:lagBytes:lagSeconds:inSync" joined
// by commas (e.g. "1:0:0.00:true,2:4096:1.50:false").
func FormatReplicas(rs []ReplicaState) string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d:%d:%.2f:%t", r.ID, r.LagBytes, r.LagSeconds, r.InSync)
	}
	return b.String()
}

// ParseReplicas reads FormatReplicas's form; malformed entries are
// skipped.
func ParseReplicas(s string) []ReplicaState {
	var out []ReplicaState
	for _, e := range strings.Split(s, ",") {
		f := strings.Split(e, ":")
		if len(f) != 4 {
			continue
		}
		id, err1 := strconv.ParseInt(f[0], 10, 64)
		lag, err2 := strconv.ParseInt(f[1], 10, 64)
		secs, err3 := strconv.ParseFloat(f[2], 64)
		in, err4 := strconv.ParseBool(f[3])
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			continue
		}
		out = append(out, ReplicaState{ID: id, LagBytes: lag, LagSeconds: secs, InSync: in})
	}
	return out
}

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
