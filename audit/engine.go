package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"sync"

	"github.com/migaudit/migaudit/audit/syntax"
	"github.com/migaudit/migaudit/data"
)

// Source is one commit of an implementation's repository. audit/gitsrc
// implements it over git object storage; tests may implement it in memory.
type Source interface {
	// Commit is the full 40-hex hash being read.
	Commit() string
	// ReadFile returns a file's content at the commit; the error wraps
	// os.ErrNotExist when the path is absent.
	ReadFile(path string) ([]byte, error)
	// Files lists paths matching any pattern (path.Match per segment, "**"
	// for any depth; a plain directory name lists it recursively).
	Files(patterns ...string) ([]string, error)
}

// Rule is one audit check, a plain value (golang.org/x/tools/go/analysis
// style): adding a check is adding a value, not editing a switch.
type Rule struct {
	// Name is unique within an implementation, e.g. "picoquic/reset-dispatch".
	Name string
	// Doc says what the rule establishes and how, in a sentence or two.
	Doc string
	// Question is the question the rule's findings answer.
	Question Question
	// Run reads source through the Pass and returns its findings. It must
	// degrade gracefully: a symbol absent at the audited commit is a finding
	// (Answer Unknown, Detail saying what is missing), not an error. Return an
	// error only when the source cannot be read at all.
	Run func(*Pass) ([]Finding, error)
}

var (
	regMu    sync.Mutex
	registry = map[string][]*Rule{}
)

// Register adds rules for the implementation named impl (as in
// data/implementations.json). Call it from an init function in audit/rules.
func Register(impl string, rules ...*Rule) {
	regMu.Lock()
	defer regMu.Unlock()
	key := normalise(impl)
	for _, r := range rules {
		for _, old := range registry[key] {
			if old.Name == r.Name {
				panic(fmt.Sprintf("audit: rule %s registered twice for %s", r.Name, impl))
			}
		}
		registry[key] = append(registry[key], r)
	}
}

// Rules returns the rules registered for impl, in registration order.
func Rules(impl string) []*Rule {
	regMu.Lock()
	defer regMu.Unlock()
	return append([]*Rule(nil), registry[normalise(impl)]...)
}

// Registered returns the implementation keys that have rules, sorted.
func Registered() []string {
	regMu.Lock()
	defer regMu.Unlock()
	var out []string
	for k := range registry {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func normalise(s string) string { return strings.ReplaceAll(strings.ToLower(s), "-", "") }

// Run runs every rule registered for im against src and returns their
// findings in rule order. A rule that fails or panics yields an Unknown
// finding naming the failure and contributes to the returned error; the other
// rules still run. Parsed files are shared by all rules of the run.
func Run(ctx context.Context, im data.Implementation, src Source) ([]Finding, error) {
	rules := Rules(im.Name)
	if len(rules) == 0 {
		return nil, fmt.Errorf("no audit rules registered for %s", im.Name)
	}
	return runRules(ctx, im, src, rules)
}

// runRules is Run over a subset of im's rules.
func runRules(ctx context.Context, im data.Implementation, src Source, rules []*Rule) ([]Finding, error) {
	cache := &fileCache{src: src, files: map[string]*cachedFile{}}
	var out []Finding
	var errs []error
	for _, r := range rules {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		p := &Pass{Rule: r, Impl: im, Commit: src.Commit(), Src: src, Context: ctx, cache: cache}
		fs, err := runRule(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s rule %s: %w", im.Name, r.Name, err))
			f := p.Finding(Unknown, "rule failed")
			f.Detail = err.Error()
			fs = append(fs, f)
		}
		for i := range fs {
			if fs[i].Impl == "" {
				fs[i].Impl = im.Name
			}
			if fs[i].Rule == "" {
				fs[i].Rule = r.Name
			}
			if fs[i].Question == "" {
				fs[i].Question = r.Question
			}
			if fs[i].Evidence == nil {
				fs[i].Evidence = []Evidence{}
			}
			fs[i] = guardText(fs[i], src.Commit())
		}
		out = append(out, fs...)
	}
	return out, errors.Join(errs...)
}

func runRule(p *Pass) (fs []Finding, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v\n%s", v, firstLines(string(debug.Stack()), 12))
		}
	}()
	return p.Rule.Run(p)
}

func firstLines(s string, n int) string {
	ls := strings.SplitN(s, "\n", n+1)
	if len(ls) > n {
		ls = ls[:n]
	}
	return strings.Join(ls, "\n")
}

// Pass is what a rule sees: the pin, the source at the commit, parsed files
// (cached across the rules of one run) and constructors for findings and
// evidence.
type Pass struct {
	Rule    *Rule
	Impl    data.Implementation
	Commit  string // full hash actually read (may differ from Impl.Commit with --commit)
	Src     Source
	Context context.Context
	cache   *fileCache
}

type cachedFile struct {
	once sync.Once
	f    *syntax.File
	err  error
}

type fileCache struct {
	src   Source
	mu    sync.Mutex
	files map[string]*cachedFile
}

func (c *fileCache) get(path string, lang syntax.Lang) (*syntax.File, error) {
	key := path + "\x00" + string(lang)
	c.mu.Lock()
	cf, ok := c.files[key]
	if !ok {
		cf = &cachedFile{}
		c.files[key] = cf
	}
	c.mu.Unlock()
	cf.once.Do(func() {
		b, err := c.src.ReadFile(path)
		if err != nil {
			cf.err = err
			return
		}
		cf.f, cf.err = syntax.ParseAs(path, b, lang)
	})
	return cf.f, cf.err
}

