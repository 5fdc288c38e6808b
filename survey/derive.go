package survey

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Requirement texts and levels, from the RFCs.
var requirements = map[string]struct{ Level, Text string }{
	"Q1": {"MUST", `RFC 9000 §9.4 ¶2: an endpoint "MUST immediately reset the congestion controller and round-trip time estimator for the new path to initial values"`},
	"Q2": {"MAY", `RFC 9002 §6.2.2: a connection "MAY use the delay between sending a PATH_CHALLENGE and receiving a PATH_RESPONSE to set the initial RTT for a new path"`},
	"Q3": {"MUST", `RFC 9000 §9.4 ¶1: "Packets sent on the old path MUST NOT contribute to congestion control or RTT estimation for the new path"`},
}

// Questions in report order.
var Questions = []string{"Q1", "Q2", "Q3"}

// RequirementLevel returns MUST or MAY for a question.
func RequirementLevel(q string) string { return requirements[q].Level }

// RequirementText returns the quoted requirement with its RFC section.
func RequirementText(q string) string { return requirements[q].Text }

// roleOfVantage is the endpoint role a live trace observes: the client
// migrates in every scenario, so the server is the observing endpoint.
func roleOfVantage(v string) string {
	switch strings.ToLower(v) {
	case "server":
		return "observing"
	case "client":
		return "migrating"
	}
	return ""
}

// Reconcile fills Answer, Established and Agreement from SourceAnswer and
// LiveAnswer, and returns a Disagreement when the halves differ. vantage is
// the live trace's endpoint ("server", "client" or "").
func Reconcile(impl string, a *Answer, vantage string) *Disagreement {
	a.RequirementLevel = RequirementLevel(a.Question)
	a.Requirement = RequirementText(a.Question)
	src, live := a.SourceAnswer, a.LiveAnswer
	switch {
	case src == "" && live == "":
		a.Answer, a.Established, a.Agreement = "UNKNOWN", BySource, NoAnswer
		if a.Detail == "" {
			a.Detail = "neither a source audit nor a live run answered this question"
		}
		return nil
	case live == "":
		a.Answer, a.Established, a.Agreement = src, BySource, SourceOnly
		return nil
	case src == "":
		a.Answer, a.Established, a.Agreement = live, ByLive, LiveOnly
		return nil
	}
	a.Answer, a.Established = src, BySourceLive
	if src == live {
		a.Agreement = Agree
		return nil
	}
	if consistent(a, vantage) {
		a.Agreement = Consistent
		return nil
	}
	a.Agreement = Disagree
	return &Disagreement{
		Implementation: impl, Question: a.Question, Source: src, Live: live,
		Detail: fmt.Sprintf("source at the pinned commit says %s, the live runs (%s vantage) say %s; kept as the source answer and reported here", src, orUnknown(vantage), live),
	}
}

