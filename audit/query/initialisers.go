package query

import (
	"strings"

	"github.com/migaudit/migaudit/audit/syntax"
)

// Slot is one variable initialised with a struct literal and the text of
// one field's initialiser (a vtable entry: the function it installs).
type Slot struct{ Var, Value string }

// Initialisers finds the C declarations `typ name = {...}` and the value each
// puts in field of struct tag strct, positional or designated (.field = v).
// An array of pointers to typ is not an initialiser of typ.
func (c *Code) Initialisers(typ, strct, field string) []Slot {
	idx := c.fieldIndex(strct, field)
	var out []Slot
	for _, f := range c.Set {
		if f.Tree == nil {
			continue
		}
		for _, decl := range f.Tree.Find("declaration") {
			if strings.TrimSpace(f.Text(decl.Child("type"))) != typ {
				continue
			}
			for _, d := range decl.Children {
				if d.Kind != "init_declarator" || d.Child("declarator") == nil || d.Child("declarator").Kind != "identifier" {
					continue
				}
				val := d.Child("value")
				if val == nil || val.Kind != "initializer_list" {
					continue
				}
				name := f.Text(d.Child("declarator"))
				i := 0
				for _, el := range val.Children {
					if !el.Named || el.Kind == "comment" {
						continue
					}
					if el.Kind == "initializer_pair" {
						if strings.Contains(f.Text(el.Child("designator")), field) {
							out = append(out, Slot{name, strings.TrimSpace(f.Text(el.Child("value")))})
						}
					} else if i == idx {
						out = append(out, Slot{name, strings.TrimSpace(f.Text(el))})
					}
					i++
				}
			}
		}
	}
	return out
}

// fieldIndex is the position of field in struct strct (for positional
// initialisers), from the first file that defines the struct's fields.
func (c *Code) fieldIndex(strct, field string) int {
	i := 0
	for _, f := range c.Set {
		for _, d := range f.AllDefs() {
			if d.Kind == syntax.DefField && d.Owner == strct {
				if d.Name == field {
					return i
				}
				i++
			}
		}
		if i > 0 {
			break
		}
	}
	return -1
}

// Enumerators are the values of enum (tag or typedef name) across the files, in order.
func (c *Code) Enumerators(enum string) []syntax.Def {
	var out []syntax.Def
	for _, f := range c.Set {
		out = append(out, f.Enumerators(enum)...)
	}
	return out
}

// Dispatch is every call through a callback field (a function pointer, not a
// function of that name) and the enumerators each passes at one argument (a
// ternary passes two).
type Dispatch struct {
	Sites []syntax.Call
	Named [][]string     // per site, the enumerators it passes
	Count map[string]int // per enumerator, the sites passing it
}

// Dispatches reads the calls through field whose argument arg names values.
func (c *Code) Dispatches(field string, arg int, values []syntax.Def) Dispatch {
	is := map[string]bool{}
	for _, v := range values {
		is[v.Name] = true
	}
	d := Dispatch{Count: map[string]int{}}
	for _, x := range c.Set.Calls(field) {
		if x.Callee == field {
			continue // a function of that name, not the callback field
		}
		var named []string
		if len(x.Args) > arg {
			for _, id := range x.Args[arg].Idents {
				if is[id] {
					named = append(named, id)
					d.Count[id]++
				}
			}
		}
		d.Sites = append(d.Sites, x)
		d.Named = append(d.Named, named)
	}
	return d
}

// Forward is the first call inside function fn, to a function handles
// accepts, that passes fn's parameter param on: one level of forwarding
// (dcubic_notify handing its notification to cubic_notify).
func (c *Code) Forward(fn, param string, handles func(string) bool) (syntax.Call, bool) {
	for _, f := range c.Set {
		for _, x := range f.CallsIn(fn) {
			if !handles(x.Name) {
				continue
			}
			for _, a := range x.Args {
				if a.Text == param {
					return x, true
				}
			}
		}
	}
	return syntax.Call{}, false
}
