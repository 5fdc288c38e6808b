package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/validator"
)

// Historical goldens: audit/testdata/history/<impl>.json holds, for commits
// away from the pin, answers verified by reading the source at that commit
// and the file:line positions they rest on (<impl>.md says why, line by
// line). The audit at each commit must give the golden answer, citing
// those positions, or say UNKNOWN or DISPUTED: never a confident answer
// that contradicts a golden.

type historyGolden struct {
	Impl   string `json:"implementation"`
	Points []struct {
		Rev     string `json:"rev"`
		Commit  string `json:"commit"`
		Answers []struct {
			Key    string   `json:"key"` // Q1..Q3, a constant question, or a rule name
			Answer string   `json:"answer,omitempty"`
			Value  *float64 `json:"value,omitempty"`
			Source []string `json:"source,omitempty"`
		} `json:"answers"`
	} `json:"points"`
}

func loadHistoryGoldens(t *testing.T) []historyGolden {
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "history", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no history goldens (%v)", err)
	}
	var out []historyGolden
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var g historyGolden
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if _, err := data.Lookup(g.Impl); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, pt := range g.Points {
			if len(pt.Commit) != 40 || len(pt.Answers) == 0 {
				t.Errorf("%s %s: needs a full commit hash and answers", p, pt.Rev)
			}
		}
		out = append(out, g)
	}
	return out
}

// TestHistoryGoldensWellFormed runs without mirrors: the goldens parse,
// name real implementations, and cite positions as path:line.
func TestHistoryGoldensWellFormed(t *testing.T) {
	for _, g := range loadHistoryGoldens(t) {
		for _, pt := range g.Points {
			for _, a := range pt.Answers {
				if (a.Answer == "") == (a.Value == nil) {
					t.Errorf("%s %s %s: give an answer or a value", g.Impl, pt.Rev, a.Key)
				}
				for _, s := range a.Source {
					if i := strings.LastIndexByte(s, ':'); i <= 0 || strings.Trim(s[i+1:], "0123456789") != "" {
						t.Errorf("%s %s %s: %q is not path:line", g.Impl, pt.Rev, a.Key, s)
					}
				}
			}
		}
	}
}

func goldenFinding(rep *audit.Report, key string) *audit.Finding {
	switch audit.Question(key) {
	case audit.Q1, audit.Q2, audit.Q3:
		return rep.Answer(audit.Question(key))
	}
	for i, f := range rep.Findings {
		if string(f.Question) == key && (f.Constant == nil || !f.Constant.Alternative) || f.Rule == key {
			return &rep.Findings[i]
		}
	}
	return nil
}

func TestHistoryGoldens(t *testing.T) {
	needMirrors(t)
	for _, g := range loadHistoryGoldens(t) {
		im, _ := data.Lookup(g.Impl)
		for _, pt := range g.Points {
			t.Run(g.Impl+"@"+pt.Rev, func(t *testing.T) {
				rep, err := audit.Audit(context.Background(), im, "", pt.Commit)
				if rep == nil {
					t.Fatal(err)
				}
				var reading map[string]validator.Decision
				if repo, err := gitsrc.Locate(im.Upstream, ""); err == nil {
					reading, _ = validator.DecideRepo(repo.Dir, im.Name, pt.Commit)
				}
				for _, a := range pt.Answers {
					f := goldenFinding(rep, a.Key)
					if f == nil {
						t.Errorf("%s: no finding", a.Key)
						continue
					}
					got := string(f.Answer)
					if a.Value != nil {
						if f.Constant == nil {
							t.Logf("%s: audit UNKNOWN (%s), golden %v", a.Key, f.Detail, *a.Value)
							continue
						}
						if f.Constant.Value != *a.Value {
							t.Errorf("%s = %v (%s), golden %v", a.Key, f.Constant.Value, f.Constant.Arithmetic, *a.Value)
						}
						got = fmt.Sprint(f.Constant.Value)
					} else {
						switch {
						case got == a.Answer:
						case f.Answer == audit.Unknown:
							t.Logf("%s: audit UNKNOWN, golden %s; reason: %s %s", a.Key, a.Answer, f.Mechanism, f.Detail)
							continue
						case f.Disputed != "":
							t.Logf("%s: audit %s DISPUTED (%s), golden %s", a.Key, got, f.Disputed, a.Answer)
							continue
						default:
							t.Errorf("%s: audit answers %s with confidence, golden %s (%s)", a.Key, got, a.Answer, f.Mechanism)
							continue
						}
					}
					cited := map[string]bool{}
					for _, e := range f.Evidence {
						cited[fmt.Sprintf("%s:%d", e.Path, e.Line)] = true
					}
					for _, s := range a.Source {
						if !cited[s] && got == a.Answer {
							t.Errorf("%s %s: evidence lacks %s (cites %v)", a.Key, got, s, keys(cited))
						}
					}
					if d, ok := reading[a.Key]; ok && a.Answer != "" && d.Answer != a.Answer {
						if d.Answer == string(audit.Unknown) {
							t.Logf("%s: the independent reading cannot decide, golden %s (%s)", a.Key, a.Answer, strings.Join(d.Facts, "; "))
						} else {
							t.Errorf("%s: the independent reading says %s with confidence, golden %s (%s)", a.Key, d.Answer, a.Answer, strings.Join(d.Facts, "; "))
						}
					}
				}
			})
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
