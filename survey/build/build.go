// Package build assembles data/survey_results.json from the source audits
// (package audit), the live analyses of this project's runs (analysis.json
// beside manifest.json in each repetition directory) and, when given, the
// study's reference traces analysed afresh. It lives apart from package
// survey so that the validator, which reads the survey model, never links
// the audit or the discriminator.
package build

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/query"
	"github.com/migaudit/migaudit/data"
	"github.com/migaudit/migaudit/data/mirrors"
	"github.com/migaudit/migaudit/discriminator"
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
	live, notes, err := liveFor(o, pin, im.Constants, reps, w)
	if err != nil {
		return im, err
	}
	im.Live = live
	im.Notes = append(im.Notes, notes...)
	fc, notes, err := fixCheck(o, pin, w)
	if err != nil {
		return im, err
	}
	im.FixCheck = fc
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

// runRep is one repetition directory of this project's own runs.
type runRep struct {
	Dir      string // relative to the repo root
	Manifest map[string]any
	Analysis *discriminator.Analysis
	Trace    string // relative to the repo root
}

// collectRuns finds rep<N> directories with manifest.json and analysis.json
// under each results directory (default: data/evidence/*).
func collectRuns(o Options) (map[string][]runRep, map[string][]string, error) {
	dirs := o.Results
	if len(dirs) == 0 {
		ev := filepath.Join(o.RepoRoot, "data", "evidence")
		ents, _ := os.ReadDir(ev)
		for _, e := range ents {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join(ev, e.Name()))
			}
		}
	}
	out := map[string][]runRep{}
	notes := map[string][]string{}
	for _, d := range dirs {
		reps, _ := filepath.Glob(filepath.Join(d, "rep*"))
		if st, err := os.Stat(filepath.Join(d, "manifest.json")); err == nil && !st.IsDir() {
			reps = append(reps, d)
		}
		sort.Strings(reps)
		for _, rd := range reps {
			mb, err := os.ReadFile(filepath.Join(rd, "manifest.json"))
			if err != nil {
				continue
			}
			var man map[string]any
			if err := json.Unmarshal(mb, &man); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", filepath.Join(rd, "manifest.json"), err)
			}
			ab, err := os.ReadFile(filepath.Join(rd, "analysis.json"))
			if err != nil {
				return nil, nil, fmt.Errorf("%s: repetition without analysis.json (run migaudit analyze on it): %w", rd, err)
			}
			var an discriminator.Analysis
			if err := json.Unmarshal(ab, &an); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", filepath.Join(rd, "analysis.json"), err)
			}
			impl := an.Implementation
			if s, ok := man["implementation"].(string); ok && s != "" {
				impl = s
			}
			pin, err := data.Lookup(impl)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", rd, err)
			}
			if sc, _ := man["scenario"].(string); sc != "" && sc != "standard" {
				continue // the survey answers the study's standard migration; other scenarios are reported by migaudit run
			}
			tr, err := findTrace(o.RepoRoot, rd, an.Trace, man)
			if err != nil {
				// A repetition whose trace was not kept cannot be re-derived:
				// it is reported, not counted.
				notes[pin.Name] = append(notes[pin.Name], fmt.Sprintf("%s: analysis and manifest kept but not the trace; not counted as a repetition", relTo(o.RepoRoot, rd)))
				continue
			}
			out[pin.Name] = append(out[pin.Name], runRep{Dir: relTo(o.RepoRoot, rd), Manifest: man, Analysis: &an, Trace: relTo(o.RepoRoot, tr)})
		}
	}
	return out, notes, nil
}

// findTrace locates a repetition's server trace: the manifest's
// result.server_trace inside the repetition directory, the analysis' trace
// path, or a file of that name under the directory (evidence copied from
// results/ keeps its layout but not its absolute prefix).
func findTrace(root, rd, analysisTrace string, man map[string]any) (string, error) {
	var cands []string
	if res, ok := man["result"].(map[string]any); ok {
		if st, ok := res["server_trace"].(string); ok && st != "" {
			cands = append(cands, filepath.Join(rd, st))
		}
	}
	if analysisTrace != "" {
		cands = append(cands, filepath.Join(root, analysisTrace), analysisTrace, filepath.Join(rd, filepath.Base(analysisTrace)))
		base := filepath.Base(analysisTrace)
		_ = filepath.Walk(rd, func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() && info.Name() == base {
				cands = append(cands, p)
			}
			return nil
		})
	}
	absRD, _ := filepath.Abs(rd)
	for _, c := range cands {
		// Only a trace kept with the repetition counts: one elsewhere
		// (results/, not committed) would not be there on a fresh clone.
		ac, _ := filepath.Abs(c)
		if !strings.HasPrefix(ac, absRD+string(filepath.Separator)) {
			continue
		}
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c, nil
		}
	}
	return "", fmt.Errorf("%s: server trace not found (analysis.json names %q)", rd, analysisTrace)
}

