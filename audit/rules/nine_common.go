package rules

// Shared helpers of the rules for the nine implementations of issue 9
// (quinn, neqo, s2n-quic, tquic, lsquic, xquic, mvfst, aioquic, quicly).
// Everything here is prefixed n9 so it cannot collide with the helpers of the
// study's five.
//
// Each of the nine registers four rules:
//
//	<impl>/q1         Q1 findings: Role "migrating", Role "observing", Role
//	                  "both" (the combined answer for the compliance table) and
//	                  one finding per reset / migration hook with Role "" and
//	                  Counts {"implementations", "call_sites"} (a hook with
//	                  call_sites 0 is dead: Answer INERT).
//	<impl>/q2         Q2, Role "both" (plus per-role findings when they differ).
//	<impl>/q3         Q3 per role and "both", plus one auxiliary finding per
//	                  aspect (Role "", Rule <impl>/q3-<aspect> with aspect one of
//	                  rtt, growth, loss, inflight).
//	<impl>/constants  initial window(s), minimum window, loss factor, default RTT.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/syntax"
	"github.com/migaudit/migaudit/data"
)

// Roles of a finding.
const (
	n9Migrating = "migrating"
	n9Observing = "observing"
	n9Both      = "both"
)

// n9 is the view one rule has of an implementation's source.
type n9 struct {
	p   *audit.Pass
	set audit.Set
	// missing collects anchors (functions, constants) absent at the commit.
	missing []string
}

// n9Open parses the files matching patterns (test files dropped).
func n9Open(p *audit.Pass, patterns ...string) (*n9, error) {
	fs, err := p.Files(patterns...)
	if err != nil {
		return nil, err
	}
	var set audit.Set
	for _, f := range fs {
		if n9IsTest(f.Path) {
			continue
		}
		set = append(set, f)
	}
	return &n9{p: p, set: set}, nil
}

func n9IsTest(path string) bool {
	l := strings.ToLower(path)
	return strings.Contains(l, "/test/") || strings.Contains(l, "/tests/") || strings.HasPrefix(l, "test/") ||
		strings.HasPrefix(l, "tests/") || strings.HasSuffix(l, "/tests.rs") || strings.HasSuffix(l, "_test.go") ||
		strings.Contains(l, "/testing/") || strings.HasSuffix(l, "test.cpp") || strings.HasSuffix(l, "test.py")
}

// absent reports the graceful-degradation findings when anchors are missing.
func (x *n9) absent(q audit.Question) []audit.Finding {
	f := x.p.Absent(strings.Join(x.missing, ", "))
	f.Question = q
	f.Role = n9Both
	return []audit.Finding{f}
}

// file returns the parsed file at path from the set (nil if not parsed).
func (x *n9) file(path string) *syntax.File { return x.set.File(path) }

// fn finds the function with a body named name (owner "" = any owner). A
// missing function is recorded in x.missing.
func (x *n9) fn(name, owner string) (syntax.Def, *syntax.File, bool) {
	for _, f := range x.set {
		if d, ok := f.Func(name, owner); ok {
			return d, f, true
		}
	}
	what := name
	if owner != "" {
		what = owner + "::" + name
	}
	x.missing = append(x.missing, "function "+what)
	return syntax.Def{}, nil, false
}

// fnIn finds the function in one file only.
func (x *n9) fnIn(path, name, owner string) (syntax.Def, *syntax.File, bool) {
	if f := x.file(path); f != nil {
		if d, ok := f.Func(name, owner); ok {
			return d, f, true
		}
	}
	if f := x.file(path); f != nil && (f.Lang == syntax.C || f.Lang == syntax.Cpp) {
		if d, ok := n9CFuncByText(f, name); ok {
			return d, f, true
		}
	}
	x.missing = append(x.missing, fmt.Sprintf("function %s in %s", name, path))
	return syntax.Def{}, nil, false
}

// n9CFuncByText is the fallback for a C function the grammar could not
// delimit (tree-sitter error recovery around preprocessor conditionals inside
// a body): the definition line is "name (" at column 0 after its return type
// line, the body ends at the first "}" at column 0. Calls and assignments
// inside it are still indexed, so the range-based queries work on it.
func n9CFuncByText(f *syntax.File, name string) (syntax.Def, bool) {
	n := strings.Count(string(f.Src), "\n") + 1
	for l := 1; l <= n; l++ {
		line := f.Line(l)
		if !strings.HasPrefix(line, name+" (") && !strings.HasPrefix(line, name+"(") {
			continue
		}
		for e := l + 1; e <= n; e++ {
			if f.Line(e) == "}" {
				return syntax.Def{Pos: syntax.Pos{Path: f.Path, Line: l, EndLine: e}, Name: name, Kind: syntax.DefFunction}, true
			}
		}
	}
	return syntax.Def{}, false
}

