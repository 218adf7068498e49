package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// checkArgs walks the command tree once it is built and makes every command
// say plainly what is wrong with its arguments:
//   - a command that only groups subcommands (`petrel topic`) refuses an
//     unknown one with a did-you-mean hint and a non-zero exit, instead of
//     printing its help and exiting 0;
//   - a missing positional argument is named from the command's Use line
//     (`topic describe: missing TOPIC`).
func checkArgs(c *cobra.Command) {
	for _, sub := range c.Commands() {
		checkArgs(sub)
	}
	if c.HasSubCommands() && !c.Runnable() {
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return unknownSubcommand(cmd, args[0])
		}
		return
	}
	if c.Args == nil {
		return
	}
	orig := c.Args
	c.Args = func(cmd *cobra.Command, args []string) error {
		err := orig(cmd, args)
		if err == nil {
			return nil
		}
		if names := positionals(cmd.Use); len(args) < len(names) {
			return fmt.Errorf("%s: missing %s; see '%s --help'", subcommandPath(cmd), strings.Join(names[len(args):], " "), cmd.CommandPath())
		}
		return fmt.Errorf("%s: %w; see '%s --help'", subcommandPath(cmd), err, cmd.CommandPath())
	}
}

// errUnknownCommand is wrapped by the error of an unknown subcommand.
var errUnknownCommand = errors.New("unknown command")

func unknownSubcommand(cmd *cobra.Command, name string) error {
	var hint string
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		q := make([]string, len(s))
		for i, n := range s {
			q[i] = strconv.Quote(n)
		}
		hint = "; did you mean " + strings.Join(q, " or ") + "?"
	}
	return fmt.Errorf("%w %q for %q%s; run '%s --help' for its commands", errUnknownCommand, name, cmd.CommandPath(), hint, cmd.CommandPath())
}

// positionals returns the required positional arguments of a Use line:
// the upper-case words after the command's name that are neither in
// brackets or parentheses (optional, alternatives) nor a flag's value.
func positionals(use string) []string {
	words := strings.Fields(use)
	var out []string
	depth := 0
	for i := 1; i < len(words); i++ {
		w := words[i]
		open := strings.Count(w, "[") + strings.Count(w, "(")
		closed := strings.Count(w, "]") + strings.Count(w, ")")
		inside := depth > 0 || open > 0
		depth += open - closed
		if inside || strings.HasPrefix(w, "-") || strings.HasPrefix(words[i-1], "-") {
			continue
		}
		if w == strings.ToUpper(w) && strings.ToLower(w) != w {
			out = append(out, w)
		}
	}
	return out
}

// subcommandPath is the command's path without the binary's name: "topic
// describe".
func subcommandPath(cmd *cobra.Command) string {
	p := cmd.CommandPath()
	if r := cmd.Root(); r != cmd {
		p = strings.TrimPrefix(p, r.Name()+" ")
	}
	return p
}
