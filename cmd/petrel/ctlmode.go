package main

// Controller-mode flags of petrel broker (and petrel server): with
// --controller the controller voters own the broker's role and assign its
// replica id (issue 17). The YAML config takes the flag names as keys,
// and controllerHeartbeatInterval as well.

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/petrelmq/petrel/internal/auth/authwire"
	"github.com/petrelmq/petrel/internal/controller"
	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/remoting"
)

// ctlOptions are the controller-mode flags.
type ctlOptions struct {
	addrs     string
	heartbeat time.Duration
	listen    string           // petrel server: the embedded voter's address
	node      *controller.Node // petrel server: the embedded voter (its metrics go with the broker's)
	server    bool
	fl        *pflag.FlagSet
}

func addControllerModeFlags(fl *pflag.FlagSet, c *ctlOptions, server bool) {
	c.server, c.fl = server, fl
	if server {
		fl.StringVar(&c.listen, "controller-listen", "127.0.0.1:0", "address of the embedded controller (a single voter: the broker is the master of its group, brokers started with petrel broker --controller on this address join it as replicas)")
	} else {
		fl.StringVar(&c.addrs, "controller", "", "controller voters host:port,host:port,...: the controllers own this broker's role (master or slave) and assign its replica id once (kept in --data-dir/ha/replica-id; --broker-id is then ignored); empty: the role of --broker-id")
	}
	fl.DurationVar(&c.heartbeat, "controller-heartbeat-interval", daemon.DefaultControllerHeartbeat, "with a controller, how often the broker heartbeats it; a master's granted heartbeats renew its lease")
}

// embeddedRaftTimeout is the raft heartbeat and election timeout of
// petrel server's single voter.
const embeddedRaftTimeout = 100 * time.Millisecond

// startEmbeddedController starts petrel server's controller: one voter
// (no fault tolerance: the same code as a 3-voter deployment), its raft
// data in <data-dir>/controller, and points the broker at it.
// sec is the process's: the port serves its TLS and, with --auth, needs a
// super user on every remoting request (the broker signs as the init
// user).
func startEmbeddedController(o *options, logger *slog.Logger, out io.Writer, sec daemon.Security) (*controller.Node, error) {
	dir, err := filepath.Abs(o.dataDir)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %q: %w", o.dataDir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--data-dir %s: %w", dir, err)
	}
	listen := cmp.Or(strings.TrimSpace(o.ctlMode.listen), "127.0.0.1:0")
	var guard remoting.Guard
	if sec.Auth != nil {
		guard = sec.Auth.Guard(authwire.Internal, "")
	}
	node, err := controller.StartNode(controller.NodeConfig{ID: 1, Listen: listen, DataDir: dir,
		Service: controller.DefaultServiceConfig(), Logger: logger, Network: sec.Network(nil), Guard: guard,
		// One voter elects itself: nobody to split a vote with, so short
		// raft timeouts only make the start quicker.
		HeartbeatTimeout: embeddedRaftTimeout, ElectionTimeout: embeddedRaftTimeout, LeaderLeaseTimeout: embeddedRaftTimeout / 2})
	if err != nil {
		return nil, fmt.Errorf("embedded controller (--controller-listen %s): %w", listen, err)
	}
	o.ctlMode.addrs, o.ctlMode.server, o.ctlMode.node = node.Addr(), true, node
	fmt.Fprintf(out, "petrel: controller (single voter 1) listening on %s\n", node.Addr())
	return node, nil
}

// yamlAliases are config-file keys besides the flag names (the issue's
// names of controller mode's keys).
var yamlAliases = map[string]string{"controllerHeartbeatInterval": "controller-heartbeat-interval"}

// splitControllers parses --controller.
func splitControllers(s string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if host, port, err := net.SplitHostPort(a); err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("--controller %q: want host:port,host:port,... (each controller voter's address), e.g. 10.0.0.1:9880,10.0.0.2:9880", s)
		}
		out = append(out, a)
	}
	return out, nil
}

// apply puts the controller-mode flags into cfg (after the replication
// flags: it checks they fit).
func (c *ctlOptions) apply(cfg *daemon.BrokerConfig, r *replOptions) error {
	addrs, err := splitControllers(c.addrs)
	if err != nil {
		return err
	}
	if len(addrs) == 0 {
		return nil
	}
	if c.heartbeat == 0 && c.fl == nil { // options built without the flags (tests)
		c.heartbeat = daemon.DefaultControllerHeartbeat
	}
	if c.heartbeat <= 0 {
		return fmt.Errorf("--controller-heartbeat-interval %v: give a positive duration such as 500ms", c.heartbeat)
	}
	if r != nil && r.fl != nil {
		if strings.TrimSpace(r.haMaster) != "" {
			return fmt.Errorf("--ha-master is not for controller mode: the controller names the master; drop --ha-master or --controller")
		}
		if !c.server && strings.TrimSpace(r.haListen) == "" {
			return fmt.Errorf("--ha-listen is empty: in controller mode every replica may become the master and serves replication on --ha-listen (default %s)", defaultHAListen)
		}
	}
	cfg.Controller = daemon.ControllerConfig{Addrs: addrs, HeartbeatInterval: c.heartbeat}
	if r != nil && r.fl != nil && r.changed("sync-replicas") {
		cfg.Controller.SyncReplicasSet = true
		cfg.HA.SyncReplicas = r.syncReplicas
	}
	return nil
}

// describe is the startup line's controller part.
func (c *ctlOptions) describe(cfg daemon.BrokerConfig) string {
	ha := cfg.HA.Listen
	if ha == "" {
		ha = "off (this replica cannot replicate or be replicated)"
	}
	return fmt.Sprintf("controller mode: controllers %s, heartbeat every %v, ha-listen %s (the controller assigns the replica id and role)",
		strings.Join(cfg.Controller.Addrs, ","), cfg.Controller.HeartbeatInterval, ha)
}