// consistent reports whether a live answer matches one facet of a source
// answer that a single trace cannot see whole.
func consistent(a *Answer, vantage string) bool {
	role := roleOfVantage(vantage)
	for _, r := range a.Roles {
		if r.Role == role && r.Answer == a.LiveAnswer {
			return true
		}
	}
	switch a.SourceAnswer {
	case "ASYMMETRIC":
		// Without per-role answers, one trace sees one role: YES or NO
		// is each one of the two halves.
		return len(a.Roles) == 0 && (a.LiveAnswer == "YES" || a.LiveAnswer == "NO")
	case "INERT":
		// Code that never takes effect looks like NO from outside.
		return a.LiveAnswer == "NO"
	case "SPLIT":
		// A trace judges Q3 by the RTT half alone; SPLIT obeys the rule for
		// one estimate and not the other (the mechanism says which), so
		// either RTT verdict is one facet of it (msquic: RTT obeyed, live
		// YES; ngtcp2: congestion obeyed, RTT not, live NO).
		return a.Question == "Q3" && (a.LiveAnswer == "YES" || a.LiveAnswer == "NO") && len(a.Roles) == 0
	}
	return false
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// CountsAsMigration says whether a repetition's migration can carry a live
// verdict: a verified IP change, or a path change in a trace that logs no
// addresses (then the IP change rests on the run's own verification, and
// the validator reports it UNVERIFIABLE from the trace). A port-only
// rebinding is exempt from §9.4 and proves nothing; "none" has no instant.
func CountsAsMigration(kind string) bool { return kind == "ip" || kind == "path-change" }

// LiveAnswers aggregates the repetitions' per-trace verdicts. Only
// repetitions verified as IP migrations count: a port-only rebinding is
// exempt from §9.4 and proves nothing.
func LiveAnswers(l *Live) (q1, q2, q3, detail string) {
	if l == nil {
		return "", "", "", ""
	}
	var v1, v3 []string
	defaults := 0
	valid := 0
	for _, r := range l.Repetitions {
		if !CountsAsMigration(r.Migration.Kind) {
			continue
		}
		valid++
		v1 = append(v1, r.Q1)
		v3 = append(v3, r.Q3)
		if r.RTT.Attribution == "default" {
			defaults++
		}
	}
	q1, d1 := unanimous(v1)
	q3, d3 := unanimous(v3)
	// Q2 is only decidable live when the estimator visibly sits at its
	// default after migration: it was seeded with that, not with the
	// path-validation round trip.
	if valid > 0 && defaults == valid {
		q2 = "NO"
	}
	var parts []string
	for _, d := range []string{d1, d3} {
		if d != "" {
			parts = append(parts, d)
		}
	}
	return q1, q2, q3, strings.Join(parts, "; ")
}

// LiveQ2 aggregates the per-repetition Q2 of a pv-distinct run under the
// same rule: only repetitions that count as a migration, the one verdict
// of those that decide (YES/NO), UNKNOWN when they differ, "" when none
// decides (a repetition without q2, or not valid for Q2, is undecided).
func LiveQ2(l *Live) (answer, detail string) {
	if l == nil {
		return "", ""
	}
	var vs []string
	for _, r := range l.Repetitions {
		if !CountsAsMigration(r.Migration.Kind) {
			continue
		}
		v := "UNKNOWN"
		if r.Q2 != nil {
			v = r.Q2.Answer
		}
		vs = append(vs, v)
	}
	return unanimous(vs)
}

// unanimous returns the common YES/NO verdict, UNKNOWN when the repetitions
// disagree, or "" when none decided.
func unanimous(vs []string) (string, string) {
	count := map[string]int{}
	for _, v := range vs {
		if v == "YES" || v == "NO" {
			count[v]++
		}
	}
	switch {
	case len(count) == 0:
		return "", ""
	case len(count) == 1:
		for k := range count {
			return k, ""
		}
	}
	return "UNKNOWN", fmt.Sprintf("repetitions disagree: %d YES, %d NO", count["YES"], count["NO"])
}

// ComputeCrossCutting derives F1, F2 and F3 from the implementation entries.
func ComputeCrossCutting(impls []Implementation) CrossCutting {
	var cc CrossCutting
	cc.F1.CallSites = map[string]int{}
	cc.F1.Implementations = []string{}
	cc.F2.Mechanisms = map[string]string{}
	cc.F3.Users = []string{}
	var withHooks int
	for _, im := range impls {
		if r := im.Reachability; r != nil {
			withHooks++
			cc.F1.CallSites[im.Name] = r.CallSites
			if r.CallSites == 0 {
				cc.F1.Implementations = append(cc.F1.Implementations, im.Name)
			}
		}
		if m := MechanismOf(&im); m != "" {
			cc.F2.Mechanisms[im.Name] = m
		}
		if a := im.Answer("Q2"); a != nil && a.Answer != "UNKNOWN" {
			cc.F3.Of++
			if a.Answer == "YES" {
				cc.F3.Users = append(cc.F3.Users, im.Name)
			}
		}
	}
	sort.Strings(cc.F1.Implementations)
	sort.Strings(cc.F3.Users)
	cc.F1.Statement = fmt.Sprintf("%d of %d ship a migration reset hook that nothing calls", len(cc.F1.Implementations), withHooks)
	if len(cc.F1.Implementations) > 0 {
		cc.F1.Statement += ": " + strings.Join(cc.F1.Implementations, ", ")
	}
	cc.F2.Of = len(cc.F2.Mechanisms)
	cc.F2.Distinct = DistinctMechanisms(cc.F2.Mechanisms)
	cc.F2.Statement = fmt.Sprintf("%d distinct mechanisms across %d implementations", cc.F2.Distinct, cc.F2.Of)
	if len(cc.F3.Users) == 0 {
		cc.F3.Statement = fmt.Sprintf("none of %d uses the path-validation round trip as the new path's initial RTT", cc.F3.Of)
	} else {
		cc.F3.Statement = fmt.Sprintf("%d of %d use the path-validation round trip as the new path's initial RTT: %s", len(cc.F3.Users), cc.F3.Of, strings.Join(cc.F3.Users, ", "))
	}
	return cc
}

// MechanismOf is the implementation's Q1 and Q3 mechanisms joined.
func MechanismOf(im *Implementation) string {
	var parts []string
	for _, q := range []string{"Q1", "Q3"} {
		if a := im.Answer(q); a != nil && a.Mechanism != "" {
			parts = append(parts, q+": "+a.Mechanism)
		}
	}
	return strings.Join(parts, " | ")
}

// DistinctMechanisms counts distinct mechanism descriptions, ignoring case
// and spacing.
func DistinctMechanisms(m map[string]string) int {
	seen := map[string]bool{}
	for _, v := range m {
		seen[strings.Join(strings.Fields(strings.ToLower(v)), " ")] = true
	}
	return len(seen)
}

// Finalise recomputes everything derived: answers' reconciliation, live
// answers, cross-cutting findings and the disagreement list.
func Finalise(s *Survey) {
	s.Disagreements = []Disagreement{}
	for i := range s.Implementations {
		im := &s.Implementations[i]
		q1, q2, q3, detail := LiveAnswers(im.Live)
		vantage := ""
		if im.Live != nil && len(im.Live.Repetitions) > 0 {
			vantage = im.Live.Repetitions[0].Vantage
		}
		live := map[string]string{"Q1": q1, "Q2": q2, "Q3": q3}
		// Q2 live comes from the pv-distinct repetitions when there are
		// any: only there do the validation and data round trips differ.
		var d2 string
		if pv := im.Scenario(PVDistinct); pv != nil {
			live["Q2"], d2 = LiveQ2(pv)
		}
		for _, q := range Questions {
			a := im.Answer(q)
			if a == nil {
				im.Answers = append(im.Answers, Answer{Question: q, Evidence: []Evidence{}})
				a = &im.Answers[len(im.Answers)-1]
			}
			a.LiveAnswer = live[q]
			d := detail
			if q == "Q2" && d2 != "" {
				d = d2
			}
			if d != "" && a.LiveAnswer == "UNKNOWN" {
				a.Detail = strings.TrimSpace(a.Detail + " Live: " + d + ".")
			}
			if d := Reconcile(im.Name, a, vantage); d != nil {
				s.Disagreements = append(s.Disagreements, *d)
			}
		}
		sort.Slice(im.Answers, func(x, y int) bool { return im.Answers[x].Question < im.Answers[y].Question })
		// The live answers against the audit of the code that ran.
		if la := im.LiveAudit; la != nil {
			for i := range la.Answers {
				a := &la.Answers[i]
				a.LiveAnswer = live[a.Question]
				if d := Reconcile(im.Name, a, vantage); d != nil {
					d.Detail = fmt.Sprintf("source at the live commit %s says %s, the live runs of that code (%s vantage) say %s", la.Commit[:12], d.Source, orUnknown(vantage), d.Live)
					s.Disagreements = append(s.Disagreements, *d)
				}
			}
		}
	}
	s.CrossCutting = ComputeCrossCutting(s.Implementations)
}

// OnceEach keeps each statement once: several rules (one per role, one
// combining them) often state the same mechanism, and a combined
// statement quotes the per-role ones whole. A statement equal to an
// earlier one, or contained whole in another, is dropped; the order of
// the rest is kept.
func OnceEach(units []string) []string {
	norm := make([]string, len(units))
	for i, u := range units {
		norm[i] = strings.Join(strings.Fields(u), " ")
	}
	var out []string
	for i, u := range norm {
		if u == "" {
			continue
		}
		drop := false
		for j, w := range norm {
			if j == i || w == "" {
				continue
			}
			// an equal earlier statement, or a longer one containing it
			if (w == u && j < i) || (len(w) > len(u) && strings.Contains(w, u)) {
				drop = true
				break
			}
		}
		if !drop {
			out = append(out, u)
		}
	}
	return out
}

// RepeatedSentences returns the clauses and sentences of s (at least 20
// characters, compared without case or spacing) that occur more than once.
func RepeatedSentences(s string) []string {
	seen := map[string]int{}
	var out []string
	for _, part := range sentenceSplit.Split(s, -1) {
		c := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(part), "."))
		k := strings.Join(strings.Fields(strings.ToLower(c)), " ")
		if len(k) < 20 {
			continue
		}
		seen[k]++
		if seen[k] == 2 {
			out = append(out, c)
		}
	}
	return out
}

var sentenceSplit = regexp.MustCompile(`; |\. `)
