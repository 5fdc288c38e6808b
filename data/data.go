// Package data holds migaudit's pinned implementations and the discriminator
// constants, embedded so the binary is self-contained, together with the
// formula evaluation both the audit and the discriminator use.
package data

import (
	"embed"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tidwall/gjson"
)

//go:embed implementations.json
var implementationsJSON []byte

// Position is a place in upstream source at a pinned commit.
type Position struct {
	Path string `json:"path"`
	Line int    `json:"line"`
}

// Formula is a discriminator constant as the source defines it: a Go-syntax
// expression over named runtime settings (min, max, + - * / and parentheses),
// with the default value of each setting. Evaluate it with the run's own
// settings (Eval) rather than trusting a typed-in number.
type Formula struct {
	// Expr is e.g. "min(10*S, max(2*S, 14720))".
	Expr string `json:"expr"`
	// Params are the defaults for the names in Expr, e.g. {"S": 1200}.
	Params map[string]float64 `json:"params,omitempty"`
	// Label says which variant this is ("by the constant", "effective").
	Label string `json:"label,omitempty"`
	// Source is where the expression stands upstream, at the pinned commit.
	Source *Position `json:"source,omitempty"`
	// Provenance says who established it: "audit <commit>" or "study table §6.2 (until audited)".
	Provenance string `json:"provenance"`
}

// Constants are the three numbers the discriminator needs.
type Constants struct {
	// InitialWindows: a reset assigns exactly one of these (picoquic has two).
	InitialWindows []Formula `json:"initial_windows"`
	MinWindow      *Formula  `json:"min_window,omitempty"`
	// LossFactor is the multiplicative decrease; nil when the algorithm has
	// none that a single loss applies (picoquic's row in the study).
	LossFactor *Formula `json:"loss_factor,omitempty"`
	// DefaultRTTUS is the RTT estimator's initial value (what a stuck
	// estimator shows), in µs.
	DefaultRTT *Formula `json:"default_rtt_us,omitempty"`
}

// Implementation is one pinned QUIC implementation.
type Implementation struct {
	Name        string    `json:"name"`
	Language    string    `json:"language"`
	Upstream    string    `json:"upstream"`
	Commit      string    `json:"commit"`
	LiveVersion string    `json:"live_version,omitempty"`
	Live        string    `json:"live,omitempty"` // how it runs here, or why it cannot
	Constants   Constants `json:"constants"`
}

type file struct {
	Implementations []Implementation `json:"implementations"`
}

// loadImplementations decodes the embedded pins once per process: every
// caller gets copies (clone), so the decoded slice is never written.
var loadImplementations = sync.OnceValues(func() ([]Implementation, error) {
	var f file
	if err := json.Unmarshal(implementationsJSON, &f); err != nil {
		return nil, fmt.Errorf("data/implementations.json: %w", err)
	}
	sort.Slice(f.Implementations, func(i, j int) bool { return f.Implementations[i].Name < f.Implementations[j].Name })
	return f.Implementations, nil
})

// Implementations returns the embedded pins, sorted by name. The result is
// the caller's own: changing it changes nothing another caller sees.
func Implementations() ([]Implementation, error) {
	impls, err := loadImplementations()
	if err != nil {
		return nil, err
	}
	out := make([]Implementation, len(impls))
	for i := range impls {
		out[i] = impls[i].clone()
	}
	return out, nil
}

// Lookup returns the implementation named name (case-insensitive; "quicgo" and
// "quic-go" are the same). The result is the caller's own.
func Lookup(name string) (Implementation, error) {
	im, err := find(name)
	if err != nil {
		return Implementation{}, err
	}
	return im.clone(), nil
}

// find is Lookup's shared, read-only pin.
func find(name string) (*Implementation, error) {
	impls, err := loadImplementations()
	if err != nil {
		return nil, err
	}
	want := normalise(name)
	for i := range impls {
		if normalise(impls[i].Name) == want {
			return &impls[i], nil
		}
	}
	names := make([]string, len(impls))
	for i := range impls {
		names[i] = impls[i].Name
	}
	return nil, unknownImpl(name, names)
}

func unknownImpl(name string, sorted []string) error {
	return fmt.Errorf("unknown implementation %q (known: %s)", name, strings.Join(sorted, ", "))
}

// pinNames are the pins' names, sorted, read without decoding the pins:
// gjson finds them without reflection, in a fraction of encoding/json's
// time, which for a short trace is a noticeable part of analyze's run.
// TestCanonicalName holds them to the decoded pins.
var pinNames = sync.OnceValue(func() []string {
	var names []string
	for _, n := range gjson.GetBytes(implementationsJSON, "implementations.#.name").Array() {
		names = append(names, n.String())
	}
	sort.Strings(names)
	return names
})

