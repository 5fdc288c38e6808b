package validator

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// The <impl>/Q1, <impl>/Q2 and <impl>/Q3 checks: the validator decides the
// answer itself (decide_<impl>.go from the source at the pinned commit, the
// raw traces for the live half) and compares the survey's answer, source
// answer, live answer, agreement and per-role answers with that decision,
// and the answer with its category's meaning in the schema.
func init() {
	for _, q := range []string{"Q1", "Q2", "Q3"} {
		perImplChecks = append(perImplChecks, check{name: q, fn: questionCheck(q)})
	}
}

// decided memoises decisions: a decision is a function of the git tree
// alone (repository and commit), so one cache serves every validator.
var decided sync.Map

func (v *Validator) decisions(t *sourceTree, impl string) map[string]Decision {
	key := impl + "@" + t.repoDir + "@" + t.commit
	if d, ok := decided.Load(key); ok {
		return d.(map[string]Decision)
	}
	d := runDecider(deciders[impl], t)
	decided.Store(key, d)
	return d
}

func questionCheck(q string) func(v *Validator, doc, im gjson.Result) (Status, string) {
	return func(v *Validator, doc, im gjson.Result) (Status, string) {
		var d verdict
		name := im.Get("name").String()
		var a gjson.Result
		im.Get("answers").ForEach(func(_, x gjson.Result) bool {
			if x.Get("question").String() == q {
				a = x
			}
			return true
		})
		if !a.Exists() {
			d.fail("no answer to %s", q)
			return d.result()
		}
		ans, src, lv := a.Get("answer").String(), a.Get("source_answer").String(), a.Get("live_answer").String()

		// The category's meaning: per-role answers against the answer.
		if msg := rolesContradict(ans, a.Get("roles")); msg != "" {
			d.fail("%s", msg)
		}

		// The live half, from the raw traces.
		liveDecided, liveNote, lerr := v.liveDecision(im, q)
		switch {
		case lerr != nil && errors.Is(lerr, errNoSource):
			d.unverifiable("live: %v", lerr)
		case lerr != nil:
			d.fail("live: %v", lerr)
		case liveDecided != lv:
			d.fail("the traces give live %s, survey says %s", liveNote, orNoAnswer(lv))
		case liveNote != "":
			d.note("live %s: %s", orDash(liveDecided), liveNote)
		}

		// The source half, from the code at the pinned commit.
		if _, ok := deciders[name]; !ok {
			d.unverifiable("no decision rule for %s", name)
			return d.result()
		}
		t, err := v.tree(im)
		if err != nil {
			sourceErr(&d, err)
			return d.result()
		}
		dec := v.decisions(t, name)[q]
		facts := strings.Join(dec.Facts, "; ")
		if src == "" {
			// No source claim (a live-only entry): the live half decides.
			d.note("no source answer claimed; the source decides %s%s [%s]", dec.Answer, roleText(dec.Roles), facts)
			if ans != liveDecided {
				d.fail("answer %s with no source answer, the traces give %q", ans, liveDecided)
			}
			return d.result()
		}
		if src != dec.Answer {
			d.fail("source decides %s%s, survey's source answer is %q [%s]", dec.Answer, roleText(dec.Roles), src, facts)
		}
		if msg := rolesDiffer(dec.Roles, dec.Answer, a.Get("roles")); msg != "" {
			d.fail("%s", msg)
		}
		// The answer and its agreement follow from the two halves.
		want, agr := dec.Answer, "source-only"
		if liveDecided != "" {
			agr = "disagree"
			if dec.Answer == liveDecided {
				agr = "agree"
			} else if facetMatches(a, q, dec.Answer, liveDecided, vantageRoleOf(im)) {
				agr = "consistent"
			}
		}
		if lerr == nil {
			if ans != want {
				d.fail("answer %s, the decision is %s", ans, want)
			}
			if got := a.Get("agreement").String(); got != agr {
				d.fail("agreement %q, source %s vs live %q is %q", got, dec.Answer, liveDecided, agr)
			}
		}
		d.note("%s%s from source [%s]", dec.Answer, roleText(dec.Roles), facts)
		return d.result()
	}
}

