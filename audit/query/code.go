package query

import (
	"fmt"
	"sort"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/syntax"
)

// Code is what a decision reads: the parsed files of the rule at the
// audited commit, the resolved anchors, and the Pass's constructors for
// findings and evidence (Finding, Evidence, Constant, Absent, Commit, Impl).
type Code struct {
	*audit.Pass
	Set     audit.Set
	anchors map[Anchor]syntax.Def
	needs   []Anchor
	missing []string
}

// open parses the files matching patterns (test files dropped unless
// keepTests; C parsed as lang when lang is set).
func open(p *audit.Pass, lang syntax.Lang, keepTests bool, patterns ...string) (*Code, error) {
	paths, err := p.Src.Files(patterns...)
	if err != nil {
		return nil, err
	}
	c := &Code{Pass: p, anchors: map[Anchor]syntax.Def{}}
	for _, path := range paths {
		l := syntax.LangOf(path)
		if l == "" || (!keepTests && IsTest(path)) {
			continue
		}
		if l == syntax.C && lang != "" {
			l = lang
		}
		f, err := p.FileAs(path, l)
		if err != nil {
			return nil, err
		}
		c.Set = append(c.Set, f)
	}
	return c, nil
}

// Def is the definition an anchor names. An absent anchor is recorded (the
// rule then reports it absent) and the zero Def returned.
func (c *Code) Def(a Anchor) syntax.Def {
	d, ok := c.Lookup(a)
	if !ok {
		c.Missing(a.String() + c.elsewhere(a))
	}
	return d
}

// owners splits an anchor's owner alternatives ("Loss|LossRecovery": the
// type was renamed); "" is any owner.
func owners(o string) []string { return strings.Split(o, "|") }

// elsewhere says where an absent method's name is defined under another
// owner: the true reason is then a renamed type, not a missing function.
func (c *Code) elsewhere(a Anchor) string {
	if (a.kind != method && a.kind != funcIn) || a.Owner == "" {
		return ""
	}
	var on []string
	seen := map[string]bool{}
	for _, f := range c.Set {
		if a.kind == funcIn && f.Path != a.Path {
			continue
		}
		for _, d := range f.Funcs() {
			o := strings.TrimPrefix(d.Owner, "*")
			if d.Name == a.Name && o != "" && !seen[o] {
				seen[o] = true
				on = append(on, o)
			}
		}
	}
	if len(on) == 0 {
		return ""
	}
	return fmt.Sprintf(" (type %s absent there; %s is defined on %s: a renamed type may hold it)", strings.ReplaceAll(a.Owner, "|", " / "), a.Name, strings.Join(on, ", "))
}

// Find is Def with a flag: false when the anchor is absent (and recorded).
func (c *Code) Find(a Anchor) (syntax.Def, bool) {
	d := c.Def(a)
	return d, d.Line > 0
}

// Missing records something a decision needs that is absent at the commit.
func (c *Code) Missing(what string) { c.missing = append(c.missing, what) }

// absentAs is the graceful-degradation finding naming everything missing.
func (c *Code) absentAs(q audit.Question, role string) audit.Finding {
	f := c.Absent(strings.Join(c.missing, ", "))
	f.Question, f.Role = q, role
	return f
}

// Opt is the anchor's definition or the zero Def, recording nothing.
func (c *Code) Opt(a Anchor) syntax.Def {
	d, _ := c.Lookup(a)
	return d
}

// Lookup resolves an anchor without recording an absence.
func (c *Code) Lookup(a Anchor) (syntax.Def, bool) {
	if d, ok := c.anchors[a]; ok {
		return d, true
	}
	d, ok := c.resolve(a)
	if ok {
		c.anchors[a] = d
	}
	return d, ok
}

func (c *Code) resolve(a Anchor) (syntax.Def, bool) {
	switch a.kind {
	case anyFunc:
		if fs := c.Set.Funcs(a.Name); len(fs) > 0 {
			return fs[0], true
		}
	case method:
		for _, owner := range owners(a.Owner) {
			for _, f := range c.Set {
				if d, ok := f.Func(a.Name, owner); ok {
					return d, true
				}
			}
		}
	case funcIn:
		if f := c.File(a.Path); f != nil {
			for _, owner := range owners(a.Owner) {
				if d, ok := f.Func(a.Name, owner); ok {
					return d, true
				}
			}
			if f.Lang == syntax.C || f.Lang == syntax.Cpp {
				return CFuncByText(f, a.Name)
			}
		}
	case freeFunc:
		if f := c.File(a.Path); f != nil {
			for _, d := range f.Funcs() {
				if d.Name == a.Name && d.Owner == "" {
					return d, true
				}
			}
		}
	case constant:
		return c.Const(a.Name)
	case typ, field, enumerator:
		want := map[anchorKind][]syntax.DefKind{typ: {syntax.DefStruct, syntax.DefEnum, syntax.DefType},
			field: {syntax.DefField}, enumerator: {syntax.DefEnumerator}}[a.kind]
		for _, d := range c.Set.Defs(a.Name) {
			if a.Owner != "" && strings.TrimPrefix(d.Owner, "*") != a.Owner {
				continue
			}
			for _, k := range want {
				if d.Kind == k {
					return d, true
				}
			}
		}
	}
	return syntax.Def{}, false
}

