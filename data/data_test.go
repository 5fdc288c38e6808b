package data

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

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

// TestReturnedValuesAreCopies: the pins are decoded once per process, so a
// caller that changes what Implementations, Lookup or ConstantsFor returned
// (a formula's params, a slice element, a pointed-to formula or position)
// must not change what the next caller gets.
func TestReturnedValuesAreCopies(t *testing.T) {
	spoil := func(c *Constants) {
		for i := range c.InitialWindows {
			f := &c.InitialWindows[i]
			f.Expr = "666"
			for k := range f.Params {
				f.Params[k] = -1
			}
			if f.Params == nil {
				f.Params = map[string]float64{}
			}
			f.Params["spoiled"] = 1
			if f.Source != nil {
				f.Source.Path, f.Source.Line = "spoiled", -1
			}
		}
		c.InitialWindows = append(c.InitialWindows, Formula{Expr: "1"})
		for _, p := range []*Formula{c.MinWindow, c.LossFactor, c.DefaultRTT} {
			if p != nil {
				p.Expr = "666"
				if p.Params != nil {
					for k := range p.Params {
						p.Params[k] = -1
					}
				}
				if p.Source != nil {
					p.Source.Line = -1
				}
			}
		}
	}
	before, err := Implementations()
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := func() string {
		b, err := json.Marshal(before)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}()
	var wantAudited []string
	for _, im := range before {
		c, _, err := ConstantsFor(im.Name)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(c)
		wantAudited = append(wantAudited, string(b))
	}

	// Spoil every kind of returned value.
	mine, _ := Implementations()
	for i := range mine {
		spoil(&mine[i].Constants)
		mine[i].Name = "spoiled"
	}
	for _, im := range before {
		l, err := Lookup(im.Name)
		if err != nil {
			t.Fatal(err)
		}
		spoil(&l.Constants)
		c, _, err := ConstantsFor(im.Name)
		if err != nil {
			t.Fatal(err)
		}
		spoil(&c)
	}

	after, err := Implementations()
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(after); string(b) != wantJSON {
		t.Errorf("Implementations changed after its callers changed their copies:\n%s\nwant\n%s", b, wantJSON)
	}
	for i, im := range before {
		l, err := Lookup(im.Name)
		if err != nil {
			t.Fatal(err)
		}
		lb, _ := json.Marshal(l)
		bb, _ := json.Marshal(im)
		if string(lb) != string(bb) {
			t.Errorf("Lookup(%s) changed after its callers changed their copies:\n%s\nwant\n%s", im.Name, lb, bb)
		}
		c, _, err := ConstantsFor(im.Name)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(c); string(b) != wantAudited[i] {
			t.Errorf("ConstantsFor(%s) changed after its callers changed their copies:\n%s\nwant\n%s", im.Name, b, wantAudited[i])
		}
	}
	// The copies are equal to a fresh decoding of the embedded file.
	var f file
	if err := json.Unmarshal(implementationsJSON, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Implementations) != len(after) {
		t.Fatalf("fresh decoding has %d pins, Implementations %d", len(f.Implementations), len(after))
	}
	for _, want := range f.Implementations {
		got, err := Lookup(want.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Lookup(%s) = %+v, a fresh decoding %+v", want.Name, got, want)
		}
	}
}

// TestEvalConcurrent: formulas parsed once are evaluated by many goroutines
// at once (analyze runs traces in parallel) with the same results as one by
// one, and a formula that does not parse keeps failing. Run with -race.
func TestEvalConcurrent(t *testing.T) {
	exprs := []struct {
		f    Formula
		over map[string]float64
	}{
		{Formula{Expr: "min(10*S, max(2*S, 14720))", Params: map[string]float64{"S": 1200}}, nil},
		{Formula{Expr: "min(10*S, max(2*S, 14720))", Params: map[string]float64{"S": 1200}}, map[string]float64{"S": 1452}},
		{Formula{Expr: "10*(MTU-20-8)", Params: map[string]float64{"MTU": 1288}}, nil},
		{Formula{Expr: "7/10"}, nil},
		{Formula{Expr: "floor(S/3)", Params: map[string]float64{"S": 100}}, nil},
	}
	type result struct {
		v     float64
		arith string
	}
	want := make([]result, len(exprs))
	for i, e := range exprs {
		v, arith, err := e.f.Eval(e.over)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = result{v, arith}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 200; n++ {
				for i, e := range exprs {
					v, arith, err := e.f.Eval(e.over)
					if err != nil || v != want[i].v || arith != want[i].arith {
						errs <- fmt.Errorf("%s: %v %q %v, want %v %q", e.f.Expr, v, arith, err, want[i].v, want[i].arith)
						return
					}
				}
				if _, _, err := (Formula{Expr: "10*(S"}).Eval(nil); err == nil || !strings.Contains(err.Error(), `formula "10*(S"`) {
					errs <- fmt.Errorf("unparsable formula: error %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCanonicalName: the names read without decoding the pins answer as
// Lookup does, for every pin under several spellings and for unknown names.
func TestCanonicalName(t *testing.T) {
	impls, err := Implementations()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, im := range impls {
		names = append(names, im.Name)
	}
	if got := pinNames(); !reflect.DeepEqual(got, names) {
		t.Fatalf("pinNames() = %q, decoded pins %q", got, names)
	}
	var asked []string
	for _, n := range names {
		asked = append(asked, n, strings.ToUpper(n), strings.ReplaceAll(n, "-", ""))
	}
	asked = append(asked, "", "nope", "quic go", "-")
	for _, n := range asked {
		im, lerr := Lookup(n)
		got, cerr := CanonicalName(n)
		switch {
		case lerr != nil || cerr != nil:
			if lerr == nil || cerr == nil || lerr.Error() != cerr.Error() {
				t.Errorf("CanonicalName(%q) error %v, Lookup's %v", n, cerr, lerr)
			}
		case got != im.Name:
			t.Errorf("CanonicalName(%q) = %q, Lookup %q", n, got, im.Name)
		}
	}
}
