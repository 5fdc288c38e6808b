// Command migaudit audits QUIC implementations' congestion and RTT handling
// across connection migration (RFC 9000 §9.4, RFC 9002 §6.2.2), from source
// and from live runs.
//
// This package holds flag wiring only: each command's work is a function in
// its own package taking options and an io.Writer. Commands register
// themselves from their own file with register, so adding one edits no
// shared switch.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

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

// exitError lets a command choose its exit status (e.g. validate: 1 on FAIL)
// while still printing one line.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	// One line, always: a user must see what failed and where.
	msg := strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
	fmt.Fprintf(os.Stderr, "migaudit: %s\n", msg)
	var ee *exitError
	if errors.As(err, &ee) && ee.code != 0 {
		return ee.code
	}
	return 1
}
