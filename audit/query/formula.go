package query

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/syntax"
	"github.com/migaudit/migaudit/data"
)

// Constants: source expressions to data.Formula expressions.

// Param is a runtime setting kept as a named parameter of a formula.
type Param struct {
	Name    string
	Default float64
}

// Resolver maps an identifier of a source expression to a parameter or a
// constant; unknown identifiers are looked up as constants / macros in the set.
type Resolver struct {
	c      *Code
	params map[string]Param // source identifier -> formula parameter
	used   map[string]float64
	defs   []syntax.Def // constant definitions expanded, for evidence
	depth  int
}

// Resolver translates source expressions with params as formula parameters.
func (c *Code) Resolver(params map[string]Param) *Resolver {
	return &Resolver{c: c, params: params, used: map[string]float64{}}
}

func (r *Resolver) resolve(name string) (string, error) {
	if p, ok := r.params[name]; ok {
		r.used[p.Name] = p.Default
		return p.Name, nil
	}
	d, ok := r.c.Const(name)
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
	return Translate(v, r.resolve)
}

// formula translates a source expression and returns a constant finding.
func (r *Resolver) Constant(q audit.Question, src string, at syntax.Pos, label, mechanism string, alternative bool) (audit.Finding, error) {
	expr, err := Translate(src, r.resolve)
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
			extra = append(extra, r.c.Evidence(d.Pos, "definition", d.Name))
		}
	}
	f, err := r.c.Constant(q, expr, params, label, mechanism, at, extra...)
	if err != nil {
		return audit.Finding{}, err
	}
	f.Constant.Alternative = alternative
	f.Detail = "source expression: " + OneLine(src)
	return f, nil
}

// Eval evaluates a source expression with the resolver (for parameter defaults).
func (r *Resolver) Eval(src string) (float64, error) {
	expr, err := Translate(src, r.resolve)
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

// Translate turns a C, C++, Rust or Python constant expression into a
// data.Formula expression (Go syntax: numbers, parameters, + - * /, min, max).
// Casts, integer suffixes and digit separators are dropped; min/max in their
// various spellings (const_min, std::min, cmp::max, xqc_max, .clamp, .max,
// .min), saturating arithmetic and Duration::from_millis/micros/secs (to µs)
// are translated; every other identifier goes through resolve.
func Translate(src string, resolve func(string) (string, error)) (string, error) {
	toks, err := lex(src)
	if err != nil {
		return "", err
	}
	p := &parser{toks: toks, resolve: resolve}
	out, err := p.ternary()
	if err != nil {
		return "", err
	}
	if p.i < len(p.toks) {
		return "", fmt.Errorf("unexpected %q in %q", p.toks[p.i].text, src)
	}
	return out, nil
}

type token struct {
	kind byte // 'n' number, 'i' identifier, 'o' operator/punctuation
	text string
}

func lex(s string) ([]token, error) {
	var out []token
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
			lit, err := number(s[i:j])
			if err != nil {
				return nil, err
			}
			out = append(out, token{'n', lit})
			i = j
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			out = append(out, token{'i', s[i:j]})
			i = j
		case strings.HasPrefix(s[i:], "::") || strings.HasPrefix(s[i:], "->"):
			out = append(out, token{'o', s[i : i+2]})
			i += 2
		case strings.ContainsRune("+-*/(),.&<>[]?:", rune(c)):
			out = append(out, token{'o', string(c)})
			i++
		default:
			return nil, fmt.Errorf("unexpected character %q in %q", c, s)
		}
	}
	return out, nil
}

