package query

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit"
)

// Verdict is one role's answer being assembled.
type Verdict struct {
	Answer    audit.Answer
	Mechanism string
	Detail    []string
	Evidence  []audit.Evidence
	Counts    map[string]int
}

// Add appends evidence.
func (v *Verdict) Add(e ...audit.Evidence) { v.Evidence = append(v.Evidence, e...) }

// Note appends a sentence to the detail.
func (v *Verdict) Note(format string, a ...any) {
	v.Detail = append(v.Detail, fmt.Sprintf(format, a...))
}

// Count sets a tally the answer rests on.
func (v *Verdict) Count(k string, n int) {
	if v.Counts == nil {
		v.Counts = map[string]int{}
	}
	v.Counts[k] = n
}

// AnswerIf sets answer a with mechanism when the source shape was recognised
// (ok), else UNKNOWN with otherwise saying what was not recognised.
func (v *Verdict) AnswerIf(ok bool, a audit.Answer, mechanism, otherwise string) {
	if ok {
		v.Answer, v.Mechanism = a, mechanism
	} else {
		v.Answer, v.Mechanism = audit.Unknown, otherwise
	}
}

// RoleFinding turns a verdict into the finding for question q and role.
func (c *Code) RoleFinding(q audit.Question, role string, v Verdict) audit.Finding {
	f := c.Finding(v.Answer, v.Mechanism)
	f.Question, f.Role = q, role
	f.Detail = strings.Join(v.Detail, " ")
	for k, n := range v.Counts {
		f.Counts[k] = n
	}
	f.Evidence = Dedupe(append(f.Evidence, v.Evidence...))
	return f
}

// Combine is the one-column answer for the compliance table from the role
// answers (migrating and observing endpoint, or client and server): a role
// that does not support migration (NOT_SUPPORTED, N/A) says nothing about
// the others; the rest, when they agree, are the answer; when they differ,
// ASYMMETRIC if one role complies (YES), else ROLE_DEPENDENT. With every
// role unsupported the last one is the answer. This is the one rule the
// audit and the survey builder use (the validator keeps its own copy).
func Combine(roles ...audit.Answer) audit.Answer {
	var kept []audit.Answer
	for _, a := range roles {
		if a != audit.NotSupported && a != audit.NA {
			kept = append(kept, a)
		}
	}
	switch {
	case len(kept) == 0 && len(roles) > 0:
		return roles[len(roles)-1]
	case len(kept) == 0:
		return ""
	}
	same, compliant, unknown := true, false, false
	for _, a := range kept {
		same = same && a == kept[0]
		compliant = compliant || a == audit.Yes
		unknown = unknown || a == audit.Unknown
	}
	switch {
	case same:
		return kept[0]
	case unknown:
		// A role the source cannot decide leaves the combination open:
		// YES with UNKNOWN may be YES or ASYMMETRIC, NO with UNKNOWN may be
		// NO or ROLE_DEPENDENT. Never a confident answer built on it.
		return audit.Unknown
	case compliant:
		return audit.Asymmetric
	}
	return audit.RoleDependent
}

// combined is the Role Both finding built from the two role findings.
func (c *Code) combined(q audit.Question, mig, obs audit.Finding) audit.Finding {
	f := c.Finding(Combine(mig.Answer, obs.Answer), "")
	f.Question, f.Role = q, Both
	if mig.Answer == obs.Answer && mig.Mechanism == obs.Mechanism {
		f.Mechanism = mig.Mechanism
	} else {
		f.Mechanism = fmt.Sprintf("migrating endpoint: %s (%s); observing endpoint: %s (%s)", mig.Answer, mig.Mechanism, obs.Answer, obs.Mechanism)
	}
	f.Detail = fmt.Sprintf("combined from the per-role findings: migrating %s, observing %s", mig.Answer, obs.Answer)
	f.Counts = map[string]int{}
	f.Evidence = Dedupe(append(append([]audit.Evidence{}, mig.Evidence...), obs.Evidence...))
	return f
}

// Aspect is one of the four Q3 aspects: rtt, growth, loss, inflight.
type Aspect struct {
	Name   string
	Answer audit.Answer
	Why    string
	Ev     []audit.Evidence
}

