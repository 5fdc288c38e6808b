// Package syntax answers structural questions about one source file: where a
// symbol is defined, where it is really called, where it is only mentioned
// (comment, string, declaration, case label, struct field, function-pointer
// assignment, argument to a dispatcher), which fields a function assigns and
// which conditions guard a statement.
//
// Go is parsed with go/parser; C, C++, Rust and Python with tree-sitter. Both
// produce the same Index, so a rule does not care which parser ran. Every
// result carries a 1-based line in the file.
package syntax

import (
	"bytes"
	"fmt"
	"path"
	"strings"
)

// Lang is a source language.
type Lang string

const (
	Go     Lang = "go"
	C      Lang = "c"
	Cpp    Lang = "cpp"
	Rust   Lang = "rust"
	Python Lang = "python"
)

// LangOf infers the language from a file name ("" if not source).
func LangOf(name string) Lang {
	switch strings.ToLower(path.Ext(name)) {
	case ".go":
		return Go
	case ".c":
		return C
	case ".h":
		// C++ headers often use .h too; the C grammar parses the C subset
		// used by the C implementations, and C++ projects use .hpp/.h with
		// classes. Callers may override with ParseAs.
		return C
	case ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx":
		return Cpp
	case ".rs":
		return Rust
	case ".py", ".pyx", ".pyi":
		return Python
	}
	return ""
}

