package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/cli"
)

func newConsumeCmd() *cobra.Command {
	var f adminFlags
	var spec cli.ConsumeSpec
	cmd := &cobra.Command{
		Use:   "consume --topic TOPIC",
		Short: "Print the messages of a topic as they arrive (like kcat -C)",
		Long: `Print the messages of a topic, one line each, and wait for more until
--count messages were printed, the end is reached (--exit) or Ctrl-C.

Without --group nothing is committed: the topic is read from --from
(default earliest). With --group the group's committed offsets are the
start (unless --from is given; a queue the group has no offset on starts at
its end, as RocketMQ consumers do, so add --from earliest to read what is
already there) and what was printed is committed as the group's progress;
running members of the group are not told, so stop them first or use a
group of its own.

--format is a Go template over the message: {{.ID}} {{.OffsetID}}
{{.Topic}} {{.Broker}} {{.QueueID}} {{.QueueOffset}} {{.Tags}} {{.Keys}}
{{.Body}} {{.BornTime}} {{.StoreTime}} {{.ReconsumeTimes}}
{{.Property "KEY"}}. With -o json each message is one JSON object per line.`,
		Example: `  petrel consume --topic Orders --from earliest --exit
  petrel consume --topic Orders --tag 'paid || refunded' --format '{{.StoreTime}} {{.Tags}} {{.Body}}'
  petrel consume --topic Orders --group audit --count 100 -o json
  petrel consume --topic Orders --from 2026-12-01T10:00:00Z --until 2026-12-01T11:00:00Z
  petrel consume --topic Orders --sql "region = 'eu' AND amount > 100" --exit`,
		Args: cobra.NoArgs,
		RunE: adminRun(&f, func(ctx context.Context, c *cli.CLI, _ []string) error { return c.Consume(ctx, spec) }),
	}
	addAdminFlags(cmd, &f)
	fl := cmd.Flags()
	fl.StringVar(&spec.Topic, "topic", "", "topic to read (required)")
	fl.StringVar(&spec.Group, "group", "", "consumer group whose offsets to start from and commit (default: none, commit nothing)")
	fl.StringVar(&spec.Tag, "tag", "*", "tag expression: * or 'TagA || TagB'")
	fl.StringVar(&spec.From, "from", "", "earliest, latest, or a time (RFC 3339, or a duration ago like 10m); default: the group's offsets (the end where it has none), without --group earliest")
	fl.StringVar(&spec.Until, "until", "", "stop each queue at its first message stored after this time (RFC 3339, or a duration ago like 5m); a time already past also stops at the end, a future one ends the command then at the latest")
	fl.StringVar(&spec.SQL, "sql", "", "SQL92 filter over the messages' properties, run by the broker, e.g. \"a > 5 AND color = 'red'\" (instead of --tag)")
	fl.IntVar(&spec.Count, "count", 0, "stop after this many messages (0: no limit)")
	fl.StringVar(&spec.Format, "format", cli.DefaultFormat, "line template (Go text/template over the message)")
	fl.BoolVarP(&spec.Exit, "exit", "e", false, "stop at the end of every queue instead of waiting for new messages")
	_ = cmd.MarkFlagRequired("topic")
	return cmd
}
