package run

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

var (
	regMu    sync.Mutex
	registry = map[string]func() Harness{}
)

// Register makes a harness available to `migaudit run --impl name`. Call it
// from the harness package's init; cmd/migaudit imports the package (a
// blank import in the harness owner's own cmd file is enough).
func Register(name string, newHarness func() Harness) {
	regMu.Lock()
	defer regMu.Unlock()
	registry[normalise(name)] = newHarness
}

// Lookup returns a new harness for name ("quic-go" and "quicgo" are the same).
func Lookup(name string) (Harness, bool) {
	regMu.Lock()
	defer regMu.Unlock()
	f, ok := registry[normalise(name)]
	if !ok {
		return nil, false
	}
	return f(), true
}

// Registered lists the registered harness names.
func Registered() []string {
	regMu.Lock()
	defer regMu.Unlock()
	var out []string
	for _, f := range registry {
		out = append(out, f().Name())
	}
	sort.Strings(out)
	return out
}

func normalise(s string) string { return strings.ReplaceAll(strings.ToLower(s), "-", "") }

// ErrNotRunnable formats why an implementation has no live harness here.
func ErrNotRunnable(name, why string) error {
	return fmt.Errorf("%s cannot be run live here — %s (live harnesses: %s)", name, why, strings.Join(Registered(), ", "))
}
