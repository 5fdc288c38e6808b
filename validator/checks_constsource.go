package validator

import (
	"fmt"
	"math"
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// <impl>/constants-source: each constant's value read again from the
// source at the pin, by the validator's own text reading (no tree-sitter):
// the right-hand side of the cited line, its symbols resolved from their
// definitions (#define, const, static, enum or Go/Rust constant; in the same
// file, the same directory, then the tree's headers), evaluated by the
// validator's evaluator. The value must be the survey's, or the survey's
// divided by a product of its stated parameters (a packet count times the
// datagram size S the expression names). A line the reader cannot evaluate
// is listed as not derived, never passed as checked.
func init() {
	perImplChecks = append(perImplChecks, check{name: "constants-source", fn: checkConstantsSource, claim: "constants"})
}

var (
	identRe    = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*`)
	castRe     = regexp.MustCompile(`\(\s*(?:const\s+)?(?:u?int(?:8|16|32|64)?_t|size_t|unsigned(?:\s+int|\s+long)*|long(?:\s+long)?|int|double|float|uint64|int64|uint32|u64|u32|usize|protocol\.ByteCount|time\.Duration)\s*\)`)
	defineRe   = regexp.MustCompile(`^\s*#\s*define\s+([A-Za-z_]\w*)\s+(.+)$`)
	durationRe = regexp.MustCompile(`Duration::from_(secs|millis|micros)\(\s*([^)]*)\)`)
	suffixRe   = regexp.MustCompile(`\b(\d+(?:\.\d+)?)(?:[uU]?[lL]{0,2}|_?u(?:8|16|32|64|size)|_?f64)\b`)
	unitsGo    = map[string]string{"time.Microsecond": "1", "time.Millisecond": "1000", "time.Second": "1000000"}
)

func checkConstantsSource(v *Validator, doc, im gjson.Result) (Status, string) {
	var d verdict
	t, err := v.tree(im)
	if err != nil {
		sourceErr(&d, err)
		return d.result()
	}
	checked := 0
	var notDerived []string
	im.Get("constants").ForEach(func(_, c gjson.Result) bool {
		name := c.Get("name").String()
		p, line := c.Get("source.path").String(), int(c.Get("source.line").Int())
		if p == "" || line <= 0 {
			return true
		}
		ls, err := t.lines(p)
		if err != nil || line > len(ls) {
			d.fail("%s: %s:%d is not in the tree at the pin", name, p, line)
			return true
		}
		rhs := rhsOf(ls[line-1])
		got, why := v.sourceValue(t, p, rhs)
		if why != "" {
			notDerived = append(notDerived, fmt.Sprintf("%s (%s:%d %q: %s)", name, path.Base(p), line, strings.TrimSpace(rhs), why))
			return true
		}
		want := c.Get("value").Float()
		params := map[string]float64{}
		c.Get("params").ForEach(func(k, x gjson.Result) bool { params[k.String()] = x.Float(); return true })
		if !near(got, want) && !byParams(got, want, params) && !byUnit(got, want) && !leadingFactor(got, want, c.Get("expr").String(), params) {
			d.fail("%s: %s:%d reads %s = %s at the pin, the survey says %s (%s)", name, path.Base(p), line, strings.TrimSpace(rhs), fnum(got), fnum(want), c.Get("expr").String())
			return true
		}
		checked++
		return true
	})
	d.note("%d constants read again from the source", checked)
	if len(notDerived) > 0 {
		d.note("%d not derived by the validator's text reading: %s", len(notDerived), strings.Join(notDerived, "; "))
	}
	return d.result()
}

// sourceValue memoises evalSource: a function of the tree and the line
// alone, so the many survey variants of the mutation tests read it once.
func (v *Validator) sourceValue(t *sourceTree, file, rhs string) (float64, string) {
	key := t.repoDir + "@" + t.commit + "#" + file + "#" + rhs
	if r, ok := sourceValues.Load(key); ok {
		e := r.(sourceValueResult)
		return e.value, e.why
	}
	val, why := v.evalSource(t, file, rhs, 0)
	sourceValues.Store(key, sourceValueResult{val, why})
	return val, why
}

type sourceValueResult struct {
	value float64
	why   string
}

var sourceValues sync.Map

// byUnit: want is got in another unit (ms or s to µs) or scale (a
// factor written as a ratio, 7/10, 70/100).
func byUnit(got, want float64) bool {
	for _, k := range []float64{1e3, 1e6, 1e-1, 1e-2, 1e-3} {
		if near(got*k, want) {
			return true
		}
	}
	return false
}

// byParams: want = got × a product of some of the stated parameters.
func byParams(got, want float64, params map[string]float64) bool {
	if got == 0 {
		return false
	}
	vals := make([]float64, 0, len(params))
	for _, x := range params {
		vals = append(vals, x)
	}
	for mask := 1; mask < 1<<len(vals); mask++ {
		prod := got
		for i, x := range vals {
			if mask&(1<<i) != 0 {
				prod *= x
			}
		}
		if near(prod, want) {
			return true
		}
	}
	return false
}

// rhsOf is the value side of a source line: a #define's body or what
// follows the assignment's =.
func rhsOf(line string) string {
	if m := defineRe.FindStringSubmatch(line); m != nil {
		return stripComment(m[2])
	}
	s := stripComment(line)
	for i := 0; i < len(s); i++ {
		if s[i] == '=' && (i+1 >= len(s) || s[i+1] != '=') && (i == 0 || !strings.ContainsRune("=!<>+-*/", rune(s[i-1]))) {
			return strings.TrimRight(strings.TrimSpace(s[i+1:]), ";,")
		}
	}
	return ""
}

func stripComment(s string) string {
	if i := strings.Index(s, "//"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, "/*"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// evalSource evaluates a source expression, resolving its symbols.
func (v *Validator) evalSource(t *sourceTree, file, expr string, depth int) (float64, string) {
	if expr == "" {
		return 0, "no value on the line"
	}
	if depth > 4 {
		return 0, "definitions nest too deep"
	}
	e := castRe.ReplaceAllString(expr, "")
	for k, val := range unitsGo {
		e = strings.ReplaceAll(e, k, val)
	}
	e = durationRe.ReplaceAllStringFunc(e, func(m string) string {
		sm := durationRe.FindStringSubmatch(m)
		mul := map[string]string{"secs": "1000000", "millis": "1000", "micros": "1"}[sm[1]]
		return "(" + sm[2] + ")*" + mul
	})
	e = suffixRe.ReplaceAllString(e, "$1")
	e = strings.TrimSuffix(strings.TrimSpace(e), ";")
	params := map[string]float64{}
	var why string
	for _, id := range identRe.FindAllString(e, -1) {
		if _, done := params[id]; done || id == "min" || id == "max" || id == "floor" {
			continue
		}
		def, ok := v.definition(t, file, id)
		if !ok {
			return 0, "no definition of " + id + " found"
		}
		x, w := v.evalSource(t, file, def, depth+1)
		if w != "" {
			why = id + ": " + w
			break
		}
		params[id] = x
	}
	if why != "" {
		return 0, why
	}
	// The evaluator's names are plain identifiers: C++ scoped names are
	// written without their scope.
	flat := map[string]float64{}
	for k, x := range params {
		flat[strings.ReplaceAll(k, "::", "__")] = x
	}
	got, err := evalExpr(strings.ReplaceAll(e, "::", "__"), flat)
	if err != nil || math.IsNaN(got) {
		return 0, fmt.Sprintf("not an expression the evaluator reads (%v)", err)
	}
	return got, ""
}

// definition finds a symbol's value: in the file, its directory, then
// the tree's headers.
func (v *Validator) definition(t *sourceTree, file, id string) (string, bool) {
	short := id
	if i := strings.LastIndex(id, "::"); i >= 0 {
		short = id[i+2:]
	}
	pat := regexp.MustCompile(`^\s*(?:#\s*define\s+` + short + `\s+(.+)|(?:(?:pub(?:\(crate\))?\s+)?(?:static\s+|const\s+|constexpr\s+|inline\s+)*(?:[\w:<>]+\s+)*)?` + short + `\s*(?::\s*[\w:<>]+)?\s*=\s*([^;,{]+))`)
	try := func(p string) (string, bool) {
		ls, err := t.lines(p)
		if err != nil {
			return "", false
		}
		for _, l := range ls {
			if !strings.Contains(l, short) {
				continue
			}
			if m := pat.FindStringSubmatch(l); m != nil {
				val := m[1]
				if val == "" {
					// Only a constant's definition: in C, C++ and Rust
					// one marked const/static/constexpr (a local
					// variable of the same name is not the value); in
					// Go, a name in a const block or a const line.
					if !constLike(p, l) {
						continue
					}
					val = m[2]
				}
				val = stripComment(val)
				if strings.TrimSpace(val) != "" {
					return val, true
				}
			}
		}
		return "", false
	}
	if val, ok := try(file); ok {
		return val, true
	}
	dir := path.Dir(file)
	var headers []string
	for _, p := range t.paths() {
		if p == file {
			continue
		}
		if path.Dir(p) == dir && sameLanguage(p, file) {
			if val, ok := try(p); ok {
				return val, true
			}
		} else if strings.HasSuffix(p, ".h") || strings.HasSuffix(p, ".hpp") {
			headers = append(headers, p)
		}
	}
	if sameLanguage(file, "x.c") || sameLanguage(file, "x.cpp") {
		for _, p := range headers {
			if val, ok := try(p); ok {
				return val, true
			}
		}
	}
	return "", false
}

func sameLanguage(a, b string) bool {
	ext := func(p string) string {
		switch path.Ext(p) {
		case ".c", ".h", ".cc", ".cpp", ".hpp":
			return "c"
		}
		return path.Ext(p)
	}
	return ext(a) == ext(b)
}

func constLike(file, line string) bool {
	t := strings.TrimSpace(line)
	if strings.HasSuffix(file, ".go") {
		return strings.HasPrefix(t, "const ") || strings.HasPrefix(line, "\t") && !strings.Contains(t, ":=")
	}
	for _, k := range []string{"const ", "static ", "constexpr ", "#define"} {
		if strings.Contains(t, k) {
			return true
		}
	}
	return false
}

// leadingFactor: the survey's expression is the source value times the
// rest of it ("2*(MTU-20-8)" over a source line reading 2).
func leadingFactor(got, want float64, expr string, params map[string]float64) bool {
	rest, ok := strings.CutPrefix(strings.ReplaceAll(expr, " ", ""), fnum(got)+"*")
	if !ok {
		return false
	}
	r, err := evalExpr(rest, params)
	return err == nil && near(got*r, want)
}
