package syntax

import (
	"fmt"
	"strings"

	sitter "github.com/tree-sitter/go-tree-sitter"
	tree_sitter_c "github.com/tree-sitter/tree-sitter-c/bindings/go"
	tree_sitter_cpp "github.com/tree-sitter/tree-sitter-cpp/bindings/go"
	tree_sitter_python "github.com/tree-sitter/tree-sitter-python/bindings/go"
	tree_sitter_rust "github.com/tree-sitter/tree-sitter-rust/bindings/go"
)

// Node is a tree-sitter node copied into Go memory, so queries do not cross
// cgo and the C tree can be freed right after parsing.
type Node struct {
	Kind       string
	Field      string // field name in the parent ("" if none)
	Named      bool
	Start, End int // byte offsets
	Line       int // 1-based start line
	EndLine    int
	Parent     *Node
	Children   []*Node
}

// Child returns the first child with field name field, or nil.
func (n *Node) Child(field string) *Node {
	if n == nil {
		return nil
	}
	for _, c := range n.Children {
		if c.Field == field {
			return c
		}
	}
	return nil
}

// Text returns n's source text.
func (f *File) Text(n *Node) string {
	if n == nil {
		return ""
	}
	return string(f.Src[n.Start:n.End])
}

// Walk calls fn for n and its descendants in source order until fn returns false
// for a node (its children are then skipped).
func (n *Node) Walk(fn func(*Node) bool) {
	if n == nil || !fn(n) {
		return
	}
	for _, c := range n.Children {
		c.Walk(fn)
	}
}

// Find returns the descendants of n (incl. n) of kind kind.
func (n *Node) Find(kind string) []*Node {
	var out []*Node
	n.Walk(func(x *Node) bool {
		if x.Kind == kind {
			out = append(out, x)
		}
		return true
	})
	return out
}

func languageFor(l Lang) *sitter.Language {
	switch l {
	case C:
		return sitter.NewLanguage(tree_sitter_c.Language())
	case Cpp:
		return sitter.NewLanguage(tree_sitter_cpp.Language())
	case Rust:
		return sitter.NewLanguage(tree_sitter_rust.Language())
	case Python:
		return sitter.NewLanguage(tree_sitter_python.Language())
	}
	return nil
}

func (f *File) indexTS() error {
	p := sitter.NewParser()
	defer p.Close()
	if err := p.SetLanguage(languageFor(f.Lang)); err != nil {
		return fmt.Errorf("%s: tree-sitter %s: %w", f.Path, f.Lang, err)
	}
	tree := p.Parse(f.Src, nil)
	if tree == nil {
		return fmt.Errorf("%s: tree-sitter %s parse failed", f.Path, f.Lang)
	}
	defer tree.Close()
	f.Tree = copyTree(tree)
	ix := tsIndexer{f: f}
	ix.walk(f.Tree, tsCtx{})
	return nil
}

// copyTree copies the tree with a cursor (one cgo call per step).
func copyTree(t *sitter.Tree) *Node {
	cur := t.Walk()
	defer cur.Close()
	mk := func(parent *Node) *Node {
		n := cur.Node()
		sp, ep := n.StartPosition(), n.EndPosition()
		x := &Node{Kind: n.Kind(), Field: cur.FieldName(), Named: n.IsNamed(),
			Start: int(n.StartByte()), End: int(n.EndByte()),
			Line: int(sp.Row) + 1, EndLine: int(ep.Row) + 1, Parent: parent}
		if parent != nil {
			parent.Children = append(parent.Children, x)
		}
		return x
	}
	root := mk(nil)
	cur2 := root
	for {
		if cur.GotoFirstChild() {
			cur2 = mk(cur2)
			continue
		}
		for {
			if cur.GotoNextSibling() {
				cur2 = mk(cur2.Parent)
				break
			}
			if !cur.GotoParent() {
				return root
			}
			cur2 = cur2.Parent
		}
	}
}

type tsCtx struct {
	fn, owner string
	guards    []Guard
	test      bool
}

func (c tsCtx) with(g Guard) tsCtx {
	gs := make([]Guard, 0, len(c.guards)+1)
	gs = append(gs, g)
	gs = append(gs, c.guards...)
	c.guards = gs
	return c
}

type tsIndexer struct{ f *File }

var identKinds = map[string]bool{
	"identifier": true, "field_identifier": true, "type_identifier": true,
	"statement_identifier": true, "namespace_identifier": true,
}

