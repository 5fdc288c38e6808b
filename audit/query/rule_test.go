package query

import (
	"context"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/data"
)

// TestAbsence: what the engine reports when a declared anchor is absent, when
// a decision finds something missing on its way, and when it then fails on
// the zero Def.
func TestAbsence(t *testing.T) {
	snap, err := gitsrc.CommitFiles(t.TempDir(), map[string]string{
		"src/lib.rs":       "impl Conn {\n    fn migrate(&mut self) { self.reset(); }\n}\n",
		"src/tests/lib.rs": "impl Conn {\n    fn rebind(&mut self) {}\n}\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		needs []Anchor
		run   func(x *Code) ([]audit.Finding, error)
		want  []string // answer role detail, per finding
	}{
		{"declared and present", []Anchor{Method("Conn", "migrate")},
			func(x *Code) ([]audit.Finding, error) {
				return []audit.Finding{x.Answer(Both, audit.Yes)}, nil
			}, []string{"YES both "}},
		{"declared, only in a test file", []Anchor{Method("Conn", "migrate"), Method("Conn", "rebind")},
			func(x *Code) ([]audit.Finding, error) { t.Error("decided without a declared anchor"); return nil, nil },
			[]string{"UNKNOWN both function Conn::rebind absent at"}},
		{"found missing while deciding", nil,
			func(x *Code) ([]audit.Finding, error) {
				if _, ok := x.Find(FuncIn("src/lib.rs", "rebind", "")); ok {
					t.Error("rebind found in src/lib.rs")
				}
				return []audit.Finding{x.Answer(Both, audit.No)}, nil
			}, []string{"NO both ", "UNKNOWN both function rebind in src/lib.rs absent at"}},
		{"failing on the zero Def", nil,
			func(x *Code) ([]audit.Finding, error) {
				d := x.Def(Const("K_MISSING"))
				_ = x.File(d.Path).Lang // nil file: panics
				return nil, nil
			}, []string{"UNKNOWN both const K_MISSING absent at"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			im := data.Implementation{Name: "absence-test-" + string(rune('a'+i)), Upstream: "https://example.invalid/o/a"}
			Register(im.Name, &Rule{Name: "absence/" + tt.name, Question: audit.Q1, Role: Both, Files: []string{"src/**/*.rs"}, Needs: tt.needs, Decide: tt.run})
			fs, err := audit.Run(context.Background(), im, snap)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range fs {
				got = append(got, strings.TrimSuffix(string(f.Answer)+" "+f.Role+" "+f.Detail, " "+snap.Commit()[:12]))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
