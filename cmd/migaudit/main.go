// Command migaudit audits QUIC implementations' congestion and RTT handling
// across connection migration (RFC 9000 §9.4, RFC 9002 §6.2.2), from source
// and from live runs.
//
// This executable is the lean front of the command line. It runs the trace
// commands, analyze and parse, itself, and hands every other command line
// (run, audit, validate, help, …) to migaudit-core, which holds the whole
// command line with the source auditor's parsers, git, the JSON-schema
// validator and the live harnesses. Those libraries' own initialisation
// runs before main in every process that links them (the schema library
// alone compiles five meta-schemas, 2.6 ms), so analyzing a small trace in
// the whole binary cost more in start-up than in analysis
// (docs/analyze-performance.md). Both executables are built from the same
// checkout: `go build -o DIR/ ./cmd/...`; `go run ./cmd/migaudit …` works
// too (see core).
package main

import (
	"errors"
	"os"

	"github.com/migaudit/migaudit/cmd/internal/cli"
	"github.com/migaudit/migaudit/cmd/internal/tracecmd"
)

// front lists the commands this executable runs itself.
var front = map[string]func() *tracecmd.Command{
	"analyze": tracecmd.Analyze,
	"parse":   tracecmd.Parse,
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) > 0 {
		if c, ok := front[args[0]]; ok {
			err := c().Execute(args[1:], os.Stdout, os.Stderr)
			if !errors.Is(err, tracecmd.ErrHelp) {
				if err != nil {
					cli.Fail(os.Stderr, err)
				}
				return cli.Code(err)
			}
			// Help, in the whole command line's format: the core's.
		}
	}
	// execCore returns only on failure: the core replaces this process.
	err := execCore(args)
	cli.Fail(os.Stderr, err)
	return 1
}
