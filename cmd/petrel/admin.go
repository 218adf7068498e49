package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
	sec     securityFlags
}

// securityFlags are the credentials and TLS flags of every command that
// talks to a server (the operator commands and bench).
type securityFlags struct {
	accessKey, secretKey string
	tls, tlsInsecure     bool
	tlsCA                string
}

// addSecurityFlags puts --access-key, --secret-key, --tls, --tls-ca and
// --tls-insecure on fl.
func addSecurityFlags(fl *pflag.FlagSet, f *securityFlags) {
	fl.StringVar(&f.accessKey, "access-key", "", "access key (user name) that signs every request, for servers run with --auth; "+cli.AccessKeyEnv+" sets it when the flag is not given")
	fl.StringVar(&f.secretKey, "secret-key", "", "secret key of --access-key; "+cli.SecretKeyEnv+" sets it when the flag is not given (prefer the variable: a secret on the command line is visible in ps)")
	fl.BoolVar(&f.tls, "tls", false, "dial name servers and brokers over TLS (servers run with --tls-mode enforcing or permissive), verifying their certificate against the system's CAs")
	fl.StringVar(&f.tlsCA, "tls-ca", "", "verify the servers' certificates against this CA file (PEM); implies --tls")
	fl.BoolVar(&f.tlsInsecure, "tls-insecure", false, "dial TLS without verifying the servers' certificates (self-signed test servers only); implies --tls")
}

// resolve reads the credentials (flags, else the environment) and builds
// the TLS config; a key without a secret or vice versa is a usage error.
func (f *securityFlags) resolve() (accessKey, secretKey string, tlsCfg *tls.Config, err error) {
	if accessKey, secretKey, err = cli.ResolveCredentials(f.accessKey, f.secretKey, os.Getenv); err != nil {
		return "", "", nil, err
	}
	if tlsCfg, err = cli.TLSConfig(f.tls, f.tlsCA, f.tlsInsecure); err != nil {
		return "", "", nil, err
	}
	return accessKey, secretKey, tlsCfg, nil
}

// addAdminFlags puts the shared flags on a top-level operator command, for
// it and its subcommands.
func addAdminFlags(cmd *cobra.Command, f *adminFlags) {
	fl := cmd.PersistentFlags()
	fl.StringVar(&f.namesrv, "namesrv", defaultNameServer(), "name servers, semicolon-separated host:port; "+namesrvEnv+" sets the default")
	fl.StringVarP(&f.output, "output", "o", cli.OutputTable, "output format: table or json (fields in docs/cli.md)")
	fl.DurationVar(&f.timeout, "timeout", cli.DefaultTimeout, "how long to wait for each answer of a name server or broker")
	addSecurityFlags(fl, &f.sec)
}

// config is the CLI config of the shared flags.
func (f *adminFlags) config(cmd *cobra.Command) (cli.Config, error) {
	ak, sk, tlsCfg, err := f.sec.resolve()
	if err != nil {
		return cli.Config{}, err
	}
	return cli.Config{
		NameServers: cli.ParseNameServers(f.namesrv),
		Output:      f.output,
		Timeout:     f.timeout,
		Out:         cmd.OutOrStdout(),
		Progress:    cmd.ErrOrStderr(),
		AccessKey:   ak,
		SecretKey:   sk,
		TLS:         tlsCfg,
	}, nil
}

// adminRun returns a RunE that opens a CLI, runs fn until it returns or
// SIGINT/SIGTERM, and closes the CLI.
func adminRun(f *adminFlags, fn func(context.Context, *cli.CLI, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		cfg, err := f.config(cmd)
		if err != nil {
			return err
		}
		c, err := cli.New(cfg)
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
	return []*cobra.Command{newClusterCmd(), newTopicCmd(), newGroupCmd(), newProducerCmd(), newSendCmd(), newConsumeCmd(), newMessageCmd(), newDLQCmd(), newUserCmd(), newACLCmd()}
}
