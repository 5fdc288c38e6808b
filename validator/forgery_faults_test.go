package validator

import (
	"testing"
)

// Issue #28: faults planted the way a careful forger works, each change
// carried through everywhere it appears (sha256s updated where a file
// changes). Each must FAIL on a check whose message names the change.

// Requirement texts against the validator's own copy of the RFC sentences.
func TestForgedRequirementTexts(t *testing.T) {
	runPlanted(t, []planted{
		{name: "§9.4 → §9.3 in all entries", check: "lsquic/answers", survey: edit("RFC 9000 §9.4", "RFC 9000 §9.3")},
		{name: "Q3 quotation: MUST NOT → SHOULD NOT in all entries", check: "quic-go/answers", survey: edit(`"Packets sent on the old path MUST NOT`, `"Packets sent on the old path SHOULD NOT`)},
	}, true)
}
