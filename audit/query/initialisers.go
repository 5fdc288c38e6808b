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