// def finds a constant / macro / static definition named name.
func (x *n9) def(name string) (syntax.Def, bool) {
	for _, f := range x.set {
		for _, d := range f.Defs(name) {
			if (d.Kind == syntax.DefMacro || d.Kind == syntax.DefConst || d.Kind == syntax.DefVar) && d.Value != "" {
				return d, true
			}
		}
	}
	// Python module constants are plain module-level assignments.
	for _, f := range x.set {
		if f.Lang != syntax.Python {
			continue
		}
		for _, a := range f.Assigns("") {
			if a.Func == "" && a.Target == name && a.Op == "=" && a.RHS != "" {
				return syntax.Def{Pos: a.Pos, Name: name, Kind: syntax.DefConst, Value: a.RHS}, true
			}
		}
	}
	return syntax.Def{}, false
}

// calls returns the real call sites of name across the set.
func (x *n9) calls(name string) []syntax.Call { return x.set.Calls(name) }

// callsIn returns the calls to name made inside function def.
func (x *n9) callsIn(def syntax.Def, name string) []syntax.Call {
	f := x.file(def.Path)
	if f == nil {
		return nil
	}
	var out []syntax.Call
	for _, c := range f.Calls(name) {
		if c.Line >= def.Line && c.Line <= def.EndLine {
			out = append(out, c)
		}
	}
	return out
}

// allCallsIn returns every call made inside function def.
func (x *n9) allCallsIn(def syntax.Def) []syntax.Call {
	f := x.file(def.Path)
	if f == nil {
		return nil
	}
	var out []syntax.Call
	for _, c := range f.AllCalls() {
		if c.Line >= def.Line && c.Line <= def.EndLine {
			out = append(out, c)
		}
	}
	return out
}

// callIn returns the first call to name inside def whose text contains every sub.
func (x *n9) callIn(def syntax.Def, name string, subs ...string) (syntax.Call, bool) {
	for _, c := range x.callsIn(def, name) {
		if n9ContainsAll(c.Text, subs...) {
			return c, true
		}
	}
	return syntax.Call{}, false
}

// assignsIn returns the assignments inside function def.
func (x *n9) assignsIn(def syntax.Def) []syntax.Assign {
	f := x.file(def.Path)
	if f == nil {
		return nil
	}
	var out []syntax.Assign
	for _, a := range f.Assigns("") {
		if a.Line >= def.Line && a.Line <= def.EndLine {
			out = append(out, a)
		}
	}
	return out
}

// assignIn returns the first assignment in def to target whose RHS contains every sub.
func (x *n9) assignIn(def syntax.Def, target string, subs ...string) (syntax.Assign, bool) {
	for _, a := range x.assignsIn(def) {
		if a.Target == target && n9ContainsAll(a.RHS, subs...) {
			return a, true
		}
	}
	return syntax.Assign{}, false
}

// n9Cond is one branch condition (if / while / match arm / ternary) in a function.
type n9Cond struct {
	syntax.Pos
	Kind string
	Text string
}

var n9CondKinds = map[string]bool{
	"if_statement": true, "if_expression": true, "elif_clause": true, "while_statement": true,
	"while_expression": true, "conditional_expression": true, "do_statement": true,
}

// conds returns the branch conditions inside def, read from the syntax tree
// (so early-return guards, which guard nothing syntactically, are found too).
func (x *n9) conds(def syntax.Def) []n9Cond {
	f := x.file(def.Path)
	if f == nil || f.Tree == nil {
		return nil
	}
	var out []n9Cond
	f.Tree.Walk(func(n *syntax.Node) bool {
		if n.EndLine < def.Line || n.Line > def.EndLine {
			return false
		}
		if n9CondKinds[n.Kind] {
			if c := n.Child("condition"); c != nil {
				out = append(out, n9Cond{Pos: syntax.Pos{Path: f.Path, Line: n.Line}, Kind: n.Kind, Text: n9OneLine(f.Text(c))})
			}
		}
		if n.Kind == "match_arm" {
			if pat := n.Child("pattern"); pat != nil {
				out = append(out, n9Cond{Pos: syntax.Pos{Path: f.Path, Line: n.Line}, Kind: "match_arm", Text: n9OneLine(f.Text(pat))})
			}
		}
		if n.Kind == "case_statement" {
			if v := n.Child("value"); v != nil {
				out = append(out, n9Cond{Pos: syntax.Pos{Path: f.Path, Line: n.Line}, Kind: "case", Text: n9OneLine(f.Text(v))})
			}
		}
		return true
	})
	return out
}

// cond returns the first condition in def containing every sub.
func (x *n9) cond(def syntax.Def, subs ...string) (n9Cond, bool) {
	for _, c := range x.conds(def) {
		if n9ContainsAll(c.Text, subs...) {
			return c, true
		}
	}
	return n9Cond{}, false
}

// node returns the smallest syntax node of kind kind starting at line in def's file.
func (x *n9) nodesIn(def syntax.Def, kind string) []*syntax.Node {
	f := x.file(def.Path)
	if f == nil || f.Tree == nil {
		return nil
	}
	var out []*syntax.Node
	f.Tree.Walk(func(n *syntax.Node) bool {
		if n.EndLine < def.Line || n.Line > def.EndLine {
			return false
		}
		if n.Kind == kind {
			out = append(out, n)
		}
		return true
	})
	return out
}

