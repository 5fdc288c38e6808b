package validator

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// <impl>/constants-source: each constant the survey states read again from
// the source at the pin by the validator's own text reading (no
// tree-sitter, nothing from audit/): constReadings names, for every
// implementation, the definitions that give it and the formula over them,
// including the symbols the formula uses (packet counts, datagram sizes).
// The value must be the survey's and data/constants/<impl>.json's. A
// parameter the source cannot give (set at run time) is named with why; a
// constant without a reading, or whose definitions are not found, is listed
// as not derived, never passed as checked.
func init() {
	perImplChecks = append(perImplChecks, check{name: "constants-source", fn: checkConstantsSource, claim: "constants"})
}

var (
	identRe    = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*`)
	castRe     = regexp.MustCompile(`\(\s*(?:const\s+)?(?:u?int(?:8|16|32|64)?_t|size_t|ngtcp2_duration|unsigned(?:\s+int|\s+long)*|long(?:\s+long)?|int|double|float|uint64|int64|uint32|u64|u32|usize|protocol\.ByteCount|time\.Duration)\s*\)`)
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
	impl := im.Get("name").String()
	table, tableErr := v.constantsTable(impl)
	checked, total := 0, 0
	var notDerived, atRunTime []string
	im.Get("constants").ForEach(func(_, c gjson.Result) bool {
		total++
		name := c.Get("name").String()
		p, line := c.Get("source.path").String(), int(c.Get("source.line").Int())
		if p != "" || line > 0 {
			ls, err := t.lines(p)
			if err != nil || line <= 0 || line > len(ls) {
				d.fail("%s: %s:%d is not in the tree at the pin", name, p, line)
				return true
			}
		}
		where := p + ":" + strconv.Itoa(line)
		if p == "" {
			where = "(no source position)"
		}
		r, ok := readingFor(impl, name, p)
		if !ok {
			notDerived = append(notDerived, fmt.Sprintf("%s %s: the validator has no reading of it", name, where))
			return true
		}
		syms, why := v.readSymbols(t, impl, r)
		if why != "" {
			notDerived = append(notDerived, fmt.Sprintf("%s %s: %s", name, where, why))
			return true
		}
		params := func(entry gjson.Result) (map[string]float64, string) {
			m := map[string]float64{}
			for k, x := range syms {
				m[k] = x
			}
			for _, k := range sortedKeys(r.runtime) {
				x := entry.Get("params." + k)
				if !x.Exists() {
					return nil, "states no " + k + " (" + r.runtime[k] + ")"
				}
				m[k] = x.Float()
			}
			return m, ""
		}
		derive := func(entry gjson.Result) (float64, string) {
			m, why := params(entry)
			if why != "" {
				return 0, why
			}
			got, err := evalExpr(r.expr, m)
			if err != nil {
				return 0, fmt.Sprintf("the reading %q does not evaluate: %v", r.expr, err)
			}
			return got, ""
		}
		got, why := derive(c)
		if why != "" {
			d.fail("%s %s: the survey %s", name, where, why)
			return true
		}
		if want := c.Get("value").Float(); !near(got, want) {
			d.fail("%s: the source at the pin gives %s (%s with %s), the survey says %s (%s)", name, fnum(got), r.expr, symbolList(syms), fnum(want), c.Get("expr").String())
			return true
		}
		switch {
		case tableErr != nil:
			d.fail("%s: %v", name, tableErr)
			return true
		case table.Exists():
			e, ok := constantsEntry(table, name, p, line, c, r)
			if !ok {
				d.fail("%s %s: data/constants/%s.json states no such constant", name, where, impl)
				return true
			}
			cg, why := derive(e)
			if why != "" {
				d.fail("%s %s: data/constants/%s.json %s", name, where, impl, why)
				return true
			}
			cv, err := evalExpr(e.Get("expr").String(), exprParams(e))
			if err != nil || !near(cg, cv) {
				d.fail("%s: the source at the pin gives %s (%s with %s), data/constants/%s.json says %s (%s)", name, fnum(cg), r.expr, symbolList(syms), impl, fnum(cv), e.Get("expr").String())
				return true
			}
		}
		if len(r.runtime) > 0 {
			m, _ := params(c)
			var ks []string
			for _, k := range sortedKeys(r.runtime) {
				ks = append(ks, fmt.Sprintf("%s=%s, %s", k, fnum(m[k]), r.runtime[k]))
			}
			atRunTime = append(atRunTime, name+" ("+strings.Join(ks, "; ")+")")
		}
		checked++
		return true
	})
	against := "the survey and data/constants/" + impl + ".json"
	if tableErr == nil && !table.Exists() {
		against = "the survey (no data/constants/" + impl + ".json beside it)"
	}
	d.note("%d of %d constants read again from the source and compared with %s", checked, total, against)
	if len(atRunTime) > 0 {
		d.note("%d with a parameter the run sets, taken from the entry: %s", len(atRunTime), strings.Join(atRunTime, "; "))
	}
	if len(notDerived) > 0 {
		d.note("%d not derived by the validator's text reading: %s", len(notDerived), strings.Join(notDerived, "; "))
	}
	return d.result()
}

// readingFor is the validator's reading of impl's constant at path.
func readingFor(impl, constant, path string) (constReading, bool) {
	for _, r := range constReadings[impl] {
		if r.constant == constant && r.path == path {
			return r, true
		}
	}
	return constReading{}, false
}

// readSymbols evaluates a reading's symbols at the tree; why says what
// could not be read. Memoised: a function of the tree alone.
func (v *Validator) readSymbols(t *sourceTree, impl string, r constReading) (map[string]float64, string) {
	key := t.repoDir + "@" + t.commit + "#" + impl + "#" + r.constant + "#" + r.path
	if e, ok := symbolValues.Load(key); ok {
		res := e.(symbolValuesResult)
		return res.values, res.why
	}
	values, why := v.evalReading(t, r)
	symbolValues.Store(key, symbolValuesResult{values, why})
	return values, why
}

type symbolValuesResult struct {
	values map[string]float64
	why    string
}

var symbolValues sync.Map

func (v *Validator) evalReading(t *sourceTree, r constReading) (map[string]float64, string) {
	for _, m := range r.requires {
		src, err := t.text(m.file)
		if err != nil {
			return nil, err.Error()
		}
		if !compiled(m.pattern).MatchString(src) {
			return nil, fmt.Sprintf("%s no longer reads /%s/, which the formula rests on", m.file, m.pattern)
		}
	}
	out := map[string]float64{}
	for _, sr := range r.symbols {
		src, err := t.text(sr.file)
		if err != nil {
			return nil, err.Error()
		}
		g := max(sr.group, 1)
		m := compiled(sr.pattern).FindStringSubmatch(src)
		if m == nil || len(m) <= g {
			return nil, fmt.Sprintf("%s: %s not found (/%s/)", sr.file, sr.name, sr.pattern)
		}
		x, why := v.evalSource(t, sr.file, literalText(m[g]), 0)
		if why != "" {
			return nil, fmt.Sprintf("%s: %s = %q: %s", sr.file, sr.name, strings.TrimSpace(m[g]), why)
		}
		out[sr.name] = x
	}
	return out, ""
}

var (
	floatSuffixRe = regexp.MustCompile(`\b(\d+\.\d+)[fF]\b`)
	chronoUSRe    = regexp.MustCompile(`\b(\d+)us\b`)
	digitSepRe    = regexp.MustCompile(`(\d)_(\d)`)
	patterns      sync.Map // string → *regexp.Regexp
)

// literalText is a value's source text in the evaluator's syntax: comments
// and terminators dropped, C++ float and chrono literals (0.7f, 50000us)
// and Rust digit separators (14_720) written as plain numbers.
func literalText(s string) string {
	s = strings.TrimRight(stripComment(s), " \t;,")
	s = floatSuffixRe.ReplaceAllString(s, "$1")
	s = chronoUSRe.ReplaceAllString(s, "$1")
	for digitSepRe.MatchString(s) {
		s = digitSepRe.ReplaceAllString(s, "$1$2")
	}
	return s
}

func compiled(p string) *regexp.Regexp {
	if re, ok := patterns.Load(p); ok {
		return re.(*regexp.Regexp)
	}
	re := regexp.MustCompile(p)
	patterns.Store(p, re)
	return re
}

func symbolList(syms map[string]float64) string {
	var out []string
	for _, k := range sortedKeys(syms) {
		out = append(out, k+"="+fnum(syms[k]))
	}
	return strings.Join(out, ", ")
}

// constantsTable is data/constants/<impl>.json beside the survey; a result
// that does not exist when there is no such file.
func (v *Validator) constantsTable(impl string) (gjson.Result, error) {
	p := filepath.Join(v.opts.RepoRoot, "data", "constants", impl+".json")
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return gjson.Result{}, nil
	}
	if err != nil {
		return gjson.Result{}, err
	}
	if !gjson.ValidBytes(b) {
		return gjson.Result{}, fmt.Errorf("data/constants/%s.json is not valid JSON", impl)
	}
	return gjson.ParseBytes(b), nil
}

// constantsEntry is data/constants' entry for the survey's constant c: the
// one at the same source position (for the initial windows, of which there
// may be several at one position, the one whose run-time parameters are
// c's).
func constantsEntry(table gjson.Result, name, path string, line int, c gjson.Result, r constReading) (gjson.Result, bool) {
	key := map[string]string{"initial_window": "initial_windows", "min_window": "min_window", "loss_factor": "loss_factor", "default_rtt": "default_rtt_us"}[name]
	if key == "" {
		return gjson.Result{}, false
	}
	var first gjson.Result
	found := false
	for _, e := range table.Get(key).Array() {
		if e.Get("source.path").String() != path || (path != "" && int(e.Get("source.line").Int()) != line) {
			continue
		}
		same := true
		for k := range r.runtime {
			if !near(e.Get("params."+k).Float(), c.Get("params."+k).Float()) {
				same = false
			}
		}
		if same {
			return e, true
		}
		if !found {
			first, found = e, true
		}
	}
	return first, found
}

func exprParams(e gjson.Result) map[string]float64 {
	m := map[string]float64{}
	e.Get("params").ForEach(func(k, x gjson.Result) bool { m[k.String()] = x.Float(); return true })
	return m
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
