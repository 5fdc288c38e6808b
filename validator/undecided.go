package validator

import (
	"fmt"
	"strings"
)

// The rule on undecided repetitions (docs/validator-decisions.md,
// "Undecided repetitions"), applied here and, written separately, by the
// survey builder (survey.LiveAnswers, build.settleQ1):
//
//   - a repetition counts when its migration is "ip" or "path-change";
//   - its Q1 is YES when the window takes an initial value in scope, NO
//     when it does not and the IP change is verified (kind "ip", from the
//     trace or the run's own record), undecided otherwise: a trace that
//     shows no IP change may show a port-only rebinding, which is exempt;
//   - the live answer is the one verdict of the deciding repetitions, or
//     UNKNOWN when they differ, or none when no repetition decides.
//     Undecided repetitions neither confirm nor contradict, and every
//     message says how many decided: "undecided (k of n repetitions decide)".

// RepetitionQ1 is one repetition's live Q1 under the rule.
func RepetitionQ1(kind string, resetInScope bool) string {
	switch {
	case resetInScope:
		return "YES"
	case kind == "ip":
		return "NO"
	}
	return "UNKNOWN"
}

// LiveAnswer aggregates per-repetition verdicts (YES, NO, anything else
// undecided) under the rule; the message counts the deciding ones.
func LiveAnswer(verdicts []string) (answer, message string) {
	seen := map[string]int{}
	k := 0
	for _, v := range verdicts {
		if v == "YES" || v == "NO" {
			seen[v]++
			k++
		}
	}
	n := len(verdicts)
	switch len(seen) {
	case 0:
		return "", fmt.Sprintf("undecided (0 of %d repetitions decide)", n)
	case 1:
		for a := range seen {
			if k < n {
				return a, fmt.Sprintf("%s (%d of %d repetitions decide, the others are undecided)", a, k, n)
			}
			return a, fmt.Sprintf("%s (%d of %d repetitions decide)", a, k, n)
		}
	}
	return "UNKNOWN", fmt.Sprintf("UNKNOWN (%d of %d repetitions decide: %d YES, %d NO)", k, n, seen["YES"], seen["NO"])
}

// liveText names a live answer in a message; "" is never printed as "".
func liveText(answer string, verdicts []string) string {
	_, msg := LiveAnswer(verdicts)
	if answer == "" {
		return msg
	}
	if strings.HasPrefix(msg, answer+" ") {
		return msg
	}
	return answer
}