// CanonicalName is Lookup(name).Name, or Lookup's error, without decoding
// the pins.
func CanonicalName(name string) (string, error) {
	names := pinNames()
	if len(names) == 0 {
		// Not a list of pins gjson can read: Lookup says why.
		im, err := find(name)
		if err != nil {
			return "", err
		}
		return im.Name, nil
	}
	want := normalise(name)
	for _, n := range names {
		if normalise(n) == want {
			return n, nil
		}
	}
	return "", unknownImpl(name, names)
}

// clone is a deep copy of im: no slice, map or pointer shared with im.
func (im Implementation) clone() Implementation {
	im.Constants = im.Constants.clone()
	return im
}

// clone is a deep copy of c.
func (c Constants) clone() Constants {
	if c.InitialWindows != nil {
		iw := make([]Formula, len(c.InitialWindows))
		for i, f := range c.InitialWindows {
			iw[i] = f.clone()
		}
		c.InitialWindows = iw
	}
	c.MinWindow = c.MinWindow.clonePtr()
	c.LossFactor = c.LossFactor.clonePtr()
	c.DefaultRTT = c.DefaultRTT.clonePtr()
	return c
}

// clone is a deep copy of f.
func (f Formula) clone() Formula {
	if f.Params != nil {
		p := make(map[string]float64, len(f.Params))
		for k, v := range f.Params {
			p[k] = v
		}
		f.Params = p
	}
	if f.Source != nil {
		src := *f.Source
		f.Source = &src
	}
	return f
}

func (f *Formula) clonePtr() *Formula {
	if f == nil {
		return nil
	}
	c := f.clone()
	return &c
}

func normalise(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), "-", "")
}

// Eval evaluates the formula with its default params overridden by override.
// It returns the value and the arithmetic written out, e.g.
// "min(10*1452, max(2*1452, 14720)) = 14520".
func (f Formula) Eval(override map[string]float64) (float64, string, error) {
	params := map[string]float64{}
	for k, v := range f.Params {
		params[k] = v
	}
	for k, v := range override {
		if _, ok := params[k]; ok {
			params[k] = v
		}
	}
	expr, err := parseExpr(f.Expr)
	if err != nil {
		return 0, "", fmt.Errorf("formula %q: %w", f.Expr, err)
	}
	v, err := eval(expr, params)
	if err != nil {
		return 0, "", fmt.Errorf("formula %q: %w", f.Expr, err)
	}
	return v, fmt.Sprintf("%s = %s", substitute(f.Expr, params), strconv.FormatFloat(v, 'f', -1, 64)), nil
}

// parsedExprs memoises parseExpr: string → parsedExpr. eval only reads a
// tree, so one tree serves every caller, concurrent ones included. The
// audit evaluates expressions it finds in source, so the memo stops
// growing at maxParsedExprs; later ones are parsed at each call.
var (
	parsedExprs  sync.Map
	nParsedExprs atomic.Int64
)

const maxParsedExprs = 4096

type parsedExpr struct {
	e   ast.Expr
	err error
}

// parseExpr is parser.ParseExpr(s), parsed once per process and expression.
func parseExpr(s string) (ast.Expr, error) {
	if p, ok := parsedExprs.Load(s); ok {
		return p.(parsedExpr).e, p.(parsedExpr).err
	}
	e, err := parser.ParseExpr(s)
	if nParsedExprs.Add(1) <= maxParsedExprs {
		parsedExprs.Store(s, parsedExpr{e, err})
	}
	return e, err
}

func substitute(expr string, params map[string]float64) string {
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	// Longest names first so "SS" is not half-replaced by "S".
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	out := expr
	for _, n := range names {
		out = replaceIdent(out, n, strconv.FormatFloat(params[n], 'f', -1, 64))
	}
	return out
}

