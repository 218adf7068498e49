package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/cli"
)

func newMessageCmd() *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:     "message",
		Short:   "Look up stored messages by id or key",
		Example: `  petrel message query --topic Orders --key order-42`,
		Args:    cobra.NoArgs,
	}
	addAdminFlags(cmd, &f)
	var id, topic string
	get := &cobra.Command{
		Use:   "get --id ID",
		Short: "Show one message with all its properties",
		Long: `Show one message. ID is an offset id (offsetMsgId, which names the broker
and the commit-log position) or, with --topic, a unique message id (the
msgId producers get).`,
		Example: `  petrel message get --id 7F00000100002A9F0000000000000F3C
  petrel message get --id 0A0B0C0D9A1B2C3D4E5F60718293A4B5 --topic Orders`,
		Args: cobra.NoArgs,
		RunE: adminRun(&f, func(ctx context.Context, c *cli.CLI, _ []string) error { return c.MessageGet(ctx, id, topic) }),
	}
	get.Flags().StringVar(&id, "id", "", "offset id or unique id of the message (required)")
	get.Flags().StringVar(&topic, "topic", "", "topic of the message (needed for a unique id)")
	_ = get.MarkFlagRequired("id")

	var qTopic, key, since string
	var limit int
	query := &cobra.Command{
		Use:   "query --topic TOPIC --key KEY",
		Short: "List the messages of a topic with a key, newest first",
		Long: `List the messages of a topic whose keys (set by producers, --key of
petrel send) or unique id equal KEY, newest first, stored since --since.`,
		Example: `  petrel message query --topic Orders --key order-42
  petrel message query --topic Orders --key order-42 --since 24h -o json`,
		Args: cobra.NoArgs,
		RunE: adminRun(&f, func(ctx context.Context, c *cli.CLI, _ []string) error {
			var t time.Time
			if since != "" {
				var err error
				if t, err = cli.ParseTime(since, time.Now()); err != nil {
					return err
				}
			}
			return c.MessageQuery(ctx, qTopic, key, t, limit)
		}),
	}
	fl := query.Flags()
	fl.StringVar(&qTopic, "topic", "", "topic (required)")
	fl.StringVar(&key, "key", "", "message key (required)")
	fl.StringVar(&since, "since", "", "only messages stored since this time (RFC 3339, or a duration ago like 24h)")
	fl.IntVar(&limit, "limit", 64, "at most this many messages")
	_ = query.MarkFlagRequired("topic")
	_ = query.MarkFlagRequired("key")
	cmd.AddCommand(get, query)
	return cmd
}
