package main

import (
	"cmp"
	"context"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/cli"
	"github.com/petrelmq/petrel/internal/controller/client"
	"github.com/petrelmq/petrel/internal/remoting"
)

// controllerEnv names the environment variable that sets --controller's
// default for the controller commands.
const controllerEnv = "PETREL_CONTROLLER"

// controllerFlags are the flags of the commands that ask the controller.
type controllerFlags struct {
	controller string
	group      string
	broker     int64
}

func addControllerFlag(cmd *cobra.Command, f *controllerFlags) {
	cmd.Flags().StringVar(&f.controller, "controller", os.Getenv(controllerEnv), "controller voters, comma-separated host:port (their --controller-listen addresses); "+controllerEnv+" sets the default")
}

// controllerRun is adminRun for a command that also asks the controller.
func controllerRun(af *adminFlags, f *controllerFlags, fn func(context.Context, *cli.CLI, cli.Controller) error) func(*cobra.Command, []string) error {
	return adminRun(af, func(ctx context.Context, c *cli.CLI, _ []string) error {
		addrs, err := cli.ParseControllers(f.controller)
		if err != nil {
			return err
		}
		ctl := newControllerClient(addrs, cmp.Or(af.timeout, cli.DefaultTimeout), c.ClientOptions())
		defer ctl.Close()
		return fn(ctx, c, ctl)
	})
}

// controllerClient is the client the controller commands use.
type controllerClient interface {
	cli.Controller
	Close() error
}

func newControllerClient(addrs []string, timeout time.Duration, ro remoting.ClientOptions) controllerClient {
	// An operator election waits out the old master's lease (3.35 s by
	// default): a call may take that much longer than one answer. The
	// controller is dialed and signed to as the CLI's other servers
	// (--tls, --access-key).
	return client.New(addrs, client.Options{Timeout: timeout + cli.ElectionWait, Network: ro.Network, Sign: ro.Sign})
}

func newClusterGroupsCmd(af *adminFlags) *cobra.Command {
	f := &controllerFlags{}
	cmd := &cobra.Command{
		Use:   "groups",
		Short: "Show each broker group's master, epoch, in-sync set and replicas as the controller has them",
		Long: `Show the broker groups of a cluster whose brokers run with --controller:
for each group its master (replica id and address), the master epoch (one
more on every election), the in-sync set (the replicas a new master may
come from) and its version, a transfer under way, and every replica with
its id, whether the controller hears its heartbeats (alive) and its log
end offset (leo). The first line names the controller leader and the
voters. -o json prints the controller's answer.`,
		Example: `  petrel cluster groups --controller 10.0.0.1:9880,10.0.0.2:9880,10.0.0.3:9880
  PETREL_CONTROLLER=127.0.0.1:9880 petrel cluster groups --group broker-a -o json`,
		Args: cobra.NoArgs,
		RunE: controllerRun(af, f, func(ctx context.Context, c *cli.CLI, ctl cli.Controller) error {
			return c.ClusterGroups(ctx, ctl, f.group)
		}),
	}
	addControllerFlag(cmd, f)
	cmd.Flags().StringVar(&f.group, "group", "", "only this group (its --broker-name)")
	return cmd
}

func newClusterElectCmd(af *adminFlags) *cobra.Command {
	f := &controllerFlags{}
	var unclean bool
	cmd := &cobra.Command{
		Use:   "elect-master",
		Short: "Elect a new master of a broker group now (from its in-sync set)",
		Long: `Ask the controller to elect a new master of a group at once, with the next
epoch: replica --broker, or with no --broker the live in-sync replica with
the longest log. The old master is fenced (its lease is not renewed; it
stops acknowledging sends) and becomes a slave. The target must be in the
in-sync set; --unclean allows one outside it, which can lose acknowledged
messages: the controller must run with --controller-unclean-election, and
the election is recorded in its audit. For a planned hand-over (a rolling
restart) use 'petrel cluster transfer', which waits for the target to
hold the whole log first.`,
		Example: `  petrel cluster elect-master --controller 10.0.0.1:9880 --group broker-a
  petrel cluster elect-master --controller 10.0.0.1:9880 --group broker-a --broker 3`,
		Args: cobra.NoArgs,
		RunE: controllerRun(af, f, func(ctx context.Context, c *cli.CLI, ctl cli.Controller) error {
			return c.ElectMaster(ctx, ctl, f.group, f.broker, unclean)
		}),
	}
	addControllerFlag(cmd, f)
	cmd.Flags().StringVar(&f.group, "group", "", "the broker group (its --broker-name); required")
	cmd.Flags().Int64Var(&f.broker, "broker", 0, "replica id of the new master (0: the best live in-sync replica)")
	cmd.Flags().BoolVar(&unclean, "unclean", false, "allow a master outside the in-sync set (may lose acknowledged messages; the controller must allow it)")
	_ = cmd.MarkFlagRequired("group")
	return cmd
}

func newClusterTransferCmd(af *adminFlags) *cobra.Command {
	f := &controllerFlags{}
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "transfer",
		Short: "Hand a group's master role over gracefully to an in-sync replica (for rolling restarts)",
		Long: `Ask a group's master to hand its role over to replica --broker (or, with
none, the best live in-sync replica): the master stops acknowledging
sends, waits (up to 5 s) until the target holds its whole log, and
resigns; the controller elects the target with the next epoch. Clients
retry the new master. transfer waits until the epoch has changed (at most
--wait) and prints the new master; when the master does not hand over in
time it keeps its role and transfer fails with what it saw.

Rolling restart: for each replica, transfer away from it if it is the
master, restart it, and wait until 'petrel cluster groups' shows it in
the in-sync set again.`,
		Example: `  petrel cluster transfer --controller 10.0.0.1:9880 --group broker-a
  petrel cluster transfer --controller 10.0.0.1:9880 --group broker-a --broker 2 --wait 1m`,
		Args: cobra.NoArgs,
		RunE: controllerRun(af, f, func(ctx context.Context, c *cli.CLI, ctl cli.Controller) error {
			return c.Transfer(ctx, ctl, f.group, f.broker, wait)
		}),
	}
	addControllerFlag(cmd, f)
	cmd.Flags().StringVar(&f.group, "group", "", "the broker group (its --broker-name); required")
	cmd.Flags().Int64Var(&f.broker, "broker", 0, "replica id of the new master (0: the best live in-sync replica)")
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to wait for the new master")
	_ = cmd.MarkFlagRequired("group")
	return cmd
}
