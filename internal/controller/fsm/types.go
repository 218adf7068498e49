package fsm

import "errors"

// Replica is one member of a broker group as the controller knows it.
type Replica struct {
	// ID is the replica's identity in its group, ≥ 1, assigned once by the
	// controller (Register with ID 0) and persisted by the broker; never
	// its address.
	ID       int64
	Addr     string // remoting address clients dial
	HAAddr   string // replication listener (served while it is the master)
	GRPCAddr string // 5.x gRPC front; may be empty
	// Token is a random string the broker persists before its first
	// Register: a Register with ID 0 whose token a replica of the group
	// already has answers that replica (the answer to the first one was
	// lost), so a retry never leaves a phantom replica behind.
	Token string
	// Incarnation is new on every Register (Kafka's broker epoch): an
	// in-sync set change naming an older one is refused (KIP-903).
	Incarnation uint64
}

// Group is the replicated state of one broker group (one --broker-name).
type Group struct {
	Cluster string
	Name    string
	// Master is the replica id of the master; 0: none (the group is offline
	// until a member of ISR is live again).
	Master int64
	// Epoch is the master epoch: strictly increasing, 0 before the first
	// master.
	Epoch uint32
	// ISR is the in-sync set, sorted, without duplicates; it contains
	// Master whenever Master != 0.
	ISR []int64
	// ISRVersion grows by one on every change of ISR (AlterISR, Elect,
	// Register of a restarted member, Unregister).
	ISRVersion uint64
	// Replicas are the group's registered members, sorted by ID.
	Replicas []Replica
	// NextID is the next replica id Register assigns (starts at 1).
	NextID int64
	// TransferTo is a graceful transfer asked for (0: none); Elect clears it.
	TransferTo int64
}

// Audit records an election an operator should know about: unclean ones
// (outside the ISR) and forced ones (elect-master).
type Audit struct {
	Group   string
	Epoch   uint32
	Master  int64
	Reason  string
	Unclean bool
}

// State is everything the controller replicates.
type State struct {
	Groups map[string]*Group // by group name
	// NextIncarnation is the next incarnation Register hands out (global,
	// starts at 1).
	NextIncarnation uint64
	// Audit holds the last MaxAudit audited elections, oldest first.
	Audit []Audit
}

// MaxAudit bounds State.Audit.
const MaxAudit = 64

// Kind names a command.
type Kind uint8

// Commands.
const (
	// KindRegister: a replica starts (or restarts): assign an ID when
	// Replica.ID is 0, hand out a new incarnation, record its addresses.
	// The first replica of a fresh group (no epoch yet) becomes its master
	// with epoch max(LastEpoch, 0)+1 and ISR {it}. The master that
	// restarts stays the master in a new epoch (Epoch+1): its log may have
	// lost an unsynced tail a slave still holds, and the new epoch is what
	// makes that slave cut it (same epoch, different bytes would go
	// unnoticed). A restarted member of
	// the ISR that is not the master leaves the ISR (it rejoins through the
	// master's AlterISR once caught up).
	KindRegister Kind = iota + 1
	// KindAlterISR: the master of Epoch changes the in-sync set;
	// compare-and-set on (Master, Epoch, ISRVersion, Incarnations).
	KindAlterISR
	// KindElect: a new master (NewMaster) for the group: CAS on Epoch (and
	// ISRVersion when non-zero); NewMaster ∈ ISR unless Unclean (audited).
	// The epoch becomes Epoch+1; the ISR is inherited minus the old master
	// (kept when Reason is ReasonTransfer), with NewMaster in it.
	KindElect
	// KindUnregister: a controlled shutdown of a replica that is not the
	// master: it leaves the ISR.
	KindUnregister
	// KindTransfer: ask the master to hand over to NewMaster (∈ ISR, not
	// the master) or, with NewMaster 0, cancel; sets Group.TransferTo.
	KindTransfer
)

// Election reasons (Command.Reason of KindElect).
const (
	ReasonMasterLost = "master-lost"  // the master's session and lease expired
	ReasonTransfer   = "transfer"     // the master resigned to a caught-up replica
	ReasonOperator   = "elect-master" // petrel cluster elect-master
	ReasonOffline    = "offline"      // the group had no master; an ISR member came back
)

// Command is one change of State, applied by Apply on every voter.
type Command struct {
	Kind    Kind
	Cluster string
	Group   string
	// Register: the replica (ID 0: assign one) and the epoch of its last
	// record.
	Replica   Replica
	LastEpoch uint32
	// AlterISR and Elect: compare-and-set expectations.
	Master     int64
	Epoch      uint32
	ISRVersion uint64
	// AlterISR: the new set (must contain Master) and each member's
	// incarnation as the master saw it.
	ISR          []int64
	Incarnations map[int64]uint64
	// Elect, Transfer: the target.
	NewMaster int64
	// Elect: outside the ISR (only when the controller allows unclean
	// elections; audited).
	Unclean bool
	Reason  string
	// Unregister: which replica, with its incarnation.
	ID          int64
	Incarnation uint64
}

// Result is what Apply answers: the group after the command, and for
// Register the replica's id and incarnation.
type Result struct {
	Group       Group
	ReplicaID   int64
	Incarnation uint64
}

// Errors of Apply: a refused command changes nothing.
var (
	// ErrStale: a compare-and-set expectation (master, epoch, ISR version,
	// incarnation) does not hold.
	ErrStale = errors.New("fsm: stale master, epoch, in-sync set version or incarnation")
	// ErrNotInISR: an election or transfer target outside the in-sync set.
	ErrNotInISR = errors.New("fsm: the target is not in the in-sync set")
	// ErrUnknown: an unknown group or replica.
	ErrUnknown = errors.New("fsm: unknown group or replica")
	// ErrInvalid: a command that can never be valid (empty group, ISR
	// without the master, unknown kind, ...).
	ErrInvalid = errors.New("fsm: invalid command")
)
