package validator

import (
	"regexp"
	"sync"
)

// lazyRegexp compiles pattern on first use: a package-level
// regexp.MustCompile would run at every start of the binary, for every
// command, whether or not it ever matches anything.
func lazyRegexp(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}
