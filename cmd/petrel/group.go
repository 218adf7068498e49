package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/cli"
)

func newGroupCmd() *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:   "group",
		Short: "Create, change, inspect and delete consumer groups and move their offsets",
		Example: `  petrel group create order-workers --orderly --retry-max 3
  petrel group describe order-workers
  petrel group reset-offset order-workers --topic Orders --to-earliest`,
		Args: cobra.NoArgs,
	}
	addAdminFlags(cmd, &f)
	list := &cobra.Command{
		Use:     "list",
		Short:   "List consumer groups with their connected members, topics, total lag and config",
		Example: `  petrel group list -o json`,
		Args:    cobra.NoArgs,
		RunE:    adminRun(&f, func(ctx context.Context, c *cli.CLI, _ []string) error { return c.GroupList(ctx) }),
	}
	describe := &cobra.Command{
		Use:   "describe GROUP",
		Short: "Show a group's members, subscriptions and lag per queue",
		Long: `Show a consumer group: its connected members (client id, address,
language, version), their subscriptions, and per queue the broker's max
offset, the group's committed offset and the lag between them, with the
total lag.`,
		Example: `  petrel group describe order-workers`,
		Args:    cobra.ExactArgs(1),
		RunE:    adminRun(&f, func(ctx context.Context, c *cli.CLI, args []string) error { return c.GroupDescribe(ctx, args[0]) }),
	}
	clients := &cobra.Command{
		Use:   "clients GROUP",
		Short: "List a group's connected consumers",
		Long: `List the consumers connected for a group on each master broker: client
id, address, language and client version, with the group's consume type
(pull or push), message model (clustering or broadcasting) and
subscriptions. A group with no consumer connected prints a line saying so.`,
		Example: `  petrel group clients order-workers
  petrel group clients order-workers -o json`,
		Args: cobra.ExactArgs(1),
		RunE: adminRun(&f, func(ctx context.Context, c *cli.CLI, args []string) error { return c.GroupClients(ctx, args[0]) }),
	}
	cmd.AddCommand(list, describe, clients, newGroupResetCmd(&f))
	cmd.AddCommand(newGroupCreateCmd(&f), newGroupUpdateCmd(&f), newGroupDeleteCmd(&f))
	return cmd
}

func newGroupResetCmd(f *adminFlags) *cobra.Command {
	var topic, toTime string
	var to cli.ResetTarget
	cmd := &cobra.Command{
		Use:   "reset-offset GROUP --topic TOPIC (--to-time TIME | --to-earliest | --to-latest)",
		Short: "Move a group's offsets on a topic to a time, the earliest or the latest message",
		Long: `Move a consumer group's committed offsets on every queue of a topic: to
the first message stored at or after --to-time, to the first message
(--to-earliest) or past the last (--to-latest). The brokers store the new
offsets and tell the group's running members, which drop what they hold and
consume again from there (RocketMQ clients need about 10 s for that).
TIME is RFC 3339 (2026-11-29T12:00:00Z), a UTC date and time
("2026-11-29 12:00:00") or a duration ago (30m).`,
		Example: `  petrel group reset-offset order-workers --topic Orders --to-time 2026-11-29T12:00:00Z
  petrel group reset-offset order-workers --topic Orders --to-time 1h
  petrel group reset-offset order-workers --topic Orders --to-latest`,
		Args: cobra.ExactArgs(1),
		RunE: adminRun(f, func(ctx context.Context, c *cli.CLI, args []string) error {
			if toTime != "" {
				t, err := cli.ParseTime(toTime, time.Now())
				if err != nil {
					return err
				}
				to.Time = t
			}
			return c.GroupResetOffset(ctx, args[0], topic, to)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&topic, "topic", "", "topic whose offsets move (required)")
	fl.StringVar(&toTime, "to-time", "", "move to the first message stored at or after this time")
	fl.BoolVar(&to.Earliest, "to-earliest", false, "move to the first message of each queue")
	fl.BoolVar(&to.Latest, "to-latest", false, "move past the last message of each queue (skip the backlog)")
	_ = cmd.MarkFlagRequired("topic")
	cmd.MarkFlagsMutuallyExclusive("to-time", "to-earliest", "to-latest")
	cmd.MarkFlagsOneRequired("to-time", "to-earliest", "to-latest")
	return cmd
}