// Q3 builds the role finding from the aspects (YES when all are excluded,
// NO when none is, SPLIT otherwise) and one supporting finding per aspect
// (Rule <rule>-<aspect>).
func (c *Code) Q3(role string, mechanism string, as []Aspect) (audit.Finding, []audit.Finding) {
	yes := 0
	rttYes := false
	var parts []string
	var ev []audit.Evidence
	var aux []audit.Finding
	for _, a := range as {
		if a.Answer == audit.Yes {
			yes++
			rttYes = rttYes || a.Name == "rtt"
		}
		parts = append(parts, fmt.Sprintf("%s=%s (%s)", a.Name, a.Answer, a.Why))
		ev = append(ev, a.Ev...)
		af := c.Finding(a.Answer, a.Name+": "+a.Why)
		af.Question = audit.Q3
		af.Rule = c.Rule.Name + "-" + a.Name
		af.Detail = "aspect " + a.Name + " at the " + role + " endpoint"
		if role == Both {
			af.Detail = "aspect " + a.Name + " (both roles)"
		}
		af.Evidence = append(af.Evidence, a.Ev...)
		aux = append(aux, af)
	}
	v := Verdict{Mechanism: mechanism, Evidence: ev}
	v.Count("aspects_excluded", yes)
	v.Count("aspects", len(as))
	switch {
	case yes == len(as):
		v.Answer = audit.Yes
	case yes == 0:
		v.Answer = audit.No
	default:
		v.Answer = audit.Split
		if rttYes {
			v.Note("RTT excluded, congestion input not fully excluded.")
		} else {
			v.Note("Congestion input excluded (at least in part), RTT not.")
		}
	}
	v.Note("Aspects: %s.", strings.Join(parts, "; "))
	return c.RoleFinding(audit.Q3, role, v), aux
}

// Dedupe drops repeated evidence (same path, line and kind).
func Dedupe(evs []audit.Evidence) []audit.Evidence {
	seen := map[string]bool{}
	var out []audit.Evidence
	for _, e := range evs {
		k := fmt.Sprintf("%s:%d:%s", e.Path, e.Line, e.Kind)
		if !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return out
}

// PerRole is the migrating and the observing finding followed by the
// combined one, the order every per-role question reports in.
func (c *Code) PerRole(q audit.Question, mig, obs audit.Finding) []audit.Finding {
	return []audit.Finding{mig, obs, c.combined(q, mig, obs)}
}

// Findings collects a rule's findings; the first error of a constructor
// (Constant, Resolver.Constant) sticks and is the rule's result.
type Findings struct {
	list []audit.Finding
	err  error
}

// Add appends f unless err (or an earlier error) is set. It returns the
// appended finding for amendment, or nil.
func (fs *Findings) Add(f audit.Finding, err error) *audit.Finding {
	if fs.err == nil {
		fs.err = err
	}
	if fs.err != nil {
		return nil
	}
	fs.list = append(fs.list, f)
	return &fs.list[len(fs.list)-1]
}

// Append appends findings that need no check.
func (fs *Findings) Append(f ...audit.Finding) { fs.list = append(fs.list, f...) }

// Result is what the rule returns.
func (fs *Findings) Result() ([]audit.Finding, error) {
	if fs.err != nil {
		return nil, fs.err
	}
	return fs.list, nil
}

// Answer starts the finding of one role: answer given, mechanism to come.
func (c *Code) Answer(role string, a audit.Answer) audit.Finding {
	f := c.Finding(a, "")
	f.Role = role
	return f
}

// Q3PerRole is Q3 where the observing endpoint's answer comes from the
// aspects and the migrating endpoint's from its verdict: both roles, the
// combined answer, then the aspect findings.
func (c *Code) Q3PerRole(obsMechanism string, as []Aspect, mig Verdict) []audit.Finding {
	obs, aux := c.Q3(Observing, obsMechanism, as)
	return append(c.PerRole(audit.Q3, c.RoleFinding(audit.Q3, Migrating, mig), obs), aux...)
}
