package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/cli"
)

func newClusterCmd() *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Inspect the brokers of a Petrel (or RocketMQ) cluster",
		Example: `  petrel cluster list
  petrel cluster groups --controller 10.0.0.1:9880,10.0.0.2:9880,10.0.0.3:9880`,
		Args: cobra.NoArgs,
	}
	addAdminFlags(cmd, &f)
	list := &cobra.Command{
		Use:   "list",
		Short: "List the brokers per cluster: address, role, version, uptime, put/get rates, disk use",
		Long: `List every broker the name servers know, per cluster: name, id and role
(MASTER for id 0, else SLAVE), address, version, uptime, messages put and
got per second over the last 10 seconds, the used share of the disk
that holds the broker's data directory (as df computes it: used / (used +
available)), and how many messages retention removed before their reserve
time (disk above --disk-max-used-ratio) while a group had not consumed
them. A broker that does not answer is listed as unreachable.`,
		Example: `  petrel cluster list
  petrel cluster list --namesrv 10.0.0.5:9876 -o json`,
		Args: cobra.NoArgs,
		RunE: adminRun(&f, func(ctx context.Context, c *cli.CLI, _ []string) error { return c.ClusterList(ctx) }),
	}
	cmd.AddCommand(list)
	cmd.AddCommand(newClusterGroupsCmd(&f), newClusterElectCmd(&f), newClusterTransferCmd(&f))
	return cmd
}
