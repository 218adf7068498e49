package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/cli"
)

// newBrokerAdminCmds are the operator commands under `petrel broker`
// (which itself runs a broker): config get|set, drain, undrain.
func newBrokerAdminCmds() []*cobra.Command {
	return []*cobra.Command{newBrokerConfigCmd(), newBrokerDrainCmd(true), newBrokerDrainCmd(false)}
}

func newBrokerConfigCmd() *cobra.Command {
	var f adminFlags
	var broker string
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show a broker's configuration or change the settings that change at run time",
		Long: `Show and change broker configuration with RocketMQ's requests
(GET_BROKER_CONFIG 26, UPDATE_BROKER_CONFIG 25, as mqadmin getBrokerConfig
and updateBrokerConfig), under RocketMQ's key names (brokerName,
flushDiskType, autoCreateTopicEnable, ...). The requests go to every live
master the name servers know, or to --broker alone.`,
		Example: `  petrel broker config get --broker broker-a
  petrel broker config set autoCreateTopicEnable=false`,
		Args: cobra.NoArgs,
	}
	addAdminFlags(cmd, &f)
	cmd.PersistentFlags().StringVar(&broker, "broker", "", "send the request to this broker only: host:port, or the broker name of a live master (default: every live master)")
	get := &cobra.Command{
		Use:   "get",
		Short: "Print each broker's configuration under RocketMQ's key names",
		Long: `Print the configuration of every live master, or of --broker: one row
per key, with RocketMQ's key names and value formats where a Petrel
setting means the same (listenPort, flushDiskType SYNC_FLUSH or
ASYNC_FLUSH, brokerRole ASYNC_MASTER, SYNC_MASTER or SLAVE,
messageDelayLevel "1s 5s ...", brokerPermission 6, 4 or 2, ...).`,
		Example: `  petrel broker config get
  petrel broker config get --broker 10.0.0.5:10911 -o json`,
		Args: cobra.NoArgs,
		RunE: adminRun(&f, func(ctx context.Context, c *cli.CLI, _ []string) error { return c.BrokerConfigGet(ctx, broker) }),
	}
	set := &cobra.Command{
		Use:   "set KEY=VALUE...",
		Short: "Change settings that are safe at run time: autoCreateTopicEnable, brokerPermission",
		Long: `Change broker settings at run time. Two can change:

  autoCreateTopicEnable=true|false  whether a send to an unknown topic creates it
  brokerPermission=6|4|2            6 read and write; 4 read only (a drain: the
                                    broker refuses sends and registers its topics
                                    read-only); 2 write only

Every other key is refused by name with the flag to restart the broker
with (flushDiskType: --flush, listenPort: --broker-listen, ...), and a
request with a refused key changes nothing on that broker. A changed
setting lasts until the broker restarts.`,
		Example: `  petrel broker config set autoCreateTopicEnable=false
  petrel broker config set brokerPermission=4 --broker broker-a`,
		Args: cobra.MinimumNArgs(1),
		RunE: adminRun(&f, func(ctx context.Context, c *cli.CLI, args []string) error {
			return c.BrokerConfigSet(ctx, broker, args)
		}),
	}
	cmd.AddCommand(get, set)
	return cmd
}

func newBrokerDrainCmd(drain bool) *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:   "drain BROKER_NAME",
		Short: "Move producers off a broker group while consumers finish its backlog",
		Long: `Drain a broker group before a restart: every name server of --namesrv
routes the group's queues without write permission (RocketMQ's
WIPE_WRITE_PERM_OF_BROKER 205, as mqadmin wipeWritePerm). Producers stop
choosing the group at their next route refresh (every 30 s for RocketMQ
clients) and send to the other groups; consumers go on reading its
queues to the end. The broker's registrations and restarts do not undo
it; 'petrel broker undrain' does. A name server that restarts forgets
it: run drain again then, or also set brokerPermission=4 on the broker
(petrel broker config set), which its registrations then carry.`,
		Example: `  petrel broker drain broker-a
  petrel broker drain broker-a --namesrv '10.0.0.1:9876;10.0.0.2:9876'`,
		Args: cobra.ExactArgs(1),
		RunE: adminRun(&f, func(ctx context.Context, c *cli.CLI, args []string) error { return c.BrokerDrain(ctx, args[0]) }),
	}
	if !drain {
		cmd.Use = "undrain BROKER_NAME"
		cmd.Short = "Let producers send to a drained broker group again"
		cmd.Long = `End a drain: every name server of --namesrv routes the group's queues
with the permissions the broker registered again (RocketMQ's
ADD_WRITE_PERM_OF_BROKER 327, as mqadmin addWritePerm), and a broker
whose brokerPermission was set to 4 gets 6 back. Producers choose the
group again at their next route refresh. The broker need not be running.`
		cmd.Example = `  petrel broker undrain broker-a`
		cmd.RunE = adminRun(&f, func(ctx context.Context, c *cli.CLI, args []string) error { return c.BrokerUndrain(ctx, args[0]) })
	}
	addAdminFlags(cmd, &f)
	return cmd
}
