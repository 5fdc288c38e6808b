package syntax

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
)

// indexGo builds the index with go/parser and go/ast.
func (f *File) indexGo() error {
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, f.Path, f.Src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil && af == nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	g := goIndexer{f: f, fset: fset}
	for _, cg := range af.Comments {
		for _, c := range cg.List {
			f.texts = append(f.texts, textSpan{Pos: g.pos(c), kind: MentionComment, text: c.Text})
		}
	}
	g.file(af)
	return nil
}

type goIndexer struct {
	f    *File
	fset *token.FileSet
}

func (g *goIndexer) pos(n ast.Node) Pos {
	return Pos{Path: g.f.Path, Line: g.fset.Position(n.Pos()).Line, EndLine: g.fset.Position(n.End()).Line}
}

func (g *goIndexer) text(n ast.Node) string { return oneLine([]byte(g.slice(n))) }

// slice is n's source; empty when a partial AST (syntax errors) has no
// valid range.
func (g *goIndexer) slice(n ast.Node) string {
	if n == nil || !n.Pos().IsValid() || !n.End().IsValid() {
		return ""
	}
	s, e := g.fset.Position(n.Pos()).Offset, g.fset.Position(n.End()).Offset
	if s < 0 || e > len(g.f.Src) || s > e {
		return ""
	}
	return string(g.f.Src[s:e])
}

type goCtx struct {
	fn, owner string
	guards    []Guard
}

func (c goCtx) with(gd Guard) goCtx {
	gs := make([]Guard, 0, len(c.guards)+1)
	gs = append(gs, gd)
	gs = append(gs, c.guards...)
	c.guards = gs
	return c
}

func recvType(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return ""
	}
	t := fd.Recv.List[0].Type
	star := ""
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = "*", s.X
	}
	switch x := t.(type) {
	case *ast.Ident:
		return star + x.Name
	case *ast.IndexExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			return star + id.Name
		}
	case *ast.IndexListExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			return star + id.Name
		}
	}
	return ""
}

func (g *goIndexer) file(af *ast.File) {
	f := g.f
	for _, decl := range af.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			owner := recvType(d)
			def := Def{Pos: Pos{Path: f.Path, Line: g.fset.Position(d.Name.Pos()).Line, EndLine: g.fset.Position(d.End()).Line}, Name: d.Name.Name, Kind: DefFunction, Owner: owner}
			for _, fl := range d.Type.Params.List {
				if len(fl.Names) == 0 {
					def.Params = append(def.Params, "")
				}
				for _, n := range fl.Names {
					def.Params = append(def.Params, n.Name)
				}
			}
			if d.Body != nil {
				def.Body, def.BodyStart = g.slice(d.Body), g.fset.Position(d.Body.Pos()).Line
				def.Empty = len(d.Body.List) == 0
				f.funcs = append(f.funcs, def)
			} else {
				def.Kind = DefPrototype
			}
			f.defs = append(f.defs, def)
			g.mention(d.Name, MentionDefinition, "", 0, d.Name.Name)
			ctx := goCtx{fn: d.Name.Name, owner: owner}
			if d.Recv != nil {
				g.walk(d.Recv, ctx, nil)
			}
			g.walk(d.Type, ctx, nil)
			if d.Body != nil {
				g.walk(d.Body, ctx, nil)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					kind := DefType
					if _, ok := s.Type.(*ast.StructType); ok {
						kind = DefStruct
					}
					f.defs = append(f.defs, Def{Pos: g.pos(s.Name), Name: s.Name.Name, Kind: kind})
					g.mention(s.Name, MentionDefinition, "", 0, "")
					g.typeFields(s.Name.Name, s.Type)
					g.walk(s.Type, goCtx{}, nil)
				case *ast.ValueSpec:
					kind := DefVar
					if d.Tok == token.CONST {
						kind = DefConst
					}
					for i, n := range s.Names {
						val := ""
						if i < len(s.Values) {
							val = g.text(s.Values[i])
						}
						f.defs = append(f.defs, Def{Pos: g.pos(n), Name: n.Name, Kind: kind, Value: val})
						g.mention(n, MentionDefinition, "", 0, "")
						if i < len(s.Values) {
							f.assigns = append(f.assigns, Assign{Pos: g.pos(n), LHS: n.Name, Target: n.Name, Op: "init", RHS: val})
						}
					}
					if s.Type != nil {
						g.walk(s.Type, goCtx{}, nil)
					}
					for _, v := range s.Values {
						g.walk(v, goCtx{}, []ast.Node{s})
					}
				}
			}
		}
	}
}

