package run

import (
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	held := &Fidelity{Held: true}
	broke := &Fidelity{Held: false, Problems: []string{"stall 12 ms in the reset window"}}
	for _, tc := range []struct {
		name   string
		m      Manifest
		want   Status
		reason string
	}{
		{"valid", Manifest{Fidelity: held, Verification: Verification{Valid: true}}, Valid, ""},
		{"valid without a fidelity meter", Manifest{Verification: Verification{Valid: true}}, Valid, ""},
		{"not migrated", Manifest{Fidelity: held}, Invalid, ""},
		{"harness error", Manifest{Fidelity: held, Verification: Verification{Valid: true}, Error: "client exited 1"}, Failed, ""},
		{"invalid wins over an error", Manifest{Error: "client exited 1"}, Invalid, ""},
		{"spoiled", Manifest{Fidelity: broke, Verification: Verification{Valid: true}}, Spoiled, "emulation fidelity did not hold in the verdict's window: stall 12 ms in the reset window"},
		{"spoiled wins over invalid and error", Manifest{Fidelity: broke, Error: "x"}, Spoiled, "did not hold"},
		{"interrupted wins over all", Manifest{Interrupted: true, Fidelity: broke, Error: "context canceled"}, Failed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := Judge(&tc.m)
			if got != tc.want || !strings.Contains(reason, tc.reason) || (tc.reason == "") != (reason == "") {
				t.Errorf("Judge = %s %q, want %s %q", got, reason, tc.want, tc.reason)
			}
		})
	}
}