// armsWith returns the match arms (Rust) inside def whose pattern starts
// with sub (an or-pattern listing it among others does not count), with the
// line range they cover.
func (x *n9) armsWith(def syntax.Def, sub string) []syntax.Pos {
	f := x.file(def.Path)
	var out []syntax.Pos
	for _, n := range x.nodesIn(def, "match_arm") {
		if pat := n.Child("pattern"); pat != nil && strings.HasPrefix(strings.TrimSpace(f.Text(pat)), sub) {
			out = append(out, syntax.Pos{Path: f.Path, Line: n.Line, EndLine: n.EndLine})
		}
	}
	return out
}

// commentsIn returns comments inside [from, to] of file path containing every sub.
func (x *n9) commentsIn(path string, from, to int, subs ...string) []syntax.Mention {
	f := x.file(path)
	if f == nil {
		return nil
	}
	var out []syntax.Mention
	for _, m := range f.Comments("") {
		if m.Line >= from && m.Line <= to && n9ContainsAll(m.Context, subs...) {
			out = append(out, m)
		}
	}
	return out
}

// stringsIn returns string literals inside def containing sub.
func (x *n9) stringsIn(def syntax.Def, sub string) []syntax.Pos {
	f := x.file(def.Path)
	var out []syntax.Pos
	for _, kind := range []string{"string_literal", "string"} {
		for _, n := range x.nodesIn(def, kind) {
			if strings.Contains(f.Text(n), sub) {
				out = append(out, syntax.Pos{Path: f.Path, Line: n.Line})
			}
		}
	}
	return out
}

// lineWith returns the first line of path at or after from containing every sub.
func (x *n9) lineWith(path string, from int, subs ...string) (syntax.Pos, bool) {
	b, err := x.p.Src.ReadFile(path)
	if err != nil {
		return syntax.Pos{}, false
	}
	for i, l := range strings.Split(string(b), "\n") {
		if i+1 >= from && n9ContainsAll(l, subs...) {
			return syntax.Pos{Path: path, Line: i + 1}, true
		}
	}
	return syntax.Pos{}, false
}

// fieldInit returns the struct-literal field initialiser (Rust `field: value`,
// C designated `.field = value`, Python class attribute) named field inside def.
func (x *n9) fieldInit(def syntax.Def, field string) (syntax.Assign, bool) {
	for _, a := range x.assignsIn(def) {
		if strings.TrimPrefix(a.Target, ".") == field && (a.Op == "field" || a.Op == "init" || a.Op == "=") {
			return a, true
		}
	}
	return syntax.Assign{}, false
}

// ev builds evidence.
func (x *n9) ev(pos syntax.Pos, kind, note string) audit.Evidence {
	return x.p.Evidence(pos, kind, note)
}

// evCalls builds call evidence for each call.
func (x *n9) evCalls(cs []syntax.Call, kind, note string) []audit.Evidence {
	var out []audit.Evidence
	for _, c := range cs {
		n := note
		if n == "" {
			n = "in " + c.Func
		}
		out = append(out, x.ev(c.Pos, kind, n))
	}
	return out
}

// n9Verdict is one role's answer being assembled.
type n9Verdict struct {
	Answer    audit.Answer
	Mechanism string
	Detail    []string
	Evidence  []audit.Evidence
	Counts    map[string]int
}

func (v *n9Verdict) add(e ...audit.Evidence) { v.Evidence = append(v.Evidence, e...) }
func (v *n9Verdict) note(format string, a ...any) {
	v.Detail = append(v.Detail, fmt.Sprintf(format, a...))
}
func (v *n9Verdict) count(k string, n int) {
	if v.Counts == nil {
		v.Counts = map[string]int{}
	}
	v.Counts[k] = n
}

// finding turns a verdict into a finding.
func (x *n9) finding(q audit.Question, role string, v n9Verdict) audit.Finding {
	f := x.p.Finding(v.Answer, v.Mechanism)
	f.Question, f.Role = q, role
	f.Detail = strings.Join(v.Detail, " ")
	for k, n := range v.Counts {
		f.Counts[k] = n
	}
	f.Evidence = n9Dedupe(append(f.Evidence, v.Evidence...))
	return f
}

// n9Compliant says whether an answer fully satisfies the question.
func n9Compliant(a audit.Answer) bool { return a == audit.Yes }

// n9Combine is the one-column answer for the compliance table from the two
// role answers.
func n9Combine(mig, obs audit.Answer) audit.Answer {
	switch {
	case mig == obs:
		return mig
	case mig == audit.NotSupported || mig == audit.NA:
		return obs
	case obs == audit.NotSupported || obs == audit.NA:
		return mig
	case n9Compliant(mig) != n9Compliant(obs):
		return audit.Asymmetric
	}
	return audit.RoleDependent
}

// combined builds the Role "both" finding from the two role findings.
func (x *n9) combined(q audit.Question, mig, obs audit.Finding) audit.Finding {
	a := n9Combine(mig.Answer, obs.Answer)
	f := x.p.Finding(a, "")
	f.Question, f.Role = q, n9Both
	if mig.Answer == obs.Answer && mig.Mechanism == obs.Mechanism {
		f.Mechanism = mig.Mechanism
	} else {
		f.Mechanism = fmt.Sprintf("migrating endpoint: %s (%s); observing endpoint: %s (%s)", mig.Answer, mig.Mechanism, obs.Answer, obs.Mechanism)
	}
	f.Detail = fmt.Sprintf("combined from the per-role findings: migrating %s, observing %s", mig.Answer, obs.Answer)
	f.Counts = map[string]int{}
	seen := map[string]bool{}
	for _, e := range append(append([]audit.Evidence{}, mig.Evidence...), obs.Evidence...) {
		k := fmt.Sprintf("%s:%d:%s", e.Path, e.Line, e.Kind)
		if !seen[k] {
			seen[k] = true
			f.Evidence = append(f.Evidence, e)
		}
	}
	return f
}

