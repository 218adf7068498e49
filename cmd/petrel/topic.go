package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/cli"
)

func newTopicCmd() *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, change, list, describe and delete topics",
		Example: `  petrel topic create Orders --queues 8
  petrel topic describe Orders`,
		Args: cobra.NoArgs,
	}
	addAdminFlags(cmd, &f)
	cmd.AddCommand(newTopicCreateCmd(&f), newTopicUpdateCmd(&f), newTopicListCmd(&f), newTopicDescribeCmd(&f), newTopicDeleteCmd(&f))
	return cmd
}

// parseAttrs reads --attr key=value flags.
func parseAttrs(in []string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range in {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" || strings.ContainsAny(a, ",+") {
			return nil, fmt.Errorf("%w: --attr %q: want key=value without commas or plus signs, e.g. --attr persistent=false", cli.ErrUsage, a)
		}
		out[k] = v
	}
	return out, nil
}

func newTopicCreateCmd(f *adminFlags) *cobra.Command {
	var spec cli.TopicSpec
	var queues int32
	var attrs []string
	cmd := &cobra.Command{
		Use:   "create TOPIC",
		Short: "Create a topic on every master broker",
		Long: `Create a topic on every master broker (or only on --broker) with --queues
read and write queues each, and wait until the name servers route it.
Attributes are free-form settings; persistent=false keeps the topic's
messages in memory only (faster, lost on restart). Fails if the topic
exists: change it with 'petrel topic update'.`,
		Example: `  petrel topic create Orders --queues 8
  petrel topic create Ticks --queues 2 --perm rw --attr persistent=false`,
		Args: cobra.ExactArgs(1),
		RunE: adminRun(f, func(ctx context.Context, c *cli.CLI, args []string) error {
			var err error
			if spec.SetAttrs, err = parseAttrs(attrs); err != nil {
				return err
			}
			spec.Name, spec.ReadQueues, spec.WriteQueues = args[0], queues, queues
			return c.TopicCreate(ctx, spec)
		}),
	}
	fl := cmd.Flags()
	fl.Int32Var(&queues, "queues", 4, "read and write queues per broker")
	fl.StringVar(&spec.Perm, "perm", "rw", "permission: rw, r (read only), w (write only) or - (none)")
	fl.StringArrayVar(&attrs, "attr", nil, "attribute key=value (repeatable), e.g. persistent=false")
	fl.StringVar(&spec.Broker, "broker", "", "create on this broker name only (default: every master)")
	return cmd
}

func newTopicUpdateCmd(f *adminFlags) *cobra.Command {
	var spec cli.TopicSpec
	var queues int32
	var attrs []string
	cmd := &cobra.Command{
		Use:   "update TOPIC",
		Short: "Change a topic's queues, permission or attributes",
		Long: `Change a topic on every broker that has it. Flags not given keep their
current value; --queues sets both read and write queues, --read-queues and
--write-queues one of them.`,
		Example: `  petrel topic update Orders --queues 16
  petrel topic update Orders --perm r --remove-attr team`,
		Args: cobra.ExactArgs(1),
		RunE: adminRun(f, func(ctx context.Context, c *cli.CLI, args []string) error {
			var err error
			if spec.SetAttrs, err = parseAttrs(attrs); err != nil {
				return err
			}
			spec.Name = args[0]
			if queues > 0 {
				spec.ReadQueues, spec.WriteQueues = queues, queues
			}
			return c.TopicUpdate(ctx, spec)
		}),
	}
	fl := cmd.Flags()
	fl.Int32Var(&queues, "queues", 0, "read and write queues per broker (0: keep)")
	fl.Int32Var(&spec.ReadQueues, "read-queues", 0, "read queues per broker (0: keep)")
	fl.Int32Var(&spec.WriteQueues, "write-queues", 0, "write queues per broker (0: keep)")
	fl.StringVar(&spec.Perm, "perm", "", "permission: rw, r, w or - (default: keep)")
	fl.StringArrayVar(&attrs, "attr", nil, "set attribute key=value (repeatable)")
	fl.StringArrayVar(&spec.RemoveAttrs, "remove-attr", nil, "remove attribute key (repeatable)")
	return cmd
}

func newTopicListCmd(f *adminFlags) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List topics with their queues, permission, brokers and attributes",
		Long: `List the topics of every master broker. Queue counts are summed over the
brokers that host a topic. System topics (TBW102, %RETRY%..., %DLQ%...,
rmq_sys_...) are left out unless --all is given.`,
		Example: `  petrel topic list
  petrel topic list --all -o json`,
		Args: cobra.NoArgs,
		RunE: adminRun(f, func(ctx context.Context, c *cli.CLI, _ []string) error { return c.TopicList(ctx, all) }),
	}
	cmd.Flags().BoolVar(&all, "all", false, "include system, retry and dead-letter topics")
	return cmd
}

func newTopicDescribeCmd(f *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "describe TOPIC",
		Short: "Show a topic's config and each queue's min/max offset and last store time",
		Example: `  petrel topic describe Orders
  petrel topic describe Orders -o json`,
		Args: cobra.ExactArgs(1),
		RunE: adminRun(f, func(ctx context.Context, c *cli.CLI, args []string) error { return c.TopicDescribe(ctx, args[0]) }),
	}
}

func newTopicDeleteCmd(f *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete TOPIC",
		Short: "Delete a topic from its brokers and the name servers",
		Long: `Delete a topic's config, queues and consumer offsets on every broker that
has it, and its route on the name servers. Its messages stay in the commit
log until retention removes them.`,
		Example: `  petrel topic delete Orders`,
		Args:    cobra.ExactArgs(1),
		RunE:    adminRun(f, func(ctx context.Context, c *cli.CLI, args []string) error { return c.TopicDelete(ctx, args[0]) }),
	}
}
