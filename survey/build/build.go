// Package build assembles data/survey_results.json from the source audits
// (package audit), the live analyses of this project's runs (analysis.json
// beside manifest.json in each repetition directory) and, when given, the
// study's reference traces analysed afresh. It lives apart from package
// survey so that the validator, which reads the survey model, never links
// the audit or the discriminator.
package build

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/query"
	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/data/mirrors"
	"github.com/migaudit/migaudit/survey"
	"github.com/migaudit/migaudit/survey/studysrc"
)

// Options for `migaudit survey`.
type Options struct {
	Out      string   // data/survey_results.json
	RepoRoot string   // where data/evidence lives
	Mirrors  string   // directory of <owner>+<name>/repo mirrors
	Evidence string   // overrides the study's repository with a directory of its files (traces/…)
	Results  []string // run or evidence directories holding rep<N>/
	Only     []string // implementations to survey ("" = all pinned)
	// Now, when set, stamps generated_at; by default it is the newest
	// input's date (see inputsTime), so the same inputs give the same file.
	Now func() time.Time
	// StudySource is a clone or bare mirror of the study's repository;
	// Study, when set, is the opened study (reproduce opens it first).
	StudySource string
	Study       *studysrc.Source
	// Done, when set, is called after each implementation (progress).
	Done func(name string)
	// AllowPartial writes a survey that has less than the file it replaces
	// (an implementation without its source, a lost live part); by default
	// such a rebuild fails and leaves the file as it was.
	AllowPartial bool
	// Audit runs the source audit; nil means audit.Audit.
	Audit func(ctx context.Context, im data.Implementation, source string) ([]audit.Finding, error)
	// AuditAt runs the source audit at a commit other than the pin (the
	// live code's); nil means audit.Audit.
	AuditAt func(ctx context.Context, im data.Implementation, source, rev string) ([]audit.Finding, error)
}

// hooks names the migration reset hook whose reachability the survey
// reports and the validator recounts: which symbol to look at is a choice
// of question, the counts come from the audit's evidence.
var hooks = map[string]struct{ Symbol, Form string }{
	"picoquic": {"picoquic_congestion_notification_reset", "notification"},
	"quic-go":  {"MigratedPath", "function"},
	"quiche":   {"on_connection_migration", "function"},
	"msquic":   {"QuicCongestionControlReset", "function"},
	"ngtcp2":   {"conn_reset_congestion_state", "function"},
}

