package main

// The controller voter: petrel controller runs one, petrel namesrv embeds
// one when given --controller-id / --controller-peers (RocketMQ's
// enableControllerInNamesrv). The flag names are the contract of issue 17.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/petrelmq/petrel/internal/auth/authwire"
	"github.com/petrelmq/petrel/internal/controller"
	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/tlsx"
)

// controllerOptions are the flags of a controller voter.
type controllerOptions struct {
	id             int
	listen         string
	peers          string
	sessionTimeout time.Duration
	lease          time.Duration
	drift          float64
	unclean        bool
	raftHeartbeat  time.Duration
	raftElection   time.Duration
	tlsCert        string
	tlsKey         string
	tlsCA          string
	fl             *pflag.FlagSet
}

// addControllerFlags adds the voter's flags, --data-dir included (the
// commands that take them have no other data dir). embedded: on petrel
// namesrv, where the voter is off unless --controller-id or
// --controller-peers is given.
func addControllerFlags(fl *pflag.FlagSet, c *controllerOptions, dataDir *string, embedded bool) {
	c.fl = fl
	def := controller.DefaultServiceConfig()
	on := ""
	if embedded {
		on = "; giving it (or --controller-peers) embeds a controller voter in this name server"
	}
	fl.IntVar(&c.id, "controller-id", 0, "this voter's id in --controller-peers (1, 2, 3, ...)"+on)
	fl.StringVar(&c.peers, "controller-peers", "", "every controller voter, this one included, as id@host:port,...: e.g. 1@10.0.0.1:9878,2@10.0.0.2:9878,3@10.0.0.3:9878 (the same list on every voter; host:port is where the others and the brokers dial it). Three voters survive the loss of one, five of two; one voter has no fault tolerance. The list is bootstrapped on a voter's first start only: later starts keep the membership stored in --data-dir")
	fl.StringVar(&c.listen, "controller-listen", "", "address the voter listens on, for the other voters (raft) and for brokers and petrel cluster alike (default: all interfaces, on the port of this voter's --controller-peers entry)")
	dataHelp := "directory of the controller's raft log and snapshots (kept in its controller/ subdirectory)"
	if embedded {
		dataHelp += "; only the embedded controller voter uses it"
	}
	fl.StringVar(dataDir, "data-dir", "./petrel-data", dataHelp)
	fl.DurationVar(&c.sessionTimeout, "controller-session-timeout", def.SessionTimeout, "a broker replica without a heartbeat for this long counts as dead, and its group's master is replaced once its lease has surely expired; a newly elected controller leader replaces a master it has not heard from once that master's lease has surely expired (lease × (1 + drift) + 200ms, counted from (1 − 2 × drift) × the raft heartbeat timeout before it began to lead). Must be at least --controller-lease × (1 + --controller-clock-drift) + 200ms")
	fl.DurationVar(&c.lease, "controller-lease", def.Lease, "how long a master may acknowledge sends after its last heartbeat the controller granted, measured on the master's own clock; an isolated master stops acknowledging when it runs out, before the controller elects a successor")
	fl.Float64Var(&c.drift, "controller-clock-drift", def.Drift, "the largest rate difference assumed between the clocks of a broker and the controller (0.05 = 5%), added to the lease before a master is replaced")
	fl.BoolVar(&c.unclean, "controller-unclean-election", false, "when no replica of the in-sync set is alive, elect the most up-to-date live replica anyway: the group takes writes again sooner but may lose acknowledged messages (every such election is logged and kept in the controller's audit)")
	fl.DurationVar(&c.raftHeartbeat, "controller-raft-heartbeat-timeout", controller.DefaultRaftHeartbeatTimeout, "a follower voter that has not heard from the raft leader for this long starts an election; raise it on slow or loaded networks if leaders change without cause")
	fl.DurationVar(&c.raftElection, "controller-raft-election-timeout", controller.DefaultRaftElectionTimeout, "how long a candidate voter waits for votes before it tries again (at least --controller-raft-heartbeat-timeout)")
	fl.StringVar(&c.tlsCert, "controller-tls-cert", "", "PEM certificate: serve the controller port (raft and the broker-facing codes) over TLS and dial the other voters over TLS (give the same on every voter; default: plaintext)")
	fl.StringVar(&c.tlsKey, "controller-tls-key", "", "PEM private key of --controller-tls-cert")
	fl.StringVar(&c.tlsCA, "controller-tls-ca", "", "PEM CA bundle the voters verify each other's certificates with (default: the system's roots); given, every connection to the controller port must present a certificate signed by it (mutual TLS)")
}

