package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/cli"
)

func newACLCmd() *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:   "acl",
		Short: "Create, change, list and delete the access policies of users",
		Long: `Manage the ACLs of ACL 2.0 (RocketMQ 5.3's model) on the brokers. A
subject's (User:NAME) ACL is a list of entries: a resource, the actions
allowed or denied on it, optionally the source IPs it applies to, and the
decision. A request needs one matching Allow entry and no matching Deny
entry (deny wins); a normal user with none is refused; super users need no
ACL.

Resources: * (everything), Cluster, Topic:NAME, Topic:PREFIX* (every topic
starting with PREFIX), Topic:*, and the same for Group: (a consumer
group, also its retry topic). Actions: Pub, Sub, Create, Update, Delete,
Get, List, All.

ACLs are broker metadata: every command sends its request (RocketMQ's
codes 3006-3010, as mqadmin createAcl ... listAcl) to every live master,
or to --broker alone. Managing ACLs needs a super user's credentials.`,
		Example: `  petrel acl create --subject alice --resource Topic:orders --action Pub --decision allow
  petrel acl get --subject alice`,
		Args: cobra.NoArgs,
	}
	addAdminFlags(cmd, &f)
	cmd.AddCommand(newACLWriteCmd(&f, "create"), newACLWriteCmd(&f, "update"), newACLDeleteCmd(&f), newACLGetCmd(&f), newACLListCmd(&f))
	return cmd
}

// addSubjectFlag adds the required --subject of the ACL commands.
func addSubjectFlag(cmd *cobra.Command, subject *string) {
	cmd.Flags().StringVar(subject, "subject", "", "the user, as User:NAME or NAME (required)")
	_ = cmd.MarkFlagRequired("subject")
}

func newACLWriteCmd(f *adminFlags, verb string) *cobra.Command {
	var spec cli.AclSpec
	cmd := &cobra.Command{
		Use:   verb + " --subject User:NAME --resource R --action A[,A] --decision allow|deny",
		Short: "Add policy entries to a user's ACL on every master broker",
		Long: `Add one entry per --resource to the ACL of --subject on every live master
(or --broker), each with the --action list, the --source-ip ranges (none:
from anywhere) and the --decision.`,
		Example: `  petrel acl ` + verb + ` --subject alice --resource Topic:orders,Topic:audit --action Pub --decision allow
  petrel acl ` + verb + ` --subject alice --resource Group:billing-* --action Sub --decision allow --source-ip 10.0.0.0/8
  petrel acl ` + verb + ` --subject bob --resource Topic:secret --action All --decision deny`,
		Args: cobra.NoArgs,
		RunE: adminRun(f, func(ctx context.Context, c *cli.CLI, _ []string) error {
			if verb == "update" {
				return c.AclUpdate(ctx, spec)
			}
			return c.AclCreate(ctx, spec)
		}),
	}
	if verb == "update" {
		cmd.Short = "Replace a user's entries of the given resources on every master broker"
		cmd.Long = `Replace the entries of the ACL of --subject for each --resource (of the
same --policy-type) on every live master (or --broker) with one that has
the --action list, the --source-ip ranges (none: from anywhere) and the
--decision.`
	}
	fl := cmd.Flags()
	addSubjectFlag(cmd, &spec.Subject)
	fl.StringArrayVar(&spec.Resources, "resource", nil, "resource: *, Cluster, Topic:NAME, Topic:PREFIX*, Topic:*, Group:NAME, Group:PREFIX*, Group:* (repeatable or a comma list; required)")
	fl.StringArrayVar(&spec.Actions, "action", nil, "actions: Pub, Sub, Create, Update, Delete, Get, List or All (repeatable or a comma list; required)")
	fl.StringVar(&spec.Decision, "decision", "", "allow or deny (required; deny wins over allow)")
	fl.StringArrayVar(&spec.SourceIPs, "source-ip", nil, "apply only to requests from this address or CIDR range (repeatable or a comma list; default: from anywhere)")
	fl.StringVar(&spec.PolicyType, "policy-type", "custom", "custom or default")
	addBrokerFlag(cmd, &spec.Broker)
	for _, name := range []string{"resource", "action", "decision"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func newACLDeleteCmd(f *adminFlags) *cobra.Command {
	var subject, policyType, broker string
	var resources []string
	cmd := &cobra.Command{
		Use:   "delete --subject User:NAME [--resource R]",
		Short: "Delete a user's ACL, or its entries for some resources",
		Long: `Delete the entries of the ACL of --subject for each --resource on every
live master (or --broker), or, without --resource, the whole ACL. With
--policy-type only entries of that type.`,
		Example: `  petrel acl delete --subject alice --resource Topic:orders
  petrel acl delete --subject alice`,
		Args: cobra.NoArgs,
		RunE: adminRun(f, func(ctx context.Context, c *cli.CLI, _ []string) error {
			return c.AclDelete(ctx, subject, resources, policyType, broker)
		}),
	}
	fl := cmd.Flags()
	addSubjectFlag(cmd, &subject)
	fl.StringArrayVar(&resources, "resource", nil, "delete only the entries of this resource (repeatable or a comma list; default: the whole ACL)")
	fl.StringVar(&policyType, "policy-type", "", "delete only entries of this policy type: custom or default (not given: custom, as RocketMQ reads it)")
	addBrokerFlag(cmd, &broker)
	return cmd
}

func newACLGetCmd(f *adminFlags) *cobra.Command {
	var subject, broker string
	cmd := &cobra.Command{
		Use:   "get --subject User:NAME",
		Short: "Show a user's ACL entries on each master broker",
		Example: `  petrel acl get --subject alice
  petrel acl get --subject User:alice -o json`,
		Args: cobra.NoArgs,
		RunE: adminRun(f, func(ctx context.Context, c *cli.CLI, _ []string) error {
			return c.AclGet(ctx, subject, broker)
		}),
	}
	addSubjectFlag(cmd, &subject)
	addBrokerFlag(cmd, &broker)
	return cmd
}

func newACLListCmd(f *adminFlags) *cobra.Command {
	var subjectFilter, resourceFilter, broker string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the ACLs of every master broker, one line per entry",
		Example: `  petrel acl list
  petrel acl list --resource-filter Topic:orders -o json`,
		Args: cobra.NoArgs,
		RunE: adminRun(f, func(ctx context.Context, c *cli.CLI, _ []string) error {
			return c.AclList(ctx, subjectFilter, resourceFilter, broker)
		}),
	}
	cmd.Flags().StringVar(&subjectFilter, "subject-filter", "", "only subjects that contain this")
	cmd.Flags().StringVar(&resourceFilter, "resource-filter", "", "only ACLs with a resource that contains this")
	addBrokerFlag(cmd, &broker)
	return cmd
}
