package rules

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/data"
)

// temporary (removed before hand-off)
func TestZZShow(t *testing.T) {
	name := os.Getenv("SHOW")
	if name == "" {
		t.Skip()
	}
	im, _ := data.Lookup(name)
	rep, err := audit.Audit(context.Background(), im, "", os.Getenv("REV"))
	if rep == nil {
		t.Fatal(err)
	}
	fmt.Println(rep.Commit, rep.Elapsed, err)
	for _, f := range rep.Findings {
		ar := ""
		if f.Constant != nil {
			ar = f.Constant.Arithmetic
		}
		fmt.Println(f.Rule, f.Question, f.Answer, f.Counts, f.Mechanism, "|", f.Detail, ar)
		for _, e := range f.Evidence {
			ex := e.Excerpt
			if len(ex) > 70 {
				ex = ex[:70]
			}
			fmt.Println("   ", e.Path, e.Line, e.Kind, e.Note, "|", ex)
		}
	}
}
