package cli

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// BrokerStatus is one broker process of `cluster list`.
type BrokerStatus struct {
	Cluster string `json:"cluster"`
	Broker  string `json:"broker"`
	ID      int64  `json:"id"`
	// Role is MASTER (id 0) or SLAVE.
	Role    string `json:"role"`
	Address string `json:"address"`
	Version string `json:"version"`
	// BootTimestamp is when the broker started (ms since the epoch);
	// UptimeSeconds is counted from it.
	BootTimestamp int64   `json:"bootTimestamp"`
	UptimeSeconds int64   `json:"uptimeSeconds"`
	PutTPS        float64 `json:"putTps"`
	GetTPS        float64 `json:"getTps"`
	// DiskUsedRatio is the used fraction (0..1) of the data directory's
	// device, used / (used + free) as df computes it (blocks reserved for
	// root count neither way); DiskTotalBytes, DiskUsedBytes and
	// DiskFreeBytes its size, use and space available to the broker.
	DiskUsedRatio  float64 `json:"diskUsedRatio"`
	DiskTotalBytes uint64  `json:"diskTotalBytes"`
	DiskUsedBytes  uint64  `json:"diskUsedBytes"`
	DiskFreeBytes  uint64  `json:"diskFreeBytes"`
	// RemovedUnconsumed counts the messages retention removed before their
	// reserve time (disk above the high-water mark) while a group had not
	// consumed them, since the broker started.
	RemovedUnconsumed uint64 `json:"removedUnconsumed"`
	// Replication, set for a broker of a replicated group (its runtime
	// info carries it; see replication.go).
	Replication *ReplicaStatus `json:"replication,omitempty"`
	// Error says why the broker did not answer; the other measures are 0.
	Error string `json:"error,omitempty"`
}

// ClusterList writes every broker the name servers know, per cluster.
func (c *CLI) ClusterList(ctx context.Context) error {
	ci, err := c.clusterInfo(ctx)
	if err != nil {
		return err
	}
	var out []BrokerStatus
	for name, b := range ci.BrokerAddrTable {
		for n, addr := range b.BrokerAddrs {
			s := BrokerStatus{Cluster: b.Cluster, Broker: name, ID: n, Role: "SLAVE", Address: addr}
			if n == rmq.MasterID {
				s.Role = "MASTER"
			}
			c.fillRuntime(ctx, &s)
			out = append(out, s)
		}
	}
	mergeReplication(out)
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		if a.Broker != b.Broker {
			return a.Broker < b.Broker
		}
		return a.ID < b.ID
	})
	if c.json() {
		if out == nil {
			out = []BrokerStatus{}
		}
		return c.writeJSON(struct {
			Brokers []BrokerStatus `json:"brokers"`
		}{out})
	}
	if len(out) == 0 {
		_, err := fmt.Fprintln(c.cfg.Out, "no broker is registered with the name server; start one with `petrel server`")
		return err
	}
	if anyReplication(out) {
		return replicationTable(out).write(c.cfg.Out)
	}
	t := newTable("CLUSTER", "BROKER", "ID", "ROLE", "ADDRESS", "VERSION", "UPTIME", "PUT/S", "GET/S", "DISK USED", "REMOVED UNCONSUMED")
	for _, s := range out {
		if s.Error != "" {
			t.add(s.Cluster, s.Broker, s.ID, s.Role, s.Address, "unreachable", "-", "-", "-", "-", "-")
			continue
		}
		t.add(s.Cluster, s.Broker, s.ID, s.Role, s.Address, s.Version, formatUptime(time.Duration(s.UptimeSeconds)*time.Second),
			formatFloat(s.PutTPS), formatFloat(s.GetTPS), fmt.Sprintf("%.1f%%", s.DiskUsedRatio*100), s.RemovedUnconsumed)
	}
	return t.write(c.cfg.Out)
}

// fillRuntime asks a broker for GET_BROKER_RUNTIME_INFO.
func (c *CLI) fillRuntime(ctx context.Context, s *BrokerStatus) {
	resp, err := c.callOK(ctx, s.Address, "runtime info", rmq.EncodeRuntimeInfoRequest())
	if err != nil {
		s.Error = err.Error()
		return
	}
	t, err := rmq.DecodeRuntimeInfoBody(resp.Body)
	if err != nil {
		s.Error = fmt.Sprintf("runtime info is not valid JSON: %v", err)
		return
	}
	s.Version = t[rmq.RuntimeBrokerVersionDesc]
	s.BootTimestamp, _ = strconv.ParseInt(t[rmq.RuntimeBootTimestamp], 10, 64)
	if s.BootTimestamp > 0 {
		s.UptimeSeconds = int64(c.cfg.Now().Sub(time.UnixMilli(s.BootTimestamp)) / time.Second)
	}
	s.PutTPS = firstFloat(t[rmq.RuntimePutTps])
	s.GetTPS = firstFloat(t[rmq.RuntimeGetTransferredTps])
	s.DiskUsedRatio, _ = strconv.ParseFloat(t[rmq.RuntimeCommitLogDiskRatio], 64)
	s.DiskTotalBytes, _ = strconv.ParseUint(t[rmq.RuntimeCommitLogDirTotalBytes], 10, 64)
	s.DiskFreeBytes, _ = strconv.ParseUint(t[rmq.RuntimeCommitLogDirFreeBytes], 10, 64)
	s.DiskUsedBytes, _ = strconv.ParseUint(t[rmq.RuntimeCommitLogDirUsedBytes], 10, 64)
	s.RemovedUnconsumed, _ = strconv.ParseUint(t[rmq.RuntimeRemovedUnconsumedMsgs], 10, 64)
	fillReplication(s, t)
}

// firstFloat reads the first of RocketMQ's space-separated rates.
func firstFloat(s string) float64 {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// formatUptime renders 3d4h, 5h6m, 7m8s or 9s.
func formatUptime(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case s >= 86400:
		return fmt.Sprintf("%dd%dh", s/86400, s%86400/3600)
	case s >= 3600:
		return fmt.Sprintf("%dh%dm", s/3600, s%3600/60)
	case s >= 60:
		return fmt.Sprintf("%dm%ds", s/60, s%60)
	}
	return fmt.Sprintf("%ds", s)
}
