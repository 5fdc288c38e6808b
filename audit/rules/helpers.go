package rules

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/syntax"
	"github.com/migaudit/migaudit/data"
)

// files parses the patterns or returns the error a rule should return.
func files(p *audit.Pass, patterns ...string) (audit.Set, error) {
	fs, err := p.Files(patterns...)
	if err != nil {
		return nil, err
	}
	return audit.Set(fs), nil
}

// withoutTests drops test, mock and unit-test files: rules count production
// call sites only.
func withoutTests(set audit.Set) audit.Set {
	var out audit.Set
	for _, f := range set {
		l := strings.ToLower(f.Path)
		if strings.HasSuffix(l, "_test.go") || strings.Contains(l, "/test/") || strings.Contains(l, "/tests/") ||
			strings.Contains(l, "/unittest/") || strings.Contains(l, "/mocks/") || strings.Contains(l, "/mock_") ||
			strings.HasPrefix(l, "test/") || strings.HasPrefix(l, "tests/") {
			continue
		}
		out = append(out, f)
	}
	return out
}

// directCalls keeps the calls whose callee is exactly name (not a
// function-pointer field of the same name, e.g. msquic's
// Cc->QuicCongestionControlReset inside the QuicCongestionControlReset wrapper).
func directCalls(cs []syntax.Call, name string) []syntax.Call {
	var out []syntax.Call
	for _, c := range cs {
		if c.Callee == name {
			out = append(out, c)
		}
	}
	return out
}

func callEvidence(p *audit.Pass, cs []syntax.Call, kind string) []audit.Evidence {
	var out []audit.Evidence
	for _, c := range cs {
		out = append(out, p.Evidence(c.Pos, kind, "in "+c.Func))
	}
	return out
}

// inFunc keeps the calls made inside function fn.
func inFunc(cs []syntax.Call, fn string) []syntax.Call {
	var out []syntax.Call
	for _, c := range cs {
		if c.Func == fn {
			out = append(out, c)
		}
	}
	return out
}

// funcDef returns the first function definition with a body named name.
func funcDef(set audit.Set, name string) (syntax.Def, bool) {
	fs := set.Funcs(name)
	if len(fs) == 0 {
		return syntax.Def{}, false
	}
	return fs[0], true
}

// fileOf returns the parsed file holding pos.
func fileOf(set audit.Set, pos syntax.Pos) *syntax.File { return set.File(pos.Path) }

var intSuffix = regexp.MustCompile(`\b(0[xX][0-9a-fA-F]+|[0-9]+)(?:[uU]?[lL]{0,2}|[lL]{1,2}[uU]?)\b`)
var identRe = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// a cast to a lower-case type name (C types are lower case, macros upper case)
var typeCastRe = regexp.MustCompile(`\((?:const\s+)?[a-z_][a-z0-9_]*\)\s*([(\w])`)
var castRe = regexp.MustCompile(`\(\s*(?:const\s+)?(?:u?int\d+_t|size_t|double|float|unsigned|int|long|uint\d+|u\d+|usize)\s*\)`)

// expandMacro expands a C macro (or const) to a numeric expression that
// data.Formula can evaluate: nested macros expanded, integer suffixes and
// casts dropped. It returns the expression, the definition and whether the
// expansion is fully numeric.
func expandMacro(set audit.Set, name string) (string, syntax.Def, bool) {
	return expandMacroDepth(set, name, 0)
}

func expandMacroDepth(set audit.Set, name string, depth int) (string, syntax.Def, bool) {
	var def syntax.Def
	found := false
	for _, d := range set.Defs(name) {
		if (d.Kind == syntax.DefMacro || d.Kind == syntax.DefConst) && d.Value != "" {
			def, found = d, true
			break
		}
	}
	if !found || depth > 8 {
		return "", def, false
	}
	v := stripComment(def.Value)
	v = castRe.ReplaceAllString(v, "")
	v = typeCastRe.ReplaceAllString(v, "$1")
	v = intSuffix.ReplaceAllString(v, "$1")
	ok := true
	v = identRe.ReplaceAllStringFunc(v, func(id string) string {
		sub, _, subOK := expandMacroDepth(set, id, depth+1)
		if !subOK {
			ok = false
			return id
		}
		if strings.ContainsAny(sub, "+-*/") && !(strings.HasPrefix(sub, "(") && strings.HasSuffix(sub, ")")) {
			return "(" + sub + ")"
		}
		return sub
	})
	v = strings.ReplaceAll(v, "\\", "")
	v = strings.Join(strings.Fields(v), "")
	v = trimParens(v)
	return v, def, ok
}

func stripComment(s string) string {
	if i := strings.Index(s, "/*"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, "//"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// trimParens drops one pair of parentheses enclosing the whole expression.
func trimParens(s string) string {
	for strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")") {
		depth := 0
		whole := true
		for i, c := range s {
			if c == '(' {
				depth++
			} else if c == ')' {
				depth--
				if depth == 0 && i != len(s)-1 {
					whole = false
					break
				}
			}
		}
		if !whole {
			break
		}
		s = s[1 : len(s)-1]
	}
	return s
}

// numeric parses a literal like "333", "0.7", "250000ull".
func numeric(s string) (float64, bool) {
	s = intSuffix.ReplaceAllString(strings.TrimSpace(s), "$1")
	s = strings.ReplaceAll(s, "_", "")
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

// sortedKeys returns the map's keys sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// guardText joins a statement's guards, innermost first.
func guardText(gs []syntax.Guard) string {
	var parts []string
	for _, g := range gs {
		parts = append(parts, g.Kind+" "+g.Cond)
	}
	return strings.Join(parts, " < ")
}

// underCase reports whether guards include case label label.
func underCase(gs []syntax.Guard, label string) bool {
	for _, g := range gs {
		if g.Kind == "case" && strings.TrimSpace(g.Cond) == label {
			return true
		}
	}
	return false
}

func plural(n int, s string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, s)
	}
	return fmt.Sprintf("%d %ss", n, s)
}

// provisional returns the implementation's provisional (study) initial-window
// formula whose label contains label, or nil.
func provisional(p *audit.Pass, label string) *data.Formula {
	for i, f := range p.Impl.Constants.InitialWindows {
		if strings.Contains(f.Label, label) {
			return &p.Impl.Constants.InitialWindows[i]
		}
	}
	return nil
}