// namedIndex is child's position among parent's named children, comments
// not counted (an argument's index, a positional initializer's).
func namedIndex(parent, child *Node) int {
	idx := 0
	for _, a := range parent.Children {
		if a == child {
			break
		}
		if a.Named && !isCommentKind(a.Kind) {
			idx++
		}
	}
	return idx
}

func isCommentKind(k string) bool {
	return k == "comment" || k == "line_comment" || k == "block_comment"
}

func isStringKind(k string) bool {
	switch k {
	case "string_literal", "raw_string_literal", "char_literal", "string", "concatenated_string":
		return true
	}
	return false
}

func (ix *tsIndexer) pos(n *Node) Pos {
	return Pos{Path: ix.f.Path, Line: n.Line, EndLine: n.EndLine}
}

func (ix *tsIndexer) walk(n *Node, ctx tsCtx) {
	f := ix.f
	switch {
	case isCommentKind(n.Kind):
		f.texts = append(f.texts, textSpan{Pos: ix.pos(n), kind: MentionComment, text: f.Text(n), fn: ctx.fn})
		return
	case isStringKind(n.Kind):
		f.texts = append(f.texts, textSpan{Pos: ix.pos(n), kind: MentionString, text: f.Text(n), fn: ctx.fn})
		return
	case identKinds[n.Kind] && len(n.Children) == 0:
		name := f.Text(n)
		m := ix.classify(n)
		m.Pos, m.Name, m.Func = ix.pos(n), name, ctx.fn
		f.mentions[name] = append(f.mentions[name], m)
		return
	}
	if f.Lang == Rust && (n.Kind == "mod_item" || n.Kind == "function_item" || n.Kind == "impl_item") && rustTestOnly(f, n) {
		ctx.test = true
	}
	ix.define(n, &ctx)
	ix.record(n, ctx)
	for _, c := range n.Children {
		ix.walk(c, ix.childCtx(n, c, ctx))
	}
}

// define records definitions and updates ctx when entering a function;
// the kinds of each language are read in treesitter_<lang>.go.
func (ix *tsIndexer) define(n *Node, ctx *tsCtx) {
	f := ix.f
	d := definer{ix: ix, n: n, ctx: ctx}
	switch f.Lang {
	case C, Cpp:
		d.c()
	case Rust:
		d.rust()
	case Python:
		d.python()
	}
}

// definer records the definitions node n makes (one per language file).
type definer struct {
	ix  *tsIndexer
	n   *Node
	ctx *tsCtx
}

// add records a definition named by nameNode.
func (d definer) add(nameNode *Node, kind DefKind, owner, value string) {
	if nameNode == nil {
		return
	}
	f := d.ix.f
	f.defs = append(f.defs, Def{Pos: Pos{Path: f.Path, Line: nameNode.Line, EndLine: d.n.EndLine}, Name: lastIdent(f.Text(nameNode)), Kind: kind, Owner: owner, Value: value, Test: d.ctx.test})
}

// addFunc records a function (a prototype without body) and enters it.
func (d definer) addFunc(nameNode, body *Node, owner string) {
	if nameNode == nil {
		return
	}
	f := d.ix.f
	def := Def{Pos: Pos{Path: f.Path, Line: nameNode.Line, EndLine: d.n.EndLine}, Name: lastIdent(f.Text(nameNode)), Kind: DefFunction, Owner: owner, Params: params(f, d.n), Test: d.ctx.test}
	if body != nil {
		def.Body, def.BodyStart = f.Text(body), body.Line
		def.Empty = isEmptyBody(body)
	} else {
		def.Kind = DefPrototype
	}
	f.defs = append(f.defs, def)
	if body != nil {
		f.funcs = append(f.funcs, def)
		d.ctx.fn, d.ctx.owner, d.ctx.guards = def.Name, owner, nil
	}
}

