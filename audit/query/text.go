package query

import (
	"fmt"
	"sort"
	"strings"

	"github.com/migaudit/migaudit/audit/syntax"
)

// Filter keeps the items for which keep is true.
func Filter[T any](xs []T, keep func(T) bool) []T {
	var out []T
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// Direct keeps the calls whose callee is exactly name (not a function-pointer
// field of the same name, e.g. msquic's Cc->QuicCongestionControlReset inside
// the QuicCongestionControlReset wrapper).
func Direct(cs []syntax.Call, name string) []syntax.Call {
	return Filter(cs, func(c syntax.Call) bool { return c.Callee == name })
}

// InFunc keeps the calls made inside functions named fn.
func InFunc(cs []syntax.Call, fn string) []syntax.Call {
	return Filter(cs, func(c syntax.Call) bool { return c.Func == fn })
}

// Live drops calls in test-only code (Rust #[cfg(test)], #[test]).
func Live(cs []syntax.Call) []syntax.Call {
	return Filter(cs, func(c syntax.Call) bool { return !c.Test })
}

// LiveDefs drops definitions in test-only code.
func LiveDefs(ds []syntax.Def) []syntax.Def {
	return Filter(ds, func(d syntax.Def) bool { return !d.Test })
}

// GuardText joins a statement's guards, innermost first.
func GuardText(gs []syntax.Guard) string {
	var parts []string
	for _, g := range gs {
		parts = append(parts, g.Kind+" "+g.Cond)
	}
	return strings.Join(parts, " < ")
}

// UnderCase reports whether the guards include case label label.
func UnderCase(gs []syntax.Guard, label string) bool {
	for _, g := range gs {
		if g.Kind == "case" && strings.TrimSpace(g.Cond) == label {
			return true
		}
	}
	return false
}

// ContainsAll reports whether s contains every sub.
func ContainsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// OneLine folds white space.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Plural is "1 site", "2 sites".
func Plural(n int, s string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, s)
	}
	return fmt.Sprintf("%d %ss", n, s)
}

// SortedKeys returns the map's keys sorted.
func SortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Body is a function's body without the outer braces, trimmed.
func Body(d syntax.Def) string {
	b := strings.TrimSpace(d.Body)
	b = strings.TrimPrefix(b, "{")
	b = strings.TrimSuffix(b, "}")
	return strings.TrimSpace(b)
}

// TailExpr is the tail expression of a Rust body (the text after the last
// ';', or the whole body), or the operand of a C/Python return.
func TailExpr(d syntax.Def) string {
	b := Body(d)
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

// Funcs lists the enclosing functions of calls, sorted and unique.
func Funcs(cs []syntax.Call) []string {
	m := map[string]bool{}
	for _, c := range cs {
		m[c.Func] = true
	}
	return SortedKeys(m)
}

// Names lists the callee names of calls, unique, in order.
func Names(cs []syntax.Call) []string {
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
