// Command migaudit-core is the whole migaudit command line: it audits QUIC
// implementations' congestion and RTT handling across connection migration
// (RFC 9000 §9.4, RFC 9002 §6.2.2), from source and from live runs. Users
// run it as migaudit: the lean front (cmd/migaudit) runs analyze and parse
// itself and hands every other command line to this binary.
//
// This package holds flag wiring only: each command's work is a function in
// its own package taking options and an io.Writer. Commands register
// themselves from their own file with register, so adding one edits no
// shared switch.
package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/migaudit/migaudit/cmd/internal/cli"
	"github.com/migaudit/migaudit/cmd/internal/tracecmd"
)

// analyze and parse are built from the package the lean front shares
// (cmd/migaudit runs them without this binary's start-up).
var constructors = []func() *cobra.Command{
	func() *cobra.Command { return traceCommand(tracecmd.Analyze()) },
	func() *cobra.Command { return traceCommand(tracecmd.Parse()) },
}

// register adds a top-level command; call it from an init function.
func register(c func() *cobra.Command) { constructors = append(constructors, c) }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "migaudit",
		Short: "Audit QUIC implementations' congestion/RTT reset on connection migration",
		Long: `migaudit answers, for a QUIC implementation, with evidence from its source at a
pinned commit and from live runs across a real IP migration:

  Q1 (RFC 9000 §9.4, MUST)   does it reset its congestion controller and RTT estimator?
  Q2 (RFC 9002 §6.2.2, MAY)  does it seed the new path's RTT from path validation?
  Q3 (RFC 9000 §9.4, MUST)   does it keep old-path packets out of the new path's estimates?`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, c := range constructors {
		root.AddCommand(c())
	}
	return root
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	err := root.Execute()
	if err != nil {
		cli.Fail(os.Stderr, err)
	}
	return cli.Code(err)
}

// traceCommand is a trace command as cobra runs it: the same flags, read
// through pflag.
func traceCommand(c *tracecmd.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:     c.Use,
		Short:   c.Short,
		Long:    c.Long,
		Example: c.Example,
		Args:    cobra.MinimumNArgs(c.MinArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.Run(cmd.OutOrStdout(), cmd.ErrOrStderr(), args)
		},
	}
	cmd.Flags().AddGoFlagSet(c.Flags)
	return cmd
}
