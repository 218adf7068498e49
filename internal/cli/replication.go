package cli

import (
	"fmt"
	"strconv"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// ReplicaStatus is the replication part of a `cluster list` row: on every
// replica the epoch and commit point it knows; on a slave its lag and
// whether it is in sync, as its master sees it (or, when the master did
// not answer, as the slave itself reports).
type ReplicaStatus struct {
	Epoch       uint32 `json:"epoch"`
	CommitPoint int64  `json:"commitPoint"`
	// LagBytes, LagSeconds and InSync are for slaves.
	LagBytes   int64   `json:"lagBytes,omitempty"`
	LagSeconds float64 `json:"lagSeconds,omitempty"`
	InSync     *bool   `json:"inSync,omitempty"`
	// LogRestarts (a slave) counts the times its log started over from
	// the master's first retained byte since it started.
	LogRestarts int64 `json:"logRestarts,omitempty"`
	// replicas: what this broker reports of its replicas (a master: its
	// slaves; a slave: itself).
	replicas []rmq.ReplicaState
}

// fillReplication reads the role and replication keys of runtime info t.
func fillReplication(s *BrokerStatus, t map[string]string) {
	switch t[rmq.RuntimeRole] {
	case "master":
		s.Role = "MASTER"
	case "slave":
		s.Role = "SLAVE"
	}
	ep, ok := t[rmq.RuntimeEpoch]
	if !ok {
		return
	}
	r := &ReplicaStatus{}
	e, _ := strconv.ParseUint(ep, 10, 32)
	r.Epoch = uint32(e)
	r.CommitPoint, _ = strconv.ParseInt(t[rmq.RuntimeCommitPoint], 10, 64)
	r.replicas = rmq.ParseReplicas(t[rmq.RuntimeReplicas])
	r.LogRestarts, _ = strconv.ParseInt(t[rmq.RuntimeLogRestarts], 10, 64)
	s.Replication = r
}

// mergeReplication fills each slave's lag and in-sync state: from its
// group's master when the master tracks it, else from its own report.
func mergeReplication(out []BrokerStatus) {
	masters := map[string]*ReplicaStatus{}
	for i := range out {
		if out[i].ID == rmq.MasterID && out[i].Replication != nil {
			masters[out[i].Cluster+"/"+out[i].Broker] = out[i].Replication
		}
	}
	for i := range out {
		s := &out[i]
		if s.ID == rmq.MasterID {
			continue
		}
		var view []rmq.ReplicaState
		if m := masters[s.Cluster+"/"+s.Broker]; m != nil {
			view = m.replicas
		}
		if s.Replication != nil {
			view = append(view, s.Replication.replicas...) // the master's view first
		}
		for _, r := range view {
			if r.ID != s.ID {
				continue
			}
			if s.Replication == nil {
				s.Replication = &ReplicaStatus{}
			}
			in := r.InSync
			s.Replication.LagBytes, s.Replication.LagSeconds, s.Replication.InSync = r.LagBytes, r.LagSeconds, &in
			break
		}
	}
}

func anyReplication(out []BrokerStatus) bool {
	for _, s := range out {
		if s.Replication != nil {
			return true
		}
	}
	return false
}

// replicationTable is the cluster list table with the replication columns.
func replicationTable(out []BrokerStatus) *table {
	t := newTable("CLUSTER", "BROKER", "ID", "ROLE", "ADDRESS", "EPOCH", "COMMIT POINT", "LAG", "IN SYNC", "VERSION", "UPTIME", "PUT/S", "GET/S", "DISK USED", "REMOVED UNCONSUMED")
	for _, s := range out {
		epoch, commit, lag, in := "-", "-", "-", "-"
		if r := s.Replication; r != nil {
			epoch, commit = strconv.FormatUint(uint64(r.Epoch), 10), strconv.FormatInt(r.CommitPoint, 10)
			if r.InSync != nil {
				lag = fmt.Sprintf("%s / %s", formatBytes(r.LagBytes), (time.Duration(r.LagSeconds * float64(time.Second))).Round(10*time.Millisecond))
				in = "no"
				if *r.InSync {
					in = "yes"
				}
			}
		}
		if s.Error != "" {
			t.add(s.Cluster, s.Broker, s.ID, s.Role, s.Address, epoch, commit, lag, in, "unreachable", "-", "-", "-", "-", "-")
			continue
		}
		t.add(s.Cluster, s.Broker, s.ID, s.Role, s.Address, epoch, commit, lag, in, s.Version, formatUptime(time.Duration(s.UptimeSeconds)*time.Second),
			formatFloat(s.PutTPS), formatFloat(s.GetTPS), fmt.Sprintf("%.1f%%", s.DiskUsedRatio*100), s.RemovedUnconsumed)
	}
	return t
}

// formatBytes writes n in B, KiB, MiB or GiB.
func formatBytes(n int64) string {
	const k = 1024
	switch {
	case n < k:
		return strconv.FormatInt(n, 10) + " B"
	case n < k*k:
		return fmt.Sprintf("%.1f KiB", float64(n)/k)
	case n < k*k*k:
		return fmt.Sprintf("%.1f MiB", float64(n)/(k*k))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(k*k*k))
}