// record records calls and assignments.
func (ix *tsIndexer) record(n *Node, ctx tsCtx) {
	f := ix.f
	switch n.Kind {
	case "call_expression", "call":
		fn := n.Child("function")
		if fn == nil {
			return
		}
		c := Call{Pos: ix.pos(n), Callee: oneLine([]byte(f.Text(fn))), Func: ctx.fn, FuncOwner: ctx.owner, Guards: ctx.guards, Text: oneLine([]byte(f.Text(n))), Test: ctx.test}
		c.Name = calleeName(f, fn)
		if args := n.Child("arguments"); args != nil {
			for _, a := range args.Children {
				if !a.Named || isCommentKind(a.Kind) {
					continue
				}
				c.Args = append(c.Args, Arg{Text: oneLine([]byte(f.Text(a))), Idents: idents(f, a)})
			}
		}
		f.calls = append(f.calls, c)
	case "macro_invocation":
		m := n.Child("macro")
		if m != nil {
			f.calls = append(f.calls, Call{Pos: ix.pos(n), Name: lastIdent(f.Text(m)) + "!", Callee: f.Text(m) + "!", Func: ctx.fn, FuncOwner: ctx.owner, Guards: ctx.guards, Text: oneLine([]byte(f.Text(n))), Test: ctx.test})
		}
	case "assignment_expression", "compound_assignment_expr", "assignment", "augmented_assignment":
		l, r := n.Child("left"), n.Child("right")
		op := "="
		if o := n.Child("operator"); o != nil {
			op = f.Text(o)
		} else {
			for _, c := range n.Children {
				if !c.Named && strings.HasSuffix(f.Text(c), "=") {
					op = f.Text(c)
					break
				}
			}
		}
		ix.addAssign(n, l, r, op, ctx)
	case "init_declarator":
		ix.addAssign(n, declName(n.Child("declarator")), n.Child("value"), "init", ctx)
	case "let_declaration":
		if n.Child("value") != nil {
			ix.addAssign(n, n.Child("pattern"), n.Child("value"), "init", ctx)
		}
	case "field_initializer":
		// Rust struct literal `Recovery { cwnd: x, .. }`: owner is the struct name.
		ix.addAssign(n, n.Child("field"), n.Child("value"), "field", ctx)
	case "initializer_pair":
		ix.addAssign(n, n.Child("designator"), n.Child("value"), "field", ctx)
	case "update_expression":
		ix.addAssign(n, n.Child("argument"), nil, "++", ctx)
	case "if_statement", "if_expression":
		if how := exitKind(n.Child("consequence")); how != "" {
			f.exits = append(f.exits, Exit{Pos: ix.pos(n), Cond: oneLine([]byte(f.Text(n.Child("condition")))), How: how, Func: ctx.fn, Guards: ctx.guards})
		}
	}
}

// exitKind says how a branch leaves: its last statement is a return,
// break, continue or goto.
func exitKind(b *Node) string {
	if b == nil {
		return ""
	}
	last := b
	if b.Kind == "compound_statement" || b.Kind == "block" {
		last = nil
		for _, c := range b.Children {
			if c.Named && !isCommentKind(c.Kind) {
				last = c
			}
		}
		if last == nil {
			return ""
		}
		if last.Kind == "expression_statement" && len(last.Children) > 0 {
			last = last.Children[0]
		}
	}
	switch last.Kind {
	case "return_statement", "return_expression":
		return "return"
	case "break_statement", "break_expression":
		return "break"
	case "continue_statement", "continue_expression":
		return "continue"
	case "goto_statement":
		return "goto"
	}
	return ""
}

func (ix *tsIndexer) addAssign(n, l, r *Node, op string, ctx tsCtx) {
	if l == nil {
		return
	}
	f := ix.f
	lhs := oneLine([]byte(f.Text(l)))
	f.assigns = append(f.assigns, Assign{Pos: ix.pos(n), LHS: lhs, Target: lastIdent(lhs), Op: op,
		RHS: oneLine([]byte(f.Text(r))), Func: ctx.fn, FuncOwner: ctx.owner, Guards: ctx.guards, Test: ctx.test})
}

