package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/namesrv"
)

func newServerCmd() *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a name server and a broker in one process",
		Long: `Run Petrel in one process on a local data directory: a name server and a
broker that registers with it. Point RocketMQ 4.x clients at the name server
(--namesrv-listen, default port 9876) and RocketMQ 5.x (gRPC) clients at
--grpc-listen (default port 8081, TLS with a self-signed certificate).

The store is opened (and recovered after a crash) in --data-dir. The process
runs until SIGINT or SIGTERM, then stops gracefully: parked pulls are
answered, writes in flight finish, the store is flushed and closed.

Metrics for Prometheus are served on --http-listen at /metrics, with
/healthz (the process is up) and /readyz (store recovered and registered
with the name server).

The process also runs a controller with a single voter (--controller-listen,
raft data in --data-dir/controller), the same code as a 3-voter deployment
without its fault tolerance; the broker is replica 1 and master of its group.`,
		Example: `  petrel server --data-dir /var/lib/petrel --http-listen :8080 --log-format json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := loadConfig(cmd, o); err != nil {
				return err
			}
			return runServer(cmd.Context(), o, cmd.OutOrStdout(), nil)
		},
	}
	addCommonFlags(cmd.Flags(), o)
	addNamesrvFlags(cmd.Flags(), o)
	addBrokerFlags(cmd.Flags(), o)
	addReplicationFlags(cmd.Flags(), &o.repl, true)
	addControllerModeFlags(cmd.Flags(), &o.ctlMode, true)
	addRemotingFlags(cmd.Flags(), &o.remoting)
	addAuthFlags(cmd.Flags(), &o.sec)
	addTLSFlags(cmd.Flags(), &o.sec)
	return cmd
}

func newNamesrvCmd() *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "namesrv",
		Short: "Run a name server only",
		Long: `Run a name server: brokers register with it and clients ask it for routes.
Run several for a cluster; they are independent and every broker registers
with all of them.

With --controller-id and --controller-peers it also runs a voter of the
failover controller on --controller-listen (see 'petrel controller'; the
same flags), keeping its raft log in --data-dir/controller: three name
servers then make a three-voter controller without more processes.`,
		Example: `  petrel namesrv --namesrv-listen :9876
  petrel namesrv --controller-id 1 --controller-peers 1@10.0.0.1:9878,2@10.0.0.2:9878,3@10.0.0.3:9878 --data-dir /var/lib/petrel`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := stopSignals(cmd.Context())
			defer stop()
			if err := loadConfig(cmd, o); err != nil {
				return err
			}
			logger, err := newLogger(o)
			if err != nil {
				return err
			}
			if err := checkListen(listenFlag{"namesrv-listen", o.namesrvListen}); err != nil {
				return err
			}
			limits, err := o.remoting.limits()
			if err != nil {
				return err
			}
			sec, err := o.sec.security(logger)
			if err != nil {
				return err
			}
			reloadOnSIGHUP(ctx, sec.TLS, logger)
			ns, err := daemon.StartNameServerWith(o.namesrvListen, namesrv.Options{Logger: logger, Limits: limits}, sec)
			if err != nil {
				return err
			}
			logNameServerAuth(logger, sec)
			fmt.Fprintf(cmd.OutOrStdout(), "petrel: name server listening on %s (%s)\n", ns.Addr(), o.sec.describeTLS(sec.TLSMode))
			stopVoter := func() error { return nil }
			if o.ctl.enabled() { // controller.go: an embedded controller voter
				n, err := startController(o, logger, cmd.OutOrStdout(), sec)
				if err != nil {
					ns.Close()
					return err
				}
				stopVoter = n.Close
			}
			<-ctx.Done()
			logger.Info("stopping")
			return errors.Join(stopVoter(), ns.Close())
		},
	}
	addCommonFlags(cmd.Flags(), o)
	addNamesrvFlags(cmd.Flags(), o)
	addRemotingFlags(cmd.Flags(), &o.remoting)
	addControllerFlags(cmd.Flags(), &o.ctl, &o.dataDir, true)
	addAuthFlags(cmd.Flags(), &o.sec)
	addTLSFlags(cmd.Flags(), &o.sec)
	return cmd
}

func newBrokerCmd() *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Run a broker only, registering with --namesrv",
		Long: `Run a broker: it stores messages in --data-dir, serves producers and