func relTo(root, p string) string {
	if root == "" {
		root = "."
	}
	ar, err1 := filepath.Abs(root)
	ap, err2 := filepath.Abs(p)
	if err1 != nil || err2 != nil {
		return p
	}
	if r, err := filepath.Rel(ar, ap); err == nil {
		return r
	}
	return p
}

func fileSHA(p string) (string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// liveFor builds the live part: this project's runs when there are any,
// else the study's reference trace (referenceLive).
func liveFor(o Options, pin data.Implementation, cons []survey.Constant, reps []runRep, w io.Writer) (*survey.Live, []string, error) {
	var notes []string
	if len(reps) > 0 {
		l := &survey.Live{Origin: survey.OwnRuns, Repetitions: []survey.Repetition{}}
		for i, r := range reps {
			tr := r.Trace
			sha, err := fileSHA(filepath.Join(o.RepoRoot, tr))
			if err != nil {
				return nil, nil, fmt.Errorf("%s: trace: %w", r.Dir, err)
			}
			rep := fromAnalysis(r.Analysis, fmt.Sprintf("rep%d", i+1), tr, sha)
			if base := filepath.Base(r.Dir); strings.HasPrefix(base, "rep") {
				rep.ID = base
			}
			rep.Manifest = filepath.Join(r.Dir, "manifest.json")
			rep.Analysis = filepath.Join(r.Dir, "analysis.json")
			for _, c := range []string{"calibration.json", "calibration.record.json"} {
				if _, err := os.Stat(filepath.Join(o.RepoRoot, r.Dir, c)); err == nil {
					rep.Calibration = filepath.Join(r.Dir, c)
				}
			}
			enrichFromManifest(&rep, r.Manifest, filepath.Join(o.RepoRoot, r.Dir))
			settleQ1(&rep)
			l.Repetitions = append(l.Repetitions, rep)
		}
		finishLive(l)
		rec, err := runRecordOf(o.RepoRoot, reps)
		if err != nil {
			return nil, nil, err
		}
		l.RunRecord = rec
		logf(w, "%-9s live: %d own repetitions", pin.Name, len(l.Repetitions))
		// The study's reference repetition stays beside the own runs as a
		// second source when the study is available.
		ref, _, err := referenceLive(o, pin, w)
		if err != nil {
			return nil, nil, err
		}
		if ref != nil {
			l.Reference = ref
			notes = append(notes, "the study's reference repetition "+ref.Repetitions[0].Trace+" is kept beside the own runs as a second source")
		}
		return l, notes, nil
	}
	l, refNotes, err := referenceLive(o, pin, w)
	_ = cons
	return l, append(notes, refNotes...), err
}

// logMove finds the endpoints' own record of the peer's address change:
// JSON lines {"ev":"peer_address"|"switched","from":...,"to":...} in the
// repetition's stderr/stdout files (the server's first: it observes).
func logMove(dir string) (from, to, src string, ok bool) {
	for _, name := range []string{"server.stderr", "server.stdout", "client.stderr", "client.stdout"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			i := strings.Index(line, "{")
			if i < 0 {
				continue
			}
			var ev struct{ Ev, From, To string }
			if json.Unmarshal([]byte(line[i:]), &ev) != nil {
				continue
			}
			if (ev.Ev == "peer_address" || ev.Ev == "switched") && ev.From != "" && ev.To != "" {
				return ev.From, ev.To, name, true
			}
		}
	}
	return "", "", "", false
}

func hostOf(a string) string {
	if h, _, err := net.SplitHostPort(a); err == nil {
		return h
	}
	return a
}

// num reads a number at a path of keys in a decoded manifest.
func num(m map[string]any, keys ...string) (float64, bool) {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return 0, false
		}
		cur = mm[k]
	}
	f, ok := cur.(float64)
	return f, ok
}

