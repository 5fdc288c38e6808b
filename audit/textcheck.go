package audit

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// A mechanism is built from what the rule found. When a rule's model does
// not fit a commit, the pieces it looked for come back empty and the text
// shows it: "resets RTT () to DefaultInitialRTT = ", "2*0 = 0". Such a
// finding must not stand as a confident answer; Run turns it into UNKNOWN
// saying which piece is missing.

var garbled = []struct {
	re   *regexp.Regexp
	what string
}{
	{regexp.MustCompile(`(^|[\s,:;])\(\s*\)`), "an empty list \"()\""},
	{regexp.MustCompile(`=\s*($|[,;)])`), "a dangling \"=\""},
	{regexp.MustCompile(`=\s\s`), "a dangling \"=\""},
	{regexp.MustCompile(`\[\s*\]`), "an empty list \"[]\""},
	{regexp.MustCompile(`,\s*,`), "an empty list item"},
}

// incomplete says what is missing from f's text, or "".
func incomplete(f Finding) string {
	if f.Answer == Unknown {
		return ""
	}
	for _, g := range garbled {
		if g.re.MatchString(f.Mechanism) {
			return fmt.Sprintf("mechanism %q has %s", f.Mechanism, g.what)
		}
	}
	// A zero parameter is legitimate inside max(x, 0); a constant that
	// comes out 0 because of one is a parameter the rule did not find.
	if c := f.Constant; c != nil && c.Provenance == "" && c.Value == 0 {
		var zero []string
		for k, v := range c.Params {
			if v == 0 {
				zero = append(zero, k)
			}
		}
		sort.Strings(zero)
		if len(zero) > 0 {
			return fmt.Sprintf("%s: parameter %s has no value at this commit", c.Expr, strings.Join(zero, ", "))
		}
	}
	return ""
}

// guardText turns a finding whose text is incomplete into UNKNOWN with the
// reason; its evidence stays for the reader to follow.
func guardText(f Finding, commit string) Finding {
	why := incomplete(f)
	if why == "" {
		return f
	}
	f.Answer = Unknown
	f.Constant = nil
	f.Detail = strings.TrimSpace(fmt.Sprintf("%s at %s: the rule's model does not fit (%s) %s", why, short(commit), "a piece it reads is absent or renamed", f.Detail))
	return f
}