func orNoAnswer(s string) string {
	if s == "" {
		return "no live answer"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func roleText(roles map[string]string) string {
	if len(roles) == 0 {
		return ""
	}
	var parts []string
	for _, k := range sortedKeys(roles) {
		parts = append(parts, k+" "+roles[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// rolesDiffer compares the survey's per-role answers with the decided
// ones; a decision without roles accepts roles that all repeat its answer.
func rolesDiffer(decided map[string]string, answer string, roles gjson.Result) string {
	got := map[string]string{}
	roles.ForEach(func(_, r gjson.Result) bool {
		got[r.Get("role").String()] = r.Get("answer").String()
		return true
	})
	if len(decided) == 0 {
		for _, k := range sortedKeys(got) {
			if got[k] != answer {
				return fmt.Sprintf("role %s answers %s, the source decides %s for every role", k, got[k], answer)
			}
		}
		return ""
	}
	if roleText(got) != roleText(decided) {
		return fmt.Sprintf("roles%s, the source decides%s", orNone(roleText(got)), roleText(decided))
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return " none"
	}
	return s
}

func vantageRoleOf(im gjson.Result) string {
	if reps := im.Get("live.repetitions").Array(); len(reps) > 0 {
		switch strings.ToLower(reps[0].Get("vantage").String()) {
		case "server":
			return "observing"
		case "client":
			return "migrating"
		}
	}
	return ""
}

// liveDecision decides the live answer to q from the raw traces of the IP
// repetitions: Q1 YES when the window takes an initial value exactly in
// scope; Q3 from where the first post-migration RTT sample comes from (the
// ACK of a packet sent before the migration: NO; the new path's RTT: YES;
// the old one: NO; between or the default: undecided); Q2 NO when every
// repetition's estimator sits at its default. Unanimous YES/NO verdicts
// give the answer, mixed ones UNKNOWN, none "".
func (v *Validator) liveDecision(im gjson.Result, q string) (string, string, error) {
	// The decision depends only on the entry's live block and constants
	// (and where traces resolve): memoised on their text, so the many survey variants of the mutation
	// tests read each trace's window and RTT once.
	sum := sha256.Sum256([]byte(v.opts.RepoRoot + "\x00" + v.opts.Evidence + "\x00" + im.Get("live").Raw + "\x00" + im.Get("constants").Raw))
	key := q + "#" + hex.EncodeToString(sum[:])
	if r, ok := liveDecided.Load(key); ok {
		l := r.(liveResult)
		return l.answer, l.note, l.err
	}
	a, n, err := v.decideLive(im, q)
	liveDecided.Store(key, liveResult{a, n, err})
	return a, n, err
}

type liveResult struct {
	answer, note string
	err          error
}

// liveDecided memoises liveDecision; trace paths resolve against the
// validator's repository root and evidence directory, so both are in the key.
var liveDecided sync.Map

func (v *Validator) decideLive(im gjson.Result, q string) (string, string, error) {
	var verdicts, missing []string
	defaults, n := 0, 0
	def := defaultRTTConstant(im, -1)
	for _, rep := range im.Get("live.repetitions").Array() {
		if k := rep.Get("migration.kind").String(); k != "ip" && k != "path-change" {
			continue
		}
		id := rep.Get("id").String()
		f, err := v.repTrace(im, rep)
		if errors.Is(err, errNoSource) {
			// A missing trace makes unverifiable only an answer it could
			// change (decided below).
			missing = append(missing, id+": "+err.Error())
			continue
		}
		if err != nil {
			return "", "", fmt.Errorf("%s: %w", id, err)
		}
		n++
		from, at, to := rep.Get("scope_from_us").Int(), rep.Get("migration.at_us").Int(), rep.Get("scope_to_us").Int()
		initial, _, _ := constantsOf(im, rep)
		w := deriveWindow(f, from, at, to, initial)
		q1 := RepetitionQ1(rep.Get("migration.kind").String(), len(w.hits) > 0)
		firsts, lastBefore := rttFacts(f, at, def)
		first := rep.Get("rtt.first_after_us").Int()
		q3 := "UNKNOWN"
		attr := ""
		if anyNear(first, firsts, 1) {
			newPath := rep.Get("new_path_rtt_us").Int()
			if newPath == 0 {
				newPath = rep.Get("rtt.new_path_us").Int()
			}
			// The old path's RTT as the run configured it (manifest) and as
			// the trace last measured it before migrating: an old-path
			// packet's sample reads the latter, queueing included.
			attr = attributionOf(first, []int64{v.configuredRTT(im, rep, "A"), lastBefore}, newPath, def)
			// Without a reset the smoothed RTT after the migration carries
			// on from the old path's estimator, and queueing on path A can
			// have raised that to about the new path's RTT: the value then
			// cannot tell the two apart (picoquic measured 33–38 ms on a
			// 20 ms path A against a 40 ms path B), whatever the configured
			// RTTs say. After a reset the estimator starts afresh and the
			// configured RTTs decide as above.
			if q1 == "NO" && lastBefore > 0 && newPath > 0 && attr != "default" && roughly(lastBefore, newPath, 0.25) {
				attr = ""
			}
			if w := q3Of(attr); w != "" {
				q3 = w
			}
			if _, _, ok := ackedBefore(f, at, first, def); ok {
				q3 = "NO"
			}
		}
		if ww, _, stated, err := v.wireQ3(im, rep); stated && err == nil {
			q3 = ww
		}
		if attr == "default" {
			defaults++
		}
		switch q {
		case "Q1":
			verdicts = append(verdicts, id+" "+q1)
		case "Q3":
			verdicts = append(verdicts, id+" "+q3)
		}
	}
	answer, note := liveOf(q, verdicts, defaults, n)
	if len(missing) == 0 {
		return answer, note, nil
	}
	// Whatever the missing repetitions show, does the answer stand?
	for _, extra := range outcomes(len(missing)) {
		vs, defs := append([]string{}, verdicts...), defaults
		for i, x := range extra {
			vs = append(vs, fmt.Sprintf("missing%d %s", i, x))
			if x == "default" {
				defs++
			}
		}
		if a, _ := liveOf(q, vs, defs, n+len(missing)); a != answer {
			return "", "", fmt.Errorf("%w: %s", errNoSource, strings.Join(missing, "; "))
		}
	}
	return answer, note + fmt.Sprintf(" (%d traces absent, which could not change it: %s)", len(missing), strings.Join(missing, "; ")), nil
}

// outcomes lists every combination of what k unread repetitions could
// show (YES, NO, undecided; "default" stands for an RTT at the default
// with an undecided verdict).
func outcomes(k int) [][]string {
	out := [][]string{{}}
	for range k {
		var next [][]string
		for _, o := range out {
			for _, x := range []string{"YES", "NO", "UNKNOWN", "default"} {
				next = append(next, append(append([]string{}, o...), x))
			}
		}
		out = next
	}
	return out
}

// liveOf is the live answer from per-repetition verdicts ("<id> <verdict>")
// and the count of repetitions at the default RTT, of n.
func liveOf(q string, verdicts []string, defaults, n int) (string, string) {
	if n == 0 {
		return "", ""
	}
	if q == "Q2" {
		if defaults == n {
			return "NO", fmt.Sprintf("RTT at the default after all %d migrations", n)
		}
		return "", ""
	}
	sort.Strings(verdicts)
	plain := make([]string, len(verdicts))
	for i, x := range verdicts {
		plain[i] = x[strings.LastIndex(x, " ")+1:]
		if plain[i] == "default" {
			plain[i] = "UNKNOWN"
		}
	}
	answer, msg := LiveAnswer(plain)
	return answer, msg + ": " + strings.Join(verdicts, ", ")
}
