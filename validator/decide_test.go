package validator

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
)

// schemaCategories reads the answer vocabulary from data/survey.schema.json.
func schemaCategories(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "data", "survey.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Defs struct {
			Answer struct {
				OneOf []struct {
					Const string `json:"const"`
				} `json:"oneOf"`
			} `json:"answer"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range s.Defs.Answer.OneOf {
		out = append(out, c.Const)
	}
	if len(out) < 2 {
		t.Fatalf("schema lists %d answer categories", len(out))
	}
	return out
}

// consistentRoles gives per-role answers that mean cat by the schema's
// definitions: ASYMMETRIC — one role complies, the other not; ROLE_DEPENDENT
// — the roles differ and neither complies; otherwise every role answers cat.
func consistentRoles(cat string, roles []any) {
	for i, r := range roles {
		m := r.(map[string]any)
		switch {
		case cat == "ASYMMETRIC" && i == 0:
			m["answer"] = "NO"
		case cat == "ASYMMETRIC":
			m["answer"] = "YES"
		case cat == "ROLE_DEPENDENT" && i == 0:
			m["answer"] = "NO"
		case cat == "ROLE_DEPENDENT":
			m["answer"] = "RESET_KEEPS_RTT"
		default:
			m["answer"] = cat
		}
	}
}

// flip changes one answer consistently, as a careless author "correcting"
// a cell would: the answer, its source answer, its live answer where there
// is one, its per-role answers where there are any (consistent with the
// new category), its agreement, and the disagreement list.
func flip(t *testing.T, raw []byte, impl, q, cat string, roles func(string, []any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, im := range doc["implementations"].([]any) {
		im := im.(map[string]any)
		if im["name"] != impl {
			continue
		}
		for _, a := range im["answers"].([]any) {
			a := a.(map[string]any)
			if a["question"] != q {
				continue
			}
			found = true
			a["answer"] = cat
			if _, ok := a["source_answer"]; ok {
				a["source_answer"] = cat
			}
			if _, ok := a["live_answer"]; ok {
				a["live_answer"] = cat
				a["agreement"] = "agree"
			}
			if rs, ok := a["roles"].([]any); ok {
				roles(cat, rs)
			}
		}
	}
	if !found {
		t.Fatalf("no %s %s in the survey", impl, q)
	}
	var keep []any
	for _, x := range doc["disagreements"].([]any) {
		x := x.(map[string]any)
		if x["implementation"] == impl && x["question"] == q {
			continue
		}
		keep = append(keep, x)
	}
	if keep == nil {
		keep = []any{}
	}
	doc["disagreements"] = keep
	out, _ := json.Marshal(doc)
	return out
}

type flipMutant struct {
	impl, q, from, to string
	raw               []byte
}

// consistentFlips makes, for every implementation and question, one mutant
// per other category the schema allows.
func consistentFlips(t *testing.T, raw []byte) []flipMutant {
	cats := schemaCategories(t)
	var s struct {
		Implementations []struct {
			Name    string `json:"name"`
			Answers []struct {
				Question, Answer string
			} `json:"answers"`
		} `json:"implementations"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	var out []flipMutant
	for _, im := range s.Implementations {
		for _, a := range im.Answers {
			for _, c := range cats {
				if c == a.Answer {
					continue
				}
				out = append(out, flipMutant{im.Name, a.Question, a.Answer, c, flip(t, raw, im.Name, a.Question, c, consistentRoles)})
			}
		}
	}
	return out
}

// ownCheck runs only the check named <impl>/<q> on raw, exactly as Check
// runs it (the same function over the same parsed document): the other
// checks cannot change its outcome, and 378 full validations of the real
// survey do not fit in go test's default timeout on a loaded machine.
func ownCheck(v *Validator, raw []byte, impl, q string) Status {
	doc := gjson.ParseBytes(raw)
	for _, im := range doc.Get("implementations").Array() {
		if im.Get("name").String() != impl {
			continue
		}
		for _, c := range perImplChecks {
			if c.name == q && c.applies(im) {
				st, _ := c.fn(v, doc, im)
				return st
			}
		}
	}
	return Status("absent")
}

