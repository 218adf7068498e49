package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/cli"
)

func newProducerCmd() *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:     "producer",
		Short:   "Inspect the producers connected to the brokers",
		Example: `  petrel producer list --group shop`,
		Args:    cobra.NoArgs,
	}
	addAdminFlags(cmd, &f)
	var group string
	list := &cobra.Command{
		Use:   "list",
		Short: "List connected producers: group, client id, address, language, version, last heartbeat",
		Long: `List the producers connected to each master broker: their producer group,
client id, address, client language and version, and when the broker last
heard a heartbeat from them. --group shows one group's producers only.`,
		Example: `  petrel producer list
  petrel producer list --group shop -o json`,
		Args: cobra.NoArgs,
		RunE: adminRun(&f, func(ctx context.Context, c *cli.CLI, _ []string) error { return c.ProducerList(ctx, group) }),
	}
	list.Flags().StringVar(&group, "group", "", "show only the producers of this producer group")
	cmd.AddCommand(list)
	return cmd
}
