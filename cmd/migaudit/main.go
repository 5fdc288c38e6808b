// Command migaudit audits QUIC implementations' congestion and RTT handling
// across connection migration (RFC 9000 §9.4, RFC 9002 §6.2.2), from source
// and from live runs. It is one executable: `go install ./cmd/migaudit`
// gives every command, `run` included.
//
// This package holds flag wiring only, one file per command: each command's
// work is a function taking options and an io.Writer, in its own package or
// beside its cobra constructor. Commands register themselves from their own
// file with register, so adding one edits no shared switch. Settings the
// environment gives (the mirrors directory) are read once here and handed
// down; exit statuses and error lines are decided in exit.go.
package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"
)

// constructors are the top-level commands, added by register.
var constructors []func() *cobra.Command

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
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs one command line and returns its exit status, having printed
// any failure as one line on stderr.
func run(args []string, stdout, stderr io.Writer) int {
	err := execute(args, stdout, stderr)
	if err != nil {
		Fail(stderr, err)
	}
	return Code(err)
}

// execute runs one command line against the given streams.
func execute(args []string, stdout, stderr io.Writer) error {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root.Execute()
}