// enabled reports whether the flags ask for a voter (petrel namesrv).
func (c *controllerOptions) enabled() bool {
	return c.fl != nil && (c.fl.Changed("controller-id") || c.fl.Changed("controller-peers"))
}

// nodeConfig checks the flags and builds the voter's configuration.
func (c *controllerOptions) nodeConfig(dataDir string, logger *slog.Logger, limits remoting.Limits) (controller.NodeConfig, error) {
	if c.id < 1 {
		return controller.NodeConfig{}, fmt.Errorf("--controller-id %d: give this voter's id (1, 2, 3, ...) in --controller-peers", c.id)
	}
	if c.peers == "" {
		return controller.NodeConfig{}, fmt.Errorf("--controller-peers is empty: list every voter as id@host:port, e.g. --controller-peers 1@10.0.0.1:9878,2@10.0.0.2:9878,3@10.0.0.3:9878")
	}
	peers, err := controller.ParsePeers(c.peers)
	if err != nil {
		return controller.NodeConfig{}, fmt.Errorf("--controller-peers: %w", err)
	}
	var self *controller.Voter
	for i := range peers {
		if peers[i].ID == c.id {
			self = &peers[i]
		}
	}
	if self == nil {
		return controller.NodeConfig{}, fmt.Errorf("--controller-id %d is not in --controller-peers %s; list this voter too", c.id, controller.FormatPeers(peers))
	}
	listen := c.listen
	if listen == "" {
		_, port, _ := net.SplitHostPort(self.Addr) // ParsePeers checked it
		listen = ":" + port
	}
	if c.raftHeartbeat <= 0 || c.raftElection <= 0 {
		return controller.NodeConfig{}, fmt.Errorf("--controller-raft-heartbeat-timeout %v and --controller-raft-election-timeout %v must be positive", c.raftHeartbeat, c.raftElection)
	}
	if c.raftElection < c.raftHeartbeat {
		return controller.NodeConfig{}, fmt.Errorf("--controller-raft-election-timeout %v is below --controller-raft-heartbeat-timeout %v; give at least as much", c.raftElection, c.raftHeartbeat)
	}
	svc := controller.DefaultServiceConfig()
	svc.SessionTimeout, svc.Lease, svc.Drift, svc.Unclean = c.sessionTimeout, c.lease, c.drift, c.unclean
	if err := svc.Validate(); err != nil {
		return controller.NodeConfig{}, fmt.Errorf("--controller-session-timeout %v, --controller-lease %v, --controller-clock-drift %v: %w", c.sessionTimeout, c.lease, c.drift, err)
	}
	tlsCfg, err := c.tlsConfig()
	if err != nil {
		return controller.NodeConfig{}, err
	}
	return controller.NodeConfig{
		ID:               c.id,
		Listen:           listen,
		Peers:            peers,
		DataDir:          dataDir,
		TLS:              tlsCfg,
		Service:          svc,
		HeartbeatTimeout: c.raftHeartbeat,
		ElectionTimeout:  c.raftElection,
		// raft's leader lease must not exceed its heartbeat timeout.
		LeaderLeaseTimeout: min(controller.DefaultRaftLeaderLeaseTimeout, c.raftHeartbeat/2),
		Remoting:           limits,
		Logger:             logger,
	}, nil
}

