package syntax

import (
	"strings"
)

// Rust: the definitions a node makes, impl owners, test-only items.

func (d definer) rust() {
	f, n := d.ix.f, d.n
	switch n.Kind {
	case "function_item":
		d.addFunc(n.Child("name"), n.Child("body"), rustOwner(f, n))
	case "function_signature_item":
		d.add(n.Child("name"), DefPrototype, rustOwner(f, n), "")
	case "struct_item", "union_item":
		d.add(n.Child("name"), DefStruct, "", "")
	case "enum_item":
		d.add(n.Child("name"), DefEnum, "", "")
	case "enum_variant":
		d.add(n.Child("name"), DefEnumerator, enumOwner(f, n), oneLine([]byte(f.Text(n.Child("value")))))
	case "field_declaration":
		d.add(n.Child("name"), DefField, rustStructName(f, n), "")
	case "const_item", "static_item":
		d.add(n.Child("name"), DefConst, rustOwner(f, n), oneLine([]byte(f.Text(n.Child("value")))))
	case "macro_definition":
		d.add(n.Child("name"), DefMacro, "", "")
	case "type_item":
		d.add(n.Child("name"), DefType, "", "")
	case "trait_item":
		d.add(n.Child("name"), DefType, "", "")
	}
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