// CFuncByText is the fallback for a C function the grammar could not
// delimit (tree-sitter error recovery around preprocessor conditionals inside
// a body): the definition line is "name (" at column 0 after its return type
// line, the body ends at the first "}" at column 0. Calls and assignments
// inside it are still indexed, so the range-based queries work on it.
func CFuncByText(f *syntax.File, name string) (syntax.Def, bool) {
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

// File is the parsed file at path among the rule's files (nil if not read).
func (c *Code) File(path string) *syntax.File { return c.Set.File(path) }

// FileOf is the parsed file holding pos.
func (c *Code) FileOf(pos syntax.Pos) *syntax.File { return c.Set.File(pos.Path) }

// Const finds a constant / macro / static definition with a value; a Python
// module-level assignment counts.
func (c *Code) Const(name string) (syntax.Def, bool) {
	for _, f := range c.Set {
		for _, d := range f.Defs(name) {
			if (d.Kind == syntax.DefMacro || d.Kind == syntax.DefConst || d.Kind == syntax.DefVar) && d.Value != "" {
				return d, true
			}
		}
	}
	for _, f := range c.Set {
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

// Calls are the real call sites of name across the files.
func (c *Code) Calls(name string) []syntax.Call { return c.Set.Calls(name) }

// Assigns are the assignments in every function named fn ("" = all) across the files.
func (c *Code) Assigns(fn string) []syntax.Assign {
	var out []syntax.Assign
	for _, f := range c.Set {
		out = append(out, f.Assigns(fn)...)
	}
	return out
}

// CallsIn are the calls to name made inside function def.
func (c *Code) CallsIn(def syntax.Def, name string) []syntax.Call {
	f := c.File(def.Path)
	if f == nil {
		return nil
	}
	return Filter(f.Calls(name), func(x syntax.Call) bool { return x.Line >= def.Line && x.Line <= def.EndLine })
}

// AllCallsIn is every call made inside function def.
func (c *Code) AllCallsIn(def syntax.Def) []syntax.Call {
	f := c.File(def.Path)
	if f == nil {
		return nil
	}
	return Filter(f.AllCalls(), func(x syntax.Call) bool { return x.Line >= def.Line && x.Line <= def.EndLine })
}

// CallIn is the first call to name inside def whose text contains every sub.
func (c *Code) CallIn(def syntax.Def, name string, subs ...string) (syntax.Call, bool) {
	for _, x := range c.CallsIn(def, name) {
		if ContainsAll(x.Text, subs...) {
			return x, true
		}
	}
	return syntax.Call{}, false
}

// AssignsIn are the assignments inside function def.
func (c *Code) AssignsIn(def syntax.Def) []syntax.Assign {
	f := c.File(def.Path)
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

// AssignIn is the first assignment in def to target whose RHS contains every sub.
func (c *Code) AssignIn(def syntax.Def, target string, subs ...string) (syntax.Assign, bool) {
	for _, a := range c.AssignsIn(def) {
		if a.Target == target && ContainsAll(a.RHS, subs...) {
			return a, true
		}
	}
	return syntax.Assign{}, false
}

// FieldInit is the struct-literal field initialiser (Rust `field: value`, C
// designated `.field = value`, Python class attribute) named field inside def.
func (c *Code) FieldInit(def syntax.Def, field string) (syntax.Assign, bool) {
	for _, a := range c.AssignsIn(def) {
		if strings.TrimPrefix(a.Target, ".") == field && (a.Op == "field" || a.Op == "init" || a.Op == "=") {
			return a, true
		}
	}
	return syntax.Assign{}, false
}

// Cond is one branch condition (if / while / match arm / ternary / case) in a function.
type Cond struct {
	syntax.Pos
	Kind string
	Text string
}

var condKinds = map[string]bool{
	"if_statement": true, "if_expression": true, "elif_clause": true, "while_statement": true,
	"while_expression": true, "conditional_expression": true, "do_statement": true,
}

// Conds are the branch conditions inside def, read from the syntax tree (so
// early-return guards, which guard nothing syntactically, are found too).
func (c *Code) Conds(def syntax.Def) []Cond {
	f := c.File(def.Path)
	if f == nil || f.Tree == nil {
		return nil
	}
	var out []Cond
	f.Tree.Walk(func(n *syntax.Node) bool {
		if n.EndLine < def.Line || n.Line > def.EndLine {
			return false
		}
		at := syntax.Pos{Path: f.Path, Line: n.Line}
		if condKinds[n.Kind] {
			if x := n.Child("condition"); x != nil {
				out = append(out, Cond{Pos: at, Kind: n.Kind, Text: OneLine(f.Text(x))})
			}
		}
		if n.Kind == "match_arm" {
			if pat := n.Child("pattern"); pat != nil {
				out = append(out, Cond{Pos: at, Kind: "match_arm", Text: OneLine(f.Text(pat))})
			}
		}
		if n.Kind == "case_statement" {
			if v := n.Child("value"); v != nil {
				out = append(out, Cond{Pos: at, Kind: "case", Text: OneLine(f.Text(v))})
			}
		}
		return true
	})
	return out
}

// CondIn is the first condition in def containing every sub.
func (c *Code) CondIn(def syntax.Def, subs ...string) (Cond, bool) {
	for _, x := range c.Conds(def) {
		if ContainsAll(x.Text, subs...) {
			return x, true
		}
	}
	return Cond{}, false
}

// nodesIn are the syntax nodes of kind inside def.
func (c *Code) nodesIn(def syntax.Def, kind string) []*syntax.Node {
	f := c.File(def.Path)
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

// ArmsWith are the match arms (Rust) inside def whose pattern starts with
// sub (an or-pattern listing it among others does not count), with the line
// range they cover.
func (c *Code) ArmsWith(def syntax.Def, sub string) []syntax.Pos {
	f := c.File(def.Path)
	var out []syntax.Pos
	for _, n := range c.nodesIn(def, "match_arm") {
		if pat := n.Child("pattern"); pat != nil && strings.HasPrefix(strings.TrimSpace(f.Text(pat)), sub) {
			out = append(out, syntax.Pos{Path: f.Path, Line: n.Line, EndLine: n.EndLine})
		}
	}
	return out
}

// CommentsIn are the comments inside lines [from, to] of path containing every sub.
func (c *Code) CommentsIn(path string, from, to int, subs ...string) []syntax.Mention {
	f := c.File(path)
	if f == nil {
		return nil
	}
	var out []syntax.Mention
	for _, m := range f.Comments("") {
		if m.Line >= from && m.Line <= to && ContainsAll(m.Context, subs...) {
			out = append(out, m)
		}
	}
	return out
}

// StringsIn are the string literals inside def containing sub.
func (c *Code) StringsIn(def syntax.Def, sub string) []syntax.Pos {
	f := c.File(def.Path)
	var out []syntax.Pos
	for _, kind := range []string{"string_literal", "string"} {
		for _, n := range c.nodesIn(def, kind) {
			if strings.Contains(f.Text(n), sub) {
				out = append(out, syntax.Pos{Path: f.Path, Line: n.Line})
			}
		}
	}
	return out
}

// LineWith is the first line of path at or after from containing every sub.
func (c *Code) LineWith(path string, from int, subs ...string) (syntax.Pos, bool) {
	b, err := c.Src.ReadFile(path)
	if err != nil {
		return syntax.Pos{}, false
	}
	for i, l := range strings.Split(string(b), "\n") {
		if i+1 >= from && ContainsAll(l, subs...) {
			return syntax.Pos{Path: path, Line: i + 1}, true
		}
	}
	return syntax.Pos{}, false
}

// BraceDefault reads a C++ member default `name{value}` from path; absent,
// it is recorded missing.
func (c *Code) BraceDefault(path, name string) (string, syntax.Pos, bool) {
	pos, ok := c.LineWith(path, 1, " "+name+"{")
	if !ok {
		c.Missing("member default " + name + " in " + path)
		return "", pos, false
	}
	b, _ := c.Src.ReadFile(path)
	line := strings.Split(string(b), "\n")[pos.Line-1]
	i := strings.Index(line, name+"{") + len(name) + 1
	j := strings.LastIndex(line, "}")
	if j < i {
		return "", pos, false
	}
	return line[i:j], pos, true
}

// Touches reports which of the names appear as a whole identifier in a
// callee or assignment target inside def (does a handler touch RTT / CC state?).
func (c *Code) Touches(def syntax.Def, names ...string) []string {
	var hit []string
	seen := map[string]bool{}
	check := func(s string) {
		for _, n := range names {
			if !seen[n] && syntax.ContainsWord(s, n) {
				seen[n] = true
				hit = append(hit, n)
			}
		}
	}
	for _, x := range c.AllCallsIn(def) {
		check(x.Callee)
	}
	for _, a := range c.AssignsIn(def) {
		check(a.LHS)
	}
	return hit
}

// ExprPos is the first line inside def containing the first line of expr
// (so evidence opens on the expression, not the signature).
func (c *Code) ExprPos(def syntax.Def, expr string) syntax.Pos {
	first := strings.TrimSpace(strings.SplitN(strings.TrimSpace(expr), "\n", 2)[0])
	if len(first) > 40 {
		first = first[:40]
	}
	if f := c.File(def.Path); f != nil && first != "" {
		for l := def.Line; l <= def.EndLine; l++ {
			if strings.Contains(f.Line(l), first) {
				return syntax.Pos{Path: def.Path, Line: l}
			}
		}
	}
	return def.Pos
}

// CallEvidence is one evidence item per call; note "" says "in <function>".
func (c *Code) CallEvidence(cs []syntax.Call, kind, note string) []audit.Evidence {
	var out []audit.Evidence
	for _, x := range cs {
		n := note
		if n == "" {
			n = "in " + x.Func
		}
		out = append(out, c.Evidence(x.Pos, kind, n))
	}
	return out
}

// Hook is the finding for one reset / migration hook (Role ""): its
// definitions and every production call site. With no call site it is dead
// (Answer INERT); a reachable hook carries no verdict of its own, since
// whether it makes the implementation compliant is the role findings'
// business (a "YES" here would contradict a reset reachable only on Retry).
func (c *Code) Hook(name, what string, defs []syntax.Def, calls []syntax.Call) audit.Finding {
	f := c.Finding("", "")
	f.Question = audit.Q1
	f.Counts["implementations"] = len(defs)
	f.Counts["call_sites"] = len(calls)
	for _, d := range defs {
		f.Evidence = append(f.Evidence, c.Evidence(d.Pos, "handler", fmt.Sprintf("%s (empty=%v)", d.Name, d.Empty)))
	}
	f.Evidence = append(f.Evidence, c.CallEvidence(calls, "call", "")...)
	if len(calls) == 0 {
		f.Answer = audit.Inert
		f.Mechanism = fmt.Sprintf("dead hook: %s — %s, %s, no call site", name, what, Plural(len(defs), "definition"))
		return f
	}
	var in []string
	for _, x := range calls {
		in = append(in, fmt.Sprintf("%s:%d in %s", x.Path, x.Line, x.Func))
	}
	f.Mechanism = fmt.Sprintf("reachable hook: %s — %s, %s: %s", name, what, Plural(len(calls), "call site"), strings.Join(in, "; "))
	return f
}

// Absence ends a decision that met something missing (Find false, Missing):
// the rule reports the absent finding.
func (c *Code) Absence() ([]audit.Finding, error) {
	if len(c.missing) == 0 {
		c.Missing("a definition " + c.Rule.Name + " rests on")
	}
	return nil, nil
}

// AbsentFor is an absent finding for question q alongside other results
// (a constant missing while the others were read); it records nothing.
func (c *Code) AbsentFor(q audit.Question, what string) audit.Finding {
	f := c.Absent(what)
	f.Question, f.Role = q, Both
	return f
}

// ArgFor is the text call passes for fn's parameter named param ("" if none).
func ArgFor(call syntax.Call, fn syntax.Def, param string) string {
	for i, p := range fn.Params {
		if p == param && i < len(call.Args) {
			return call.Args[i].Text
		}
	}
	return ""
}

// IfsNaming are the if-conditions in f that name sub: the guards of its
// calls and assignments and its early exits, one per line, in line order.
func IfsNaming(f *syntax.File, sub string) []syntax.Guard {
	byLine := map[int]syntax.Guard{}
	collect := func(gs []syntax.Guard) {
		for _, g := range gs {
			if g.Kind == "if" && strings.Contains(g.Cond, sub) {
				byLine[g.Line] = g
			}
		}
	}
	for _, x := range f.AllCalls() {
		collect(x.Guards)
	}
	for _, a := range f.Assigns("") {
		collect(a.Guards)
	}
	for _, e := range f.Exits("") {
		if strings.Contains(e.Cond, sub) {
			byLine[e.Line] = syntax.Guard{Pos: e.Pos, Kind: "if", Cond: e.Cond}
		}
	}
	out := make([]syntax.Guard, 0, len(byLine))
	for _, g := range byLine {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// GuardedBy reports whether any guard's condition names sub.
func GuardedBy(gs []syntax.Guard, sub string) bool {
	for _, g := range gs {
		if strings.Contains(g.Cond, sub) {
			return true
		}
	}
	return false
}

// Needed are the definitions of the rule's Needs, in their order.
func (c *Code) Needed() []syntax.Def {
	out := make([]syntax.Def, len(c.needs))
	for i, a := range c.needs {
		out[i] = c.anchors[a]
	}
	return out
}

// Defs are the definitions of anchors, in order (absent ones recorded).
func (c *Code) Defs(as ...Anchor) []syntax.Def {
	out := make([]syntax.Def, len(as))
	for i, a := range as {
		out[i] = c.Def(a)
	}
	return out
}
