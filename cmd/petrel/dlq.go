package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/cli"
)

func newDLQCmd() *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:     "dlq",
		Short:   "List and resend the dead-letter messages of a consumer group",
		Example: `  petrel dlq list --group order-workers`,
		Long: `A message a consumer group failed too often (16 attempts by default) goes
to the group's dead-letter queue, topic %DLQ%<group>. These commands list
those messages and store them again in their original topic.`,
		Args: cobra.NoArgs,
	}
	addAdminFlags(cmd, &f)
	var group string
	var limit int
	list := &cobra.Command{
		Use:     "list --group GROUP",
		Short:   "List the dead-letter messages of a group",
		Example: `  petrel dlq list --group order-workers`,
		Args:    cobra.NoArgs,
		RunE:    adminRun(&f, func(ctx context.Context, c *cli.CLI, _ []string) error { return c.DLQList(ctx, group, limit) }),
	}
	list.Flags().StringVar(&group, "group", "", "consumer group (required)")
	list.Flags().IntVar(&limit, "limit", 1000, "at most this many messages")
	_ = list.MarkFlagRequired("group")

	var rgroup, id string
	var all bool
	resend := &cobra.Command{
		Use:   "resend --group GROUP (--id ID | --all)",
		Short: "Store dead-letter messages again in their original topic",
		Long: `Store dead-letter messages of a group again in their original topic, as
new messages with no failed attempts, so the group consumes them again.
--id takes the offset id or the unique id that 'petrel dlq list' shows;
--all resends every one, with a progress bar on a terminal. The dead-letter
copies stay where they are.`,
		Example: `  petrel dlq resend --group order-workers --id 7F00000100002A9F0000000000000F3C
  petrel dlq resend --group order-workers --all`,
		Args: cobra.NoArgs,
		RunE: adminRun(&f, func(ctx context.Context, c *cli.CLI, _ []string) error { return c.DLQResend(ctx, rgroup, id, all) }),
	}
	resend.Flags().StringVar(&rgroup, "group", "", "consumer group (required)")
	resend.Flags().StringVar(&id, "id", "", "the message to resend")
	resend.Flags().BoolVar(&all, "all", false, "resend every dead-letter message of the group")
	_ = resend.MarkFlagRequired("group")
	resend.MarkFlagsMutuallyExclusive("id", "all")
	resend.MarkFlagsOneRequired("id", "all")
	cmd.AddCommand(list, resend)
	return cmd
}
