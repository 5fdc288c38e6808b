package validator

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/migaudit/migaudit/survey"
	"github.com/tidwall/gjson"
)

func readMaybeGz(p string) ([]byte, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return decompress(b)
}

// decompress returns gzip content decompressed (into one buffer of the
// size the gzip trailer records, so no re-growing), other content as is.
func decompress(b []byte) ([]byte, error) {
	if len(b) < 18 || b[0] != 0x1f || b[1] != 0x8b {
		return b, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	size := int(binary.LittleEndian.Uint32(b[len(b)-4:]))
	out := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	if _, err := out.ReadFrom(zr); err != nil {
		if out.Len() == 0 {
			return nil, err
		}
		return out.Bytes(), errTruncated
	}
	return out.Bytes(), nil
}

// errTruncated: a gzip stream that ends early (a trace cut off by a
// killed run); what it held is returned with it.
var errTruncated = errors.New("gzip stream truncated")

// levels are the keywords of the validator's own copy of the RFC sentences.
var levels = map[string]string{"Q1": rfcRequirements["Q1"].Level, "Q2": rfcRequirements["Q2"].Level, "Q3": rfcRequirements["Q3"].Level}

// liveVerdicts aggregates the IP repetitions as the survey must have.
func liveVerdicts(im gjson.Result) map[string]string {
	out := map[string]string{}
	var q1, q3 []string
	valid, defaults := 0, 0
	for _, rep := range im.Get("live.repetitions").Array() {
		if k := rep.Get("migration.kind").String(); k != "ip" && k != "path-change" {
			continue
		}
		valid++
		q1 = append(q1, rep.Get("q1").String())
		q3 = append(q3, rep.Get("q3").String())
		if rep.Get("rtt.attribution").String() == "default" {
			defaults++
		}
	}
	agg := func(vs []string) string {
		a, _ := LiveAnswer(vs)
		return a
	}
	out["Q1"], out["Q3"] = agg(q1), agg(q3)
	if valid > 0 && defaults == valid {
		out["Q2"] = "NO"
	}
	// Q2 live comes from the pv-distinct repetitions when there are any
	// (their q2, re-derived by the "q2" check), under the same rule.
	for _, sc := range im.Get("live_scenarios").Array() {
		if sc.Get("scenario").String() != survey.PVDistinct {
			continue
		}
		var q2 []string
		for _, rep := range sc.Get("live.repetitions").Array() {
			if k := rep.Get("migration.kind").String(); k != "ip" && k != "path-change" {
				continue
			}
			v := rep.Get("q2.answer").String()
			if v == "" {
				v = "UNKNOWN"
			}
			q2 = append(q2, v)
		}
		out["Q2"] = agg(q2)
	}
	return out
}

// checkAnswers: each answer is what its own evidence supports. The answer
// is the source answer (the live one when there is no source), the live
// answer is the repetitions' verdict, per-repetition Q1 follows the exact
// checkRepQ1: every repetition's q1 says what its reset_observed says (the
// per-repetition part of checkAnswers, for the reference repetition kept
// beside own runs, whose answers come from the own runs).
func checkRepQ1(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	n := 0
	for _, rep := range im.Get("live.repetitions").Array() {
		n++
		want := "NO"
		if rep.Get("reset_observed").Bool() {
			want = "YES"
		}
		if got := rep.Get("q1").String(); got != want && got != "UNKNOWN" {
			d.fail("%s: q1 %s but reset_observed=%v", rep.Get("id").String(), got, rep.Get("reset_observed").Bool())
		}
	}
	d.note("%d repetitions' q1 match reset_observed", n)
	return d.result()
}

// initial-window hit, agreement and "established" say what happened, a
// disagreement is listed, and ASYMMETRIC has roles that differ.
func checkAnswers(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	name := im.Get("name").String()
	live := liveVerdicts(im)
	listed := map[string]bool{}
	liveAudit := map[string]gjson.Result{}
	for _, a := range im.Get("live_audit.answers").Array() {
		liveAudit[a.Get("question").String()] = a
	}
	doc.Get("disagreements").ForEach(func(_, x gjson.Result) bool {
		if x.Get("implementation").String() != name {
			return true
		}
		q := x.Get("question").String()
		if strings.HasPrefix(x.Get("detail").String(), "source at the live commit ") {
			// The live runs against the audit of the code that ran
			// (live_audit, when it is not the pin): its own answer must
			// name the same two values and disagree.
			a, ok := liveAudit[q]
			switch {
			case !ok:
				d.fail("%s: a disagreement with the live commit's audit is listed, but live_audit has no %s answer", q, q)
			case a.Get("source_answer").String() != x.Get("source").String() || a.Get("live_answer").String() != x.Get("live").String() || a.Get("agreement").String() != "disagree":
				d.fail("%s: listed as source %q vs live %q at the live commit, live_audit says %q vs %q (%s)", q, x.Get("source").String(), x.Get("live").String(),
					a.Get("source_answer").String(), a.Get("live_answer").String(), a.Get("agreement").String())
			}
			return true
		}
		listed[q] = true
		return true
	})
	for _, rep := range im.Get("live.repetitions").Array() {
		want := "NO"
		if rep.Get("reset_observed").Bool() {
			want = "YES"
		}
		if got := rep.Get("q1").String(); got != want && got != "UNKNOWN" {
			d.fail("%s: q1 %s but reset_observed=%v", rep.Get("id").String(), got, rep.Get("reset_observed").Bool())
		}
	}
	vantageRole := ""
	if reps := im.Get("live.repetitions").Array(); len(reps) > 0 {
		switch strings.ToLower(reps[0].Get("vantage").String()) {
		case "server":
			vantageRole = "observing"
		case "client":
			vantageRole = "migrating"
		}
	}
	seenQ := map[string]bool{}
	im.Get("answers").ForEach(func(_, a gjson.Result) bool {
		q := a.Get("question").String()
		seenQ[q] = true
		ans, src, lv := a.Get("answer").String(), a.Get("source_answer").String(), a.Get("live_answer").String()
		if a.Get("requirement_level").String() != levels[q] {
			d.fail("%s is %s in the RFC, survey says %s", q, levels[q], a.Get("requirement_level").String())
		}
		// A requirement text, when the answer states one (the schema's
		// writer always does), is the RFC's.
		if r := a.Get("requirement"); r.Exists() {
			if msg := requirementDiffers(q, r.String()); msg != "" {
				d.fail("%s", msg)
			}
		}
		if lv != live[q] {
			d.fail("%s live answer %s, the repetitions give %s", q, orNoAnswer(lv), orNoAnswer(live[q]))
		}
		want, est, agr := "", "", ""
		switch {
		case src == "" && lv == "":
			want, est, agr = "UNKNOWN", "source", "none"
		case lv == "":
			want, est, agr = src, "source", "source-only"
		case src == "":
			want, est, agr = lv, "live", "live-only"
		default:
			want, est = src, "source+live"
			agr = "disagree"
			if src == lv {
				agr = "agree"
			} else if facetMatches(a, q, src, lv, vantageRole) {
				agr = "consistent"
			}
		}
		if ans != want {
			d.fail("%s answer %s, its evidence gives %s (source %q, live %q)", q, ans, want, src, lv)
		}
		if a.Get("established").String() != est {
			d.fail("%s established %q, should be %q", q, a.Get("established").String(), est)
		}
		if a.Get("agreement").String() != agr {
			d.fail("%s agreement %q, source %q vs live %q is %q", q, a.Get("agreement").String(), src, lv, agr)
		}
		if (agr == "disagree") != listed[q] {
			d.fail("%s: disagreement listed=%v, agreement %q", q, listed[q], agr)
		}
		if msg := rolesContradict(src, a.Get("roles")); msg != "" {
			d.fail("%s: %s", q, msg)
		}
		d.note("%s %s (%s, %s)", q, ans, est, agr)
		return true
	})
	for _, q := range []string{"Q1", "Q2", "Q3"} {
		if !seenQ[q] {
			d.fail("no answer to %s", q)
		}
	}
	return d.result()
}

// rolesContradict checks a source answer against its per-role answers,
// by the vocabulary's own definitions: unanimous roles give that answer;
// roles that differ give ASYMMETRIC when one role complies (YES) and
// ROLE_DEPENDENT when none does (or UNKNOWN). Roles where the question does
// not apply (N/A, NOT_SUPPORTED) do not count.
func rolesContradict(src string, roles gjson.Result) string {
	vals := map[string]bool{}
	var desc []string
	roles.ForEach(func(_, r gjson.Result) bool {
		desc = append(desc, r.Get("role").String()+" "+r.Get("answer").String())
		// A role where the question does not apply, or that cannot
		// migrate at all, neither complies nor fails.
		if v := r.Get("answer").String(); v != "N/A" && v != "NOT_SUPPORTED" {
			vals[v] = true
		}
		return true
	})
	if len(vals) == 0 || src == "" {
		return ""
	}
	roleText := strings.Join(desc, ", ")
	if len(vals) == 1 {
		for v := range vals {
			if v != src {
				return fmt.Sprintf("roles (%s) all answer %s, the answer is %s", roleText, v, src)
			}
		}
		return ""
	}
	switch {
	case src == "UNKNOWN":
		// Undecided is honest while a role is itself undecided, or while
		// no role complies; one complying role against another that does
		// not is decided: ASYMMETRIC.
		if vals["YES"] && !vals["UNKNOWN"] {
			return fmt.Sprintf("roles (%s) differ and one complies: ASYMMETRIC, not UNKNOWN", roleText)
		}
		return ""
	case vals["YES"] && src != "ASYMMETRIC":
		return fmt.Sprintf("roles (%s) differ and one complies: by definition ASYMMETRIC, not %s", roleText, src)
	case !vals["YES"] && src != "ROLE_DEPENDENT":
		return fmt.Sprintf("roles (%s) differ and neither complies: by definition ROLE_DEPENDENT, not %s", roleText, src)
	}
	return ""
}

// facetMatches mirrors the survey's rule for a live answer that sees one
// facet of a role-dependent or partial source answer.
func facetMatches(a gjson.Result, q, src, lv, role string) bool {
	match := false
	a.Get("roles").ForEach(func(_, r gjson.Result) bool {
		if r.Get("role").String() == role && r.Get("answer").String() == lv {
			match = true
		}
		return true
	})
	if match {
		return true
	}
	switch src {
	case "ASYMMETRIC":
		return len(a.Get("roles").Array()) == 0 && (lv == "YES" || lv == "NO")
	case "INERT":
		return lv == "NO"
	case "SPLIT":
		return q == "Q3" && (lv == "YES" || lv == "NO") && len(a.Get("roles").Array()) == 0
	}
	return false
}

// checkF1 recounts every implementation's reset hook callers.
func checkF1(v *Validator, doc, _ gjson.Result) (Status, string) {
	var d verdict
	f1 := doc.Get("cross_cutting.F1")
	claimed := map[string]int{}
	f1.Get("call_sites").ForEach(func(k, n gjson.Result) bool {
		claimed[k.String()] = int(n.Int())
		return true
	})
	var dead, claimedDead []string
	f1.Get("implementations").ForEach(func(_, n gjson.Result) bool {
		claimedDead = append(claimedDead, n.String())
		return true
	})
	counted := map[string]int{}
	for _, im := range doc.Get("implementations").Array() {
		r := im.Get("reachability")
		if !r.Exists() {
			continue
		}
		name := im.Get("name").String()
		n := int(r.Get("call_sites").Int())
		t, err := v.tree(im)
		if err == nil {
			sites, serr := v.symbolSites(t, r.Get("symbol").String(), r.Get("form").String())
			if serr != nil {
				d.fail("%s: %v", name, serr)
				continue
			}
			n = len(countReach(sites, r.Get("form").String()).Calls)
		} else {
			sourceErr(&d, err)
		}
		counted[name] = n
		if n == 0 {
			dead = append(dead, name)
		}
	}
	sort.Strings(dead)
	sort.Strings(claimedDead)
	if strings.Join(dead, ",") != strings.Join(claimedDead, ",") {
		d.fail("dead hooks are [%s], survey says [%s]", strings.Join(dead, ", "), strings.Join(claimedDead, ", "))
	}
	if sortedInts(counted) != sortedInts(claimed) {
		d.fail("call sites %s, survey says %s", sortedInts(counted), sortedInts(claimed))
	}
	d.note("dead: [%s]; call sites %s", strings.Join(dead, ", "), sortedInts(counted))
	return d.result()
}

// checkF2 recomputes the distinct mechanisms from the entries.
func checkF2(v *Validator, doc, _ gjson.Result) (Status, string) {
	var d verdict
	f2 := doc.Get("cross_cutting.F2")
	mech := map[string]string{}
	for _, im := range doc.Get("implementations").Array() {
		var parts []string
		for _, q := range []string{"Q1", "Q3"} {
			im.Get("answers").ForEach(func(_, a gjson.Result) bool {
				if a.Get("question").String() == q && a.Get("mechanism").String() != "" {
					parts = append(parts, q+": "+a.Get("mechanism").String())
				}
				return true
			})
		}
		if len(parts) > 0 {
			mech[im.Get("name").String()] = strings.Join(parts, " | ")
		}
	}
	distinct := map[string]bool{}
	for _, m := range mech {
		distinct[strings.Join(strings.Fields(strings.ToLower(m)), " ")] = true
	}
	if int(f2.Get("distinct").Int()) != len(distinct) || int(f2.Get("of").Int()) != len(mech) {
		d.fail("%d distinct mechanisms of %d, survey says %d of %d", len(distinct), len(mech), f2.Get("distinct").Int(), f2.Get("of").Int())
	}
	f2.Get("mechanisms").ForEach(func(k, m gjson.Result) bool {
		if mech[k.String()] != m.String() {
			d.fail("%s mechanism %q is not its entry's %q", k.String(), m.String(), mech[k.String()])
		}
		return true
	})
	if n := len(f2.Get("mechanisms").Map()); n != len(mech) {
		d.fail("%d mechanisms listed, %d entries have one", n, len(mech))
	}
	d.note("%d distinct of %d", len(distinct), len(mech))
	return d.result()
}

// checkF3: nobody (or exactly the listed users) answers Q2 YES, and no
// implementation whose live estimator sits at its default claims YES.
func checkF3(v *Validator, doc, _ gjson.Result) (Status, string) {
	var d verdict
	f3 := doc.Get("cross_cutting.F3")
	var users, claimed []string
	of := 0
	for _, im := range doc.Get("implementations").Array() {
		name := im.Get("name").String()
		im.Get("answers").ForEach(func(_, a gjson.Result) bool {
			if a.Get("question").String() != "Q2" {
				return true
			}
			if a.Get("answer").String() != "UNKNOWN" {
				of++
			}
			if a.Get("answer").String() == "YES" {
				users = append(users, name)
				if liveVerdicts(im)["Q2"] == "NO" {
					d.fail("%s answers Q2 YES but its estimator sits at the default after every migration", name)
				}
			}
			return true
		})
	}
	f3.Get("users").ForEach(func(_, u gjson.Result) bool {
		claimed = append(claimed, u.String())
		return true
	})
	sort.Strings(users)
	sort.Strings(claimed)
	if strings.Join(users, ",") != strings.Join(claimed, ",") {
		d.fail("Q2 YES: [%s], survey says [%s]", strings.Join(users, ", "), strings.Join(claimed, ", "))
	}
	if int(f3.Get("of").Int()) != of {
		d.fail("%d implementations answer Q2, survey says %d", of, f3.Get("of").Int())
	}
	d.note("%d of %d use the path-validation RTT", len(users), of)
	return d.result()
}

var _ = fmt.Sprintf