// childCtx pushes the guard that child c of n is under.
func (ix *tsIndexer) childCtx(n, c *Node, ctx tsCtx) tsCtx {
	f := ix.f
	cond := func() string {
		if x := n.Child("condition"); x != nil {
			return oneLine([]byte(f.Text(x)))
		}
		return ""
	}
	switch n.Kind {
	case "if_statement", "if_expression", "elif_clause":
		switch c.Field {
		case "consequence":
			return ctx.with(Guard{Pos: ix.pos(n), Kind: "if", Cond: cond()})
		case "alternative":
			return ctx.with(Guard{Pos: ix.pos(n), Kind: "else", Cond: cond()})
		}
	case "conditional_expression":
		switch c.Field {
		case "consequence":
			return ctx.with(Guard{Pos: ix.pos(n), Kind: "ternary", Cond: cond()})
		case "alternative":
			return ctx.with(Guard{Pos: ix.pos(n), Kind: "else", Cond: cond()})
		}
	case "while_statement", "for_statement", "while_expression", "do_statement":
		if c.Field == "body" {
			return ctx.with(Guard{Pos: ix.pos(n), Kind: "loop", Cond: cond()})
		}
	case "case_statement":
		if c.Field != "value" && c.Named {
			v := "default"
			if x := n.Child("value"); x != nil {
				v = oneLine([]byte(f.Text(x)))
			}
			return ctx.with(Guard{Pos: ix.pos(n), Kind: "case", Cond: v})
		}
	case "match_arm":
		if c.Field == "value" {
			return ctx.with(Guard{Pos: ix.pos(n), Kind: "match", Cond: oneLine([]byte(f.Text(n.Child("pattern"))))})
		}
	case "case_clause":
		if c.Field == "consequence" || c.Kind == "block" {
			var pats []string
			for _, x := range n.Children {
				if x.Kind == "case_pattern" {
					pats = append(pats, f.Text(x))
				}
			}
			return ctx.with(Guard{Pos: ix.pos(n), Kind: "case", Cond: strings.Join(pats, ", ")})
		}
	}
	return ctx
}

// classify decides what kind of occurrence identifier leaf n is.
func (ix *tsIndexer) classify(n *Node) Mention {
	f := ix.f
	p := n.Parent
	if p == nil {
		return Mention{Kind: MentionReference}
	}
	// Callee: the identifier itself, or the last segment of a member/path expression.
	callee := n
	if (p.Kind == "field_expression" && n.Field == "field") || (p.Kind == "scoped_identifier" && n.Field == "name") ||
		(p.Kind == "attribute" && n.Field == "attribute") || (p.Kind == "qualified_identifier" && n.Field == "name") {
		callee = p
	}
	if gp := callee.Parent; gp != nil && (gp.Kind == "call_expression" || gp.Kind == "call") && callee.Field == "function" {
		return Mention{Kind: MentionCall, Context: oneLine([]byte(f.Text(callee)))}
	}
	if callee.Parent != nil && callee.Parent.Kind == "generic_function" && callee.Parent.Parent != nil && callee.Parent.Parent.Kind == "call_expression" {
		return Mention{Kind: MentionCall, Context: oneLine([]byte(f.Text(callee)))}
	}
	// Definitions and declarations.
	if n.Field == "name" {
		switch p.Kind {
		case "function_item", "struct_item", "enum_item", "enum_variant", "enumerator", "preproc_def", "preproc_function_def",
			"const_item", "static_item", "macro_definition", "type_item", "trait_item", "union_item",
			"function_definition", "class_definition", "struct_specifier", "enum_specifier", "class_specifier", "union_specifier", "mod_item":
			return Mention{Kind: MentionDefinition}
		case "function_signature_item":
			return Mention{Kind: MentionDeclaration}
		case "field_declaration":
			return Mention{Kind: MentionField}
		}
	}
	top := n
	for top.Parent != nil && isDeclaratorKind(top.Parent.Kind) {
		top = top.Parent
	}
	if top != n || n.Field == "declarator" {
		if q := top.Parent; q != nil && top.Field == "declarator" {
			switch q.Kind {
			case "function_definition":
				return Mention{Kind: MentionDefinition}
			case "field_declaration":
				if top.Kind == "function_declarator" && n.Parent == top {
					return Mention{Kind: MentionDeclaration} // C++ method declared in its class
				}
				return Mention{Kind: MentionField}
			case "declaration", "parameter_declaration", "type_definition":
				if q.Kind == "type_definition" {
					return Mention{Kind: MentionDefinition}
				}
				return Mention{Kind: MentionDeclaration}
			}
		}
	}
	// Ascend through expressions to the construct that gives the role.
	child := n
	for q := p; q != nil; q = q.Parent {
		switch q.Kind {
		case "case_statement":
			if child.Field == "value" {
				return Mention{Kind: MentionCaseLabel}
			}
			return Mention{Kind: MentionReference}
		case "match_arm":
			if child.Field == "pattern" {
				return Mention{Kind: MentionCaseLabel}
			}
			return Mention{Kind: MentionReference}
		case "case_clause", "case_pattern":
			return Mention{Kind: MentionCaseLabel}
		case "arguments", "argument_list":
			call := q.Parent
			if call != nil && (call.Kind == "call_expression" || call.Kind == "call") {
				return Mention{Kind: MentionArgument, Context: calleeName(f, call.Child("function")), ArgIndex: namedIndex(q, child)}
			}
			return Mention{Kind: MentionReference}
		case "assignment_expression", "assignment":
			if child.Field == "right" {
				return Mention{Kind: MentionAssigned, Context: oneLine([]byte(f.Text(q.Child("left"))))}
			}
			return Mention{Kind: MentionReference}
		case "init_declarator":
			if child.Field == "value" {
				return Mention{Kind: MentionAssigned, Context: f.Text(declName(q.Child("declarator")))}
			}
			return Mention{Kind: MentionReference}
		case "initializer_list", "initializer_pair", "field_initializer":
			return Mention{Kind: MentionAssigned, Context: initializerContext(f, q, child)}
		}
		if strings.HasSuffix(q.Kind, "statement") || q.Kind == "compound_statement" || q.Kind == "block" ||
			q.Kind == "function_definition" || q.Kind == "translation_unit" || q.Kind == "source_file" ||
			q.Kind == "declaration" || q.Kind == "let_declaration" || q.Kind == "expression_statement" || q.Kind == "module" {
			break
		}
		child = q
	}
	return Mention{Kind: MentionReference}
}

