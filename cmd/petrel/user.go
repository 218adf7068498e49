package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/cli"
)

// secretHelp is what the user commands say about --secret.
const secretHelp = "the user's secret key; visible to other local users in ps and in the shell history: prefer --secret-file"

func newUserCmd() *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Create, change, list and delete the users of brokers run with --auth",
		Long: `Manage the users of ACL 2.0 (RocketMQ 5.3's model) on the brokers: each
user has a secret key (its clients sign requests with the user name as
access key and this secret), a type (super users may do anything, normal
users what their ACL allows) and a status (a disabled user is refused).

Users are broker metadata: every command sends its request (RocketMQ's
codes 3001-3005, as mqadmin createUser ... listUser) to every live master
the name servers know, or to --broker alone; slaves get the change by
replication. Managing users needs a super user's credentials
(--access-key/--secret-key or PETREL_ACCESS_KEY/PETREL_SECRET_KEY).`,
		Example: `  export PETREL_ACCESS_KEY=admin PETREL_SECRET_KEY=...
  petrel user create alice --secret-file alice.secret
  petrel user list`,
		Args: cobra.NoArgs,
	}
	addAdminFlags(cmd, &f)
	cmd.AddCommand(newUserCreateCmd(&f), newUserUpdateCmd(&f), newUserDeleteCmd(&f), newUserGetCmd(&f), newUserListCmd(&f))
	return cmd
}

// addBrokerFlag adds --broker of the user and ACL commands.
func addBrokerFlag(cmd *cobra.Command, broker *string) {
	cmd.Flags().StringVar(broker, "broker", "", "send the request to this broker only: host:port, or the broker name of a live master (default: every live master)")
}

// userSecretFlags are --secret and --secret-file.
type userSecretFlags struct{ secret, file string }

func (s *userSecretFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.secret, "secret", "", secretHelp)
	cmd.Flags().StringVar(&s.file, "secret-file", "", "read the user's secret key from this file (its trailing line break is dropped)")
	cmd.MarkFlagsMutuallyExclusive("secret", "secret-file")
}

func (s *userSecretFlags) read() (string, error) {
	if s.file != "" {
		return cli.ReadSecretFile(s.file)
	}
	return s.secret, nil
}

// run is the RunE of user create and update: spec named by the NAME
// argument, with the secret read from the flags, sent by send.
func (s *userSecretFlags) run(f *adminFlags, spec *cli.UserSpec, send func(*cli.CLI, context.Context, cli.UserSpec) error) func(*cobra.Command, []string) error {
	return adminRun(f, func(ctx context.Context, c *cli.CLI, args []string) error {
		var err error
		if spec.Secret, err = s.read(); err != nil {
			return err
		}
		spec.Name = args[0]
		return send(c, ctx, *spec)
	})
}

func newUserCreateCmd(f *adminFlags) *cobra.Command {
	var spec cli.UserSpec
	var sec userSecretFlags
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a user with a secret key on every master broker",
		Long: `Create user NAME with a secret key (--secret-file, or --secret) on every
live master (or --broker): a normal user unless --type super, enabled.
Its clients then sign with access key NAME and that secret. A normal user
may do only what its ACL allows ('petrel acl create'). Fails on a broker
that has the user already: change it with 'petrel user update'.`,
		Example: `  petrel user create alice --secret-file alice.secret
  petrel user create ops --type super --secret-file ops.secret`,
		Args: cobra.ExactArgs(1),
		RunE: sec.run(f, &spec, (*cli.CLI).UserCreate),
	}
	sec.add(cmd)
	cmd.Flags().StringVar(&spec.Type, "type", "normal", "normal (what its ACL allows) or super (everything)")
	addBrokerFlag(cmd, &spec.Broker)
	return cmd
}

func newUserUpdateCmd(f *adminFlags) *cobra.Command {
	var spec cli.UserSpec
	var sec userSecretFlags
	cmd := &cobra.Command{
		Use:   "update NAME",
		Short: "Change a user's secret key, type or status",
		Long: `Change user NAME on every live master (or --broker): a new secret key
(rotation: give clients the new one, then update), its type, or its
status (disable refuses its requests without deleting it). Flags not given
keep their current value.`,
		Example: `  petrel user update alice --secret-file alice.new
  petrel user update alice --status disable`,
		Args: cobra.ExactArgs(1),
		RunE: sec.run(f, &spec, (*cli.CLI).UserUpdate),
	}
	sec.add(cmd)
	cmd.Flags().StringVar(&spec.Type, "type", "", "normal or super (default: keep)")
	cmd.Flags().StringVar(&spec.Status, "status", "", "enable or disable (default: keep)")
	addBrokerFlag(cmd, &spec.Broker)
	return cmd
}

func newUserDeleteCmd(f *adminFlags) *cobra.Command {
	var broker string
	cmd := &cobra.Command{
		Use:     "delete NAME",
		Short:   "Delete a user and its ACL from every master broker",
		Example: `  petrel user delete alice`,
		Args:    cobra.ExactArgs(1),
		RunE: adminRun(f, func(ctx context.Context, c *cli.CLI, args []string) error {
			return c.UserDelete(ctx, args[0], broker)
		}),
	}
	addBrokerFlag(cmd, &broker)
	return cmd
}

func newUserGetCmd(f *adminFlags) *cobra.Command {
	var broker string
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show a user's type and status on each master broker",
		Long: `Show user NAME as each live master (or --broker) has it: type and status.
The table never shows the secret; -o json includes it (password) only
when the broker sends it (RocketMQ sends it to super users).`,
		Example: `  petrel user get alice
  petrel user get alice -o json`,
		Args: cobra.ExactArgs(1),
		RunE: adminRun(f, func(ctx context.Context, c *cli.CLI, args []string) error {
			return c.UserGet(ctx, args[0], broker)
		}),
	}
	addBrokerFlag(cmd, &broker)
	return cmd
}

func newUserListCmd(f *adminFlags) *cobra.Command {
	var broker, filter string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the users of every master broker (never their secrets)",
		Example: `  petrel user list
  petrel user list --filter ali -o json`,
		Args: cobra.NoArgs,
		RunE: adminRun(f, func(ctx context.Context, c *cli.CLI, _ []string) error {
			return c.UserList(ctx, filter, broker)
		}),
	}
	cmd.Flags().StringVar(&filter, "filter", "", "only users whose name contains this")
	addBrokerFlag(cmd, &broker)
	return cmd
}
