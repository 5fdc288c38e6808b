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

// define records definitions and updates ctx when entering a function.
func (ix *tsIndexer) define(n *Node, ctx *tsCtx) {
	f := ix.f
	add := func(nameNode *Node, kind DefKind, owner, value string) {
		if nameNode == nil {
			return
		}
		d := Def{Pos: Pos{Path: f.Path, Line: nameNode.Line, EndLine: n.EndLine}, Name: lastIdent(f.Text(nameNode)), Kind: kind, Owner: owner, Value: value, Test: ctx.test}
		f.defs = append(f.defs, d)
	}
	addFunc := func(nameNode, body *Node, owner string) {
		if nameNode == nil {
			return
		}
		d := Def{Pos: Pos{Path: f.Path, Line: nameNode.Line, EndLine: n.EndLine}, Name: lastIdent(f.Text(nameNode)), Kind: DefFunction, Owner: owner, Params: params(f, n), Test: ctx.test}
		if body != nil {
			d.Body, d.BodyStart = f.Text(body), body.Line
			d.Empty = isEmptyBody(body)
		} else {
			d.Kind = DefPrototype
		}
		f.defs = append(f.defs, d)
		if body != nil {
			f.funcs = append(f.funcs, d)
			ctx.fn, ctx.owner, ctx.guards = d.Name, owner, nil
		}
	}
	switch f.Lang {
	case C, Cpp:
		switch n.Kind {
		case "function_definition":
			nm := declName(n.Child("declarator"))
			owner := ""
			if nm != nil && nm.Parent != nil && nm.Parent.Kind == "qualified_identifier" {
				owner = f.Text(nm.Parent.Child("scope"))
			}
			if owner == "" {
				owner = enclosingClass(f, n)
			}
			addFunc(nm, n.Child("body"), owner)
		case "declaration", "field_declaration":
			for _, d := range n.Children {
				if d.Field != "declarator" {
					continue
				}
				nm := declName(d)
				switch {
				case d.Kind == "function_declarator" && n.Kind == "field_declaration" && d.Child("declarator") != nil && identKinds[d.Child("declarator").Kind]:
					// a C++ method declared in its class
					add(nm, DefPrototype, enclosingClass(f, n), "")
				case hasKind(d, "function_declarator") && n.Kind == "field_declaration":
					// a function-pointer field (vtable slot)
					add(nm, DefField, enclosingClass(f, n), "")
				case hasKind(d, "function_declarator"):
					add(nm, DefPrototype, enclosingClass(f, n), "")
				case n.Kind == "field_declaration":
					add(nm, DefField, enclosingClass(f, n), "")
				default:
					val := ""
					if d.Kind == "init_declarator" {
						val = oneLine([]byte(f.Text(d.Child("value"))))
					}
					kind := DefVar
					if strings.Contains(f.Text(n)[:max(0, d.Start-n.Start)], "const") {
						kind = DefConst
					}
					add(nm, kind, "", val)
				}
			}
		case "struct_specifier", "class_specifier", "union_specifier":
			if n.Child("body") != nil {
				add(n.Child("name"), DefStruct, "", "")
			}
		case "enum_specifier":
			if n.Child("body") != nil {
				add(n.Child("name"), DefEnum, "", "")
			}
		case "enumerator":
			add(n.Child("name"), DefEnumerator, enumOwner(f, n), oneLine([]byte(f.Text(n.Child("value")))))
		case "preproc_def", "preproc_function_def":
			add(n.Child("name"), DefMacro, "", oneLine([]byte(f.Text(n.Child("value")))))
		case "type_definition":
			add(declName(n.Child("declarator")), DefType, "", "")
		}
	case Rust:
		switch n.Kind {
		case "function_item":
			addFunc(n.Child("name"), n.Child("body"), rustOwner(f, n))
		case "function_signature_item":
			add(n.Child("name"), DefPrototype, rustOwner(f, n), "")
		case "struct_item", "union_item":
			add(n.Child("name"), DefStruct, "", "")
		case "enum_item":
			add(n.Child("name"), DefEnum, "", "")
		case "enum_variant":
			add(n.Child("name"), DefEnumerator, enumOwner(f, n), oneLine([]byte(f.Text(n.Child("value")))))
		case "field_declaration":
			add(n.Child("name"), DefField, rustStructName(f, n), "")
		case "const_item", "static_item":
			add(n.Child("name"), DefConst, rustOwner(f, n), oneLine([]byte(f.Text(n.Child("value")))))
		case "macro_definition":
			add(n.Child("name"), DefMacro, "", "")
		case "type_item":
			add(n.Child("name"), DefType, "", "")
		case "trait_item":
			add(n.Child("name"), DefType, "", "")
		}
	case Python:
		switch n.Kind {
		case "function_definition":
			owner := ""
			for p := n.Parent; p != nil; p = p.Parent {
				if p.Kind == "class_definition" {
					owner = f.Text(p.Child("name"))
					break
				}
				if p.Kind == "function_definition" {
					break
				}
			}
			addFunc(n.Child("name"), n.Child("body"), owner)
		case "class_definition":
			add(n.Child("name"), DefStruct, "", "")
		}
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
				idx := 0
				for _, a := range q.Children {
					if a == child {
						break
					}
					if a.Named && !isCommentKind(a.Kind) {
						idx++
					}
				}
				return Mention{Kind: MentionArgument, Context: calleeName(f, call.Child("function")), ArgIndex: idx}
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

func initializerContext(f *File, q, child *Node) string {
	switch q.Kind {
	case "initializer_pair":
		return f.Text(q.Child("designator"))
	case "field_initializer":
		return f.Text(q.Child("field"))
	}
	// positional initializer: "[i]" of the enclosing declaration
	idx := 0
	for _, a := range q.Children {
		if a == child {
			break
		}
		if a.Named && !isCommentKind(a.Kind) {
			idx++
		}
	}
	return fmt.Sprintf("[%d]", idx)
}

func isDeclaratorKind(k string) bool {
	switch k {
	case "function_declarator", "pointer_declarator", "parenthesized_declarator", "array_declarator",
		"reference_declarator", "init_declarator", "qualified_identifier", "attributed_declarator":
		return true
	}
	return false
}

// declName finds the identifier a C declarator declares.
func declName(d *Node) *Node {
	for d != nil {
		switch d.Kind {
		case "identifier", "field_identifier", "type_identifier", "destructor_name", "operator_name", "primitive_type":
			return d
		case "qualified_identifier":
			if nm := d.Child("name"); nm != nil {
				if nm.Kind == "qualified_identifier" {
					d = nm
					continue
				}
				return nm
			}
			return nil
		}
		nx := d.Child("declarator")
		if nx == nil {
			// parenthesized_declarator has no field
			for _, c := range d.Children {
				if c.Named {
					nx = c
					break
				}
			}
		}
		d = nx
	}
	return nil
}

func hasKind(n *Node, kind string) bool {
	found := false
	n.Walk(func(x *Node) bool {
		if found {
			return false
		}
		if x.Kind == kind {
			found = true
			return false
		}
		// do not look into parameter lists of function-pointer parameters
		return x.Kind != "parameter_list"
	})
	return found
}

func enclosingClass(f *File, n *Node) string {
	for p := n.Parent; p != nil; p = p.Parent {
		switch p.Kind {
		case "struct_specifier", "class_specifier", "union_specifier":
			return f.Text(p.Child("name"))
		case "function_definition":
			return ""
		}
	}
	return ""
}

func rustOwner(f *File, n *Node) string {
	for p := n.Parent; p != nil; p = p.Parent {
		switch p.Kind {
		case "impl_item":
			t := f.Text(p.Child("type"))
			if i := strings.IndexByte(t, '<'); i > 0 {
				t = t[:i]
			}
			return t
		case "trait_item":
			return f.Text(p.Child("name"))
		case "function_item":
			return ""
		}
	}
	return ""
}

func rustStructName(f *File, n *Node) string {
	for p := n.Parent; p != nil; p = p.Parent {
		if p.Kind == "struct_item" || p.Kind == "enum_variant" || p.Kind == "union_item" {
			return f.Text(p.Child("name"))
		}
	}
	return ""
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

// rustTestOnly reports whether item n carries #[cfg(test)] or #[test] (its
// attributes are the preceding attribute_item siblings).
func rustTestOnly(f *File, n *Node) bool {
	p := n.Parent
	if p == nil {
		return false
	}
	idx := -1
	for i, c := range p.Children {
		if c == n {
			idx = i
		}
	}
	for i := idx - 1; i >= 0; i-- {
		c := p.Children[i]
		if isCommentKind(c.Kind) {
			continue
		}
		if c.Kind != "attribute_item" {
			break
		}
		t := strings.ReplaceAll(f.Text(c), " ", "")
		if t == "#[test]" || strings.HasPrefix(t, "#[cfg(test)") || strings.Contains(t, "tokio::test") {
			return true
		}
	}
	return false
}