// replaceIdent replaces whole-identifier occurrences of name in s.
func replaceIdent(s, name, with string) string {
	isIdent := func(b byte) bool {
		return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], name) && (i == 0 || !isIdent(s[i-1])) && (i+len(name) == len(s) || !isIdent(s[i+len(name)])) {
			b.WriteString(with)
			i += len(name)
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

func eval(e ast.Expr, params map[string]float64) (float64, error) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.INT && e.Kind != token.FLOAT {
			return 0, fmt.Errorf("literal %s is not a number", e.Value)
		}
		return strconv.ParseFloat(e.Value, 64)
	case *ast.Ident:
		v, ok := params[e.Name]
		if !ok {
			return 0, fmt.Errorf("no value for %s", e.Name)
		}
		return v, nil
	case *ast.ParenExpr:
		return eval(e.X, params)
	case *ast.UnaryExpr:
		x, err := eval(e.X, params)
		if err != nil {
			return 0, err
		}
		if e.Op == token.SUB {
			return -x, nil
		}
		if e.Op == token.ADD {
			return x, nil
		}
		return 0, fmt.Errorf("operator %s not supported", e.Op)
	case *ast.BinaryExpr:
		x, err := eval(e.X, params)
		if err != nil {
			return 0, err
		}
		y, err := eval(e.Y, params)
		if err != nil {
			return 0, err
		}
		switch e.Op {
		case token.ADD:
			return x + y, nil
		case token.SUB:
			return x - y, nil
		case token.MUL:
			return x * y, nil
		case token.QUO:
			if y == 0 {
				return 0, fmt.Errorf("division by zero")
			}
			return x / y, nil
		}
		return 0, fmt.Errorf("operator %s not supported", e.Op)
	case *ast.CallExpr:
		fn, ok := e.Fun.(*ast.Ident)
		if !ok {
			return 0, fmt.Errorf("unsupported call")
		}
		args := make([]float64, len(e.Args))
		for i, a := range e.Args {
			v, err := eval(a, params)
			if err != nil {
				return 0, err
			}
			args[i] = v
		}
		switch fn.Name {
		case "min", "max":
			if len(args) == 0 {
				return 0, fmt.Errorf("%s needs arguments", fn.Name)
			}
			r := args[0]
			for _, a := range args[1:] {
				if fn.Name == "min" {
					r = math.Min(r, a)
				} else {
					r = math.Max(r, a)
				}
			}
			return r, nil
		case "floor":
			if len(args) != 1 {
				return 0, fmt.Errorf("floor takes one argument")
			}
			return math.Floor(args[0]), nil
		}
		return 0, fmt.Errorf("unknown function %s", fn.Name)
	}
	return 0, fmt.Errorf("unsupported expression %T", e)
}

//go:embed constants
var constantsFS embed.FS

// auditedConstants memoises the decoding of data/constants/<name>.json:
// name → *auditedEntry.
var auditedConstants sync.Map

type auditedEntry struct {
	once  sync.Once
	c     Constants
	found bool
	err   error
}

// ConstantsFor returns the discriminator constants for an implementation:
// the audited ones from data/constants/<name>.json when the audit has written
// them, otherwise the provisional values in implementations.json. The
// returned bool is true when the constants come from an audit. The result is
// the caller's own; each file is decoded once per process.
func ConstantsFor(name string) (Constants, bool, error) {
	canon, err := CanonicalName(name)
	if err != nil {
		return Constants{}, false, err
	}
	v, _ := auditedConstants.LoadOrStore(canon, &auditedEntry{})
	e := v.(*auditedEntry)
	e.once.Do(func() {
		b, err := constantsFS.ReadFile("constants/" + canon + ".json")
		if err != nil {
			return
		}
		e.found = true
		if err := json.Unmarshal(b, &e.c); err != nil {
			e.err = fmt.Errorf("data/constants/%s.json: %w", canon, err)
		}
	})
	switch {
	case e.err != nil:
		return Constants{}, false, e.err
	case !e.found:
		im, err := find(canon)
		if err != nil {
			return Constants{}, false, err
		}
		return im.Constants.clone(), false, nil
	}
	return e.c.clone(), true, nil
}

// ConstantsAt returns the constants the audit wrote for name at commit
// (data/constants/at/<name>@<commit>.json, written by `migaudit audit
// --commit C --write-constants`) when there are some: a live run of code
// other than the pin (quinn 0.9.3 from Debian) is judged with the constants
// of the code that ran. Otherwise, or for commit "", it is ConstantsFor.
func ConstantsAt(name, commit string) (Constants, bool, error) {
	if c, found, err := ConstantsWrittenAt(name, commit); err != nil || found {
		return c, found, err
	}
	return ConstantsFor(name)
}

// ConstantsWrittenAt returns the constants the audit wrote for name at
// commit (data/constants/at/<name>@<commit>.json) and whether there are
// any; it never falls back to the pin's.
func ConstantsWrittenAt(name, commit string) (Constants, bool, error) {
	if commit == "" {
		return Constants{}, false, nil
	}
	canon, err := CanonicalName(name)
	if err != nil {
		return Constants{}, false, err
	}
	p := "constants/at/" + canon + "@" + commit + ".json"
	b, err := constantsFS.ReadFile(p)
	if err != nil {
		return Constants{}, false, nil
	}
	var c Constants
	if err := json.Unmarshal(b, &c); err != nil {
		return Constants{}, false, fmt.Errorf("data/%s: %w", p, err)
	}
	return c, true, nil
}
