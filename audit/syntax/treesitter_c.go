package syntax

import (
	"fmt"
	"strings"
)

// C and C++: the definitions a node makes, and the declarator helpers.

func (d definer) c() {
	f, n := d.ix.f, d.n
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
		d.addFunc(nm, n.Child("body"), owner)
	case "declaration", "field_declaration":
		for _, decl := range n.Children {
			if decl.Field != "declarator" {
				continue
			}
			nm := declName(decl)
			switch {
			case decl.Kind == "function_declarator" && n.Kind == "field_declaration" && decl.Child("declarator") != nil && identKinds[decl.Child("declarator").Kind]:
				// a C++ method declared in its class
				d.add(nm, DefPrototype, enclosingClass(f, n), "")
			case hasKind(decl, "function_declarator") && n.Kind == "field_declaration":
				// a function-pointer field (vtable slot)
				d.add(nm, DefField, enclosingClass(f, n), "")
			case hasKind(decl, "function_declarator"):
				d.add(nm, DefPrototype, enclosingClass(f, n), "")
			case n.Kind == "field_declaration":
				d.add(nm, DefField, enclosingClass(f, n), "")
			default:
				val := ""
				if decl.Kind == "init_declarator" {
					val = oneLine([]byte(f.Text(decl.Child("value"))))
				}
				kind := DefVar
				if strings.Contains(f.Text(n)[:max(0, decl.Start-n.Start)], "const") {
					kind = DefConst
				}
				d.add(nm, kind, "", val)
			}
		}
	case "struct_specifier", "class_specifier", "union_specifier":
		if n.Child("body") != nil {
			d.add(n.Child("name"), DefStruct, "", "")
		}
	case "enum_specifier":
		if n.Child("body") != nil {
			d.add(n.Child("name"), DefEnum, "", "")
		}
	case "enumerator":
		d.add(n.Child("name"), DefEnumerator, enumOwner(f, n), oneLine([]byte(f.Text(n.Child("value")))))
	case "preproc_def", "preproc_function_def":
		d.add(n.Child("name"), DefMacro, "", oneLine([]byte(f.Text(n.Child("value")))))
	case "type_definition":
		d.add(declName(n.Child("declarator")), DefType, "", "")
	}
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

func initializerContext(f *File, q, child *Node) string {
	switch q.Kind {
	case "initializer_pair":
		return f.Text(q.Child("designator"))
	case "field_initializer":
		return f.Text(q.Child("field"))
	}
	// positional initializer: "[i]" of the enclosing declaration
	return fmt.Sprintf("[%d]", namedIndex(q, child))
}
