package validator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"
)

// <impl>/analysis: each own repetition's analysis.json (the
// discriminator's output, which the survey was built from and which
// `report` and readers open) says what the repetition's figures say —
// and those figures are each re-derived from the trace by the live checks
// (window, rtt, q1, run-identity). So an analysis.json that is another
// repetition's, or edited, fails here even with every hash updated.
func init() {
	perImplChecks = append(perImplChecks, check{name: "analysis", fn: checkAnalysis, claim: "own-runs"})
}

// analysisFields pairs analysis.json's paths with the repetition's.
var analysisFields = [][2]string{
	{"migration.at_us", "migration.at_us"},
	{"scope_from_us", "scope_from_us"},
	{"scope_to_us", "scope_to_us"},
	{"window_before_bytes", "window_before_bytes"},
	{"window_after_bytes", "window_after_bytes"},
	{"reset_observed", "reset_observed"},
	{"rtt.first_after_us", "rtt.first_after_us"},
	{"rtt.attribution", "rtt.attribution"},
	{"q3.answer", "q3"},
	{"format", "format"},
	{"vantage", "vantage"},
}

func checkAnalysis(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	for _, rep := range im.Get("live.repetitions").Array() {
		rid := rep.Get("id").String()
		rel := rep.Get("analysis").String()
		if rel == "" {
			d.fail("%s: no analysis.json named", rid)
			continue
		}
		p, err := v.resolve("own-runs", rel)
		if err != nil {
			d.fail("%s: %v", rid, err)
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			d.unverifiable("%s: %v", rid, err)
			continue
		}
		if !gjson.ValidBytes(b) {
			d.fail("%s: %s is not JSON", rid, rel)
			continue
		}
		a := gjson.ParseBytes(b)
		var diffs []string
		// The run wrote it for this repetition's trace.
		if at, want := filepath.Base(filepath.Dir(a.Get("trace").String())), filepath.Base(filepath.Dir(rep.Get("trace").String())); at != want {
			diffs = append(diffs, fmt.Sprintf("it analysed %s's trace (%s)", at, a.Get("trace").String()))
		}
		if a.Get("implementation").String() != im.Get("name").String() {
			diffs = append(diffs, "implementation "+a.Get("implementation").String())
		}
		for _, f := range analysisFields {
			if x, y := a.Get(f[0]), rep.Get(f[1]); x.String() != y.String() {
				diffs = append(diffs, fmt.Sprintf("%s %s, the repetition %s", f[0], orNoAnswer(x.String()), orNoAnswer(y.String())))
			}
		}
		// q1: the survey settles an undecided q1 by the run's verified IP
		// change (docs/validator-decisions.md); otherwise the same.
		if x, y := a.Get("q1.answer").String(), rep.Get("q1").String(); x != y && !(x == "UNKNOWN" && y == "NO" && rep.Get("migration.kind").String() == "ip" && !rep.Get("reset_observed").Bool()) {
			diffs = append(diffs, fmt.Sprintf("q1 %s, the repetition %s", x, y))
		}
		var av, rv []string
		a.Get("events").ForEach(func(_, e gjson.Result) bool {
			av = append(av, e.Get("kind").String()+"@"+e.Get("at_us").String()+"="+e.Get("value_bytes").String())
			return true
		})
		rep.Get("events").ForEach(func(_, e gjson.Result) bool {
			rv = append(rv, e.Get("kind").String()+"@"+e.Get("at_us").String()+"="+e.Get("value_bytes").String())
			return true
		})
		if strings.Join(av, ",") != strings.Join(rv, ",") {
			diffs = append(diffs, fmt.Sprintf("%d events, the repetition %d (or different ones)", len(av), len(rv)))
		}
		if len(diffs) > 0 {
			d.fail("%s: %s is not this repetition's analysis: %s", rid, rel, strings.Join(diffs, "; "))
			continue
		}
		d.note("%s", rid)
	}
	if len(d.fails) == 0 && len(d.unver) == 0 {
		return Pass, fmt.Sprintf("%d analysis.json files say what their repetitions' trace-derived figures say", len(d.found))
	}
	return d.result()
}
