package main

import (
	"cmp"
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/cli"
)

// namesrvEnv names the environment variable that sets --namesrv's default.
const namesrvEnv = "PETREL_NAMESRV"

// defaultNameServer is the default of every --namesrv that names servers to
// ask: $PETREL_NAMESRV, else the local default.
func defaultNameServer() string { return cmp.Or(os.Getenv(namesrvEnv), cli.DefaultNameServer) }

// adminFlags are the flags every operator command shares.
type adminFlags struct {
	namesrv string
	output  string
	timeout time.Duration
}

// addAdminFlags puts the shared flags on a top-level operator command, for
// it and its subcommands.
func addAdminFlags(cmd *cobra.Command, f *adminFlags) {
	fl := cmd.PersistentFlags()
	fl.StringVar(&f.namesrv, "namesrv", defaultNameServer(), "name servers, semicolon-separated host:port; "+namesrvEnv+" sets the default")
	fl.StringVarP(&f.output, "output", "o", cli.OutputTable, "output format: table or json (fields in docs/cli.md)")
	fl.DurationVar(&f.timeout, "timeout", cli.DefaultTimeout, "how long to wait for each answer of a name server or broker")
}

// adminRun returns a RunE that opens a CLI, runs fn until it returns or
// SIGINT/SIGTERM, and closes the CLI.
func adminRun(f *adminFlags, fn func(context.Context, *cli.CLI, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := cli.New(cli.Config{
			NameServers: cli.ParseNameServers(f.namesrv),
			Output:      f.output,
			Timeout:     f.timeout,
			Out:         cmd.OutOrStdout(),
			Progress:    cmd.ErrOrStderr(),
		})
		if err != nil {
			return err
		}
		defer c.Close()
		ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return fn(ctx, c, args)
	}
}

// newAdminCmds returns the operator commands.
func newAdminCmds() []*cobra.Command {
	return []*cobra.Command{newClusterCmd(), newTopicCmd(), newGroupCmd(), newSendCmd(), newConsumeCmd(), newMessageCmd(), newDLQCmd()}
}