// hook builds the finding for one reset / migration hook (Role ""): its
// definitions and every production call site; with no call site it is dead
// (Answer INERT), otherwise it has no Answer and Counts["call_sites"] > 0.
func (x *n9) hook(name, what string, defs []syntax.Def, calls []syntax.Call) audit.Finding {
	// A reachable hook carries no verdict of its own (Answer ""): whether it
	// makes the implementation compliant is the role findings' business, and a
	// "YES" here would contradict, say, a reset that is reachable only on Retry.
	f := x.p.Finding("", "")
	f.Question = audit.Q1
	f.Counts["implementations"] = len(defs)
	f.Counts["call_sites"] = len(calls)
	for _, d := range defs {
		f.Evidence = append(f.Evidence, x.ev(d.Pos, "handler", fmt.Sprintf("%s (empty=%v)", d.Name, d.Empty)))
	}
	f.Evidence = append(f.Evidence, x.evCalls(calls, "call", "")...)
	if len(calls) == 0 {
		f.Answer = audit.Inert
		f.Mechanism = fmt.Sprintf("dead hook: %s — %s, %s, no call site", name, what, n9Plural(len(defs), "definition"))
	} else {
		var in []string
		for _, c := range calls {
			in = append(in, fmt.Sprintf("%s:%d in %s", c.Path, c.Line, c.Func))
		}
		f.Mechanism = fmt.Sprintf("reachable hook: %s — %s, %s: %s", name, what, n9Plural(len(calls), "call site"), strings.Join(in, "; "))
	}
	return f
}

// aspect is one of the four Q3 aspects.
type n9Aspect struct {
	Name   string // rtt, growth, loss, inflight
	Answer audit.Answer
	Why    string
	Ev     []audit.Evidence
}

// q3 builds the role finding from the four aspects: YES when all four are
// excluded, NO when none is, SPLIT otherwise.
func (x *n9) q3(role string, mechanism string, as []n9Aspect) (audit.Finding, []audit.Finding) {
	yes := 0
	rttYes := false
	var parts []string
	var ev []audit.Evidence
	var aux []audit.Finding
	for _, a := range as {
		if a.Answer == audit.Yes {
			yes++
			if a.Name == "rtt" {
				rttYes = true
			}
		}
		parts = append(parts, fmt.Sprintf("%s=%s (%s)", a.Name, a.Answer, a.Why))
		ev = append(ev, a.Ev...)
		af := x.p.Finding(a.Answer, a.Name+": "+a.Why)
		af.Question = audit.Q3
		af.Rule = x.p.Rule.Name + "-" + a.Name
		af.Detail = "aspect " + a.Name + " at the " + role + " endpoint"
		if role == n9Both {
			af.Detail = "aspect " + a.Name + " (both roles)"
		}
		af.Evidence = append(af.Evidence, a.Ev...)
		aux = append(aux, af)
	}
	v := n9Verdict{Mechanism: mechanism, Evidence: ev}
	v.count("aspects_excluded", yes)
	v.count("aspects", len(as))
	switch {
	case yes == len(as):
		v.Answer = audit.Yes
	case yes == 0:
		v.Answer = audit.No
	default:
		v.Answer = audit.Split
		if rttYes {
			v.note("RTT excluded, congestion input not fully excluded.")
		} else {
			v.note("Congestion input excluded (at least in part), RTT not.")
		}
	}
	v.note("Aspects: %s.", strings.Join(parts, "; "))
	return x.finding(audit.Q3, role, v), aux
}

// ---- constants: source expressions to data.Formula expressions ----

// n9Param is a runtime setting kept as a named parameter of a formula.
type n9Param struct {
	Name    string
	Default float64
}

// n9Resolver maps an identifier of a source expression to a parameter or a
// constant; unknown identifiers are looked up as constants / macros in the set.
type n9Resolver struct {
	x      *n9
	params map[string]n9Param // source identifier -> formula parameter
	used   map[string]float64
	defs   []syntax.Def // constant definitions expanded, for evidence
	depth  int
}

func (x *n9) resolver(params map[string]n9Param) *n9Resolver {
	return &n9Resolver{x: x, params: params, used: map[string]float64{}}
}

func (r *n9Resolver) resolve(name string) (string, error) {
	if p, ok := r.params[name]; ok {
		r.used[p.Name] = p.Default
		return p.Name, nil
	}
	d, ok := r.x.def(name)
	if !ok {
		return "", fmt.Errorf("identifier %s is neither a known setting nor a constant in the audited files", name)
	}
	if r.depth > 10 {
		return "", fmt.Errorf("constant %s nests too deeply", name)
	}
	r.depth++
	defer func() { r.depth-- }()
	r.defs = append(r.defs, d)
	v := d.Value
	if i := strings.Index(v, "/*"); i >= 0 {
		v = v[:i]
	}
	if i := strings.Index(v, "//"); i >= 0 {
		v = v[:i]
	}
	return n9Translate(v, r.resolve)
}