// tlsConfig loads the TLS flags (nil: plaintext).
func (c *controllerOptions) tlsConfig() (*tls.Config, error) {
	if c.tlsCert == "" && c.tlsKey == "" {
		if c.tlsCA != "" {
			return nil, errors.New("--controller-tls-ca needs --controller-tls-cert and --controller-tls-key")
		}
		return nil, nil
	}
	if c.tlsCert == "" || c.tlsKey == "" {
		return nil, errors.New("give both --controller-tls-cert and --controller-tls-key")
	}
	cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("--controller-tls-cert %s / --controller-tls-key %s: %w", c.tlsCert, c.tlsKey, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if c.tlsCA != "" {
		pem, err := os.ReadFile(c.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--controller-tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--controller-tls-ca %s holds no PEM certificate", c.tlsCA)
		}
		cfg.RootCAs, cfg.ClientCAs, cfg.ClientAuth = pool, pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// startController starts the voter of o's flags and prints its startup
// line. sec is the process's --tls-* (its listener and its dials to the
// other voters) and --auth (every remoting request of the port needs a
// super user).
func startController(o *options, logger *slog.Logger, out io.Writer, sec daemon.Security) (*controller.Node, error) {
	dir, err := filepath.Abs(o.dataDir)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %q: %w", o.dataDir, err)
	}
	limits, err := o.remoting.limits()
	if err != nil {
		return nil, err
	}
	cfg, err := o.ctl.nodeConfig(dir, logger, limits)
	if err != nil {
		return nil, err
	}
	if sec.TLS != nil && sec.TLSMode != tlsx.Disabled {
		if cfg.TLS != nil {
			return nil, fmt.Errorf("--controller-tls-cert and --tls-mode %s both set the controller port's TLS; give one (--tls-mode covers every port of the process)", sec.TLSMode)
		}
		cfg.Network = sec.Network(nil)
	}
	if sec.Auth != nil {
		cfg.Guard = sec.Auth.Guard(authwire.Internal, "")
	}
	if err := checkListen(listenFlag{"controller-listen", cfg.Listen}); err != nil {
		return nil, err
	}
	n, err := controller.StartNode(cfg)
	if err != nil {
		return nil, err
	}
	tlsNote := ""
	if cfg.TLS != nil {
		tlsNote = ", TLS"
	} else if cfg.Network != nil {
		tlsNote = ", TLS " + string(sec.TLSMode)
	}
	fmt.Fprintf(out, "petrel: controller voter %d listening on %s (advertised %s%s), peers %s\n", cfg.ID, n.ListenAddr(), n.Addr(), tlsNote, controller.FormatPeers(cfg.Peers))
	fmt.Fprintf(out, "petrel: controller data in %s\n", filepath.Join(dir, "controller"))
	return n, nil
}

func newControllerCmd() *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run a controller voter: the raft-replicated owner of every broker group's master",
		Long: `Run one voter of the failover controller. The voters (three, or five)
replicate with raft each broker group's master, master epoch and in-sync
set; brokers started with --controller heartbeat the leading voter, which
elects a new master from the in-sync slaves when a master is lost, after
its lease has surely expired.

Give every voter the same --controller-peers list, and each its own
--controller-id. One port (--controller-listen, default the port of its
--controller-peers entry) carries both raft between the voters and the
requests of brokers and 'petrel cluster'. The raft log and snapshots are
kept in --data-dir/controller; on the first start the voters of
--controller-peers are bootstrapped, later starts keep the stored
membership.

A name server can embed a voter instead: petrel namesrv --controller-id N
--controller-peers ... (the same flags).`,
		Example: `  petrel controller --controller-id 1 --controller-peers 1@10.0.0.1:9878,2@10.0.0.2:9878,3@10.0.0.3:9878 --data-dir /var/lib/petrel`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := loadConfig(cmd, o); err != nil {
				return err
			}
			return runController(cmd.Context(), o, cmd.OutOrStdout(), nil)
		},
	}
	addCommonFlags(cmd.Flags(), o)
	addControllerFlags(cmd.Flags(), &o.ctl, &o.dataDir, false)
	addRemotingFlags(cmd.Flags(), &o.remoting)
	addTLSFlags(cmd.Flags(), &o.sec)
	return cmd
}

// runController runs a voter until ctx ends or a signal arrives. started,
// when set, is called once it serves.
func runController(ctx context.Context, o *options, out io.Writer, started func()) error {
	ctx, stop := stopSignals(ctx)
	defer stop()
	logger, err := newLogger(o)
	if err != nil {
		return err
	}
	stopProfile, err := startProfile(o)
	if err != nil {
		return err
	}
	defer stopProfile()
	sec, err := o.sec.security(logger)
	if err != nil {
		return err
	}
	reloadOnSIGHUP(ctx, sec.TLS, logger)
	n, err := startController(o, logger, out, sec)
	if err != nil {
		return err
	}
	if started != nil {
		started()
	}
	<-ctx.Done()
	logger.Info("stopping")
	if err := n.Close(); err != nil {
		return fmt.Errorf("stop controller: %w", err)
	}
	return nil
}
