package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/cli"
)

func newSendCmd() *cobra.Command {
	var f adminFlags
	var spec cli.SendSpec
	var props []string
	var file, deliverAt string
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "send --topic TOPIC [BODY]",
		Short: "Send messages to a topic and print where they were stored",
		Long: `Send messages to a topic. The body is the BODY argument, the contents of
--file, or, with neither, standard input with one message per line. A body
from an argument or file is sent --count times; lines from standard input
are sent as they come, up to --count when it is given.

For every message one line (or, with -o json, one JSON object) gives its
unique id (msgId), the broker, queue and queue offset it was stored at, the
send status (SEND_OK, or FLUSH_DISK_TIMEOUT when a broker under --flush
sync could not flush in time) and its offset id. --delay or --deliver-at
makes a delayed message, invisible to consumers until then.`,
		Example: `  petrel send --topic Orders 'order 42 paid'
  petrel send --topic Orders --tag paid --key order-42 --property region=eu 'order 42 paid'
  petrel send --topic Orders --delay 30s --count 3 reminder
  tail -f app.log | petrel send --topic Logs`,
		Args: cobra.MaximumNArgs(1),
		RunE: adminRun(&f, func(ctx context.Context, c *cli.CLI, args []string) error {
			spec.Properties = map[string]string{}
			for _, p := range props {
				k, v, ok := strings.Cut(p, "=")
				if !ok || k == "" {
					return fmt.Errorf("%w: --property %q: want key=value", cli.ErrUsage, p)
				}
				spec.Properties[k] = v
			}
			if deliverAt != "" {
				if d, err := time.ParseDuration(deliverAt); err == nil {
					// ParseTime reads a duration as that long ago.
					return fmt.Errorf("%w: --deliver-at %q is a duration, not a time; for a delay use --delay %v", cli.ErrUsage, deliverAt, d)
				}
				t, err := cli.ParseTime(deliverAt, time.Now())
				if err != nil {
					return err
				}
				spec.DeliverAt = t
			}
			switch {
			case len(args) == 1 && file != "":
				return fmt.Errorf("%w: give the body as an argument or with --file, not both", cli.ErrUsage)
			case len(args) == 1:
				spec.Body = []byte(args[0])
			case file != "":
				b, err := os.ReadFile(file)
				if err != nil {
					return fmt.Errorf("%w: --file: %w", cli.ErrUsage, err)
				}
				spec.Body = b
			default:
				spec.Lines = cmd.InOrStdin()
			}
			return c.Send(ctx, spec)
		}),
	}
	addAdminFlags(cmd, &f)
	fl := cmd.Flags()
	fl.StringVar(&spec.Topic, "topic", "", "topic to send to (required)")
	fl.StringVar(&spec.Tag, "tag", "", "message tag, for consumers' tag filters")
	fl.StringArrayVar(&spec.Keys, "key", nil, "message `KEY`, for finding it with 'petrel message query' (repeatable)")
	fl.StringArrayVar(&props, "property", nil, "user property `KEY=VALUE` (repeatable)")
	fl.DurationVar(&spec.Delay, "delay", 0, "deliver this long after sending, e.g. 30s or 2h")
	fl.StringVar(&deliverAt, "deliver-at", "", "deliver at this time (RFC 3339, or a UTC date and time)")
	fl.StringVar(&file, "file", "", "read the body from this file")
	fl.IntVar(&spec.Count, "count", 0, "times to send a BODY or --file (default 1); with standard input, stop after this many lines")
	_ = cmd.MarkFlagRequired("topic")
	cmd.MarkFlagsMutuallyExclusive("delay", "deliver-at")
	return cmd
}