// formula translates a source expression and returns a constant finding.
func (r *n9Resolver) constant(q audit.Question, src string, at syntax.Pos, label, mechanism string, alternative bool) (audit.Finding, error) {
	expr, err := n9Translate(src, r.resolve)
	if err != nil {
		return audit.Finding{}, fmt.Errorf("%s: %s: %w", at, src, err)
	}
	var params map[string]float64
	if len(r.used) > 0 {
		params = map[string]float64{}
		for k, v := range r.used {
			params[k] = v
		}
	}
	var extra []audit.Evidence
	seen := map[string]bool{}
	for _, d := range r.defs {
		k := fmt.Sprintf("%s:%d", d.Path, d.Line)
		if !seen[k] {
			seen[k] = true
			extra = append(extra, r.x.ev(d.Pos, "definition", d.Name))
		}
	}
	f, err := r.x.p.Constant(q, expr, params, label, mechanism, at, extra...)
	if err != nil {
		return audit.Finding{}, err
	}
	f.Constant.Alternative = alternative
	f.Detail = "source expression: " + n9OneLine(src)
	return f, nil
}

// n9Eval evaluates a source expression with the resolver (for parameter defaults).
func (r *n9Resolver) eval(src string) (float64, error) {
	expr, err := n9Translate(src, r.resolve)
	if err != nil {
		return 0, err
	}
	params := map[string]float64{}
	for k, v := range r.used {
		params[k] = v
	}
	v, _, err := data.Formula{Expr: expr, Params: params}.Eval(nil)
	return v, err
}

// n9Translate turns a C, C++, Rust or Python constant expression into a
// data.Formula expression (Go syntax: numbers, parameters, + - * /, min, max).
// Casts, integer suffixes and digit separators are dropped; min/max in their
// various spellings (const_min, std::min, cmp::max, xqc_max, .clamp, .max,
// .min), saturating arithmetic and Duration::from_millis/micros/secs (to µs)
// are translated; every other identifier goes through resolve.
func n9Translate(src string, resolve func(string) (string, error)) (string, error) {
	toks, err := n9Lex(src)
	if err != nil {
		return "", err
	}
	p := &n9Parser{toks: toks, resolve: resolve}
	out, err := p.ternary()
	if err != nil {
		return "", err
	}
	if p.i < len(p.toks) {
		return "", fmt.Errorf("unexpected %q in %q", p.toks[p.i].text, src)
	}
	return out, nil
}

type n9Tok struct {
	kind byte // 'n' number, 'i' identifier, 'o' operator/punctuation
	text string
}

func n9Lex(s string) ([]n9Tok, error) {
	var out []n9Tok
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\\':
			i++
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == '_' || s[j] == 'x' || s[j] == 'X' ||
				s[j] >= 'a' && s[j] <= 'f' || s[j] >= 'A' && s[j] <= 'F' || s[j] == 'u' || s[j] == 'U' || s[j] == 'l' || s[j] == 'L' ||
				s[j] == 'i' || s[j] == 's' || s[j] == 'z' || s[j] == 'm') {
				// stop at a '.' followed by a letter (method call on a literal: 14720.clamp)
				if s[j] == '.' && j+1 < len(s) && (s[j+1] < '0' || s[j+1] > '9') {
					break
				}
				j++
			}
			lit, err := n9Number(s[i:j])
			if err != nil {
				return nil, err
			}
			out = append(out, n9Tok{'n', lit})
			i = j
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			out = append(out, n9Tok{'i', s[i:j]})
			i = j
		case strings.HasPrefix(s[i:], "::") || strings.HasPrefix(s[i:], "->"):
			out = append(out, n9Tok{'o', s[i : i+2]})
			i += 2
		case strings.ContainsRune("+-*/(),.&<>[]?:", rune(c)):
			out = append(out, n9Tok{'o', string(c)})
			i++
		default:
			return nil, fmt.Errorf("unexpected character %q in %q", c, s)
		}
	}
	return out, nil
}

// n9Number normalises a numeric literal: 14_720 -> 14720, 10_u64 -> 10,
// 0.7f -> 0.7, 250000ull -> 250000, 0x10 -> 16.
func n9Number(lit string) (string, error) {
	l := strings.ReplaceAll(lit, "_", "")
	if strings.HasPrefix(l, "0x") || strings.HasPrefix(l, "0X") {
		hex := strings.TrimRight(l[2:], "uUlL")
		v, err := strconv.ParseUint(hex, 16, 64)
		if err != nil {
			return "", fmt.Errorf("bad literal %q", lit)
		}
		return strconv.FormatUint(v, 10), nil
	}
	// C++ chrono literals: 50000us, 333ms, 60s (to µs)
	for suf, mul := range map[string]string{"us": "", "ms": "*1000"} {
		if strings.HasSuffix(l, suf) {
			if _, err := strconv.ParseFloat(strings.TrimSuffix(l, suf), 64); err == nil {
				return "(" + strings.TrimSuffix(l, suf) + mul + ")", nil
			}
		}
	}
	if strings.HasSuffix(l, "s") {
		if _, err := strconv.ParseFloat(strings.TrimSuffix(l, "s"), 64); err == nil {
			return "(" + strings.TrimSuffix(l, "s") + "*1000000)", nil
		}
	}
	for _, suf := range []string{"usize", "isize", "u128", "i128", "u64", "i64", "u32", "i32", "u16", "i16", "u8", "i8", "f64", "f32"} {
		l = strings.TrimSuffix(l, suf)
	}
	l = strings.TrimRight(l, "uUlLfF")
	if _, err := strconv.ParseFloat(l, 64); err != nil {
		return "", fmt.Errorf("bad literal %q", lit)
	}
	return l, nil
}

