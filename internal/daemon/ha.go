package daemon

import (
	"net"
	"strings"
)

// HAConfig configures replication of a broker group (a master, broker id
// 0, and slaves with the same broker name): the fields the flags set. The
// zero value is a broker without replication, exactly a single broker.
// The broker's role, id, ack mode and timeout are in BrokerConfig.Broker
// (Role, BrokerID, ReplicationAsync, ReplicationTimeout).
type HAConfig struct {
	// Listen is where a master serves replication to its slaves
	// (--ha-listen, e.g. ":10912"); empty: it serves none.
	Listen string
	// Master is a slave's master replication address (--ha-master
	// host:port); empty: learned from the name servers' answers to its
	// registration (their haServerAddr of the group's master).
	Master string
	// SyncReplicas is how many slaves must hold a record before a sync
	// send is acknowledged (--sync-replicas). With sync replication and no
	// slave in sync, sends are answered SLAVE_NOT_AVAILABLE; 0: sends never
	// wait for a slave.
	SyncReplicas int
	// AwaitFirstSlave makes SyncReplicas apply only once a slave has
	// joined the group (recorded in the data directory, so it holds after
	// a restart): a master with the default --sync-replicas that never had
	// a slave is a single broker, not one that refuses every send.
	AwaitFirstSlave bool
}

// HAAdvertise is the replication address a master registers (the name
// servers hand it to the slaves as haServerAddr): the host of the
// advertised client address with the port of listen. Empty without a
// listen address.
func HAAdvertise(advertised, listen string) string {
	listen = strings.TrimSpace(listen)
	if listen == "" {
		return ""
	}
	lhost, port, err := net.SplitHostPort(listen)
	if err != nil {
		return ""
	}
	if lhost != "" && lhost != "0.0.0.0" && lhost != "::" {
		return listen
	}
	host, _, err := net.SplitHostPort(advertised)
	if err != nil {
		return ""
	}
	return net.JoinHostPort(host, port)
}
