package query

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/syntax"
)

// Roles of a finding: the endpoint that moves, the one that sees its peer
// move, and the combined answer the compliance table reads.
const (
	Migrating = "migrating"
	Observing = "observing"
	Both      = "both"
)

// Rule is one audit check written as facts and a decision: the files it
// reads and the definitions it rests on are declared, so the engine reads
// them once and reports "<anchor> absent at <commit>" itself; Decide sees
// only a source in which every declared anchor exists.
type Rule struct {
	// Name is unique within an implementation, e.g. "quinn/q2".
	Name string
	// Doc says what the rule establishes and how.
	Doc string
	// Question is the question the rule's findings answer.
	Question audit.Question
	// Role is the role of the rule's principal finding (Both for a
	// question's combined answer, "" for a supporting finding); the absent
	// finding carries it.
	Role string

	// Files are the globs the rule reads ("**" = any depth). Test files
	// (IsTest) are dropped unless KeepTests.
	Files     []string
	KeepTests bool
	// Lang forces a language for C sources (Cpp: a C++ project's .h files).
	Lang syntax.Lang
	// Needs are the definitions the decision rests on. Any one absent and
	// Decide does not run: the rule reports them absent at the commit.
	Needs []Anchor

	// Decide is the rule's decision over the facts. What it finds missing
	// beyond Needs (Find false, Missing) is reported after its findings.
	Decide func(*Code) ([]audit.Finding, error)
}

// Register adds rules for the implementation named impl (as in
// data/implementations.json). Call it from an init function in audit/rules.
func Register(impl string, rules ...*Rule) {
	var rs []*audit.Rule
	for _, r := range rules {
		rs = append(rs, r.Audit())
	}
	audit.Register(impl, rs...)
}

// Audit is the engine's view of the rule: read the files, resolve the
// anchors, report what is absent, else decide.
func (r *Rule) Audit() *audit.Rule {
	return &audit.Rule{Name: r.Name, Doc: r.Doc, Question: r.Question, Run: func(p *audit.Pass) (out []audit.Finding, err error) {
		c, err := open(p, r.Lang, r.KeepTests, r.Files...)
		if err != nil {
			return nil, err
		}
		c.needs = r.Needs
		for _, a := range r.Needs {
			c.Def(a)
		}
		if len(c.missing) > 0 {
			return []audit.Finding{c.absentAs(r.Question, r.Role)}, nil
		}
		defer func() {
			// Whatever the decision met missing (a Find that failed, a
			// Missing) is reported once, after what it could decide; a
			// decision that then failed on a zero Def ends there.
			if len(c.missing) > 0 {
				if recover() != nil {
					out, err = nil, nil
				}
				out = append(out, c.absentAs(r.Question, r.Role))
			}
		}()
		return r.Decide(c)
	}}
}

// Anchor names one definition a decision rests on.
type Anchor struct {
	kind              anchorKind
	Path, Owner, Name string
}

type anchorKind int

const (
	anyFunc  anchorKind = iota // a function with a body, first in file order
	method                     // owner's function (owner "" = any), first file that has it
	funcIn                     // in one file; C bodies the grammar could not delimit found by text
	freeFunc                   // a function without an owner type, in one file
	constant                   // macro, const, static or module assignment with a value
)

// Func is the first function with a body named name in the rule's files.
func Func(name string) Anchor { return Anchor{kind: anyFunc, Name: name} }

// Method is owner's function name (impl type, receiver, class).
func Method(owner, name string) Anchor { return Anchor{kind: method, Owner: owner, Name: name} }

// FuncIn is the function name (of owner, "" = any) in file path.
func FuncIn(path, name, owner string) Anchor {
	return Anchor{kind: funcIn, Path: path, Owner: owner, Name: name}
}

// FreeFuncIn is the function name with no owner type in file path.
func FreeFuncIn(path, name string) Anchor { return Anchor{kind: freeFunc, Path: path, Name: name} }

// Const is a constant, macro or static with a value (a Python module-level
// assignment counts).
func Const(name string) Anchor { return Anchor{kind: constant, Name: name} }

// String is how an absent anchor is reported.
func (a Anchor) String() string {
	switch a.kind {
	case method:
		if a.Owner != "" {
			return "function " + a.Owner + "::" + a.Name
		}
	case funcIn:
		return fmt.Sprintf("function %s in %s", a.Name, a.Path)
	case freeFunc:
		return fmt.Sprintf("free function %s in %s", a.Name, a.Path)
	case constant:
		return "const " + a.Name
	}
	return "function " + a.Name
}

// IsTest reports whether path is test, mock or unit-test code: rules count
// production code only.
func IsTest(path string) bool {
	l := strings.ToLower(path)
	for _, s := range []string{"/test/", "/tests/", "/testing/", "/unittest/", "/mocks/", "/mock_"} {
		if strings.Contains(l, s) {
			return true
		}
	}
	for _, s := range []string{"/tests.rs", "_test.go", "test.cpp", "test.py"} {
		if strings.HasSuffix(l, s) {
			return true
		}
	}
	return strings.HasPrefix(l, "test/") || strings.HasPrefix(l, "tests/")
}

// Join concatenates anchor lists into a fresh one (a rule's Needs from the
// Needs of the role readers it calls).
func Join(lists ...[]Anchor) []Anchor {
	var out []Anchor
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