type n9Parser struct {
	toks    []n9Tok
	i       int
	resolve func(string) (string, error)
}

func (p *n9Parser) peek(t string) bool { return p.i < len(p.toks) && p.toks[p.i].text == t }
func (p *n9Parser) eat(t string) bool {
	if p.peek(t) {
		p.i++
		return true
	}
	return false
}

// ternary handles `a < b ? a : b` (min) and `a > b ? a : b` (max), the
// constexpr spelling of min/max in C and C++ headers.
func (p *n9Parser) ternary() (string, error) {
	a, err := p.expr()
	if err != nil || !(p.peek("<") || p.peek(">")) {
		return a, err
	}
	op := p.toks[p.i].text
	p.i++
	b, err := p.expr()
	if err != nil {
		return "", err
	}
	if !p.eat("?") {
		return "", fmt.Errorf("comparison outside a conditional expression")
	}
	x, err := p.expr()
	if err != nil {
		return "", err
	}
	if !p.eat(":") {
		return "", fmt.Errorf("missing : in conditional expression")
	}
	y, err := p.expr()
	if err != nil {
		return "", err
	}
	switch {
	case x == a && y == b && op == "<", x == b && y == a && op == ">":
		return fmt.Sprintf("min(%s, %s)", a, b), nil
	case x == a && y == b && op == ">", x == b && y == a && op == "<":
		return fmt.Sprintf("max(%s, %s)", a, b), nil
	}
	return "", fmt.Errorf("conditional expression is not a min or max")
}

func (p *n9Parser) expr() (string, error) {
	l, err := p.term()
	if err != nil {
		return "", err
	}
	for p.peek("+") || p.peek("-") {
		op := p.toks[p.i].text
		p.i++
		r, err := p.term()
		if err != nil {
			return "", err
		}
		l = l + op + r
	}
	return l, nil
}

func (p *n9Parser) term() (string, error) {
	l, err := p.unary()
	if err != nil {
		return "", err
	}
	for p.peek("*") || p.peek("/") {
		op := p.toks[p.i].text
		p.i++
		r, err := p.unary()
		if err != nil {
			return "", err
		}
		l = n9Wrap(l, op) + op + n9Wrap(r, op)
	}
	return l, nil
}

// n9Wrap parenthesises a sum used as a factor.
func n9Wrap(s, op string) string {
	depth := 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case '+', '-':
			if depth == 0 && i > 0 {
				return "(" + s + ")"
			}
		}
	}
	return s
}

var n9Types = map[string]bool{
	"int": true, "unsigned": true, "long": true, "float": true, "double": true, "size_t": true, "const": true,
	"uint8_t": true, "uint16_t": true, "uint32_t": true, "uint64_t": true, "int32_t": true, "int64_t": true,
	"u8": true, "u16": true, "u32": true, "u64": true, "usize": true, "i32": true, "i64": true, "f32": true, "f64": true,
	"cubic_float_t": true, "xqc_usec_t": true,
}

func (p *n9Parser) unary() (string, error) {
	switch {
	case p.eat("-"):
		x, err := p.unary()
		return "-" + n9Wrap(x, "*"), err
	case p.eat("&"), p.eat("*"):
		return p.unary()
	}
	// C cast: "(" type... ")" unary
	if p.peek("(") {
		j := p.i + 1
		for j < len(p.toks) && p.toks[j].kind == 'i' && n9Types[p.toks[j].text] {
			j++
		}
		if j > p.i+1 && j < len(p.toks) && p.toks[j].text == ")" {
			p.i = j + 1
			return p.unary()
		}
	}
	return p.postfix()
}

func (p *n9Parser) args() ([]string, error) {
	var out []string
	if p.eat(")") {
		return nil, nil
	}
	for {
		a, err := p.expr()
		if err != nil {
			return nil, err
		}
		out = append(out, a)
		if p.eat(")") {
			return out, nil
		}
		if !p.eat(",") {
			return nil, fmt.Errorf("expected , or ) in call")
		}
		if p.eat(")") { // trailing comma
			return out, nil
		}
	}
}

