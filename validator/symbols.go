package validator

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"sort"
	"strings"
)

// site is one occurrence of a symbol in source.
type site struct {
	Path string
	Line int
	// Kind: "call" (called or dispatched), "handler" (an implementation:
	// a function body, a vtable slot, or a case label for a notification),
	// "declaration", "mention".
	Kind string
}

// isTestPath excludes tests, mocks, fuzzers and benchmarks: a call there
// is not a call a running endpoint makes.
func isTestPath(p string) bool {
	if strings.HasSuffix(p, "_test.go") || strings.HasSuffix(p, "_tests.rs") {
		return true
	}
	base := path.Base(p)
	stem := strings.TrimSuffix(base, path.Ext(base))
	switch {
	case base == "tests.rs" || base == "test.rs" || base == "testing.rs":
		return true // Rust test modules (`mod tests;`)
	case strings.HasSuffix(stem, "Test") || strings.HasSuffix(stem, "Tests") || strings.HasSuffix(stem, "_test") || strings.HasSuffix(stem, "_unittest"):
		return true // C/C++ test translation units (gtest: FooTest.cpp)
	case strings.HasPrefix(stem, "test_"):
		return true
	}
	for _, seg := range strings.Split(path.Dir(p), "/") {
		switch strings.ToLower(seg) {
		case "test", "tests", "unittest", "unittests", "testing", "mocks", "mock", "fuzz", "fuzzing", "bench", "benches", "integrationtests", "testutils":
			return true
		}
	}
	return false
}

func langOf(p string) string {
	switch path.Ext(p) {
	case ".go":
		return "go"
	case ".c", ".h", ".cc", ".cpp", ".hpp", ".cxx":
		return "c"
	case ".rs":
		return "rust"
	}
	return ""
}

// findSites classifies every occurrence of symbol in the non-test source
// of the tree. form is "function" or "notification" (an enum value passed
// to a dispatcher and handled by case labels).
func findSites(t *sourceTree, symbol, form string) ([]site, error) {
	var out []site
	for _, p := range t.paths() {
		lang := langOf(p)
		if lang == "" || isTestPath(p) {
			continue
		}
		lines, err := t.lines(p)
		if err != nil {
			return nil, err
		}
		src := strings.Join(lines, "\n")
		if !strings.Contains(src, symbol) {
			continue
		}
		var s []site
		if lang == "go" {
			s = goSites(p, src, symbol)
		} else {
			s = cSites(p, src, symbol, form, lang)
		}
		out = append(out, s...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Line < out[j].Line
	})
	return out, nil
}

// goSites uses the standard library's Go parser: a CallExpr naming the
// symbol is a call, a FuncDecl with a body is a handler.
func goSites(p, src, symbol string) []site {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	var out []site
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			var id *ast.Ident
			switch fn := n.Fun.(type) {
			case *ast.Ident:
				id = fn
			case *ast.SelectorExpr:
				id = fn.Sel
			}
			if id != nil && id.Name == symbol {
				out = append(out, site{p, fset.Position(id.Pos()).Line, "call"})
			}
		case *ast.FuncDecl:
			if n.Name.Name == symbol && n.Body != nil {
				out = append(out, site{p, fset.Position(n.Name.Pos()).Line, "handler"})
			}
		}
		return true
	})
	return out
}

type ctoken struct {
	text  string
	line  int
	depth int
	enum  bool // inside an enum body
}

