package validator

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// This file and decide_<impl>.go re-decide every answer from the source at
// the pinned commit. Each implementation has one decision function that
// reads a handful of facts (is this statement in that function's body?)
// and maps them to a category; the reader below records every fact with
// its position so the check's output shows what the decision rested on.
// Nothing here comes from audit/: the facts are read with plain text
// searches over git blobs, bodies found by brace (or indentation) matching.

// Decision is one question's answer decided from source.
type Decision struct {
	Answer string
	// Roles holds per-role answers (migrating, observing) where the
	// decision distinguishes the endpoints.
	Roles map[string]string
	// Facts are the positions and observations the answer rests on.
	Facts []string
}

// decider decides Q1, Q2 and Q3 for one implementation.
type decider func(r *reader) map[string]Decision

// deciders is filled by the decide_<impl>.go files.
var deciders = map[string]decider{}

// Decide opens upstream at commit in the mirrors and runs the
// implementation's decision rule. It is exported so that a test outside the
// validator can compare the rules with the audit's at any commit.
func Decide(mirrors, impl, upstream, commit string) (map[string]Decision, error) {
	d, ok := deciders[impl]
	if !ok {
		return nil, fmt.Errorf("no decision rule for %s", impl)
	}
	t, err := openTree(mirrors, upstream, commit)
	if err != nil {
		return nil, err
	}
	return runDecider(d, t), nil
}

// DecideRepo is Decide over the clone or bare mirror at dir (what
// `migaudit audit --source DIR` reads): the independent reading at any
// commit (a full hash).
func DecideRepo(dir, impl, commit string) (map[string]Decision, error) {
	d, ok := deciders[impl]
	if !ok {
		return nil, fmt.Errorf("no decision rule for %s", impl)
	}
	t, err := openTreeAt(dir, commit)
	if err != nil {
		return nil, err
	}
	return runDecider(d, t), nil
}

