package validator

import (
	"fmt"
	"regexp"
	"strings"
)

// The validator's own copy of the requirements each question is scored
// against: the RFC sentences, whole, with their section and paragraph
// (RFC 9000 §9.4, RFC 9002 §6.2.2). A survey's requirement text must cite
// the same RFC, section and paragraph and quote words the sentence holds,
// in order (a parenthetical reference such as "(see kInitialRtt in
// Appendix A.2)" may be left out); its level must be the sentence's
// keyword.
var rfcRequirements = map[string]struct {
	RFC, Section, Paragraph, Level, Sentence string
}{
	"Q1": {"9000", "9.4", "2", "MUST", "On confirming a peer's ownership of its new address, an endpoint MUST immediately reset the congestion controller and round-trip time estimator for the new path to initial values (see Appendices A.3 and B.3 of [QUIC-RECOVERY]) unless the only change in the peer's address is its port number."},
	"Q2": {"9002", "6.2.2", "", "MAY", "A connection MAY use the delay between sending a PATH_CHALLENGE and receiving a PATH_RESPONSE to set the initial RTT (see kInitialRtt in Appendix A.2) for a new path, but the delay SHOULD NOT be considered an RTT sample."},
	"Q3": {"9000", "9.4", "1", "MUST", "The capacity available on the new path might not be the same as the old path. Packets sent on the old path MUST NOT contribute to congestion control or RTT estimation for the new path."},
}

var requirementCite = regexp.MustCompile(`^RFC (\d+) §([0-9.]+)(?: ¶(\d+))?: (.+)$`)

// parenthetical matches a bracketed aside the quotation may leave out.
var parenthetical = regexp.MustCompile(`\s*\([^)]*\)`)

// requirementDiffers returns why the survey's requirement text for q is
// not the RFC's, or "".
func requirementDiffers(q, text string) string {
	want, ok := rfcRequirements[q]
	if !ok {
		return fmt.Sprintf("%s is not a question of the study", q)
	}
	cite := fmt.Sprintf("RFC %s §%s", want.RFC, want.Section)
	if want.Paragraph != "" {
		cite += " ¶" + want.Paragraph
	}
	m := requirementCite.FindStringSubmatch(text)
	if m == nil {
		return fmt.Sprintf("%s requirement %q does not cite an RFC section (want %s)", q, text, cite)
	}
	got := fmt.Sprintf("RFC %s §%s", m[1], m[2])
	if m[3] != "" {
		got += " ¶" + m[3]
	}
	if got != cite {
		return fmt.Sprintf("%s requirement cites %s, the sentence is %s", q, got, cite)
	}
	sentence := normSpace(parenthetical.ReplaceAllString(want.Sentence, ""))
	// Every quoted run, and the words between them, must be the
	// sentence's, in order.
	rest := strings.ToLower(sentence)
	for _, part := range strings.Split(m[4], `"`) {
		part = strings.ToLower(normSpace(strings.Trim(part, " ,.:;")))
		if part == "" {
			continue
		}
		i := strings.Index(rest, part)
		if i < 0 {
			return fmt.Sprintf("%s requirement quotes %q, not in %s: %q", q, part, cite, want.Sentence)
		}
		rest = rest[i+len(part):]
	}
	if !strings.Contains(m[4], want.Level) {
		return fmt.Sprintf("%s requirement %q lacks the sentence's keyword %s", q, text, want.Level)
	}
	return ""
}
