package quiche

import (
	"fmt"
	"os"

	"github.com/migaudit/migaudit/harnesses/run"
)

// `migaudit run --impl quiche` finds the harness through the runner's
// registry; cmd/migaudit/quiche.go imports this package for its side effect.
func init() {
	run.Register("quiche", func() run.Harness {
		return New(Options{Log: func(s string) { fmt.Fprintln(os.Stderr, "migaudit: "+s) }})
	})
}