// Pos is a position in a file.
type Pos struct {
	Path    string `json:"path"`
	Line    int    `json:"line"`
	EndLine int    `json:"end_line,omitempty"`
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d", p.Path, p.Line) }

// DefKind says what a definition defines.
type DefKind string

const (
	DefFunction   DefKind = "function"   // function or method with a body
	DefPrototype  DefKind = "prototype"  // declaration without body (C prototype, trait/interface method)
	DefStruct     DefKind = "struct"     // struct / class / union
	DefField      DefKind = "field"      // struct field (incl. function-pointer fields)
	DefEnum       DefKind = "enum"       // enum type
	DefEnumerator DefKind = "enumerator" // enum value / variant
	DefMacro      DefKind = "macro"      // #define
	DefConst      DefKind = "const"      // const / static / Go const
	DefVar        DefKind = "var"        // variable (global or local with initializer)
	DefType       DefKind = "type"       // typedef / type alias / Go type
)

// Def is one definition or declaration of a name.
type Def struct {
	Pos
	Name string  `json:"name"`
	Kind DefKind `json:"kind"`
	// Owner is the enclosing type for methods and fields ("Path" for
	// Rust `impl Path { fn new }`, "*Connection" for a Go method, the struct
	// name for a field), "" otherwise.
	Owner string `json:"owner,omitempty"`
	// Value is the initializer / macro body / enumerator value text, if any.
	Value string `json:"value,omitempty"`
	// Body is the text of a function body ("" for prototypes); BodyStart is
	// the line where it starts.
	Body      string `json:"-"`
	BodyStart int    `json:"-"`
	// Empty is true for a function whose body holds no statement.
	Empty bool `json:"empty,omitempty"`
	// Params are a function's parameter names in order ("" for unnamed).
	Params []string `json:"params,omitempty"`
	// Test is true inside test-only code (Rust #[cfg(test)] / #[test]).
	Test bool `json:"test,omitempty"`
}

// Guard is one condition a statement is nested under, innermost first.
type Guard struct {
	Pos
	// Kind: "if" (in the then-branch of Cond), "else" (in the else-branch of
	// Cond), "case" (under case label Cond), "loop" (in a loop guarded by Cond),
	// "ternary", "match" (Rust match arm pattern Cond).
	Kind string `json:"kind"`
	Cond string `json:"cond"`
}

// Arg is one argument of a call.
type Arg struct {
	Text string `json:"text"`
	// Idents are the identifiers the argument expression mentions, in order.
	Idents []string `json:"idents,omitempty"`
}

// Call is a real call expression (not a comment, string or declaration).
type Call struct {
	Pos
	// Name is the last identifier of the callee: "alg_notify" for
	// "cnx->congestion_alg->alg_notify(...)", "MigratedPath" for
	// "s.sentPacketHandler.MigratedPath(...)", "new" for "Recovery::new(...)".
	Name string `json:"name"`
	// Callee is the full callee expression text.
	Callee string `json:"callee"`
	Args   []Arg  `json:"args"`
	// Func is the enclosing function ("" at file scope); FuncOwner its type.
	Func      string  `json:"func"`
	FuncOwner string  `json:"func_owner,omitempty"`
	Guards    []Guard `json:"guards,omitempty"`
	Text      string  `json:"text"`
	// Test is true inside test-only code (Rust #[cfg(test)] / #[test]).
	Test bool `json:"test,omitempty"`
}

// Assign is one assignment (incl. initialised declarations, compound
// assignments, struct-literal field initialisers).
type Assign struct {
	Pos
	LHS string `json:"lhs"`
	// Target is the last identifier of LHS ("cwin" for "path_x->cwin").
	Target string `json:"target"`
	Op     string `json:"op"` // "=", "+=", ":=", "init", "field"
	RHS    string `json:"rhs"`
	Func   string `json:"func"`
	// FuncOwner is the receiver/impl type of Func.
	FuncOwner string  `json:"func_owner,omitempty"`
	Guards    []Guard `json:"guards,omitempty"`
	Test      bool    `json:"test,omitempty"`
}

// MentionKind classifies one occurrence of a name.
type MentionKind string

const (
	MentionCall        MentionKind = "call"        // callee of a call expression
	MentionDefinition  MentionKind = "definition"  // name being defined (function, enumerator, struct, macro, ...)
	MentionDeclaration MentionKind = "declaration" // prototype / variable declaration, not a call
	MentionField       MentionKind = "field"       // struct field declaration
	MentionCaseLabel   MentionKind = "case_label"  // case label / match arm pattern
	MentionArgument    MentionKind = "argument"    // passed as an argument; Context is the callee
	MentionAssigned    MentionKind = "assigned"    // right-hand side / initializer (function-pointer / vtable assignment)
	MentionComment     MentionKind = "comment"
	MentionString      MentionKind = "string"
	MentionReference   MentionKind = "reference" // any other use
)

// Exit is an if statement whose then-branch leaves early (return, break,
// continue, goto): the code after it runs only when Cond is false.
type Exit struct {
	Pos
	Cond string `json:"cond"`
	// How is "return", "break", "continue" or "goto".
	How    string  `json:"how"`
	Func   string  `json:"func"`
	Guards []Guard `json:"guards,omitempty"`
}

// Mention is one occurrence of a name.
type Mention struct {
	Pos
	Name string      `json:"name"`
	Kind MentionKind `json:"kind"`
	// Context: for argument, the callee name of the call it is passed to;
	// for call, the callee text; for assigned, the left-hand side or field.
	Context  string `json:"context,omitempty"`
	ArgIndex int    `json:"arg_index,omitempty"`
	Func     string `json:"func,omitempty"`
}

// File is one parsed source file with its index.
type File struct {
	Path string
	Lang Lang
	Src  []byte

	lines    []int // byte offset of each line start
	defs     []Def
	calls    []Call
	assigns  []Assign
	exits    []Exit
	mentions map[string][]Mention // identifiers by name
	texts    []textSpan           // comments and string literals
	funcs    []Def                // functions with bodies, for FuncAt
	// Tree is the generic syntax tree for tree-sitter languages (nil for Go).
	Tree *Node
}

type textSpan struct {
	Pos
	kind MentionKind
	text string
	fn   string
}

// Parse parses src as the language of path.
func Parse(path string, src []byte) (*File, error) {
	return ParseAs(path, src, LangOf(path))
}

// ParseAs parses src as lang.
func ParseAs(path string, src []byte, lang Lang) (*File, error) {
	f := &File{Path: path, Lang: lang, Src: src, mentions: map[string][]Mention{}}
	f.lines = append(f.lines, 0)
	for i, b := range src {
		if b == '\n' {
			f.lines = append(f.lines, i+1)
		}
	}
	var err error
	switch lang {
	case Go:
		err = f.indexGo()
	case C, Cpp, Rust, Python:
		err = f.indexTS()
	default:
		return nil, fmt.Errorf("%s: no parser for this file type", path)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Line returns the text of 1-based line n without its newline.
func (f *File) Line(n int) string {
	if n < 1 || n > len(f.lines) {
		return ""
	}
	start := f.lines[n-1]
	end := len(f.Src)
	if n < len(f.lines) {
		end = f.lines[n] - 1
	}
	return strings.TrimRight(string(f.Src[start:end]), "\r")
}

// lineOf returns the 1-based line of byte offset off.
func (f *File) lineOf(off int) int {
	lo, hi := 0, len(f.lines)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if f.lines[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo + 1
}

// Defs returns the definitions of name (all kinds).
func (f *File) Defs(name string) []Def {
	var out []Def
	for _, d := range f.defs {
		if d.Name == name {
			out = append(out, d)
		}
	}
	return out
}

// AllDefs returns every definition in the file.
func (f *File) AllDefs() []Def { return f.defs }

// Enumerators returns the values of enum enum (its tag or typedef name), in
// declaration order.
func (f *File) Enumerators(enum string) []Def {
	var out []Def
	for _, d := range f.defs {
		if d.Kind == DefEnumerator && d.Owner == enum {
			out = append(out, d)
		}
	}
	return out
}

// Func returns the function (with body) named name, optionally restricted to
// owner type (match if owner is "" or equal ignoring a leading '*').
func (f *File) Func(name, owner string) (Def, bool) {
	for _, d := range f.funcs {
		if d.Name == name && (owner == "" || strings.TrimPrefix(d.Owner, "*") == strings.TrimPrefix(owner, "*")) {
			return d, true
		}
	}
	return Def{}, false
}

// Funcs returns every function with a body.
func (f *File) Funcs() []Def { return f.funcs }

// Calls returns the call expressions whose callee's last identifier is name.
func (f *File) Calls(name string) []Call {
	var out []Call
	for _, c := range f.calls {
		if c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

// AllCalls returns every call expression in the file.
func (f *File) AllCalls() []Call { return f.calls }

// CallsIn returns the calls made inside function fn.
func (f *File) CallsIn(fn string) []Call {
	var out []Call
	for _, c := range f.calls {
		if c.Func == fn {
			out = append(out, c)
		}
	}
	return out
}

// Assigns returns the assignments made inside function fn ("" = all).
func (f *File) Assigns(fn string) []Assign {
	var out []Assign
	for _, a := range f.assigns {
		if fn == "" || a.Func == fn {
			out = append(out, a)
		}
	}
	return out
}

// Exits returns the early exits in function fn ("" = all), in source order.
func (f *File) Exits(fn string) []Exit {
	var out []Exit
	for _, e := range f.exits {
		if fn == "" || e.Func == fn {
			out = append(out, e)
		}
	}
	return out
}

// Mentions returns every occurrence of name as an identifier, classified,
// plus its occurrences as a whole word inside comments and string literals.
func (f *File) Mentions(name string) []Mention {
	out := append([]Mention(nil), f.mentions[name]...)
	for _, t := range f.texts {
		if ContainsWord(t.text, name) {
			out = append(out, Mention{Pos: t.Pos, Name: name, Kind: t.kind, Func: t.fn})
		}
	}
	sortMentions(out)
	return out
}

// Comments returns the comments (and, with strings=true, string literals)
// containing sub, with their positions.
func (f *File) Comments(sub string) []Mention {
	var out []Mention
	for _, t := range f.texts {
		if t.kind == MentionComment && strings.Contains(t.text, sub) {
			out = append(out, Mention{Pos: t.Pos, Name: sub, Kind: t.kind, Func: t.fn, Context: t.text})
		}
	}
	return out
}

// FuncAt returns the innermost function whose body encloses line.
func (f *File) FuncAt(line int) (Def, bool) {
	var best Def
	found := false
	for _, d := range f.funcs {
		if d.Line <= line && line <= d.EndLine {
			if !found || d.Line >= best.Line {
				best, found = d, true
			}
		}
	}
	return best, found
}

// GuardsAt returns the guards of the first call or assignment starting on
// line (innermost first), or nil.
func (f *File) GuardsAt(line int) []Guard {
	for _, c := range f.calls {
		if c.Line == line {
			return c.Guards
		}
	}
	for _, a := range f.assigns {
		if a.Line == line {
			return a.Guards
		}
	}
	return nil
}

// ContainsWord reports whether s contains w as a whole identifier.
func ContainsWord(s, w string) bool {
	if w == "" {
		return false
	}
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		before := j == 0 || !isIdentByte(s[j-1])
		after := j+len(w) >= len(s) || !isIdentByte(s[j+len(w)])
		if before && after {
			return true
		}
		i = j + 1
	}
}

func isIdentByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

func sortMentions(m []Mention) {
	// insertion sort by line: lists are short
	for i := 1; i < len(m); i++ {
		for j := i; j > 0 && m[j].Line < m[j-1].Line; j-- {
			m[j], m[j-1] = m[j-1], m[j]
		}
	}
}

// oneLine collapses whitespace runs so multi-line expressions read as one.
func oneLine(b []byte) string {
	return strings.Join(strings.Fields(string(bytes.TrimSpace(b))), " ")
}
