// Command petrel is the Petrel message broker: one binary for the name
// server, the broker and the tools. Flags and config are parsed here and the
// parts are built from the internal packages; no logic lives in this package.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRoot().Execute(); err != nil {
		code := 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
			if ee.err == nil {
				os.Exit(code)
			}
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(os.Stderr, "petrel:", line)
		}
		os.Exit(code)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "petrel",
		Short: "Petrel: a RocketMQ-compatible message broker in one binary",
		Long: `Petrel is a message broker with RocketMQ's semantics: a commit log with
per-queue consume queues and a key index, producer and consumer groups,
tags, ordered, delayed and transactional messages, retries and dead-letter
queues. 'petrel server' runs everything in one process on a local data
directory.`,
		Version:       readBuildInfo().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(newServerCmd(), newNamesrvCmd(), newBrokerCmd(), newBenchCmd(), newVerifyCmd(), newVersionCmd())
	root.AddCommand(newAdminCmds()...)
	root.AddCommand(newControllerCmd())
	checkArgs(root)
	return root
}