// enrichFromManifest adds what the run recorded beside the trace: the
// version, the configured new-path RTT, whether the emulator was
// calibrated, and — where the trace logs no addresses — the per-path packet
// counters and the client's own "Local address is now" line, which tell an
// IP migration (traffic on both paths, each with its own address) from a
// port-only rebinding.
func enrichFromManifest(rep *survey.Repetition, man map[string]any, dir string) {
	if v, ok := man["version"].(string); ok {
		rep.Version = v
	}
	if b, ok := num(man, "paths", "B", "rtt_us"); ok {
		rep.NewPathRTTUS = int64(b)
	}
	if cal, ok := man["calibration"].(map[string]any); ok {
		if c, _ := cal["calibrated"].(bool); !c {
			rep.Warnings = append(rep.Warnings, "run on an uncalibrated emulator (--skip-calibration)")
		}
	}
	if rep.Migration.Kind != "path-change" {
		return
	}
	if from, to, src, ok := logMove(dir); ok {
		rep.Migration.OldAddr, rep.Migration.NewAddr = from, to
		if hostOf(from) != hostOf(to) {
			rep.Migration.Kind = "ip"
		} else {
			rep.Migration.Kind = "port-only"
		}
		rep.Migration.Evidence += fmt.Sprintf("; %s logs the peer moving %s → %s", src, from, to)
		return
	}
	// The testbed's counters run across repetitions: this repetition's
	// traffic is after − before.
	a, okA := num(man, "counters_after", "A", "to_server_packets")
	b, okB := num(man, "counters_after", "B", "to_server_packets")
	if !okA || !okB {
		return
	}
	a0, _ := num(man, "counters_before", "A", "to_server_packets")
	b0, _ := num(man, "counters_before", "B", "to_server_packets")
	a, b = a-a0, b-b0
	if a > 0 && b > 0 {
		rep.Migration.Kind = "ip"
		rep.Migration.Evidence += fmt.Sprintf("; per-path packet counters in the manifest: %d packets to the server on path A, %d on path B (each path has its own client address)", int64(a), int64(b))
		if res, ok := man["result"].(map[string]any); ok {
			if moves, ok := res["client_moves"].([]any); ok && len(moves) > 0 {
				if mv, ok := moves[len(moves)-1].(map[string]any); ok {
					if to, ok := mv["to"].(string); ok {
						rep.Migration.NewAddr = strings.Trim(strings.Replace(to, "]:", ":", 1), "[")
					}
				}
			}
		}
	} else if b == 0 {
		rep.Migration.Kind = "port-only"
		rep.Migration.Evidence += fmt.Sprintf("; per-path packet counters in the manifest: no packets on path B (%d on A): the client never left path A's address", int64(a))
	}
}

func fromAnalysis(a *discriminator.Analysis, id, trace, sha string) survey.Repetition {
	r := survey.Repetition{ID: id, Trace: trace, TraceSHA256: sha, Format: a.Format, Vantage: a.Vantage,
		Migration: survey.Migration{Kind: string(a.Migration.Kind), AtUS: a.Migration.AtUS, Evidence: a.Migration.Evidence,
			OldAddr: a.Migration.OldAddr, NewAddr: a.Migration.NewAddr, PathValidationRTTUS: a.Migration.PathValidationRTTUS},
		ScopeFromUS: a.ScopeFromUS, ScopeToUS: a.ScopeToUS, WindowBeforeBytes: a.WindowBeforeBytes, WindowAfterBytes: a.WindowAfterBytes,
		ResetObserved: a.ResetObserved, Events: []survey.Event{},
		RTT: survey.RTT{FirstAfterUS: a.RTT.FirstAfterUS, Attribution: a.RTT.Attribution, OldPathUS: a.RTT.OldPathUS, NewPathUS: a.RTT.NewPathUS,
			DefaultUS: a.RTT.DefaultUS, ConvergedAfterUS: a.RTT.ConvergedAfterUS, Detail: a.RTT.Detail},
		Q1: a.Q1.Answer, Q3: a.Q3.Answer, Warnings: a.Warnings}
	if r.Migration.Kind == "" {
		r.Migration.Kind = "none"
	}
	for _, e := range a.Events {
		r.Events = append(r.Events, survey.Event{Kind: string(e.Kind), AtUS: e.AtUS, ValueBytes: e.ValueBytes, PreviousBytes: e.PreviousBytes, Explanation: e.Explanation})
	}
	for _, c := range a.Constants {
		name := c.Name
		r.Constants = append(r.Constants, survey.LiveCons{Name: name, Value: c.Value, Arithmetic: c.Arithmetic})
	}
	if r.RTT.NewPathUS > 0 {
		r.NewPathRTTUS = r.RTT.NewPathUS
	}
	_ = math.Abs
	return r
}

// settleQ1 applies the rule on undecided repetitions
// (docs/validator-decisions.md) once the run's record has verified the IP
// change the trace could not show: a repetition that did not reset is then
// NO, not undecided. Only a repetition whose IP change stays unproven
// (a possible port-only rebinding, exempt) is left undecided.
func settleQ1(rep *survey.Repetition) {
	if rep.Q1 == "UNKNOWN" && !rep.ResetObserved && rep.Migration.Kind == "ip" {
		rep.Q1 = "NO"
	}
}

func finishLive(l *survey.Live) {
	l.Retained = len(l.Repetitions)
	resets := 0
	for _, r := range l.Repetitions {
		if r.Migration.Kind == "ip" {
			l.IPChanges++
			if r.ResetObserved {
				resets++
			}
		}
	}
	l.Summary = fmt.Sprintf("%d repetitions, %d verified IP migrations, reset observed in %d/%d", l.Retained, l.IPChanges, resets, l.IPChanges)
}