// Run builds the survey and writes it (schema-checked, atomically).
func Run(ctx context.Context, o Options, w io.Writer) (*survey.Survey, error) {
	if o.Audit == nil {
		o.Audit = func(ctx context.Context, im data.Implementation, source string) ([]audit.Finding, error) {
			r, err := audit.Audit(ctx, im, source, "")
			if r != nil {
				return r.Findings, err
			}
			return nil, err
		}
	}
	if o.AuditAt == nil {
		o.AuditAt = func(ctx context.Context, im data.Implementation, source, rev string) ([]audit.Finding, error) {
			r, err := audit.Audit(ctx, im, source, rev)
			if r != nil {
				return r.Findings, err
			}
			return nil, err
		}
	}
	impls, err := data.Implementations()
	if err != nil {
		return nil, err
	}
	if _, err := study(&o); err != nil {
		return nil, err
	}
	if err := sourcesPresent(o, impls); err != nil {
		return nil, err
	}
	runs, runNotes, err := collectRuns(o)
	if err != nil {
		return nil, err
	}
	// Inputs: nothing machine-specific (the mirrors' location is not an
	// input, the commits are), so a rebuild elsewhere is byte-identical.
	s := &survey.Survey{SchemaVersion: 1, GeneratedBy: "migaudit survey",
		Inputs: survey.Inputs{Evidence: o.Evidence, Results: o.Results}}
	if ok, _ := studyAvailable(o); ok {
		s.Inputs.Study = &survey.SourcePin{Upstream: o.Study.Pin.Upstream, Commit: o.Study.Pin.Commit}
	}
	if s.Inputs.EvidenceSHA256, err = evidenceSums(o); err != nil {
		return nil, err
	}
	switch t, ok := inputsTime(o, impls, runs); {
	case o.Now != nil:
		s.GeneratedAt = o.Now().UTC().Format(time.RFC3339)
	case ok:
		s.GeneratedAt = t.Format(time.RFC3339)
	default:
		s.GeneratedAt = time.Now().UTC().Format(time.RFC3339)
	}
	sort.SliceStable(impls, func(i, j int) bool { return studyRank(impls[i].Name) < studyRank(impls[j].Name) })
	for _, pin := range impls {
		if len(o.Only) > 0 && !contains(o.Only, pin.Name) {
			continue
		}
		entry, err := buildImpl(ctx, o, pin, runs[pin.Name], w)
		if err != nil {
			return nil, err
		}
		entry.Notes = append(entry.Notes, runNotes[pin.Name]...)
		s.Implementations = append(s.Implementations, entry)
		if o.Done != nil {
			o.Done(pin.Name)
		}
	}
	survey.Finalise(s)
	if o.Out != "" {
		if err := notLessThan(o, s); err != nil {
			return nil, err
		}
		if err := survey.Write(o.Out, s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// studyOrder is the study's table order; the other implementations follow
// alphabetically.
var studyOrder = []string{"picoquic", "quic-go", "quiche", "msquic", "ngtcp2"}

func studyRank(name string) int {
	for i, n := range studyOrder {
		if n == name {
			return i
		}
	}
	return len(studyOrder)
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func logf(w io.Writer, format string, a ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", a...)
	}
}

// mirrorFor finds the mirror of upstream under the mirror directories
// handed down in list ("" when none is found).
func mirrorFor(list, upstream string) string {
	d, err := mirrors.Find(list, upstream)
	if err != nil {
		return ""
	}
	return d
}

func buildImpl(ctx context.Context, o Options, pin data.Implementation, reps []runRep, w io.Writer) (survey.Implementation, error) {
	im := survey.Implementation{Name: pin.Name, Language: pin.Language, Upstream: pin.Upstream, Commit: pin.Commit,
		LiveVersion: pin.LiveVersion, Answers: []survey.Answer{}, Constants: []survey.Constant{}}
	var findings []audit.Finding
	if src := mirrorFor(o.Mirrors, pin.Upstream); src == "" {
		im.Notes = append(im.Notes, "source not audited: no mirror of "+pin.Upstream+" (pass --mirrors or set MIGAUDIT_MIRRORS)")
		logf(w, "%-9s source: no mirror", pin.Name)
	} else {
		fs, err := o.Audit(ctx, pin, src)
		if err != nil {
			im.Notes = append(im.Notes, "source audit failed: "+oneLine(err.Error()))
			logf(w, "%-9s source: %v", pin.Name, oneLine(err.Error()))
		}
		if len(fs) > 0 {
			findings = fs
			im.SourceAudited = true
			logf(w, "%-9s source: %d findings at %s", pin.Name, len(fs), pin.Commit[:8])
		}
	}
	im.Answers = answersFrom(findings)
	im.Reachability = reachabilityFrom(pin.Name, findings)
	im.Constants = constantsFrom(pin, findings, im.SourceAudited)
	var std, other []runRep
	for _, r := range reps {
		if r.Scenario == "" {
			std = append(std, r)
		} else {
			other = append(other, r)
		}
	}
	live, notes, err := liveFor(o, pin, im.Constants, std, w)
	if err != nil {
		return im, err
	}
	im.Live = live
	if im.LiveScenarios, err = scenariosFor(o, pin, other, w); err != nil {
		return im, err
	}
	im.Notes = append(im.Notes, notes...)
	if live != nil && live.Origin == survey.OwnRuns {
		lc, notes, err := liveCodeOf(o, pin, reps)
		if err != nil {
			return im, err
		}
		im.LiveCode = lc
		im.Notes = append(im.Notes, notes...)
		la, notes := liveAuditOf(ctx, o, pin, lc, im.Answers)
		im.LiveAudit = la
		im.Notes = append(im.Notes, notes...)
	}
	fc, notes, err := fixCheck(o, pin, w)
	if err != nil {
		return im, err
	}
	im.FixCheck = fc
	im.Notes = append(im.Notes, notes...)
	lf, notes, err := liveFindingsFor(o, pin, w)
	if err != nil {
		return im, err
	}
	im.LiveFindings = lf
	im.Notes = append(im.Notes, notes...)
	return im, nil
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ") }

func evidence(e audit.Evidence) survey.Evidence {
	return survey.Evidence{Path: e.Path, Line: e.Line, Excerpt: e.Excerpt, Permalink: e.Permalink, Kind: e.Kind, Note: e.Note}
}

// answersFrom turns findings into one source answer per question: the
// role-less ("both") verdicts must agree (a NO from any rule outweighs
// nothing: conflicting verdicts become UNKNOWN with both reasons); per-role
// verdicts are combined by query.Combine, the audit's own rule, unless a
// rule already chose a richer category.
func answersFrom(fs []audit.Finding) []survey.Answer {
	var out []survey.Answer
	for _, q := range survey.Questions {
		a := survey.Answer{Question: q, Evidence: []survey.Evidence{}}
		var overall []audit.Finding
		roles := map[string]string{}
		var mech, detail []string
		for _, f := range fs {
			if string(f.Question) != q {
				continue
			}
			for _, e := range f.Evidence {
				a.Evidence = append(a.Evidence, evidence(e))
			}
			if f.Mechanism != "" {
				mech = append(mech, f.Mechanism)
			}
			if f.Detail != "" {
				detail = append(detail, f.Detail)
			}
			if f.Answer == "" {
				continue
			}
			switch f.Role {
			case "migrating", "observing", "client", "server":
				roles[f.Role] = string(f.Answer)
			default:
				overall = append(overall, f)
			}
		}
		a.SourceAnswer = combine(overall)
		if len(roles) > 0 {
			for _, r := range sortedKeys(roles) {
				a.Roles = append(a.Roles, survey.RoleAnswer{Role: r, Answer: roles[r]})
			}
			if a.SourceAnswer == "" {
				var rs []audit.Answer
				for _, r := range sortedKeys(roles) {
					rs = append(rs, audit.Answer(roles[r]))
				}
				a.SourceAnswer = string(query.Combine(rs...))
			}
		}
		a.Mechanism = strings.Join(survey.OnceEach(mech), "; ")
		a.Detail = strings.Join(survey.OnceEach(detail), " ")
		out = append(out, a)
	}
	return out
}

// combine merges role-less verdicts of several rules on one question. The
// answers the vocabulary ranks as more specific win over plain YES/NO from
// a sub-rule; two different plain verdicts are reported as UNKNOWN.
func combine(fs []audit.Finding) string {
	if len(fs) == 0 {
		return ""
	}
	set := map[string]bool{}
	for _, f := range fs {
		set[string(f.Answer)] = true
	}
	if len(set) > 1 {
		delete(set, string(audit.Unknown))
		delete(set, string(audit.NA))
	}
	// A dead hook (INERT) does not undo compliance or non-compliance that
	// another mechanism establishes.
	if len(set) > 1 && (set["YES"] || set["NO"]) {
		delete(set, string(audit.Inert))
	}
	if len(set) > 1 {
		// Categories a rule only reaches by weighing the whole question win
		// over the plain verdicts of its sub-rules.
		for _, special := range []audit.Answer{audit.Split, audit.Asymmetric, audit.RoleDependent, audit.ResetKeepsRTT, audit.NotSupported} {
			if set[string(special)] {
				return string(special)
			}
		}
		return string(audit.Unknown)
	}
	for k := range set {
		return k
	}
	return string(audit.Unknown)
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// reachabilityFrom collects the hook's call and handler positions from the
// findings' evidence (positions whose excerpt names the hook).
func reachabilityFrom(name string, fs []audit.Finding) *survey.Reachability {
	h, ok := hooks[name]
	if !ok {
		h, ok = hookFinding(fs)
	}
	if !ok || len(fs) == 0 {
		return nil
	}
	r := &survey.Reachability{Symbol: h.Symbol, Form: h.Form, Calls: []survey.Evidence{}, HandlerSites: []survey.Evidence{}}
	seen := map[string]bool{}
	files := map[string]bool{}
	named := false
	for _, f := range fs {
		if f.Question != audit.Q1 {
			continue
		}
		for _, e := range f.Evidence {
			if !strings.Contains(e.Excerpt, h.Symbol) {
				continue
			}
			named = true
			key := fmt.Sprintf("%s:%d", e.Path, e.Line)
			if seen[key] {
				continue
			}
			switch e.Kind {
			case "call", "dispatch":
				seen[key] = true
				r.Calls = append(r.Calls, evidence(e))
			case "handler", "case_label", "implementation", "definition":
				if e.Kind == "definition" && !isBodyDef(e.Excerpt) {
					continue
				}
				seen[key] = true
				files[e.Path] = true
				r.HandlerSites = append(r.HandlerSites, evidence(e))
			}
		}
	}
	if !named {
		return nil
	}
	r.CallSites = len(r.Calls)
	if len(r.HandlerSites) > 0 {
		n := len(r.HandlerSites)
		if h.Form == "notification" {
			n = len(files)
		}
		r.Handlers = &n
	}
	r.Dead = r.CallSites == 0
	return r
}

// hookFinding finds the migration hook of an implementation outside the
// study's five from its audit: the Q1 findings without a role that count a
// hook's call sites and name it in their mechanism ("dead hook: X — …",
// "reachable hook: X — …"). A dead hook is preferred: it is the F1 claim.
func hookFinding(fs []audit.Finding) (struct{ Symbol, Form string }, bool) {
	var best struct{ Symbol, Form string }
	found := false
	for _, f := range fs {
		if f.Question != audit.Q1 || f.Role != "" {
			continue
		}
		if _, ok := f.Counts["call_sites"]; !ok {
			continue
		}
		m := f.Mechanism
		var rest string
		switch {
		case strings.HasPrefix(m, "dead hook: "):
			rest = strings.TrimPrefix(m, "dead hook: ")
		case strings.HasPrefix(m, "reachable hook: "):
			if found {
				continue
			}
			rest = strings.TrimPrefix(m, "reachable hook: ")
		default:
			continue
		}
		sym, _, _ := strings.Cut(rest, " ")
		if i := strings.LastIndex(sym, "::"); i >= 0 {
			sym = sym[i+2:]
		}
		if sym == "" {
			continue
		}
		best = struct{ Symbol, Form string }{sym, "function"}
		found = true
		if strings.HasPrefix(m, "dead hook: ") {
			return best, true
		}
	}
	return best, found
}

// isBodyDef tells a function definition's first line from a prototype or
// an enumerator.
func isBodyDef(excerpt string) bool {
	t := strings.TrimSpace(excerpt)
	return strings.HasPrefix(t, "func ") || strings.Contains(t, "fn ") || strings.HasSuffix(t, "{") || (strings.Contains(t, "(") && !strings.HasSuffix(t, ";") && !strings.HasSuffix(t, ","))
}

// constantsFrom takes the audited constants; without an audit, the
// provisional ones in data/ with their provenance.
func constantsFrom(pin data.Implementation, fs []audit.Finding, audited bool) []survey.Constant {
	out := []survey.Constant{}
	names := map[audit.Question]string{audit.ConstInitialWindow: "initial_window", audit.ConstMinWindow: "min_window", audit.ConstLossFactor: "loss_factor", audit.ConstDefaultRTT: "default_rtt"}
	for _, f := range fs {
		n, ok := names[f.Question]
		if !ok || f.Constant == nil || f.Constant.Alternative {
			continue
		}
		c := survey.Constant{Name: n, Label: f.Constant.Label, Expr: f.Constant.Expr, Params: f.Constant.Params, Value: f.Constant.Value,
			Arithmetic: f.Constant.Arithmetic, Provenance: f.Constant.Provenance}
		if c.Provenance == "" {
			c.Provenance = "audit " + pin.Commit[:12]
		}
		for _, e := range f.Evidence {
			if e.Kind == "constant" || c.Source == nil {
				ev := evidence(e)
				c.Source = &ev
				if e.Kind == "constant" {
					break
				}
			}
		}
		out = append(out, c)
	}
	if len(out) > 0 {
		return out
	}
	cs, _, err := data.ConstantsFor(pin.Name)
	if err != nil {
		return out
	}
	add := func(n string, f *data.Formula) {
		if f == nil {
			return
		}
		v, arith, err := f.Eval(nil)
		if err != nil {
			return
		}
		out = append(out, survey.Constant{Name: n, Label: f.Label, Expr: f.Expr, Params: f.Params, Value: v, Arithmetic: arith, Provenance: f.Provenance})
	}
	for i := range cs.InitialWindows {
		add("initial_window", &cs.InitialWindows[i])
	}
	add("min_window", cs.MinWindow)
	add("loss_factor", cs.LossFactor)
	add("default_rtt", cs.DefaultRTT)
	return out
}
