package validator

import (
	"fmt"

	"github.com/tidwall/gjson"
)

// decisiveAttribution: an attribution that names where the first
// post-migration RTT sample came from ("unknown", "default" and "mixed"
// name none).
func decisiveAttribution(attr string) bool {
	switch attr {
	case "new-path", "old-path", "converging":
		return true
	}
	return false
}

// undecidedAttribution says whether the repetition's own evidence decides
// an attribution the validator's reading of the RTT values leaves
// undecided, and if not, why not. Evidence that decides:
//
//   - the trace shows the ACK behind the first post-migration sample and
//     the packet it acknowledged: sent before the migration, the sample is
//     the old path's ("old-path", or any value label beside q3 NO, which
//     rests on the packet); sent after it, in a repetition whose
//     window was reset in scope (the validator's own reading, so the
//     estimator restarted and holds nothing of the old path), the sample is
//     the new path's ("new-path", or "converging" on the way to it);
//   - the repetition names wire evidence (rtt.wire_evidence: a capture of
//     the repetition, read by the validator's own wire reader, issue #31),
//     which says which path's packet the sample acknowledged. Until that
//     reader exists a named capture decides nothing: the claim fails as
//     undecided, never passes.
func (v *Validator) undecidedAttribution(im, rep gjson.Result, f *traceFacts, at, def int64, attr string) (string, bool) {
	if w := rep.Get("rtt.wire_evidence"); w.Exists() {
		got, err := v.wireAttribution(rep, w.String())
		if err != nil {
			return fmt.Sprintf("its wire evidence %s does not decide it (%v)", w.String(), err), false
		}
		if got != attr {
			return fmt.Sprintf("its wire evidence %s reads %s", w.String(), got), false
		}
		return "", true
	}
	pn, sentAt, found := firstSampleAck(f, at, rep.Get("rtt.first_after_us").Int(), def)
	switch {
	case !found:
		return "no evidence in the repetition decides it (the trace does not show the ACK behind the sample; no wire evidence)", false
	case sentAt < at:
		// The packet decides Q3 (NO) whatever the value reads like: the
		// attribution then only names the value, the decision rests on
		// the packet.
		if attr == "old-path" || rep.Get("q3").String() == "NO" {
			return "", true
		}
		return fmt.Sprintf("the sample acknowledges packet %d, sent at %d µs before the migration: the old path's", pn, sentAt), false
	}
	initial, _, _ := constantsOf(im, rep)
	reset := len(deriveWindow(f, rep.Get("scope_from_us").Int(), at, rep.Get("scope_to_us").Int(), initial).hits) > 0
	if !reset {
		return fmt.Sprintf("the sample acknowledges packet %d, sent after the migration, but without a reset in scope the smoothed value still carries the old path's estimator", pn), false
	}
	if attr == "new-path" || attr == "converging" {
		return "", true
	}
	return fmt.Sprintf("the sample acknowledges packet %d, sent after the migration and after a reset: the new path's", pn), false
}

// wireAttribution is the seam for issue #31's wire reader: the path of the
// packet the first post-migration RTT sample acknowledged, read from the
// named capture. Until the reader lands it decides nothing.
func (v *Validator) wireAttribution(rep gjson.Result, capture string) (string, error) {
	return "", fmt.Errorf("the validator has no wire reader yet (issue #31)")
}
