package data

import "testing"

func TestFormulaEval(t *testing.T) {
	tests := []struct {
		expr   string
		params map[string]float64
		over   map[string]float64
		want   float64
		arith  string
	}{
		{"min(10*S, max(2*S, 14720))", map[string]float64{"S": 1200}, nil, 12000, "min(10*1200, max(2*1200, 14720)) = 12000"},
		{"min(10*S, max(2*S, 14720))", map[string]float64{"S": 1200}, map[string]float64{"S": 1452}, 14520, "min(10*1452, max(2*1452, 14720)) = 14520"},
		{"32*S", map[string]float64{"S": 1280}, nil, 40960, "32*1280 = 40960"},
		{"0.7", nil, nil, 0.7, "0.7 = 0.7"},
		{"SS*S", map[string]float64{"S": 2, "SS": 3}, nil, 6, "3*2 = 6"},
	}
	for _, tt := range tests {
		got, arith, err := Formula{Expr: tt.expr, Params: tt.params}.Eval(tt.over)
		if err != nil {
			t.Fatalf("%s: %v", tt.expr, err)
		}
		if got != tt.want || arith != tt.arith {
			t.Errorf("%s: got %v %q, want %v %q", tt.expr, got, arith, tt.want, tt.arith)
		}
	}
	if _, _, err := (Formula{Expr: "10*X"}).Eval(nil); err == nil {
		t.Error("unbound name evaluated without error")
	}
}

func TestPinsAreFullCommits(t *testing.T) {
	impls, err := Implementations()
	if err != nil {
		t.Fatal(err)
	}
	if len(impls) < 5 {
		t.Fatalf("got %d implementations, want at least the study's five", len(impls))
	}
	for _, im := range impls {
		if len(im.Commit) != 40 {
			t.Errorf("%s: commit %q is not 40 hex digits", im.Name, im.Commit)
		}
		if len(im.Constants.InitialWindows) == 0 {
			t.Errorf("%s: no initial window", im.Name)
		}
	}
	if _, err := Lookup("quicgo"); err != nil {
		t.Error(err)
	}
	if c, audited, err := ConstantsFor("ngtcp2"); err != nil || len(c.InitialWindows) == 0 {
		t.Errorf("ConstantsFor(ngtcp2) = %v, %v, %v", c, audited, err)
	}
}