// killedOnOwnCheck reports, per mutant, whether the check named
// <impl>/<question> fails on it (a failure elsewhere does not count).
func killedOnOwnCheck(v *Validator, ms []flipMutant) []string {
	var mu sync.Mutex
	var survivors []string
	var wg sync.WaitGroup
	next := make(chan flipMutant)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range next {
				status := ownCheck(v, m.raw, m.impl, m.q)
				if status != Fail {
					mu.Lock()
					survivors = append(survivors, fmt.Sprintf("%s/%s %s→%s: %s", m.impl, m.q, m.from, m.to, status))
					mu.Unlock()
				}
			}
		}()
	}
	for _, m := range ms {
		next <- m
	}
	close(next)
	wg.Wait()
	sort.Strings(survivors)
	return survivors
}

func runConsistentFlips(t *testing.T, v *Validator, raw []byte, wantImpls int) {
	for _, r := range v.Check(raw) {
		if r.Status == Fail {
			t.Fatalf("unmutated survey fails %s: %s", r.ID, r.Found)
		}
	}
	ms := consistentFlips(t, raw)
	cats := len(schemaCategories(t))
	if want := wantImpls * 3 * (cats - 1); len(ms) != want {
		t.Fatalf("%d mutants, want %d implementations × 3 questions × %d other categories = %d", len(ms), wantImpls, cats-1, want)
	}
	survivors := killedOnOwnCheck(v, ms)
	for _, s := range survivors {
		t.Errorf("survives its own check: %s", s)
	}
	t.Logf("consistent flips: %d implementations × 3 questions × %d other categories = %d mutants, %d killed on <impl>/<Qn> (%.1f%%)",
		wantImpls, cats-1, len(ms), len(ms)-len(survivors), 100*float64(len(ms)-len(survivors))/float64(len(ms)))
}

// Every answer of the fixture flipped to every other category fails on
// its own <impl>/<Qn> check: the fixture's synthetic sources carry the
// facts the decision rules read, so this runs without mirrors (CI).
func TestConsistentFlipsFixture(t *testing.T) {
	f := buildFixture(t)
	runConsistentFlips(t, f.validator(), f.raw, 3)
}

// The same over the committed survey, the fourteen implementations at
// their pinned commits (needs the mirrors and the reference).
func TestConsistentFlipsRealSurvey(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 378 full validations of the real survey")
	}
	v, raw := realWorld(t)
	runConsistentFlips(t, v, raw, 14)
}

// The four changes the issue planted, each caught by its own check.
func TestPlantedAnswerChangesRealSurvey(t *testing.T) {
	v, raw := realWorld(t)
	allYes := func(_ string, rs []any) {
		for _, r := range rs {
			r.(map[string]any)["answer"] = "YES"
		}
	}
	keepRoles := func(string, []any) {}
	tests := []struct {
		impl, q, to string
		roles       func(string, []any)
	}{
		{"lsquic", "Q3", "YES", keepRoles},
		{"msquic", "Q3", "YES", keepRoles},
		{"quicly", "Q2", "YES", keepRoles},
		{"quinn", "Q1", "YES", allYes},
	}
	for _, tc := range tests {
		t.Run(tc.impl+" "+tc.q+" "+tc.to, func(t *testing.T) {
			mutant := flip(t, raw, tc.impl, tc.q, tc.to, tc.roles)
			for _, r := range v.Check(mutant) {
				if r.ID == tc.impl+"/"+tc.q {
					if r.Status != Fail {
						t.Fatalf("%s: %s %s", r.ID, r.Status, r.Found)
					}
					t.Logf("caught: %.300s", r.Found)
					return
				}
			}
			t.Fatalf("no check %s/%s", tc.impl, tc.q)
		})
	}
}

// Every implementation in the committed survey has a decision rule.
func TestEveryImplementationHasADecisionRule(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "data", "survey_results.json"))
	if err != nil {
		t.Skip("data/survey_results.json absent")
	}
	var s struct {
		Implementations []struct{ Name string } `json:"implementations"`
	}
	json.Unmarshal(raw, &s)
	for _, im := range s.Implementations {
		if _, ok := deciders[im.Name]; !ok {
			t.Errorf("%s has no decision rule", im.Name)
		}
	}
	if len(s.Implementations) != len(deciders) {
		t.Errorf("%d implementations, %d decision rules (%v)", len(s.Implementations), len(deciders), Decided())
	}
}