// ctokens tokenises C, C++ or Rust, dropping comments, string and
// character literals, and tracking brace depth and enum bodies.
func ctokens(src, lang string) []ctoken {
	var toks []ctoken
	line, depth := 1, 0
	var braceEnum []bool
	inEnum := func() bool { return len(braceEnum) > 0 && braceEnum[len(braceEnum)-1] }
	isID := func(b byte) bool {
		return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
	}
	sawEnum := false
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			i += 2
			for i+1 < len(src) && !(src[i] == '*' && src[i+1] == '/') {
				if src[i] == '\n' {
					line++
				}
				i++
			}
			i += 2
		case c == '"' || (lang == "rust" && c == 'r' && i+1 < len(src) && (src[i+1] == '"' || src[i+1] == '#') && (i == 0 || !isID(src[i-1]))):
			if c == 'r' {
				j := i + 1
				hashes := 0
				for j < len(src) && src[j] == '#' {
					hashes++
					j++
				}
				if j >= len(src) || src[j] != '"' {
					// an identifier starting with r
					goto ident
				}
				end := "\"" + strings.Repeat("#", hashes)
				k := strings.Index(src[j+1:], end)
				if k < 0 {
					k = len(src) - j - 1
				}
				line += strings.Count(src[i:j+1+k], "\n")
				i = j + 1 + k + len(end)
				continue
			}
			i++
			for i < len(src) && src[i] != '"' {
				if src[i] == '\\' {
					i++
				}
				if i < len(src) && src[i] == '\n' {
					line++
				}
				i++
			}
			i++
		case c == '\'':
			// char literal 'x' or '\n'; in Rust a lone quote is a lifetime.
			if i+2 < len(src) && src[i+1] == '\\' {
				j := strings.IndexByte(src[i+2:], '\'')
				if j >= 0 && j < 10 {
					i += j + 3
					continue
				}
			}
			if i+2 < len(src) && src[i+2] == '\'' {
				i += 3
				continue
			}
			i++
		case c == '{':
			braceEnum = append(braceEnum, sawEnum)
			sawEnum = false
			toks = append(toks, ctoken{"{", line, depth, inEnum()})
			depth++
			i++
		case c == '}':
			depth--
			if len(braceEnum) > 0 {
				braceEnum = braceEnum[:len(braceEnum)-1]
			}
			toks = append(toks, ctoken{"}", line, depth, inEnum()})
			i++
		case isID(c):
			goto ident
		default:
			if c == ';' {
				sawEnum = false
			}
			if c == '-' && i+1 < len(src) && src[i+1] == '>' {
				toks = append(toks, ctoken{"->", line, depth, inEnum()})
				i += 2
				continue
			}
			if c == ':' && i+1 < len(src) && src[i+1] == ':' {
				toks = append(toks, ctoken{"::", line, depth, inEnum()})
				i += 2
				continue
			}
			toks = append(toks, ctoken{string(c), line, depth, inEnum()})
			i++
		}
		continue
	ident:
		{
			j := i
			for j < len(src) && isID(src[j]) {
				j++
			}
			w := src[i:j]
			if w == "enum" {
				sawEnum = true
			}
			toks = append(toks, ctoken{w, line, depth, inEnum()})
			i = j
		}
	}
	return toks
}

