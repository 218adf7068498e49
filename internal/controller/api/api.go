// Package api is the controller's wire contract: the Petrel-private
// remoting request codes brokers and operator tools send to the controller,
// and their JSON bodies. Requests and responses carry these structs as the
// remoting body (encoding/json); errors are the response codes below, with
// a remark that says what happened and what to do.
package api

// Request codes (Petrel's private range, next to 10101..10104).
const (
	CodeRegister  int16 = 10110 // RegisterRequest → RegisterResponse
	CodeHeartbeat int16 = 10111 // HeartbeatRequest → HeartbeatResponse
	CodeAlterISR  int16 = 10112 // AlterISRRequest → GroupView
	CodeGroups    int16 = 10113 // GroupsRequest → GroupsResponse
	CodeElect     int16 = 10114 // ElectRequest → GroupView
	CodeTransfer  int16 = 10115 // TransferRequest → GroupView (TransferTo set)
	CodeResign    int16 = 10116 // ResignRequest → GroupView (the target elected)
)

// Response codes besides remoting's success (0) and SYSTEM_ERROR (1).
const (
	// CodeNotLeader: this controller is not the raft leader; the ext field
	// ExtLeader names the leader's controller address when known.
	CodeNotLeader int16 = 10190
	// CodeStale: a compare-and-set expectation failed; the body is the
	// group's current GroupView.
	CodeStale int16 = 10191
	// CodeRefused: the request can never succeed as sent (unknown group or
	// replica, target outside the in-sync set, invalid fields).
	CodeRefused int16 = 10192
)

// ExtLeader is the ext field of a CodeNotLeader answer: the leader's
// controller address ("" when no leader is known).
const ExtLeader = "petrelControllerLeader"

// RegisterRequest: a broker replica starts.
type RegisterRequest struct {
	Cluster   string `json:"cluster"`
	Group     string `json:"group"`     // --broker-name
	ReplicaID int64  `json:"replicaId"` // 0: assign one (first start)
	// Token is the random string the broker persisted before its first
	// Register; a retry of a Register whose answer was lost carries the
	// same one and gets the same replica id.
	Token     string `json:"token,omitempty"`
	Addr      string `json:"addr"`
	HAAddr    string `json:"haAddr"`
	GRPCAddr  string `json:"grpcAddr,omitempty"`
	LastEpoch uint32 `json:"lastEpoch"` // epoch of its last record (0: empty log)
	LEO       int64  `json:"leo"`
	Durable   int64  `json:"durable"`
}

// RegisterResponse: the replica's identity and its group.
type RegisterResponse struct {
	ReplicaID       int64     `json:"replicaId"`
	Incarnation     uint64    `json:"incarnation"`
	Group           GroupView `json:"group"`
	HeartbeatMillis int64     `json:"heartbeatMillis"` // how often to heartbeat
	LeaseMillis     int64     `json:"leaseMillis"`     // lease length a master gets per granted heartbeat
}

// HeartbeatRequest: every HeartbeatMillis from every replica.
type HeartbeatRequest struct {
	Group       string `json:"group"`
	ReplicaID   int64  `json:"replicaId"`
	Incarnation uint64 `json:"incarnation"`
	// Master says the sender acts as the master of Epoch.
	Master    bool   `json:"master"`
	Epoch     uint32 `json:"epoch"`
	LastEpoch uint32 `json:"lastEpoch"`
	LEO       int64  `json:"leo"`
	Durable   int64  `json:"durable"`
	HW        int64  `json:"hw"`
	// InSync (master only): the replicas its tracker counts in sync now.
	InSync []int64 `json:"inSync,omitempty"`
}

// HeartbeatResponse: the group as committed, and the lease.
type HeartbeatResponse struct {
	Group GroupView `json:"group"`
	// Lease is granted when the sender is the committed master of
	// Group.Epoch with this incarnation and this controller leads (checked
	// once per tick with raft's VerifyLeader). The broker's lease then runs
	// until its own send time of this heartbeat + LeaseMillis, on its
	// monotonic clock.
	Lease       bool  `json:"lease"`
	LeaseMillis int64 `json:"leaseMillis"`
	// Registered false: the controller does not know this incarnation;
	// register again.
	Registered bool `json:"registered"`
}

// AlterISRRequest: the master changes its in-sync set (compare-and-set).
type AlterISRRequest struct {
	Group        string           `json:"group"`
	Master       int64            `json:"master"`
	Epoch        uint32           `json:"epoch"`
	ISRVersion   uint64           `json:"isrVersion"`
	ISR          []int64          `json:"isr"`
	Incarnations map[int64]uint64 `json:"incarnations"`
}

// ElectRequest: petrel cluster elect-master.
type ElectRequest struct {
	Group     string `json:"group"`
	ReplicaID int64  `json:"replicaId"` // 0: the best live in-sync replica
	Unclean   bool   `json:"unclean"`   // allowed only when the controller runs with unclean elections on
}

// TransferRequest: petrel cluster transfer (a graceful hand-over).
type TransferRequest struct {
	Group     string `json:"group"`
	ReplicaID int64  `json:"replicaId"` // 0: the best live in-sync replica
}

// ResignRequest: a master asked to transfer has stopped acking sends and
// Target holds its whole log (LEO); the controller elects Target at once.
type ResignRequest struct {
	Group       string `json:"group"`
	ReplicaID   int64  `json:"replicaId"`
	Incarnation uint64 `json:"incarnation"`
	Epoch       uint32 `json:"epoch"`
	Target      int64  `json:"target"`
	LEO         int64  `json:"leo"`
}

// GroupsRequest: the groups (one when Group is set).
type GroupsRequest struct {
	Group string `json:"group,omitempty"`
}

// GroupsResponse: what petrel cluster groups prints.
type GroupsResponse struct {
	Leader      ControllerView   `json:"leader"`
	Controllers []ControllerView `json:"controllers"`
	Groups      []GroupView      `json:"groups"`
}

// ControllerView is one controller voter.
type ControllerView struct {
	ID     int    `json:"id"`
	Addr   string `json:"addr"`
	Leader bool   `json:"leader"`
}

// GroupView is a group as committed, with the active controller's soft
// state of each replica.
type GroupView struct {
	Cluster    string        `json:"cluster"`
	Group      string        `json:"group"`
	Master     int64         `json:"master"` // 0: offline
	Epoch      uint32        `json:"epoch"`
	ISR        []int64       `json:"isr"`
	ISRVersion uint64        `json:"isrVersion"`
	TransferTo int64         `json:"transferTo,omitempty"`
	Replicas   []ReplicaView `json:"replicas"`
}

// ReplicaView is one replica of a GroupView.
type ReplicaView struct {
	ID          int64  `json:"id"`
	Addr        string `json:"addr"`
	HAAddr      string `json:"haAddr"`
	GRPCAddr    string `json:"grpcAddr,omitempty"`
	Incarnation uint64 `json:"incarnation"`
	// Soft state (the active controller's, not replicated):
	Alive          bool   `json:"alive"` // heartbeat within the session timeout
	LastEpoch      uint32 `json:"lastEpoch"`
	LEO            int64  `json:"leo"`
	Durable        int64  `json:"durable"`
	HeartbeatAgoMs int64  `json:"heartbeatAgoMs"` // -1: none since this controller leads
}
