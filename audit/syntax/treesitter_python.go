package syntax

// Python: the definitions a node makes (methods owned by their class).

func (d definer) python() {
	f, n := d.ix.f, d.n
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
		d.addFunc(n.Child("name"), n.Child("body"), owner)
	case "class_definition":
		d.add(n.Child("name"), DefStruct, "", "")
	}
}