func isIdentTok(s string) bool {
	if s == "" {
		return false
	}
	c := s[0]
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// cSites classifies occurrences in C/C++/Rust.
func cSites(p, src, symbol, form, lang string) []site {
	toks := ctokens(src, lang)
	var out []site
	// current function definition, to recognise a wrapper dispatching to
	// a same-named vtable slot inside its own body.
	curFn, curDepth := "", -1
	for i, tk := range toks {
		if curFn != "" && tk.text == "}" && tk.depth == curDepth {
			curFn, curDepth = "", -1
		}
		if tk.text != symbol {
			// track function definitions by name
			if isIdentTok(tk.text) && i+1 < len(toks) && toks[i+1].text == "(" && isDefinition(toks, i, lang) {
				if body := bodyStart(toks, i+1); body > 0 {
					curFn, curDepth = tk.text, toks[body].depth
				}
			}
			continue
		}
		prev, next := "", ""
		if i > 0 {
			prev = toks[i-1].text
		}
		if i+1 < len(toks) {
			next = toks[i+1].text
		}
		kind := "mention"
		switch {
		case prev == "case":
			kind = "handler"
		case next == "=" && prev == ".":
			kind = "slot" // designated initializer: a vtable slot implementation
		case tk.enum:
			kind = "declaration"
		case lang == "rust" && prev == "fn" && next == "<":
			// fn name<Generics>(…) { … }: a definition with a body
			// unless a ';' ends it first (a trait method declaration).
			kind = "declaration"
			for k := i + 1; k < len(toks); k++ {
				if toks[k].text == "{" {
					kind = "handler"
					curFn, curDepth = symbol, toks[k].depth
					break
				}
				if toks[k].text == ";" {
					break
				}
			}
		case next == "(" && isDefinition(toks, i, lang):
			if b := bodyStart(toks, i+1); b > 0 {
				kind = "handler"
				curFn, curDepth = symbol, toks[b].depth
			} else {
				kind = "declaration"
			}
		case next == "(" && prev == "*":
			kind = "declaration" // function-pointer field or typedef
		case next == "(":
			if (prev == "->" || prev == ".") && curFn == symbol {
				kind = "mention" // wrapper dispatching to its own slot
			} else {
				kind = "call"
			}
		case form == "notification":
			// passed as a value to a dispatcher
			kind = "call"
		}
		out = append(out, site{p, tk.line, kind})
	}
	return out
}

// isDefinition reports whether toks[i] (followed by "(") names a function
// being defined or declared rather than called.
func isDefinition(toks []ctoken, i int, lang string) bool {
	if i == 0 {
		return false
	}
	prev := toks[i-1].text
	if lang == "rust" {
		return prev == "fn"
	}
	if prev == "::" {
		// Class::method( — a definition when what stands before the
		// qualified name is a type (or nothing), a call otherwise.
		j := i - 1
		for j >= 1 && toks[j].text == "::" && isIdentTok(toks[j-1].text) {
			j -= 2
		}
		if j < 0 {
			return true
		}
		p := toks[j].text
		return (isIdentTok(p) && !cKeywords[p]) || p == "*" || p == "&" || p == ">"
	}
	if cKeywords[prev] {
		return false
	}
	switch prev {
	case "sizeof", "if", "while", "for", "switch", "=", ",", "(", "!", "&&", "||", "?", ":", "+", "-", "/", "&", "|", "^", "<", ">", "[":
		return false
	}
	if toks[i].depth != 0 {
		// Inside braces only a member declaration (a C++ class body:
		// `void reset();`) has a type name right before the name; a call
		// follows an operator, a brace or a semicolon.
		return isIdentTok(prev) && (lang == "c" || lang == "cpp")
	}
	return isIdentTok(prev) || prev == "*"
}

// cKeywords precede a call expression, never a declared name.
var cKeywords = map[string]bool{
	"return": true, "else": true, "case": true, "do": true, "throw": true, "new": true, "delete": true,
	"sizeof": true, "co_await": true, "co_return": true, "co_yield": true, "goto": true, "typeof": true,
	"alignof": true, "decltype": true, "not": true, "and": true, "or": true, "defined": true,
}

// bodyStart returns the index of the "{" opening the body whose parameter
// list starts at toks[open] == "(", or -1 for a declaration.
func bodyStart(toks []ctoken, open int) int {
	depth := 0
	for j := open; j < len(toks); j++ {
		switch toks[j].text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				for k := j + 1; k < len(toks) && k < j+40; k++ {
					switch toks[k].text {
					case "{":
						return k
					case ";", "}", "=":
						return -1
					}
				}
				return -1
			}
		}
	}
	return -1
}

// reachability counts calls and handlers the way the survey reports them.
type reach struct {
	Calls    []site
	Handlers []site
	// HandlerUnits is the number of implementations: files with case
	// labels for a notification, handler sites for a function.
	HandlerUnits int
}

func countReach(sites []site, form string) reach {
	var r reach
	var bodies, slots []site
	files := map[string]bool{}
	for _, s := range sites {
		switch s.Kind {
		case "call":
			r.Calls = append(r.Calls, s)
		case "handler":
			bodies = append(bodies, s)
			files[s.Path] = true
		case "slot":
			slots = append(slots, s)
		}
	}
	// Where vtable slots exist they are the implementations; a same-named
	// wrapper definition is then the dispatcher, not a handler.
	r.Handlers = bodies
	if len(slots) > 0 {
		r.Handlers = slots
	}
	r.HandlerUnits = len(r.Handlers)
	if form == "notification" {
		r.HandlerUnits = len(files)
	}
	return r
}
