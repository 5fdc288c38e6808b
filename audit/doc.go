// Package audit answers the three migration questions (Q1/Q2/Q3, see
// finding.go) and reads the discriminator constants from an implementation's
// source at an exact commit, with positions a maintainer can click.
//
// # Layout
//
//	audit          engine: Rule, Pass, Source, Register, Run, Finding/Evidence, CLI work (Command, Diff)
//	audit/gitsrc   go-git: open --source / $MIGAUDIT_MIRRORS / cached clone; resolve a rev; read blobs at a commit
//	audit/syntax   parsed files: definitions, call sites, classified mentions, assignments, guards
//	audit/query    the rule toolkit: a rule declares its files and anchors, decides over a query API
//	audit/rules    one file per implementation (picoquic.go, quicgo.go, ...) registering its rules
//
// # Engine API (stable; extend compatibly)
//
// A rule is a value:
//
//	type Rule struct {
//		Name     string                      // "<impl>/<what>", unique per implementation
//		Doc      string                      // what it establishes and how
//		Question Question                    // Q1, Q2, Q3, ConstInitialWindow, ConstMinWindow, ConstLossFactor, ConstDefaultRTT
//		Run      func(*Pass) ([]Finding, error)
//	}
//
// The rules in audit/rules are written with audit/query, which builds this
// value from declared facts (files, anchors) and a decision, reads the files
// and reports absent anchors once; see its package doc for a worked rule.
// Register them from an init function in audit/rules/<impl>.go:
//
//	func init() { query.Register("quinn", quinnQ1, quinnQ2, quinnQ3, quinnConstants) }
//
// The implementation name is the "name" in data/implementations.json
// (case-insensitive, "-" ignored). Run(ctx, impl, src) runs every registered
// rule over one Source (a commit); Audit(ctx, impl, sourceDir, rev) locates
// the repository and runs them; Command/Diff are the CLI's work functions.
//
// A rule reads source only through its *Pass:
//
//	p.Impl, p.Commit                 the pin and the commit actually read (differs from the pin with --commit)
//	p.File(path)                     parsed file at the commit; IsNotExist(err) when absent
//	p.FileAs(path, syntax.Cpp)       force a language (C++ headers named .h)
//	p.Files("quinn-proto/src/**/*.rs") parsed files matching globs ("**" = any depth; a bare dir = recursive)
//	p.Src.ReadFile / p.Src.Files     raw bytes and path lists
//	p.Finding(answer, mechanism)     a Finding with Impl, Rule, Question filled in, Counts map ready
//	p.Absent("symbol X")             the graceful-degradation finding (Answer UNKNOWN, "X absent at <commit>")
//	p.Evidence(pos, kind, note)      Evidence with excerpt (trimmed source line) and permalink
//	                                 <upstream>/blob/<commit>/<path>#L<line>
//	p.Constant(q, expr, params, label, mechanism, pos)
//	                                 a constant finding, evaluated with data.Formula.Eval (arithmetic shown)
//
// audit.Set ([]*syntax.File) queries several files at once: Calls(name),
// Defs(name), Funcs(name), Mentions(name), File(path). audit.Count tallies
// mentions by kind.
//
// Parsed files (package syntax) answer structural questions; all results
// carry Pos{Path, Line}:
//
//	f.Defs(name)        []Def: function (with Body, Empty), prototype, struct, field, enum, enumerator, macro, const, var, type;
//	                    Owner = receiver / impl type / struct; Value = initializer / macro body
//	f.Func(name, owner) the function with a body
//	f.Calls(name)       []Call: REAL call expressions whose callee's last identifier is name
//	                    (never comments, strings, prototypes); Callee text, Args (Text, Idents),
//	                    enclosing Func/FuncOwner, Guards (innermost first)
//	f.AllCalls(), f.CallsIn(fn)
//	f.Mentions(name)    every occurrence, classified: call, definition, declaration, field, case_label,
//	                    argument (Context = callee, ArgIndex), assigned (function-pointer / vtable
//	                    initialiser; Context = LHS or field or "[i]"), comment, string, reference
//	f.Assigns(fn)       []Assign in function fn ("" = all): LHS, Target (last ident), Op, RHS, Guards
//	f.Exits(fn)         []Exit: if-statements whose then-branch returns/breaks/continues (early exits:
//	                    "the code after this runs only if !Cond"), with Cond and Guards
//	f.Enumerators(enum) enum values by tag or typedef name, in order
//	f.FuncAt(line), f.GuardsAt(line), f.Comments(substr), f.Line(n)
//	Def.Params          parameter names; Call.Test / Def.Test / Assign.Test: inside Rust #[cfg(test)]/#[test]
//	f.Tree              generic tree-sitter tree (nil for Go) for anything else: Node.Find(kind), Walk, Child(field)
//
// Guard kinds: "if" (then-branch of Cond), "else", "case" (Cond = label),
// "loop", "ternary", "match" (Rust arm pattern).
//
// # Writing a rule
//
// See package audit/query: a Rule there names its files and the definitions
// it rests on, and its Decide reads a *query.Code (calls with guards,
// assignments, conditions, constants with formula and position) and returns
// findings built with the constructors below.
//
// # Traps the syntax layer handles (tested in audit/traps_test.go)
//
// A hook with handlers but no callers; a "call" only in a comment or string;
// a prototype or declaration that is not a call; a dispatch through a
// function pointer with an enum argument (count Calls of the field name and
// read Args[i].Idents); a name as a case label.
//
// # Findings
//
// Role: each question's combined answer has Role "both"; when the endpoints
// differ add one finding per role ("migrating", "observing"); supporting
// findings (a hook, a helper's behaviour) have Role "" — a hook finding
// carries Counts "implementations" and "call_sites" (call_sites 0 = dead hook,
// answer INERT). Counts are the tallies the answer rests on; they are compared by
// `migaudit audit diff`. Run fills Impl, Rule and Question if a rule leaves
// them empty, turns a rule error or panic into an UNKNOWN finding, and goes on
// with the other rules.
//
// # Constants
//
// Constant rules return findings with Question ConstInitialWindow,
// ConstMinWindow, ConstLossFactor or ConstDefaultRTT (µs) built with
// p.Constant; `migaudit audit --impl X --write-constants` turns them into
// data/constants/<name>.json (data.Constants, provenance "audit <commit>")
// via ConstantsFrom. Several ConstInitialWindow findings are allowed (picoquic
// and msquic have two); give each a Label. Set ConstantFinding.Alternative for
// a value reported for context only (not written), and ConstantFinding.Provenance
// when the value is carried from elsewhere because source has no expression for
// it (the finding's Detail must say so). Name formula parameters after what a
// run can report (S = datagram payload size, MTU = path MTU).
package audit
