package broker

import "time"

// ReplicationInfo is what a broker of a replicated group knows of its
// replication, for `cluster list` and the metrics. The daemon fills it
// (Config.ReplicationStatus) from the ha package: on a master from its
// tracker (the slaves it sees), on a slave from its fetcher (itself).
type ReplicationInfo struct {
	// Epoch is the master epoch this broker knows.
	Epoch uint32
	// CommitPoint is the commit-log offset below which records are
	// committed (the group's high watermark).
	CommitPoint int64
	// Replicas are the slaves a master tracks, or on a slave just itself.
	Replicas []ReplicaInfo
	// LogRestarts (a slave) counts the times its log started over from
	// the master's first retained byte, its end having fallen below it,
	// since the broker started.
	LogRestarts int64
}

// ReplicaInfo is one slave's replication state.
type ReplicaInfo struct {
	ID       int64         // broker id (≥ 1)
	LagBytes int64         // master's log end minus the slave's
	Lag      time.Duration // how long the slave has been behind
	// InSync: within the lag bounds (a master's view; a slave's own
	// report says whether its fetches are being answered).
	InSync bool
	// FallOuts counts the times the slave fell out of sync since the
	// master started (a master's view).
	FallOuts uint64
}

// ReplicationStatus returns Config.ReplicationStatus's answer, or false
// when the broker has none (not replicated).
func (b *Broker) ReplicationStatus() (ReplicationInfo, bool) {
	if b.cfg.ReplicationStatus == nil {
		return ReplicationInfo{}, false
	}
	return b.cfg.ReplicationStatus(), true
}
