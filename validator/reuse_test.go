package validator

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// Validator.reuse memoises a check's result by its entry alone: every
// per-implementation check whose function reads the whole survey (its doc
// parameter) must be in readsWholeSurvey, or a mutant of another entry
// would be judged by a stale result.
func TestReuseKnowsWholeSurveyChecks(t *testing.T) {
	readsDoc := docReaders(t)
	for _, c := range perImplChecks {
		fn := runtime.FuncForPC(reflect.ValueOf(c.fn).Pointer()).Name()
		fn = fn[strings.LastIndex(fn, "/")+1:]
		fn = fn[strings.Index(fn, ".")+1:]
		// A closure (init.3.questionCheck.func1) is judged by the function
		// that returns it.
		parts := strings.Split(fn, ".")
		name := parts[0]
		for _, p := range parts {
			if _, ok := readsDoc[p]; ok {
				name = p
			}
		}
		uses, ok := readsDoc[name]
		if !ok {
			t.Errorf("check %s: function %s not found in the package source", c.name, fn)
			continue
		}
		if uses && !readsWholeSurvey[c.name] {
			t.Errorf("check %s (%s) reads the whole survey but is not in readsWholeSurvey", c.name, fn)
		}
	}
}

// docReaders maps each function of the package to whether it, or a
// function literal in it, uses a parameter named doc.
func docReaders(t *testing.T) map[string]bool {
	t.Helper()
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	out := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			uses := false
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FieldList:
					return false // a function literal's parameters declare doc, not use it
				case *ast.Ident:
					if n.Name == "doc" {
						uses = true
					}
				}
				return true
			})
			out[fd.Name.Name] = out[fd.Name.Name] || uses
		}
	}
	return out
}