func (p *n9Parser) postfix() (string, error) {
	x, isName, name, err := p.primary()
	if err != nil {
		return "", err
	}
	for {
		switch {
		case p.peek(".") || p.peek("->"):
			p.i++
			if p.i >= len(p.toks) || p.toks[p.i].kind != 'i' {
				return "", fmt.Errorf("expected member name")
			}
			m := p.toks[p.i].text
			p.i++
			if p.eat("(") {
				as, err := p.args()
				if err != nil {
					return "", err
				}
				if len(as) == 0 && m != "into" && m != "unwrap" && m != "get" && m != "as_u64" && m != "as_usize" {
					// getter: self.max_datagram_size() resolves by its name
					name, isName, x = m, true, ""
					continue
				}
				recv := x
				if isName {
					recv, err = p.resolve(name)
					if err != nil {
						return "", err
					}
				}
				isName = false
				switch m {
				case "clamp":
					if len(as) != 2 {
						return "", fmt.Errorf("clamp takes two arguments")
					}
					x = fmt.Sprintf("min(max(%s, %s), %s)", recv, as[0], as[1])
				case "max", "min":
					if len(as) != 1 {
						return "", fmt.Errorf("%s takes one argument", m)
					}
					x = fmt.Sprintf("%s(%s, %s)", m, recv, as[0])
				case "saturating_mul", "wrapping_mul", "checked_mul":
					x = n9Wrap(recv, "*") + "*" + n9Wrap(as[0], "*")
				case "saturating_add", "wrapping_add":
					x = recv + "+" + as[0]
				case "saturating_sub", "wrapping_sub":
					x = recv + "-" + n9Wrap(as[0], "*")
				case "into", "unwrap", "get", "as_u64", "as_usize":
					x = recv
				default:
					return "", fmt.Errorf("method %s with arguments cannot be evaluated", m)
				}
			} else {
				// field access: resolve by the last identifier
				name, isName, x = m, true, ""
			}
		case p.peek("as"):
			p.i++
			if p.i < len(p.toks) && p.toks[p.i].kind == 'i' {
				p.i++
			}
		default:
			if isName {
				return p.resolve(name)
			}
			return x, nil
		}
	}
}

// primary returns either an expression or a bare name still to resolve.
func (p *n9Parser) primary() (expr string, isName bool, name string, err error) {
	if p.i >= len(p.toks) {
		return "", false, "", fmt.Errorf("unexpected end of expression")
	}
	t := p.toks[p.i]
	switch {
	case t.kind == 'n':
		p.i++
		return t.text, false, "", nil
	case t.text == "(":
		p.i++
		x, err := p.ternary()
		if err != nil {
			return "", false, "", err
		}
		if !p.eat(")") {
			return "", false, "", fmt.Errorf("missing )")
		}
		return "(" + x + ")", false, "", nil
	case t.kind == 'i':
		p.i++
		path := []string{t.text}
		for p.peek("::") {
			p.i++
			if p.i < len(p.toks) && p.toks[p.i].kind == 'i' {
				path = append(path, p.toks[p.i].text)
				p.i++
			}
			if p.peek("<") { // turbofish / generic args: skip to matching >
				for p.i < len(p.toks) && !p.eat(">") {
					p.i++
				}
			}
		}
		last := path[len(path)-1]
		if p.eat("(") {
			as, err := p.args()
			if err != nil {
				return "", false, "", err
			}
			switch last {
			case "min", "max", "const_min", "const_max", "xqc_min", "xqc_max", "MIN", "MAX", "timeMin", "timeMax":
				fn := "min"
				if strings.Contains(strings.ToLower(last), "max") {
					fn = "max"
				}
				return fmt.Sprintf("%s(%s)", fn, strings.Join(as, ", ")), false, "", nil
			case "from_millis":
				return n9Wrap(as[0], "*") + "*1000", false, "", nil
			case "from_micros":
				return as[0], false, "", nil
			case "from_secs":
				return n9Wrap(as[0], "*") + "*1000000", false, "", nil
			case "from", "u64", "u32", "usize", "f64", "float", "int":
				if len(as) == 1 {
					return as[0], false, "", nil
				}
			}
			return "", false, "", fmt.Errorf("call of %s cannot be evaluated", strings.Join(path, "::"))
		}
		if len(path) > 1 && (path[0] == "std" || path[0] == "u64" || path[0] == "u32" || path[0] == "usize") && (last == "MAX") {
			return "", false, "", fmt.Errorf("%s is unbounded", strings.Join(path, "::"))
		}
		return "", true, last, nil
	}
	return "", false, "", fmt.Errorf("unexpected %q", t.text)
}

// ---- small utilities ----

func n9ContainsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func n9OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func n9Plural(n int, s string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, s)
	}
	return fmt.Sprintf("%d %ss", n, s)
}

// n9Body returns a function's body without the outer braces, trimmed.
func n9Body(d syntax.Def) string {
	b := strings.TrimSpace(d.Body)
	b = strings.TrimPrefix(b, "{")
	b = strings.TrimSuffix(b, "}")
	return strings.TrimSpace(b)
}

// n9TailExpr returns the tail expression of a Rust body (the text after the
// last ';', or the whole body), or the operand of a C/Python return.
func n9TailExpr(d syntax.Def) string {
	b := n9Body(d)
	if i := strings.LastIndex(b, "return "); i >= 0 {
		b = b[i+len("return "):]
		b = strings.TrimSuffix(strings.TrimSpace(b), ";")
		return strings.TrimSpace(b)
	}
	if i := strings.LastIndex(b, ";"); i >= 0 {
		b = b[i+1:]
	}
	return strings.TrimSpace(b)
}