func (g *goIndexer) typeFields(owner string, t ast.Expr) {
	switch t := t.(type) {
	case *ast.StructType:
		for _, fl := range t.Fields.List {
			for _, n := range fl.Names {
				g.f.defs = append(g.f.defs, Def{Pos: g.pos(n), Name: n.Name, Kind: DefField, Owner: owner})
				g.mention(n, MentionField, owner, 0, "")
			}
		}
	case *ast.InterfaceType:
		for _, fl := range t.Methods.List {
			for _, n := range fl.Names {
				g.f.defs = append(g.f.defs, Def{Pos: g.pos(n), Name: n.Name, Kind: DefPrototype, Owner: owner})
				g.mention(n, MentionDeclaration, owner, 0, "")
			}
		}
	}
}

func (g *goIndexer) mention(id *ast.Ident, kind MentionKind, context string, argIdx int, fn string) {
	g.f.mentions[id.Name] = append(g.f.mentions[id.Name], Mention{Pos: g.pos(id), Name: id.Name, Kind: kind, Context: context, ArgIndex: argIdx, Func: fn})
}

// walk indexes calls, assignments, guards and identifier mentions under n.
// stack holds n's ancestors (innermost last) within the current function.
func (g *goIndexer) walk(n ast.Node, ctx goCtx, stack []ast.Node) {
	if n == nil {
		return
	}
	f := g.f
	switch x := n.(type) {
	case *ast.BasicLit:
		if x.Kind == token.STRING || x.Kind == token.CHAR {
			f.texts = append(f.texts, textSpan{Pos: g.pos(x), kind: MentionString, text: x.Value, fn: ctx.fn})
		}
		return
	case *ast.Ident:
		g.classify(x, ctx, stack)
		return
	case *ast.Field:
		// names are parameters or fields (indexed by typeFields); only the type is a use
		g.walk(x.Type, ctx, append(stack, x))
		return
	case *ast.FuncLit:
		// closures belong to the enclosing function
	case *ast.CallExpr:
		c := Call{Pos: g.pos(x), Callee: g.text(x.Fun), Func: ctx.fn, FuncOwner: ctx.owner, Guards: ctx.guards, Text: g.text(x)}
		switch fn := x.Fun.(type) {
		case *ast.Ident:
			c.Name = fn.Name
		case *ast.SelectorExpr:
			c.Name = fn.Sel.Name
		case *ast.IndexExpr:
			c.Name = lastIdent(g.text(fn.X))
		default:
			c.Name = lastIdent(c.Callee)
		}
		for _, a := range x.Args {
			c.Args = append(c.Args, Arg{Text: g.text(a), Idents: goIdents(a)})
		}
		f.calls = append(f.calls, c)
	case *ast.AssignStmt:
		for i, l := range x.Lhs {
			rhs := ""
			if len(x.Rhs) == len(x.Lhs) {
				rhs = g.text(x.Rhs[i])
			} else if len(x.Rhs) == 1 {
				rhs = g.text(x.Rhs[0])
			}
			lhs := g.text(l)
			f.assigns = append(f.assigns, Assign{Pos: g.pos(x), LHS: lhs, Target: lastIdent(lhs), Op: x.Tok.String(), RHS: rhs, Func: ctx.fn, FuncOwner: ctx.owner, Guards: ctx.guards})
		}
	case *ast.IncDecStmt:
		lhs := g.text(x.X)
		f.assigns = append(f.assigns, Assign{Pos: g.pos(x), LHS: lhs, Target: lastIdent(lhs), Op: x.Tok.String(), Func: ctx.fn, FuncOwner: ctx.owner, Guards: ctx.guards})
	case *ast.KeyValueExpr:
		if len(stack) > 0 {
			if _, ok := stack[len(stack)-1].(*ast.CompositeLit); ok {
				if k, ok := x.Key.(*ast.Ident); ok {
					f.assigns = append(f.assigns, Assign{Pos: g.pos(x), LHS: k.Name, Target: k.Name, Op: "field", RHS: g.text(x.Value), Func: ctx.fn, FuncOwner: ctx.owner, Guards: ctx.guards})
				}
			}
		}
	case *ast.IfStmt:
		if n := len(x.Body.List); n > 0 {
			how := ""
			switch last := x.Body.List[n-1].(type) {
			case *ast.ReturnStmt:
				how = "return"
			case *ast.BranchStmt:
				how = last.Tok.String()
			}
			if how != "" {
				f.exits = append(f.exits, Exit{Pos: g.pos(x), Cond: g.text(x.Cond), How: how, Func: ctx.fn, Guards: ctx.guards})
			}
		}
		st := append(stack, x)
		g.walk(x.Init, ctx, st)
		g.walk(x.Cond, ctx, st)
		gd := Guard{Pos: g.pos(x), Cond: g.text(x.Cond)}
		gd.Kind = "if"
		g.walk(x.Body, ctx.with(gd), st)
		gd.Kind = "else"
		g.walk(x.Else, ctx.with(gd), st)
		return
	case *ast.ForStmt:
		st := append(stack, x)
		g.walk(x.Init, ctx, st)
		g.walk(x.Cond, ctx, st)
		g.walk(x.Post, ctx, st)
		g.walk(x.Body, ctx.with(Guard{Pos: g.pos(x), Kind: "loop", Cond: g.text(x.Cond)}), st)
		return
	case *ast.RangeStmt:
		st := append(stack, x)
		g.walk(x.Key, ctx, st)
		g.walk(x.Value, ctx, st)
		g.walk(x.X, ctx, st)
		g.walk(x.Body, ctx.with(Guard{Pos: g.pos(x), Kind: "loop", Cond: "range " + g.text(x.X)}), st)
		return
	case *ast.CaseClause:
		st := append(stack, x)
		var labels []string
		for _, e := range x.List {
			labels = append(labels, g.text(e))
			g.walk(e, ctx, st)
		}
		cond := strings.Join(labels, ", ")
		if x.List == nil {
			cond = "default"
		}
		gd := Guard{Pos: g.pos(x), Kind: "case", Cond: cond}
		for _, s := range x.Body {
			g.walk(s, ctx.with(gd), st)
		}
		return
	}
	st := append(stack, n)
	ast.Inspect(n, func(c ast.Node) bool {
		if c == n {
			return true
		}
		if c != nil {
			g.walk(c, ctx, st)
		}
		return false
	})
}

