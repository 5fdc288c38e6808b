package run

import "strings"

// Status is a repetition's standing in the run.
type Status string

const (
	// Valid: it migrated as the scenario claims, on paths that held.
	Valid Status = "VALID"
	// Invalid: it ran on paths that held, but did not migrate as claimed.
	Invalid Status = "INVALID"
	// Failed: it did not run to the end (a process failed, or the run was
	// interrupted).
	Failed Status = "FAILED"
	// Spoiled: the host, not the implementation, kept the emulation from
	// holding inside the verdict's window; it is re-run and never counted.
	Spoiled Status = "SPOILED"
)

// Judge decides a repetition's status from its manifest alone: the run's
// error and whether it was interrupted, the emulator's fidelity record and
// the verification. It returns the reason for a SPOILED repetition (empty
// otherwise). The runner calls it once per repetition; Reanalyse calls it
// again to check that a recorded status still follows from its record.
func Judge(m *Manifest) (Status, string) {
	switch {
	case m.Interrupted:
		return Failed, ""
	case m.Fidelity != nil && !m.Fidelity.Held:
		// Whatever else the repetition shows was measured on paths that
		// were not what they claim.
		return Spoiled, "emulation fidelity did not hold in the verdict's window: " + strings.Join(m.Fidelity.Problems, "; ")
	case !m.Verification.Valid:
		return Invalid, ""
	case m.Error != "":
		return Failed, ""
	default:
		return Valid, ""
	}
}
