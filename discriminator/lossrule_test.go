package discriminator

import (
	"strings"
	"testing"
)

// TestLossRuleSelection: --cc selects the audited response of the
// controller that ran; one without a response (BBR) gets none, and the
// default controller's factor no longer applies.
func TestLossRuleSelection(t *testing.T) {
	tests := []struct {
		impl, cc   string
		want       string // formula, "" for none
		cite       string
		hasFactor  bool
		v, prev    int64
		wantKind   CollapseKind
		wantInText string
	}{
		{"ngtcp2", "", "⌊7/10 × W⌋ (int-muldiv)", "lib/ngtcp2_cc.c:482 at v0.12.1", true, 70000, 100000, LossBackoff, "cubic, the default controller"},
		{"ngtcp2", "reno", "⌊1/2 × W⌋ (int-shift)", "lib/ngtcp2_cc.c:146 at v0.12.1", true, 50000, 100000, LossBackoff, "reno, selected with --cc"},
		{"ngtcp2", "reno", "⌊1/2 × W⌋ (int-shift)", "lib/ngtcp2_cc.c:146 at v0.12.1", true, 70000, 100000, Unexplained, "not ⌊1/2 × W⌋"},
		{"ngtcp2", "bbr", "", "", false, 70000, 100000, Unexplained, `no audited loss response for controller "bbr"`},
		{"quiche", "reno", "⌊1/2 × W⌋ (float64-trunc)", "quiche/src/recovery/reno.rs:120 at 0.18.0", true, 50000, 100000, LossBackoff, "reno"},
		{"picoquic", "reno", "⌊1/2 × W⌋ (int-div)", "picoquic/newreno.c:54 at 0dc8ba8b2be30246720934d3f43a144b372e1a90", true, 50000, 100000, LossBackoff, "newreno, the default controller"},
	}
	for _, tt := range tests {
		t.Run(tt.impl+"/"+tt.cc, func(t *testing.T) {
			cs, err := evalConstantsFor(tt.impl, tt.cc, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if cs.loss != nil {
				got = cs.loss.formula()
				if cs.loss.cite != tt.cite {
					t.Errorf("cite %q, want %q", cs.loss.cite, tt.cite)
				}
			}
			if got != tt.want || (cs.loss != nil || cs.hasFactor) != tt.hasFactor {
				t.Fatalf("rule %q (factor %v), want %q (%v)", got, cs.hasFactor, tt.want, tt.hasFactor)
			}
			c := classify(tt.v, tt.prev, cs)
			if c.Kind != tt.wantKind || !strings.Contains(c.Explanation, tt.wantInText) {
				t.Errorf("%d → %d = %s (%s), want %s with %q", tt.prev, tt.v, c.Kind, c.Explanation, tt.wantKind, tt.wantInText)
			}
		})
	}
}