// calleeName is the last identifier of a callee expression.
func calleeName(f *File, fn *Node) string {
	if fn == nil {
		return ""
	}
	switch fn.Kind {
	case "field_expression":
		if x := fn.Child("field"); x != nil {
			return f.Text(x)
		}
	case "scoped_identifier", "qualified_identifier":
		if x := fn.Child("name"); x != nil {
			return calleeName(f, x)
		}
	case "attribute":
		if x := fn.Child("attribute"); x != nil {
			return f.Text(x)
		}
	case "generic_function":
		return calleeName(f, fn.Child("function"))
	case "parenthesized_expression":
		for _, c := range fn.Children {
			if c.Named {
				return calleeName(f, c)
			}
		}
	case "pointer_expression":
		return calleeName(f, fn.Child("argument"))
	}
	return lastIdent(f.Text(fn))
}

func idents(f *File, n *Node) []string {
	var out []string
	n.Walk(func(x *Node) bool {
		if identKinds[x.Kind] && len(x.Children) == 0 {
			out = append(out, f.Text(x))
		}
		return !isStringKind(x.Kind) && !isCommentKind(x.Kind)
	})
	return out
}

// lastIdent returns the last identifier in s ("cwin" for "path_x->cwin").
func lastIdent(s string) string {
	end := len(s)
	for end > 0 && !isIdentByte(s[end-1]) {
		end--
	}
	start := end
	for start > 0 && isIdentByte(s[start-1]) {
		start--
	}
	return s[start:end]
}

func isEmptyBody(body *Node) bool {
	for _, c := range body.Children {
		if c.Named && !isCommentKind(c.Kind) {
			return false
		}
	}
	return true
}

// enumOwner names the enum an enumerator belongs to: the enum's tag, else
// the typedef name of an anonymous enum.
func enumOwner(f *File, n *Node) string {
	for p := n.Parent; p != nil; p = p.Parent {
		switch p.Kind {
		case "enum_specifier", "enum_item":
			if nm := p.Child("name"); nm != nil {
				return f.Text(nm)
			}
			if td := p.Parent; td != nil && td.Kind == "type_definition" {
				return f.Text(declName(td.Child("declarator")))
			}
			return ""
		}
	}
	return ""
}

// params lists the parameter names of a function node.
func params(f *File, fn *Node) []string {
	var plist *Node
	switch f.Lang {
	case C, Cpp:
		for d := fn.Child("declarator"); d != nil; d = d.Child("declarator") {
			if d.Kind == "function_declarator" {
				plist = d.Child("parameters")
				break
			}
		}
	default:
		plist = fn.Child("parameters")
	}
	if plist == nil {
		return nil
	}
	var out []string
	for _, c := range plist.Children {
		if !c.Named || isCommentKind(c.Kind) {
			continue
		}
		switch c.Kind {
		case "parameter_declaration", "optional_parameter_declaration":
			out = append(out, f.Text(declName(c.Child("declarator"))))
		case "parameter":
			out = append(out, lastIdent(f.Text(c.Child("pattern"))))
		case "self_parameter":
			out = append(out, "self")
		case "identifier":
			out = append(out, f.Text(c))
		case "typed_parameter", "default_parameter", "typed_default_parameter":
			nm := c.Child("name")
			if nm == nil {
				for _, x := range c.Children {
					if x.Kind == "identifier" {
						nm = x
						break
					}
				}
			}
			out = append(out, f.Text(nm))
		}
	}
	return out
}