// number normalises a numeric literal: 14_720 -> 14720, 10_u64 -> 10,
// 0.7f -> 0.7, 250000ull -> 250000, 0x10 -> 16.
func number(lit string) (string, error) {
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

type parser struct {
	toks    []token
	i       int
	resolve func(string) (string, error)
}

func (p *parser) peek(t string) bool { return p.i < len(p.toks) && p.toks[p.i].text == t }
func (p *parser) eat(t string) bool {
	if p.peek(t) {
		p.i++
		return true
	}
	return false
}

// ternary handles `a < b ? a : b` (min) and `a > b ? a : b` (max), the
// constexpr spelling of min/max in C and C++ headers.
func (p *parser) ternary() (string, error) {
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

func (p *parser) expr() (string, error) {
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

func (p *parser) term() (string, error) {
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
		l = wrap(l, op) + op + wrap(r, op)
	}
	return l, nil
}

// wrap parenthesises a sum used as a factor.
func wrap(s, op string) string {
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

var castTypes = map[string]bool{
	"int": true, "unsigned": true, "long": true, "float": true, "double": true, "size_t": true, "const": true,
	"uint8_t": true, "uint16_t": true, "uint32_t": true, "uint64_t": true, "int32_t": true, "int64_t": true,
	"u8": true, "u16": true, "u32": true, "u64": true, "usize": true, "i32": true, "i64": true, "f32": true, "f64": true,
	"cubic_float_t": true, "xqc_usec_t": true,
}

func (p *parser) unary() (string, error) {
	switch {
	case p.eat("-"):
		x, err := p.unary()
		return "-" + wrap(x, "*"), err
	case p.eat("&"), p.eat("*"):
		return p.unary()
	}
	// C cast: "(" type... ")" unary
	if p.peek("(") {
		j := p.i + 1
		for j < len(p.toks) && p.toks[j].kind == 'i' && castTypes[p.toks[j].text] {
			j++
		}
		if j > p.i+1 && j < len(p.toks) && p.toks[j].text == ")" {
			p.i = j + 1
			return p.unary()
		}
	}
	return p.postfix()
}

func (p *parser) args() ([]string, error) {
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

func (p *parser) postfix() (string, error) {
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
					x = wrap(recv, "*") + "*" + wrap(as[0], "*")
				case "saturating_add", "wrapping_add":
					x = recv + "+" + as[0]
				case "saturating_sub", "wrapping_sub":
					x = recv + "-" + wrap(as[0], "*")
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
func (p *parser) primary() (expr string, isName bool, name string, err error) {
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
				return wrap(as[0], "*") + "*1000", false, "", nil
			case "from_micros":
				return as[0], false, "", nil
			case "from_secs":
				return wrap(as[0], "*") + "*1000000", false, "", nil
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

var (
	intSuffix = lazyRegexp(`\b(0[xX][0-9a-fA-F]+|[0-9]+)(?:[uU]?[lL]{0,2}|[lL]{1,2}[uU]?)\b`)
	identRe   = lazyRegexp(`[A-Za-z_][A-Za-z0-9_]*`)
	// a cast to a lower-case type name (C types are lower case, macros upper case)
	typeCastRe = lazyRegexp(`\((?:const\s+)?[a-z_][a-z0-9_]*\)\s*([(\w])`)
	castRe     = lazyRegexp(`\(\s*(?:const\s+)?(?:u?int\d+_t|size_t|double|float|unsigned|int|long|uint\d+|u\d+|usize)\s*\)`)
)

// ExpandMacro expands a C macro (or const) to a numeric expression that
// data.Formula can evaluate: nested macros expanded, integer suffixes and
// casts dropped, redundant outer parentheses removed. It returns the
// expression, the definition and whether the expansion is fully numeric.
func (c *Code) ExpandMacro(name string) (string, syntax.Def, bool) {
	return c.expandMacro(name, 0)
}

func (c *Code) expandMacro(name string, depth int) (string, syntax.Def, bool) {
	var def syntax.Def
	found := false
	for _, d := range c.Set.Defs(name) {
		if (d.Kind == syntax.DefMacro || d.Kind == syntax.DefConst) && d.Value != "" {
			def, found = d, true
			break
		}
	}
	if !found || depth > 8 {
		return "", def, false
	}
	v := stripComment(def.Value)
	v = castRe().ReplaceAllString(v, "")
	v = typeCastRe().ReplaceAllString(v, "$1")
	v = intSuffix().ReplaceAllString(v, "$1")
	ok := true
	v = identRe().ReplaceAllStringFunc(v, func(id string) string {
		sub, _, subOK := c.expandMacro(id, depth+1)
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
	return trimParens(v), def, ok
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

// trimParens drops the parentheses enclosing the whole expression.
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

// Numeric parses a literal like "333", "0.7", "250000ull", "14_720".
func Numeric(s string) (float64, bool) {
	s = intSuffix().ReplaceAllString(strings.TrimSpace(s), "$1")
	s = strings.ReplaceAll(s, "_", "")
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

// FmtNum writes a number the shortest way (1200, 0.7).
func FmtNum(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%f", v), "0"), ".")
}

// Defs are the constant definitions the resolver has expanded so far.
func (r *Resolver) Defs() []syntax.Def { return r.defs }