func (g *goIndexer) classify(id *ast.Ident, ctx goCtx, stack []ast.Node) {
	kind, context, argIdx := MentionReference, "", 0
	var child ast.Node = id
	for i := len(stack) - 1; i >= 0; i-- {
		p := stack[i]
		done := true
		switch p := p.(type) {
		case *ast.SelectorExpr:
			if p.Sel == child {
				child, done = p, false
			} else {
				done = true
			}
		case *ast.CallExpr:
			if p.Fun == child {
				kind, context = MentionCall, g.text(p.Fun)
			} else {
				for j, a := range p.Args {
					if a == child {
						kind, argIdx = MentionArgument, j
						switch fn := p.Fun.(type) {
						case *ast.Ident:
							context = fn.Name
						case *ast.SelectorExpr:
							context = fn.Sel.Name
						default:
							context = lastIdent(g.text(p.Fun))
						}
					}
				}
			}
		case *ast.CaseClause:
			for _, e := range p.List {
				if e == child {
					kind = MentionCaseLabel
				}
			}
		case *ast.AssignStmt:
			for j, r := range p.Rhs {
				if r == child {
					kind = MentionAssigned
					if j < len(p.Lhs) {
						context = g.text(p.Lhs[j])
					}
				}
			}
		case *ast.KeyValueExpr:
			if p.Value == child {
				kind, context = MentionAssigned, g.text(p.Key)
			}
		case *ast.ValueSpec:
			for _, v := range p.Values {
				if v == child {
					kind = MentionAssigned
				}
			}
		case *ast.Field:
			kind = MentionDeclaration
		case *ast.ParenExpr, *ast.UnaryExpr, *ast.StarExpr:
			child, done = p, false
		}
		if done {
			break
		}
	}
	g.mention(id, kind, context, argIdx, ctx.fn)
}

func goIdents(e ast.Expr) []string {
	var out []string
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			out = append(out, id.Name)
		}
		return true
	})
	return out
}
