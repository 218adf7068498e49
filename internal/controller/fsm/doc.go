// Package fsm is the controller's replicated state machine: every broker
// group's master, master epoch, in-sync set (ISR) and its version, and the
// registered replicas with their incarnations; and the pure policy the
// active controller uses to propose elections (PickMaster,
// LeaseSurelyExpired).
//
// The package is pure: no I/O, no clock, no goroutines, no randomness.
// State.Apply is deterministic, so every raft voter that applies the same
// commands in the same order holds the same state. Apply is not safe for
// concurrent use; the raft FSM (package controller) serialises it and reads
// under its lock. Liveness, heartbeats and leases are the active
// controller's soft state and never reach this package except as arguments
// of the policy functions.
//
// # Invariants
//
// Of every state (State.Check): per group, Master is 0 or a member of ISR,
// and non-zero only with Epoch ≥ 1; ISR is sorted, without duplicates and a
// subset of the replica ids; Replicas are sorted by id, ids ≥ 1; NextID is
// greater than every replica id; incarnations lie in [1, NextIncarnation)
// and are unique across the state; TransferTo is 0 or an ISR member other
// than the master; strings are at most MaxStringBytes; at most MaxGroups
// groups, MaxReplicas replicas per group, MaxAudit audit entries.
//
// Of every step (CheckStep): an epoch never decreases and changes only by
// one through an Elect, or from 0 through the Register that creates the
// group; the master changes only with the epoch; a new master was in the
// previous ISR unless the election was asked to be unclean and is audited;
// the old master leaves the ISR unless the election is a transfer;
// ISRVersion grows by exactly one on every ISR change and never otherwise; a
// replica joins the ISR only through the master's AlterISR naming its
// current incarnation, or by being elected; an AlterISR or Elect changes its
// group only when its compare-and-set expectations held; an ISR member that
// restarted (new incarnation) does not stay in the ISR of a group that has a
// master; a command changes only its own group. Check and CheckStep report
// ErrInvariant; the tests assert both after every command of seeded random
// sequences (-fsm.seeds N, -fsm.seed S to rerun one), and the simulation
// may do the same.
//
// # Commands
//
// Every command names a non-empty Group (and may name its Cluster: a
// mismatch is refused). A refused command changes nothing; the error is
// ErrInvalid (can never be valid as sent), ErrUnknown (no such group or
// replica), ErrStale (a compare-and-set expectation failed) or ErrNotInISR,
// wrapped with the reason. Checks run in that spirit: the command's own
// shape first, then the compare-and-set, then membership.
//
//   - Register: Replica.ID 0 assigns NextID; an unknown non-zero id is added
//     (the replica kept its id, the state is new) and NextID moves past it;
//     a known id gets its new addresses. Every Register hands out the next
//     incarnation (Result.ReplicaID, Result.Incarnation). The first replica
//     of a fresh group becomes its master at epoch LastEpoch+1 with ISR
//     {it}. The current master stays master at the same epoch. Another ISR
//     member leaves the ISR (its unsynced tail may be gone; it rejoins
//     through AlterISR), except in a group without a master, whose ISR is
//     what may still be elected. Refused: negative id, addresses beyond
//     MaxStringBytes, a full group (MaxReplicas), a full state (MaxGroups, or
//     a snapshot that could exceed MaxSnapshotBytes).
//   - AlterISR: compare-and-set on Master, Epoch and ISRVersion; the new set
//     (sorted and deduplicated by Apply) must contain Master and only
//     registered replicas, each non-master member with its current
//     incarnation in Incarnations (the master's is checked when given):
//     KIP-903. An unchanged set is accepted without a new version.
//   - Elect: NewMaster > 0 and not the master; Reason one of the Reason*
//     constants; compare-and-set on Epoch, on ISRVersion and Master when
//     non-zero, and on NewMaster's Incarnation when non-zero. master-lost and
//     transfer need a master, offline needs none; transfer needs
//     TransferTo == NewMaster and cannot be unclean. NewMaster must be in the
//     ISR unless Unclean. The epoch becomes Epoch+1, TransferTo is cleared;
//     the ISR is inherited minus the old master (kept on transfer), or is
//     {NewMaster} after an unclean election (the others' logs are no longer
//     known to be prefixes of the new master's: they rejoin through
//     AlterISR). Unclean and elect-master elections are appended to Audit
//     (the last MaxAudit kept).
//   - Unregister: a controlled shutdown of replica ID with its current
//     Incarnation; it leaves the ISR and stays registered. The master is
//     refused (transfer first).
//   - Transfer: NewMaster ∈ ISR, not the master, sets TransferTo; 0 cancels.
//     Epoch, when non-zero, is compared. A group without a master is
//     refused. A target that leaves the ISR cancels the transfer.
//
// # Encoding
//
// Commands (EncodeCommand/DecodeCommand) and states (Snapshot/Restore) use
// a canonical binary layout: uv = unsigned varint, sv = zig-zag varint
// (encoding/binary, minimal length: overlong varints are refused), str =
// uv length + bytes (≤ MaxStringBytes), ids = uv count (≤ MaxReplicas) +
// count × sv, bool = one byte 0 or 1.
//
//	command  := 0x01 (version) kind:u8 cluster:str group:str replica
//	            lastEpoch:uv master:sv epoch:uv isrVersion:uv isr:ids
//	            nInc:uv (≤ MaxReplicas) nInc × (id:sv inc:uv) (ids ascending)
//	            newMaster:sv unclean:bool reason:str id:sv incarnation:uv
//	replica  := id:sv addr:str haAddr:str grpcAddr:str incarnation:uv
//	snapshot := "PFSM" 0x01 (version) nextIncarnation:uv
//	            nGroups:uv (≤ MaxGroups) nGroups × group (names ascending)
//	            nAudit:uv (≤ MaxAudit) nAudit × audit
//	group    := cluster:str name:str master:sv epoch:uv isr:ids isrVersion:uv
//	            nReplicas:uv (≤ MaxReplicas) nReplicas × replica
//	            nextID:sv transferTo:sv
//	audit    := group:str epoch:uv master:sv reason:str unclean:bool
//
// Epochs must fit 32 bits. A command is at most MaxCommandBytes, a snapshot
// at most MaxSnapshotBytes; a count the remaining bytes cannot hold is
// refused before anything is allocated, so decoding allocates a small
// multiple of the input. Trailing bytes are refused. Restore also refuses a
// state that fails Check. FuzzDecodeCommand and FuzzRestore (seeds in
// testdata/fuzz, kept current by TestFuzzSeedCorpus) check the decoders:
// go test -fuzz FuzzRestore -fuzzminimizetime 2s ./internal/controller/fsm.
// There is no checksum: raft's FileSnapshotStore
// checksums snapshots, and log entries are the log store's to keep intact.
package fsm