// Decided lists the implementations that have a decision rule.
func Decided() []string {
	var out []string
	for k := range deciders {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func runDecider(d decider, t *sourceTree) map[string]Decision {
	r := &reader{t: t}
	out := d(r)
	for q, dec := range out {
		if dec.Answer == "" {
			dec.Answer = "UNKNOWN"
		}
		out[q] = dec
	}
	return out
}

// combineRoles is the schema's rule for per-role answers: unanimous roles
// give that answer; roles that differ give ASYMMETRIC when one complies and
// ROLE_DEPENDENT otherwise; N/A and NOT_SUPPORTED roles do not count unless
// every role is one.
func combineRoles(roles map[string]string) string {
	vals := map[string]bool{}
	all := map[string]bool{}
	for _, v := range roles {
		all[v] = true
		if v != "N/A" && v != "NOT_SUPPORTED" {
			vals[v] = true
		}
	}
	if len(vals) == 0 {
		vals = all
	}
	if len(vals) == 1 {
		for v := range vals {
			return v
		}
	}
	if vals["UNKNOWN"] {
		// An undecided role leaves a differing combination undecided.
		return "UNKNOWN"
	}
	if vals["YES"] {
		return "ASYMMETRIC"
	}
	return "ROLE_DEPENDENT"
}

// reader reads facts out of one source tree and keeps the record of what
// it found (and did not find) for the question being decided.
type reader struct {
	t     *sourceTree
	facts []string
}

// block is a span of one file: a function body or a whole file.
type block struct {
	path  string
	start int // 1-based line of the first line
	lines []string
}

func (b block) ok() bool { return len(b.lines) > 0 }

// normalised is text with every run of whitespace collapsed to one space,
// and for each byte the 1-based line it came from.
func (b block) normalised() (string, []int) {
	var sb strings.Builder
	var at []int
	space := false
	for i, l := range b.lines {
		for j := 0; j < len(l); j++ {
			c := l[j]
			if c == ' ' || c == '\t' || c == '\r' {
				space = true
				continue
			}
			if space && sb.Len() > 0 {
				sb.WriteByte(' ')
				at = append(at, b.start+i)
			}
			space = false
			sb.WriteByte(c)
			at = append(at, b.start+i)
		}
		space = true
	}
	return sb.String(), at
}

// find returns the line where needle (whitespace-normalised, may span
// lines) first occurs in the block, or 0.
func (b block) find(needle string) int {
	if !b.ok() {
		return 0
	}
	text, at := b.normalised()
	i := strings.Index(text, normSpace(needle))
	if i < 0 {
		return 0
	}
	return at[i]
}

// count returns how many times needle occurs in the block.
func (b block) count(needle string) int {
	if !b.ok() {
		return 0
	}
	text, _ := b.normalised()
	return strings.Count(text, normSpace(needle))
}

// file returns a whole file as a block (empty when absent).
func (r *reader) file(p string) block {
	lines, err := r.t.lines(p)
	if err != nil {
		return block{path: p}
	}
	return block{path: p, start: 1, lines: lines}
}

// fn returns the body of the definition introduced by def in file p: the
// first line containing def (whitespace-normalised) that opens a brace
// before any ';' ends the statement, through its matching brace. A def
// starting with "^" must begin the line (a C definition at column 0).
func (r *reader) fn(p, def string) block {
	lines, err := r.t.lines(p)
	if err != nil {
		return block{path: p}
	}
	atStart := strings.HasPrefix(def, "^")
	def = normSpace(strings.TrimPrefix(def, "^"))
	for i, l := range lines {
		n := normSpace(l)
		if atStart {
			if !strings.HasPrefix(l, def) {
				continue
			}
		} else if !strings.Contains(n, def) {
			continue
		}
		if end := braceEnd(lines, i); end >= 0 {
			return block{path: p, start: i + 1, lines: lines[i : end+1]}
		}
	}
	return block{path: p}
}

// pyfn returns a Python definition (def line through its indented body).
func (r *reader) pyfn(p, def string) block {
	lines, err := r.t.lines(p)
	if err != nil {
		return block{path: p}
	}
	for i, l := range lines {
		if !strings.Contains(l, def) || !strings.HasPrefix(strings.TrimSpace(l), "def ") && !strings.HasPrefix(strings.TrimSpace(l), "class ") {
			continue
		}
		indent := len(l) - len(strings.TrimLeft(l, " "))
		end := i
		for j := i + 1; j < len(lines); j++ {
			t := strings.TrimSpace(lines[j])
			if t == "" {
				continue
			}
			if len(lines[j])-len(strings.TrimLeft(lines[j], " ")) <= indent && !strings.HasPrefix(t, ")") {
				break
			}
			end = j
		}
		return block{path: p, start: i + 1, lines: lines[i : end+1]}
	}
	return block{path: p}
}

// braceEnd finds, from line i, the line of the brace closing the first
// block opened before a ';' (comments, strings and char literals skipped);
// -1 when a ';' comes first (a declaration or a call statement).
func braceEnd(lines []string, i int) int {
	depth, parens := 0, 0
	opened := false
	inBlock := false
	for j := i; j < len(lines) && j < i+20000; j++ {
		l := lines[j]
		for k := 0; k < len(l); k++ {
			c := l[k]
			if inBlock {
				if c == '*' && k+1 < len(l) && l[k+1] == '/' {
					inBlock = false
					k++
				}
				continue
			}
			switch {
			case c == '/' && k+1 < len(l) && l[k+1] == '/':
				k = len(l)
			case c == '/' && k+1 < len(l) && l[k+1] == '*':
				inBlock = true
				k++
			case c == '"':
				for k++; k < len(l) && l[k] != '"'; k++ {
					if l[k] == '\\' {
						k++
					}
				}
			case c == '\'':
				// a char literal ('x', '\n'); a Rust lifetime has no closing quote
				if k+2 < len(l) && l[k+2] == '\'' {
					k += 2
				} else if k+3 < len(l) && l[k+1] == '\\' && l[k+3] == '\'' {
					k += 3
				}
			case c == '(' || c == '[':
				parens++
			case c == ')' || c == ']':
				parens--
			case c == ';' && !opened && depth == 0 && parens <= 0:
				return -1
			case c == '{':
				depth++
				opened = true
			case c == '}':
				depth--
				if opened && depth == 0 {
					return j
				}
			}
		}
	}
	return -1
}

// see records a fact: at is the line where it holds (0 = it does not).
func (r *reader) see(b block, at int, what string) bool {
	if at > 0 {
		r.facts = append(r.facts, fmt.Sprintf("%s:%d %s", path.Base(b.path), at, what))
		return true
	}
	where := b.path
	if _, err := r.t.lines(b.path); err != nil {
		where += ", absent"
	}
	r.facts = append(r.facts, fmt.Sprintf("not found: %s (%s)", what, where))
	return false
}

// has records whether needle occurs in b.
func (r *reader) has(b block, needle, what string) bool { return r.see(b, b.find(needle), what) }

// body records whether the definition was found.
func (r *reader) body(b block, what string) bool {
	at := 0
	if b.ok() {
		at = b.start
	}
	return r.see(b, at, what)
}

// decide closes the record of one question.
func (r *reader) decide(answer string, roles map[string]string) Decision {
	d := Decision{Answer: answer, Roles: roles, Facts: r.facts}
	r.facts = nil
	return d
}

// anyFile returns the first of the paths present in the tree.
func (r *reader) anyFile(paths ...string) string {
	for _, p := range paths {
		if _, err := r.t.lines(p); err == nil {
			return p
		}
	}
	return paths[0]
}

// inner returns the brace block opened at the first line of b containing
// needle (an if, a case with braces, a closure), or an empty block.
func (b block) inner(needle string) block {
	at := b.find(needle)
	if at == 0 {
		return block{path: b.path}
	}
	i := at - b.start
	if end := braceEnd(b.lines, i); end >= 0 {
		return block{path: b.path, start: at, lines: b.lines[i : end+1]}
	}
	return block{path: b.path}
}

// span returns the lines of b from the one containing from up to (not
// including) the next one containing to (or the end of b).
func (b block) span(from, to string) block {
	at := b.find(from)
	if at == 0 {
		return block{path: b.path}
	}
	i := at - b.start
	j := i + 1
	for ; j < len(b.lines); j++ {
		if strings.Contains(normSpace(b.lines[j]), normSpace(to)) {
			break
		}
	}
	return block{path: b.path, start: at, lines: b.lines[i:j]}
}

func fmtInt(n int) string { return fmt.Sprint(n) }

// fnAny is fn for the first of several spellings a definition has had.
func (r *reader) fnAny(p string, defs ...string) block {
	for _, d := range defs {
		if b := r.fn(p, d); b.ok() {
			return b
		}
	}
	return block{path: p}
}
