package main

// Replication flags of petrel broker (and petrel server): a broker group is
// a master (--broker-id 0) and slaves (--broker-id 1..N) with the same
// --broker-name. The names are the flag contract of issue 16; the YAML
// config uses them as keys.

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/daemon"
)

const (
	defaultHAListen           = ":10912"
	defaultReplicationTimeout = 3 * time.Second
)

// replOptions are the replication flags.
type replOptions struct {
	brokerID     int64
	haListen     string
	haMaster     string
	replication  string
	syncReplicas int
	timeout      time.Duration
	slaveRead    bool           // --slave-read-enable
	memRatio     int            // --access-message-in-memory-max-ratio
	server       bool           // petrel server: one process, no slaves unless asked
	fl           *pflag.FlagSet // to tell a flag given from its default
}

// addReplicationFlags adds the replication flags. petrel broker serves
// replication on :10912 and, as a master, waits for 1 slave under sync
// replication; petrel server (server set) serves none and waits for none
// unless asked.
func addReplicationFlags(fl *pflag.FlagSet, r *replOptions, server bool) {
	r.server, r.fl = server, fl
	listen, replicas := defaultHAListen, 1
	listenHelp := "address a master serves replication to its slaves on"
	replicasHelp := "slaves that must hold a record before a send is acknowledged under --replication sync (a master with fewer slaves in sync answers SLAVE_NOT_AVAILABLE; 0: sends never wait for a slave). Left at its default, it applies once a slave has joined the group (recorded in the data dir); before, the master acknowledges alone"
	if server {
		listen, replicas = "", 0
		listenHelp += " (empty: none; petrel server runs without slaves unless asked)"
	}
	fl.Int64Var(&r.brokerID, "broker-id", 0, "0 for the master of the broker group (--broker-name), 1..N for its slaves")
	fl.StringVar(&r.haListen, "ha-listen", listen, listenHelp)
	fl.StringVar(&r.haMaster, "ha-master", "", "a slave's master replication address host:port (default: learned from the name servers)")
	fl.StringVar(&r.replication, "replication", "sync", "on a master, when a send is acknowledged: sync (once --sync-replicas slaves hold it durably) or async (after the local flush; slaves catch up behind)")
	fl.IntVar(&r.syncReplicas, "sync-replicas", replicas, replicasHelp)
	fl.DurationVar(&r.timeout, "replication-timeout", defaultReplicationTimeout, "under --replication sync, answer FLUSH_SLAVE_TIMEOUT when the slaves have not confirmed a send within this long")
	fl.BoolVar(&r.slaveRead, "slave-read-enable", false, "let pull answers send consumers to a slave (RocketMQ's slaveReadEnable): a consumer reading further behind the write point than --access-message-in-memory-max-ratio of the machine's memory is told its group's whichBrokerWhenConsumeSlowly (default 1), and a slave sends consumers that keep up back to the master. Off, pull answers always name the master (slaves still serve pulls while it is down)")
	fl.IntVar(&r.memRatio, "access-message-in-memory-max-ratio", broker.DefaultAccessMessageInMemoryMaxRatio, "with --slave-read-enable, the percent (1..100) of physical memory a pull may read behind the write point before it counts as slow (RocketMQ's accessMessageInMemoryMaxRatio)")
}

func (r *replOptions) changed(name string) bool {
	f := r.fl.Lookup(name)
	return f != nil && f.Changed
}

// apply checks the replication flags and puts them into the broker's
// config: the role and id, the ack mode and timeout in cfg.Broker, the
// addresses and replica count in cfg.HA.
func (r *replOptions) apply(cfg *daemon.BrokerConfig) error {
	if r.fl == nil { // a command without the flags
		return nil
	}
	if r.brokerID < 0 {
		return fmt.Errorf("--broker-id %d: give 0 for the master or 1..N for a slave", r.brokerID)
	}
	slave := r.brokerID != 0
	if r.server && slave {
		return fmt.Errorf("--broker-id %d: petrel server runs a master (broker id 0); run a slave with petrel broker --broker-id %d --namesrv ...", r.brokerID, r.brokerID)
	}
	var async bool
	switch strings.ToLower(strings.TrimSpace(r.replication)) {
	case "sync":
	case "async":
		async = true
	default:
		return fmt.Errorf("--replication %q: want sync (acknowledge once the slaves hold a send) or async (acknowledge after the local flush)", r.replication)
	}
	if r.syncReplicas < 0 {
		return fmt.Errorf("--sync-replicas %d: give how many slaves must hold a record (0 or more)", r.syncReplicas)
	}
	if r.timeout <= 0 {
		return fmt.Errorf("--replication-timeout %v: give a positive duration such as 3s", r.timeout)
	}
	if r.memRatio < 1 || r.memRatio > 100 {
		return fmt.Errorf("--access-message-in-memory-max-ratio %d: give a percent of physical memory, 1..100 (default %d)", r.memRatio, broker.DefaultAccessMessageInMemoryMaxRatio)
	}
	if l := strings.TrimSpace(r.haListen); l != "" {
		if _, _, err := net.SplitHostPort(l); err != nil {
			return fmt.Errorf("--ha-listen %q: want [host]:port, e.g. :10912", r.haListen)
		}
	}
	if slave {
		if r.changed("sync-replicas") {
			return fmt.Errorf("--sync-replicas is for the master: this broker is a slave (--broker-id %d); set it on the master (--broker-id 0) of %s", r.brokerID, cfg.Broker.BrokerName)
		}
		if m := strings.TrimSpace(r.haMaster); m != "" {
			if host, port, err := net.SplitHostPort(m); err != nil || host == "" || port == "" {
				return fmt.Errorf("--ha-master %q: want the master's replication address host:port, e.g. 10.0.0.1:10912", r.haMaster)
			}
		}
	} else if strings.TrimSpace(r.haMaster) != "" {
		return fmt.Errorf("--ha-master is for a slave: this broker is the master (--broker-id 0) of %s and serves replication on --ha-listen; give a slave --broker-id 1 or more", cfg.Broker.BrokerName)
	}
	cfg.Broker.BrokerID = r.brokerID
	cfg.Broker.Role = broker.RoleForID(r.brokerID)
	cfg.Broker.ReplicationAsync = async
	cfg.Broker.ReplicationTimeout = r.timeout
	cfg.Broker.SlaveReadEnable = r.slaveRead
	cfg.Broker.AccessMessageInMemoryMaxRatio = r.memRatio
	cfg.HA = daemon.HAConfig{Listen: strings.TrimSpace(r.haListen), Master: strings.TrimSpace(r.haMaster)}
	if !slave {
		cfg.HA.SyncReplicas = r.syncReplicas
		cfg.HA.AwaitFirstSlave = !r.changed("sync-replicas")
	}
	return nil
}

// describe is the startup line's replication part.
func (r *replOptions) describe(cfg daemon.BrokerConfig) string {
	if cfg.Broker.Role == broker.RoleSlave {
		master := cfg.HA.Master
		if master == "" {
			master = "from the name servers"
		}
		return fmt.Sprintf("slave (broker id %d) of %s, master replication address %s", cfg.Broker.BrokerID, cfg.Broker.BrokerName, master)
	}
	mode := "sync"
	if cfg.Broker.ReplicationAsync {
		mode = "async"
	}
	listen := cfg.HA.Listen
	if listen == "" {
		listen = "off"
	}
	return fmt.Sprintf("master of %s, replication %s to %d slave(s), ha-listen %s", cfg.Broker.BrokerName, mode, cfg.HA.SyncReplicas, listen)
}
