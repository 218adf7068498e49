package main

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/petrelmq/petrel/internal/cli"
)

// groupSpecFlags are the settings flags of `group create` and `group update`.
type groupSpecFlags struct {
	orderly, broadcast, consumeEnable bool
	retryMax                          int32
	attrs, removeAttrs                []string
}

func (g *groupSpecFlags) add(fl *pflag.FlagSet, update bool) {
	fl.BoolVar(&g.orderly, "orderly", false, "consume in order (5.x simple consumers get FIFO; RocketMQ's consumeMessageOrderly)")
	fl.Int32Var(&g.retryMax, "retry-max", 16, "re-deliveries before a message goes to %DLQ%<group> (5.x: max attempts = N+1)")
	fl.BoolVar(&g.broadcast, "broadcast", false, "allow broadcasting consumers (RocketMQ's consumeBroadcastEnable)")
	fl.BoolVar(&g.consumeEnable, "consume-enable", true, "let the group consume; false stops every pull and receive of the group")
	fl.StringArrayVar(&g.attrs, "attr", nil, "set attribute key=value (repeatable)")
	if update {
		fl.StringArrayVar(&g.removeAttrs, "remove-attr", nil, "remove attribute key (repeatable)")
	}
}

// spec turns the flags the user gave into a GroupSpec; flags not given
// stay nil.
func (g *groupSpecFlags) spec(cmd *cobra.Command, name string) (cli.GroupSpec, error) {
	spec := cli.GroupSpec{Name: name, RemoveAttrs: g.removeAttrs}
	var err error
	if spec.SetAttrs, err = parseAttrs(g.attrs); err != nil {
		return spec, err
	}
	fl := cmd.Flags()
	if fl.Changed("orderly") {
		spec.Orderly = &g.orderly
	}
	if fl.Changed("retry-max") {
		spec.RetryMax = &g.retryMax
	}
	if fl.Changed("broadcast") {
		spec.Broadcast = &g.broadcast
	}
	if fl.Changed("consume-enable") {
		spec.ConsumeEnable = &g.consumeEnable
	}
	return spec, nil
}

func newGroupCreateCmd(f *adminFlags) *cobra.Command {
	var g groupSpecFlags
	cmd := &cobra.Command{
		Use:   "create GROUP",
		Short: "Create a consumer group's config on every master broker",
		Long: `Create a subscription group config on every master broker, as mqadmin
updateSubGroup does: whether the group consumes in order (--orderly), how
often a failed message is delivered again before it goes to the group's
dead-letter queue %DLQ%<group> (--retry-max; a 5.x consumer gets
retry-max + 1 delivery attempts), whether broadcasting consumers may use it,
whether it may consume at all. Create the group before its consumers start
so they get these settings from the start. Fails if the group has a config
already (a member's first heartbeat creates one with the defaults): change
it with 'petrel group update'.`,
		Example: `  petrel group create order-workers --orderly
  petrel group create billing --retry-max 2 --attr team=payments`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := g.spec(cmd, args[0])
			if err != nil {
				return err
			}
			return adminRun(f, func(ctx context.Context, c *cli.CLI, _ []string) error { return c.GroupCreate(ctx, spec) })(cmd, args)
		},
	}
	g.add(cmd.Flags(), false)
	return cmd
}

func newGroupUpdateCmd(f *adminFlags) *cobra.Command {
	var g groupSpecFlags
	cmd := &cobra.Command{
		Use:   "update GROUP",
		Short: "Change a consumer group's config on every broker that has it",
		Long: `Change a subscription group config on every master broker that has it.
Flags not given keep their current value. Running members follow at once:
5.x clients get their new settings pushed and the broker applies FIFO and
max attempts from the next receive; 4.x members see the new retry count at
their next send-back (unless they set their own maxReconsumeTimes);
--consume-enable=false stops every pull and receive of the group.`,
		Example: `  petrel group update order-workers --retry-max 3
  petrel group update order-workers --consume-enable=false`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := g.spec(cmd, args[0])
			if err != nil {
				return err
			}
			return adminRun(f, func(ctx context.Context, c *cli.CLI, _ []string) error { return c.GroupUpdate(ctx, spec) })(cmd, args)
		},
	}
	g.add(cmd.Flags(), true)
	return cmd
}

func newGroupDeleteCmd(f *adminFlags) *cobra.Command {
	var clean bool
	cmd := &cobra.Command{
		Use:   "delete GROUP",
		Short: "Delete a consumer group's config, and with --clean-offset its offsets",
		Long: `Delete a subscription group config on every master broker, as mqadmin
deleteSubGroup does. With --clean-offset the group's committed offsets and
its simple consumers' positions go too, so a group created again under the
name starts afresh. Stop the group's consumers first: a member still
running recreates the default config with its next heartbeat. The group's
%RETRY% and %DLQ% topics are kept.`,
		Example: `  petrel group delete order-workers --clean-offset`,
		Args:    cobra.ExactArgs(1),
		RunE: adminRun(f, func(ctx context.Context, c *cli.CLI, args []string) error {
			return c.GroupDelete(ctx, args[0], clean)
		}),
	}
	cmd.Flags().BoolVar(&clean, "clean-offset", false, "also remove the group's committed offsets and simple-consumer positions")
	return cmd
}
