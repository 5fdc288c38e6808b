package audit

import (
	"strings"
	"testing"
)

func TestGuardText(t *testing.T) {
	tests := []struct {
		name string
		f    Finding
		why  string // "" = left as it is
	}{
		{"complete", Finding{Answer: Yes, Mechanism: "resets RTT (smoothedRTT) to DefaultInitialRTT = 100 ms"}, ""},
		{"empty list", Finding{Answer: Yes, Mechanism: "resets RTT () to DefaultInitialRTT = 100 ms"}, `an empty list "()"`},
		{"dangling =", Finding{Answer: Yes, Mechanism: "resets RTT (a) to DefaultInitialRTT = "}, `a dangling "="`},
		{"call syntax is not a list", Finding{Answer: No, Mechanism: "on_connection_migration() has an empty body"}, ""},
		{"UNKNOWN is already honest", Finding{Answer: Unknown, Mechanism: "x = "}, ""},
		{"zero window from a missing parameter", Finding{Mechanism: "m", Constant: &ConstantFinding{Expr: "2*S", Params: map[string]float64{"S": 0}, Value: 0}}, "parameter S has no value"},
		{"zero inside max()", Finding{Mechanism: "m", Constant: &ConstantFinding{Expr: "max(a, 10*S)", Params: map[string]float64{"a": 0, "S": 1200}, Value: 12000}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := guardText(tt.f, strings.Repeat("c", 40))
			if tt.why == "" {
				if g.Answer != tt.f.Answer || g.Detail != tt.f.Detail {
					t.Errorf("changed to %s %q", g.Answer, g.Detail)
				}
				return
			}
			if g.Answer != Unknown || !strings.Contains(g.Detail, tt.why) || !strings.Contains(g.Detail, "model does not fit") {
				t.Errorf("got %s %q, want UNKNOWN naming %q", g.Answer, g.Detail, tt.why)
			}
		})
	}
}
