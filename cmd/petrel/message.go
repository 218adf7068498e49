package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/cli"
)

func newMessageCmd() *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:     "message",
		Short:   "Look up stored messages by id or key, cancel delayed ones",
		Example: `  petrel message query --topic Orders --key order-42`,
		Args:    cobra.NoArgs,
	}
	addAdminFlags(cmd, &f)
	var id, topic string
	var at messageAt
	get := &cobra.Command{
		Use:   "get (--id ID | --topic T --queue Q --offset O)",
		Short: "Show one message with all its properties",
		Long: `Show one message. ID is an offset id (offsetMsgId, which names the broker
and the commit-log position) or, with --topic, a unique message id (the
msgId producers get). With --topic, --queue and --offset instead of --id,
the message at that consume-queue offset (--broker names the broker when
the topic is on several); an offset outside the queue is refused with the
queue's min and max offsets.`,
		Example: `  petrel message get --id 7F00000100002A9F0000000000000F3C
  petrel message get --id 0A0B0C0D9A1B2C3D4E5F60718293A4B5 --topic Orders
  petrel message get --topic Orders --queue 2 --offset 1500`,
		Args: cobra.NoArgs,
		RunE: adminRun(&f, func(ctx context.Context, c *cli.CLI, _ []string) error {
			if at.set() {
				return c.MessageGetAt(ctx, topic, at.queue, at.offset, at.broker)
			}
			return c.MessageGet(ctx, id, topic)
		}),
	}
	get.Flags().StringVar(&id, "id", "", "offset id or unique id of the message")
	get.Flags().StringVar(&topic, "topic", "", "topic of the message (needed for a unique id)")
	at.flags(get)

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
	var ts cli.TraceSpec
	trace := &cobra.Command{
		Use:   "trace ID",
		Short: "Show a traced message's send and deliveries, in time order",
		Long: `Show the message trace of one message: its send (Pub), each delivery to a
consumer group (SubBefore, then SubAfter with the outcome) and the end of
its transaction (EndTransaction), one line each in time order, with the
group, client and store host, cost and status. ID is the message's unique
id (the msgId of its send).

Only clients with message trace enabled (enableMsgTrace in RocketMQ's
clients) record a trace; they send it in batches to the trace topic,
RMQ_SYS_TRACE_TOPIC unless they were given another (then pass the same
--trace-topic here), so it appears a few seconds after the send or the
consumption. With --topic, sends of other topics are left out.`,
		Example: `  petrel message trace 0A0B0C0D9A1B2C3D4E5F60718293A4B5
  petrel message trace 0A0B0C0D9A1B2C3D4E5F60718293A4B5 --trace-topic MyTraceTopic -o json`,
		Args: cobra.ExactArgs(1),
		RunE: adminRun(&f, func(ctx context.Context, c *cli.CLI, args []string) error {
			ts.ID = args[0]
			return c.MessageTrace(ctx, ts)
		}),
	}
	trace.Flags().StringVar(&ts.Topic, "topic", "", "topic of the message (leaves out sends of other topics)")
	trace.Flags().StringVar(&ts.TraceTopic, "trace-topic", cli.DefaultTraceTopic, "topic the clients send their trace records to")
	var cTopic, handle string
	cancel := &cobra.Command{
		Use:   "cancel (ID | --handle HANDLE) [--topic TOPIC]",
		Short: "Cancel a delayed message that is not delivered yet",
		Long: `Cancel a delayed message before it is due, so that it is never delivered.
ID is the message's unique id (the msgId its send printed); the brokers of
--topic are asked (all brokers of the cluster without it), and only a
message of that topic is cancelled. With --handle instead, the recall
handle a delayed send answered (recallHandle in petrel send -o json, or a
RocketMQ 5 client's SendResult/SendReceipt) names the topic and broker.
A message that is not pending (unknown, or due and delivered already) is
reported as not found and nothing is changed.`,
		Example: `  petrel message cancel 0A0B0C0D9A1B2C3D4E5F60718293A4B5 --topic Orders
  petrel message cancel --handle djEgT3JkZXJzIGJyb2tlci1hIDE3NjQ3NTYwMDAwMDEgMEEwQjBD...`,
		Args: cobra.MaximumNArgs(1),
		RunE: adminRun(&f, func(ctx context.Context, c *cli.CLI, args []string) error {
			switch {
			case handle != "" && len(args) > 0:
				return fmt.Errorf("%w: give either the message id or --handle, not both", cli.ErrUsage)
			case handle != "":
				return c.MessageRecall(ctx, handle, cTopic)
			case len(args) == 0:
				return fmt.Errorf("%w: give the message id (the msgId of its send) or --handle with its recall handle", cli.ErrUsage)
			}
			return c.MessageCancel(ctx, args[0], cTopic)
		}),
	}
	cancel.Flags().StringVar(&cTopic, "topic", "", "topic of the message: ask only its brokers and cancel only a message of it")
	cancel.Flags().StringVar(&handle, "handle", "", "the recall handle of the delayed message's send, instead of its id")
	cmd.AddCommand(get, query, trace, cancel)
	return cmd
}

// messageAt is the --queue, --offset and --broker of `message get`: the
// message at a consume-queue offset instead of an id.
type messageAt struct {
	queue  int32
	offset int64
	broker string
	cmd    *cobra.Command
}

func (a *messageAt) flags(cmd *cobra.Command) {
	a.cmd = cmd
	cmd.Flags().Int32Var(&a.queue, "queue", 0, "with --topic and --offset: the queue id")
	cmd.Flags().Int64Var(&a.offset, "offset", 0, "with --topic and --queue: the consume-queue offset of the message")
	cmd.Flags().StringVar(&a.broker, "broker", "", "with --offset: the broker, when the topic is on several")
}

func (a *messageAt) set() bool { return a.cmd.Flags().Changed("offset") }