// IsNotExist reports whether err says a file is absent at the commit.
func IsNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }

// File parses path at the commit (language from its extension). The error
// wraps os.ErrNotExist when the file is absent: test with IsNotExist.
func (p *Pass) File(path string) (*syntax.File, error) {
	return p.cache.get(path, syntax.LangOf(path))
}

// FileAs parses path as lang (e.g. a C++ project's .h files as Cpp).
func (p *Pass) FileAs(path string, lang syntax.Lang) (*syntax.File, error) {
	return p.cache.get(path, lang)
}

// Files parses every file matching the patterns; files of a type no parser
// handles are skipped. An empty result is not an error.
func (p *Pass) Files(patterns ...string) ([]*syntax.File, error) {
	paths, err := p.Src.Files(patterns...)
	if err != nil {
		return nil, err
	}
	var out []*syntax.File
	for _, path := range paths {
		if syntax.LangOf(path) == "" {
			continue
		}
		f, err := p.File(path)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// Set is a group of parsed files queried together.
type Set []*syntax.File

// Calls returns the call sites of name across the set.
func (s Set) Calls(name string) []syntax.Call {
	var out []syntax.Call
	for _, f := range s {
		out = append(out, f.Calls(name)...)
	}
	return out
}

// Defs returns the definitions of name across the set.
func (s Set) Defs(name string) []syntax.Def {
	var out []syntax.Def
	for _, f := range s {
		out = append(out, f.Defs(name)...)
	}
	return out
}

// Funcs returns the function definitions (with bodies) named name.
func (s Set) Funcs(name string) []syntax.Def {
	var out []syntax.Def
	for _, d := range s.Defs(name) {
		if d.Kind == syntax.DefFunction {
			out = append(out, d)
		}
	}
	return out
}

// Mentions returns the classified mentions of name across the set.
func (s Set) Mentions(name string) []syntax.Mention {
	var out []syntax.Mention
	for _, f := range s {
		out = append(out, f.Mentions(name)...)
	}
	return out
}

// File returns the file with path p in the set, or nil.
func (s Set) File(p string) *syntax.File {
	for _, f := range s {
		if f.Path == p {
			return f
		}
	}
	return nil
}

// Count tallies mentions by kind.
func Count(ms []syntax.Mention) map[syntax.MentionKind]int {
	out := map[syntax.MentionKind]int{}
	for _, m := range ms {
		out[m.Kind]++
	}
	return out
}

// Finding returns a finding pre-filled with the implementation, rule and
// question.
func (p *Pass) Finding(a Answer, mechanism string) Finding {
	return Finding{Impl: p.Impl.Name, Rule: p.Rule.Name, Question: p.Rule.Question, Answer: a, Mechanism: mechanism, Counts: map[string]int{}, Evidence: []Evidence{}}
}

// Absent is the graceful-degradation finding: what the rule looks for is not
// in the source at this commit.
func (p *Pass) Absent(what string) Finding {
	f := p.Finding(Unknown, "not present at this commit")
	f.Detail = fmt.Sprintf("%s absent at %s", what, short(p.Commit))
	return f
}

// Evidence builds an evidence item at pos: the excerpt is the trimmed source
// line, the permalink <upstream>/blob/<commit>/<path>#L<line>.
func (p *Pass) Evidence(pos syntax.Pos, kind, note string) Evidence {
	excerpt := ""
	if f, err := p.File(pos.Path); err == nil && f != nil {
		excerpt = strings.TrimSpace(f.Line(pos.Line))
	} else if b, err := p.Src.ReadFile(pos.Path); err == nil {
		ls := strings.Split(string(b), "\n")
		if pos.Line >= 1 && pos.Line <= len(ls) {
			excerpt = strings.TrimSpace(ls[pos.Line-1])
		}
	}
	if len(excerpt) > 160 {
		excerpt = excerpt[:157] + "..."
	}
	return Evidence{Repo: p.Impl.Upstream, Commit: p.Commit, Path: pos.Path, Line: pos.Line, Excerpt: excerpt,
		Permalink: Permalink(p.Impl.Upstream, p.Commit, pos.Path, pos.Line), Kind: kind, Note: note}
}

// Permalink is <upstream>/blob/<commit>/<path>#L<line>.
func Permalink(upstream, commit, path string, line int) string {
	return fmt.Sprintf("%s/blob/%s/%s#L%d", strings.TrimSuffix(upstream, "/"), commit, path, line)
}

// Constant builds a constant finding: expr evaluated with params through
// data.Formula.Eval, the arithmetic written out, the source position as
// evidence.
func (p *Pass) Constant(q Question, expr string, params map[string]float64, label, mechanism string, at syntax.Pos, ev ...Evidence) (Finding, error) {
	fm := data.Formula{Expr: expr, Params: params, Label: label}
	v, arith, err := fm.Eval(nil)
	if err != nil {
		return Finding{}, fmt.Errorf("%s: %w", at, err)
	}
	f := p.Finding("", mechanism)
	f.Question = q
	f.Constant = &ConstantFinding{Expr: expr, Params: params, Value: v, Arithmetic: arith, Label: label}
	f.Evidence = append([]Evidence{p.Evidence(at, "constant", "")}, ev...)
	return f, nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
