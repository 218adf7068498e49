package nemesis

import (
	"fmt"
	"strings"
)

// Kind is a kind of fault.
type Kind string

// The fault kinds.
const (
	// Kill SIGKILLs a process; its heal starts it again on the same data
	// directory, at once.
	Kill Kind = "kill"
	// Pause SIGSTOPs a process for the hold; its heal is SIGCONT.
	Pause Kind = "pause"
	// Partition cuts a process or a client off through the fault proxy
	// for the hold; its heal restores the links.
	Partition Kind = "partition"
	// Restart stops a process gracefully (SIGTERM); its heal starts it
	// again, at once.
	Restart Kind = "restart"
	// SlowDisk makes a broker's disk slow through its test-only fault
	// hook for the hold.
	SlowDisk Kind = "slow-disk"
	// KillMaster SIGKILLs a broker group's master; its heal starts it
	// again on the same data directory, at once.
	KillMaster Kind = "kill-master"
	// KillSlave SIGKILLs a slave; its heal starts it again, at once.
	KillSlave Kind = "kill-slave"
	// PartitionSlave cuts a slave's replication link to its master (the
	// fault proxy holds it) for the hold; its heal restores the link.
	PartitionSlave Kind = "partition-slave"
	// PauseMaster SIGSTOPs a group's master for the hold; its heal is
	// SIGCONT. With controllers the hold is past the master's lease, so
	// that a slave takes over and the old master, resumed, must not ack.
	PauseMaster Kind = "pause-master"
	// PartitionMasterController cuts only the links from a group's
	// master to the controllers (its heartbeats) for the hold, past its
	// lease: the master fences itself and a slave takes over, while
	// clients and slaves still reach the old master. Needs controllers.
	PartitionMasterController Kind = "partition-master-controller"
	// KillControllerLeader SIGKILLs the name server whose controller
	// voter leads and, right after, a group's master: the new controller
	// leader must handle the master's loss (after its session wait). Its
	// heal starts both again. Needs controllers.
	KillControllerLeader Kind = "kill-controller-leader"
)

// Kinds lists every kind, in the order the docs give them.
var Kinds = []Kind{Kill, Pause, Partition, Restart, SlowDisk, KillMaster, KillSlave, PartitionSlave, PauseMaster, PartitionMasterController, KillControllerLeader}

// NeedsControllers reports whether a fault of kind k needs a topology
// with controllers (partition-master-controller, kill-controller-leader).
func (k Kind) NeedsControllers() bool {
	return k == PartitionMasterController || k == KillControllerLeader
}

// Held reports whether a fault of kind k stays on for a hold before it is
// healed (pause, partition, slow-disk, partition-slave, pause-master,
// partition-master-controller).
// The kills and restart are healed as soon as the process is down.
func (k Kind) Held() bool {
	switch k {
	case Pause, Partition, SlowDisk, PartitionSlave, PauseMaster, PartitionMasterController:
		return true
	}
	return false
}

// Aim is the kind of process a fault hits.
type Aim string

// The aims.
const (
	// AnyProcess: any process of the cluster (name servers too).
	AnyProcess Aim = "any"
	// Brokers: a process that holds a broker (a server, a master or a
	// slave), not a name server.
	Brokers Aim = "broker"
	// Masters: a broker group's master.
	Masters Aim = "master"
	// Slaves: a slave.
	Slaves Aim = "slave"
)

// Aim says which processes a fault of kind k may hit: kill-master,
// pause-master, partition-master-controller and kill-controller-leader a
// master, kill-slave and partition-slave a slave, slow-disk a broker, the
// rest any process.
func (k Kind) Aim() Aim {
	switch k {
	case KillMaster, PauseMaster, PartitionMasterController, KillControllerLeader:
		return Masters
	case KillSlave, PartitionSlave:
		return Slaves
	case SlowDisk:
		return Brokers
	}
	return AnyProcess
}

func (k Kind) known() bool {
	for _, x := range Kinds {
		if k == x {
			return true
		}
	}
	return false
}

// ParseKinds parses a --faults value: kinds separated by commas (spaces
// around them are ignored). "" and "none" are no faults. An unknown kind or
// one listed twice is an error that names it.
func ParseKinds(s string) ([]Kind, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return nil, nil
	}
	var out []Kind
	seen := map[Kind]bool{}
	for _, f := range strings.Split(s, ",") {
		k := Kind(strings.TrimSpace(f))
		switch {
		case k == "":
			return nil, fmt.Errorf("nemesis: empty fault kind in %q", s)
		case !k.known():
			return nil, fmt.Errorf("nemesis: unknown fault kind %q (known: %s)", k, knownList())
		case seen[k]:
			return nil, fmt.Errorf("nemesis: fault kind %q listed twice", k)
		}
		seen[k] = true
		out = append(out, k)
	}
	return out, nil
}

func knownList() string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}