consumers on --broker-listen and registers with every name server in
--namesrv (semicolon-separated ip:port list). Metrics, /healthz and /readyz
(store recovered, registered with at least one name server) are served on
--http-listen.

With --controller host:port,... the controller voters own the broker's
role: it registers (the controller assigns its replica id once, kept in
--data-dir/ha/replica-id), starts as a slave that takes no writes, and is
promoted to master or follows the master the controller names; a master
acknowledges sends only while its heartbeats renew its lease.`,
		Example: `  petrel broker --namesrv '10.0.0.1:9876;10.0.0.2:9876' --broker-name broker-a --http-listen :8080`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := loadConfig(cmd, o); err != nil {
				return err
			}
			if len(splitNameServers(o.namesrv)) == 0 {
				return errors.New("--namesrv is empty: give the name servers to register with, e.g. --namesrv '10.0.0.1:9876;10.0.0.2:9876'")
			}
			if err := checkListen(o.brokerListens()...); err != nil {
				return err
			}
			return runBroker(cmd.Context(), o, splitNameServers(o.namesrv), cmd.OutOrStdout(), nil, nil)
		},
	}
	addCommonFlags(cmd.Flags(), o)
	addBrokerFlags(cmd.Flags(), o)
	addReplicationFlags(cmd.Flags(), &o.repl, false)
	addControllerModeFlags(cmd.Flags(), &o.ctlMode, false)
	addRemotingFlags(cmd.Flags(), &o.remoting)
	addAuthFlags(cmd.Flags(), &o.sec)
	addTLSFlags(cmd.Flags(), &o.sec)
	cmd.Flags().StringVar(&o.namesrv, "namesrv", "", "name servers to register with, semicolon-separated ip:port")
	cmd.AddCommand(newBrokerAdminCmds()...) // brokeradmin.go
	return cmd
}

// stopSignals returns ctx ended by SIGINT or SIGTERM. Each command that
// serves calls it before it starts anything, so that a signal during
// start-up, or right after the process reports ready, stops it gracefully
// instead of taking the default action (exit at once).
func stopSignals(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
}

// runServer runs a name server and a broker until ctx ends or a signal
// arrives. started, when set, is called once both serve.
func runServer(ctx context.Context, o *options, out io.Writer, started func()) error {
	ctx, stop := stopSignals(ctx)
	defer stop()
	logger, err := newLogger(o)
	if err != nil {
		return err
	}
	if err := checkListen(append([]listenFlag{{"namesrv-listen", o.namesrvListen}}, o.brokerListens()...)...); err != nil {
		return err
	}
	limits, err := o.remoting.limits()
	if err != nil {
		return err
	}
	sec, err := o.sec.security(logger)
	if err != nil {
		return err
	}
	if sec.Auth != nil && sec.AccessKey == "" {
		return errors.New("--auth needs --auth-init-user NAME:SECRET (or --auth-init-user-file) on petrel server: its broker signs its registrations with the name server and its controller heartbeats as that super user (created on first start), and the name server and the controller check them")
	}
	ns, err := daemon.StartNameServerWith(o.namesrvListen, namesrv.Options{Logger: logger, Limits: limits}, sec)
	if err != nil {
		return err
	}
	defer ns.Close()
	fmt.Fprintf(out, "petrel: name server listening on %s\n", ns.Addr())
	node, err := startEmbeddedController(o, logger, out, sec)
	if err != nil {
		return err
	}
	defer node.Close()
	return runBroker(ctx, o, []string{dialable(ns.Addr())}, out, started, &sec)
}

// runBroker runs a broker until ctx ends or a signal arrives. sec is the
// process's security when the caller built it (petrel server: shared with
// its name server and controller); nil: built from o's flags.
func runBroker(ctx context.Context, o *options, nameServers []string, out io.Writer, started func(), sec *daemon.Security) error {
	ctx, stop := stopSignals(ctx)
	defer stop()
	logger, err := newLogger(o)
	if err != nil {
		return err
	}
	if sec == nil {
		s, err := o.sec.security(logger)
		if err != nil {
			return err
		}
		sec = &s
	}
	reloadOnSIGHUP(ctx, sec.TLS, logger)
	stopProfile, err := startProfile(o)
	if err != nil {
		return err
	}
	defer stopProfile()
	dir, err := filepath.Abs(o.dataDir)
	if err != nil {
		return fmt.Errorf("--data-dir %q: %w", o.dataDir, err)
	}
	o.dataDir = dir
	scfg, err := o.storeConfig(logger)
	if err != nil {
		return err
	}
	bcfg, err := o.brokerConfig(logger)
	if err != nil {
		return err
	}
	limits, err := o.remoting.limits()
	if err != nil {
		return err
	}
	dcfg := daemon.BrokerConfig{
		Store:       scfg,
		Broker:      bcfg,
		Listen:      o.brokerListen,
		Advertise:   o.advertise,
		NameServers: nameServers,
		HTTPListen:  o.httpListen,
		Logger:      logger,
		Remoting:    limits,
		Security:    *sec,
	}
	if err := o.grpc.apply(&dcfg, &o.sec); err != nil {
		return err
	}
	if err := o.repl.apply(&dcfg); err != nil {
		return err
	}
	if err := o.ctlMode.apply(&dcfg, &o.repl); err != nil {
		return err
	}
	b, err := daemon.StartBroker(dcfg)
	if err != nil {
		return err
	}
	if n := o.ctlMode.node; n != nil && b.Metrics() != nil {
		b.Metrics().AttachController(n.Service().Stats)
	}
	fmt.Fprintf(out, "petrel: broker %s listening on %s (advertised %s)\n", o.brokerName, b.Addr(), b.Advertised())
	if a := b.HTTPAddr(); a != nil {
		fmt.Fprintf(out, "petrel: http listening on %s (/metrics, /healthz, /readyz)\n", a)
	}
	if a := b.GRPCAddr(); a != nil {
		fmt.Fprintf(out, "petrel: gRPC (RocketMQ 5.x) listening on %s (%s)\n", a, o.grpc.describe(dir))
	}
	fmt.Fprintf(out, "petrel: data dir %s (flush %s)\n", dir, o.flush)
	fmt.Fprintf(out, "petrel: %s, %s\n", describeAuth(*sec), o.sec.describeTLS(sec.TLSMode))
	if o.repl.fl != nil && dcfg.Controller.Addrs == nil && (!o.repl.server || dcfg.HA.Listen != "" || dcfg.HA.SyncReplicas > 0) {
		fmt.Fprintf(out, "petrel: %s\n", o.repl.describe(dcfg))
	}
	if dcfg.Controller.Addrs != nil {
		fmt.Fprintf(out, "petrel: %s\n", o.ctlMode.describe(dcfg))
	}
	if started != nil {
		started()
	}
	<-ctx.Done()
	logger.Info("stopping")
	if err := b.Close(); err != nil {
		return fmt.Errorf("stop broker: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// dialable turns a listen address into one to dial: all-addresses becomes
// loopback.
func dialable(a net.Addr) string {
	t, ok := a.(*net.TCPAddr)
	if !ok || !t.IP.IsUnspecified() {
		return a.String()
	}
	return fmt.Sprintf("127.0.0.1:%d", t.Port)
}
