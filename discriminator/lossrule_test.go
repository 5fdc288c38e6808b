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
		{"ngtcp2", "bbr2", "", "", false, 70000, 100000, Unexplained, `no audited loss response for controller "bbr2"`},
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

// TestModelRule: ngtcp2's BBR (a model, not a factor) with the run's
// S = 1452: the initial window is a reset, min_pipe_cwnd (4 × S) the
// floor, anything between the floor and the previous sample follows the
// model, below the floor is no BBR window.
func TestModelRule(t *testing.T) {
	params := map[string]float64{"S": 1452}
	tests := []struct {
		name       string
		cc         string
		v, prev    int64
		want       CollapseKind
		wantInText []string
	}{
		{"reset to initcwnd", "bbr", 14520, 116252, Reset, []string{"initial window 14520 (exact)", "lib/ngtcp2_bbr.c:1354"}},
		{"model bound after the reset", "bbr", 251710, 260634, ModelBound, []string{"min(cwnd, cap)", "lib/ngtcp2_bbr.c:1354 at d7fb3ed0407e", "β = 7/10", "lib/ngtcp2_bbr.c:584", "allows (5808, 260634)"}},
		{"model bound below the initial window", "bbr", 9000, 30000, ModelBound, []string{"never below min_pipe_cwnd 5808 (lib/ngtcp2_bbr.c:1244)"}},
		{"floor", "bbr", 5808, 20000, LossFloor, []string{"min_pipe_cwnd 4*1452 = 5808", "lib/ngtcp2_bbr.c:1244"}},
		{"cubic's floor is below BBR's", "bbr", 2904, 20000, Unexplained, []string{"below bbr's min_pipe_cwnd"}},
		{"one byte under the floor", "bbr", 5807, 20000, Unexplained, []string{"below bbr's min_pipe_cwnd"}},
		{"the same drop under cubic is no backoff", "cubic", 251710, 260634, Unexplained, []string{"not ⌊7/10 × W⌋"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := evalConstantsFor("ngtcp2", tt.cc, params, nil)
			if err != nil {
				t.Fatal(err)
			}
			if (tt.cc == "bbr") != (cs.loss != nil && cs.loss.model) || (tt.cc == "bbr" && cs.hasFactor) {
				t.Fatalf("cc %s: model rule %v, default factor kept %v", tt.cc, cs.loss != nil && cs.loss.model, cs.hasFactor)
			}
			c := classify(tt.v, tt.prev, cs)
			if c.Kind != tt.want {
				t.Errorf("%d → %d = %s (%s), want %s", tt.prev, tt.v, c.Kind, c.Explanation, tt.want)
			}
			for _, w := range tt.wantInText {
				if !strings.Contains(c.Explanation, w) {
					t.Errorf("explanation %q lacks %q", c.Explanation, w)
				}
			}
		})
	}
}

// TestModelAt: the BBR rule read at the pin applies to a run of the pin
// (or a trace with no commit) and to no other version's run.
func TestModelAt(t *testing.T) {
	tests := []struct {
		commit  string
		keep    bool
		noteHas string
	}{
		{"", true, ""},
		{"d7fb3ed0407e1333e4ecbd011fcfd9c16499d5e0", true, ""},
		{"a4ba3f20d70d4a4d79674cee1093c55b4c1d78ed", false, "read at d7fb3ed0407e, not at a4ba3f20d70d"},
	}
	for _, tt := range tests {
		t.Run(tt.commit, func(t *testing.T) {
			cs, err := evalConstantsFor("ngtcp2", "bbr", map[string]float64{"S": 1452}, nil)
			if err != nil {
				t.Fatal(err)
			}
			note := cs.modelAt(tt.commit)
			if (cs.loss != nil) != tt.keep || (tt.noteHas == "") != (note == "") || !strings.Contains(note, tt.noteHas) {
				t.Errorf("commit %q: rule kept %v, note %q; want kept %v, note with %q", tt.commit, cs.loss != nil, note, tt.keep, tt.noteHas)
			}
			if c := classify(251710, 260634, cs); (c.Kind == ModelBound) != tt.keep {
				t.Errorf("commit %q: 260634 → 251710 = %s", tt.commit, c.Kind)
			}
		})
	}
}