// n9Funcs lists function names of calls, sorted and unique.
func n9Funcs(cs []syntax.Call) []string {
	m := map[string]bool{}
	for _, c := range cs {
		m[c.Func] = true
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// n9Names lists the callee names of calls, unique, in order.
func n9Names(cs []syntax.Call) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range cs {
		if !seen[c.Name] {
			seen[c.Name] = true
			out = append(out, c.Name)
		}
	}
	return out
}

// n9Touches reports which of the names appear in any call or assignment target
// inside def (used to show that a handler does or does not touch RTT / CC state).
func (x *n9) touches(def syntax.Def, names ...string) []string {
	var hit []string
	seen := map[string]bool{}
	check := func(s string) {
		for _, n := range names {
			if !seen[n] && n9HasIdent(s, n) {
				seen[n] = true
				hit = append(hit, n)
			}
		}
	}
	for _, c := range x.allCallsIn(def) {
		check(c.Callee)
	}
	for _, a := range x.assignsIn(def) {
		check(a.LHS)
	}
	return hit
}

// n9HasIdent reports whether s contains name as a whole identifier.
func n9HasIdent(s, name string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], name)
		if j < 0 {
			return false
		}
		j += i
		before := j == 0 || !n9IdentByte(s[j-1])
		after := j+len(name) >= len(s) || !n9IdentByte(s[j+len(name)])
		if before && after {
			return true
		}
		i = j + 1
	}
}

func n9IdentByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// n9Rule builds a rule value.
func n9Rule(name, doc string, q audit.Question, run func(*audit.Pass) ([]audit.Finding, error)) *audit.Rule {
	return &audit.Rule{Name: name, Doc: doc, Question: q, Run: run}
}

// optFn returns the function or a zero Def without recording it as missing.
func (x *n9) optFn(path, name, owner string) syntax.Def {
	if f := x.file(path); f != nil {
		if d, ok := f.Func(name, owner); ok {
			return d
		}
	}
	return syntax.Def{}
}

// n9Filter keeps the calls for which keep is true.
func n9Filter(cs []syntax.Call, keep func(syntax.Call) bool) []syntax.Call {
	var out []syntax.Call
	for _, c := range cs {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

// n9GuardText joins a statement's guards, innermost first.
func n9GuardText(gs []syntax.Guard) string {
	var parts []string
	for _, g := range gs {
		parts = append(parts, g.Kind+" "+g.Cond)
	}
	return strings.Join(parts, " < ")
}

// fnFree finds a free function (no owner type) named name in path.
func (x *n9) fnFree(path, name string) (syntax.Def, bool) {
	if f := x.file(path); f != nil {
		for _, d := range f.Funcs() {
			if d.Name == name && d.Owner == "" {
				return d, true
			}
		}
	}
	x.missing = append(x.missing, fmt.Sprintf("free function %s in %s", name, path))
	return syntax.Def{}, false
}

// exprPos returns the position of the first line inside def containing the
// first line of expr (so evidence opens on the expression, not the signature).
func (x *n9) exprPos(def syntax.Def, expr string) syntax.Pos {
	first := strings.TrimSpace(strings.SplitN(strings.TrimSpace(expr), "\n", 2)[0])
	if len(first) > 40 {
		first = first[:40]
	}
	if f := x.file(def.Path); f != nil && first != "" {
		for l := def.Line; l <= def.EndLine; l++ {
			if strings.Contains(f.Line(l), first) {
				return syntax.Pos{Path: def.Path, Line: l}
			}
		}
	}
	return def.Pos
}

// n9Dedupe drops repeated evidence (same path, line and kind).
func n9Dedupe(evs []audit.Evidence) []audit.Evidence {
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

// n9OpenCpp is n9Open with .h files parsed as C++.
func n9OpenCpp(p *audit.Pass, patterns ...string) (*n9, error) {
	paths, err := p.Src.Files(patterns...)
	if err != nil {
		return nil, err
	}
	var set audit.Set
	for _, path := range paths {
		lang := syntax.LangOf(path)
		if lang == "" || n9IsTest(path) {
			continue
		}
		if lang == syntax.C {
			lang = syntax.Cpp
		}
		f, err := p.FileAs(path, lang)
		if err != nil {
			return nil, err
		}
		set = append(set, f)
	}
	return &n9{p: p, set: set}, nil
}

// braceDefault reads a C++ member default `name{value}` from path.
func (x *n9) braceDefault(path, name string) (string, syntax.Pos, bool) {
	pos, ok := x.lineWith(path, 1, " "+name+"{")
	if !ok {
		x.missing = append(x.missing, "member default "+name+" in "+path)
		return "", pos, false
	}
	b, _ := x.p.Src.ReadFile(path)
	line := strings.Split(string(b), "\n")[pos.Line-1]
	i := strings.Index(line, name+"{") + len(name) + 1
	j := strings.LastIndex(line, "}")
	if j < i {
		return "", pos, false
	}
	return line[i:j], pos, true
}
