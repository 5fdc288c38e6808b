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

	// Design names the code shape the rule's reading assumes ("ResetForPathMigration
	// stores DefaultInitialRTT"); set on the alternatives given to Choose.
	Design string
	// designs are the alternatives of a rule built by Choose.
	designs []*Rule
}

// Choose is one rule over an implementation whose design changed: each
// alternative declares the anchors of the design it reads (Needs), and at a
// commit the first alternative whose anchors all exist decides. When none
// fits, the finding is UNKNOWN naming, per design, what is absent: the
// reading never runs on a shape it was not written for. Name, Doc, Question
// and Role are the first alternative's.
func Choose(designs ...*Rule) *Rule {
	first := designs[0]
	doc := first.Doc
	for _, d := range designs[1:] {
		doc += " Alternative design (" + d.Design + "): " + d.Doc
	}
	return &Rule{Name: first.Name, Doc: doc, Question: first.Question, Role: first.Role, designs: designs}
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
	return &audit.Rule{Name: r.Name, Doc: r.Doc, Question: r.Question, Run: r.run}
}

func (r *Rule) run(p *audit.Pass) ([]audit.Finding, error) {
	if len(r.designs) == 0 {
		c, err := r.fit(p)
		if err != nil {
			return nil, err
		}
		if len(c.missing) > 0 {
			return []audit.Finding{c.absentAs(r.Question, r.Role)}, nil
		}
		return r.decide(c)
	}
	var why []string
	for _, d := range r.designs {
		c, err := d.fit(p)
		if err != nil {
			return nil, err
		}
		if len(c.missing) == 0 {
			return d.decide(c)
		}
		why = append(why, fmt.Sprintf("design %q: %s absent", d.Design, strings.Join(c.missing, ", ")))
	}
	f := p.Finding(audit.Unknown, "no design the rule knows fits this commit")
	f.Question, f.Role = r.Question, r.Role
	f.Detail = strings.Join(why, "; ") + " at " + p.Commit[:min(12, len(p.Commit))]
	return []audit.Finding{f}, nil
}

// fit reads the rule's files and resolves its Needs; c.missing lists the
// absent ones.
func (r *Rule) fit(p *audit.Pass) (*Code, error) {
	c, err := open(p, r.Lang, r.KeepTests, r.Files...)
	if err != nil {
		return nil, err
	}
	c.needs = r.Needs
	for _, a := range r.Needs {
		c.Def(a)
	}
	return c, nil
}

func (r *Rule) decide(c *Code) (out []audit.Finding, err error) {
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
}

// Anchor names one definition a decision rests on.
type Anchor struct {
	kind              anchorKind
	Path, Owner, Name string
	// hint says, when the anchor is absent, where the thing may have gone
	// ("a renamed type may hold it").
	hint string
}

// Hint returns the anchor with a reason reported alongside its absence.
func (a Anchor) Hint(h string) Anchor { a.hint = h; return a }

type anchorKind int

const (
	anyFunc    anchorKind = iota // a function with a body, first in file order
	method                       // owner's function (owner "" = any), first file that has it
	funcIn                       // in one file; C bodies the grammar could not delimit found by text
	freeFunc                     // a function without an owner type, in one file
	constant                     // macro, const, static or module assignment with a value
	typ                          // struct, class, enum, typedef or type alias
	field                        // a field of a struct (owner "" = any)
	enumerator                   // an enum value or variant (owner = enum, "" = any)
)

// Type is a struct, class, enum or type definition named name.
func Type(name string) Anchor { return Anchor{kind: typ, Name: name} }

// Field is the field name of struct owner ("" = any struct).
func Field(owner, name string) Anchor { return Anchor{kind: field, Owner: owner, Name: name} }

// Enumerator is the enum value or variant name (of enum owner, "" = any).
func Enumerator(owner, name string) Anchor {
	return Anchor{kind: enumerator, Owner: owner, Name: name}
}

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
	s := a.what()
	if a.hint != "" {
		s += " (" + a.hint + ")"
	}
	return s
}

func (a Anchor) what() string {
	switch a.kind {
	case typ:
		return "type " + a.Name
	case field:
		if a.Owner != "" {
			return "field " + a.Owner + "." + a.Name
		}
		return "field " + a.Name
	case enumerator:
		if a.Owner != "" {
			return "enumerator " + a.Owner + "::" + a.Name
		}
		return "enumerator " + a.Name
	case method:
		if a.Owner != "" {
			return "function " + strings.ReplaceAll(a.Owner, "|", " / ") + "::" + a.Name
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
