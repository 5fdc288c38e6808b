package reproduce

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Diff is one field where two survey files differ.
type Diff struct {
	// Path is a JSON path: implementations[picoquic].live.repetitions[rep1].q1,
	// inputs.evidence_sha256["data/evidence/ngtcp2/summary.json"].
	Path string
	// Old and New are the JSON values ("" when the field is absent).
	Old, New string
}

func (d Diff) String() string {
	show := func(s string) string {
		if s == "" {
			return "(absent)"
		}
		if len(s) > 120 {
			return s[:117] + "..."
		}
		return s
	}
	return fmt.Sprintf("%s: committed %s, rebuilt %s", d.Path, show(d.Old), show(d.New))
}

// Compare returns every field where old and new differ, in document order
// of old (then fields only new has). Arrays of objects with a unique "name"
// or "id" are matched by it, so an inserted element is one difference, not
// a shift of every later one.
func Compare(old, new []byte) ([]Diff, error) {
	var a, b any
	if err := decode(old, &a); err != nil {
		return nil, fmt.Errorf("committed survey: %w", err)
	}
	if err := decode(new, &b); err != nil {
		return nil, fmt.Errorf("rebuilt survey: %w", err)
	}
	var out []Diff
	walk("", a, b, &out)
	return out, nil
}

func decode(raw []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	return d.Decode(v)
}

func enc(v any) string {
	if v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func walk(path string, a, b any, out *[]Diff) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(av)+len(bv))
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, ok := av[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			walk(field(path, k), av[k], bv[k], out)
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok {
			break
		}
		ka, kb := keyOf(av), keyOf(bv)
		if ka != "" && ka == kb {
			idx := map[string]int{}
			for i, e := range bv {
				idx[label(e, kb)] = i
			}
			seen := map[string]bool{}
			for _, e := range av {
				l := label(e, ka)
				seen[l] = true
				p := fmt.Sprintf("%s[%s]", path, l)
				if j, ok := idx[l]; ok {
					walk(p, e, bv[j], out)
				} else {
					*out = append(*out, Diff{Path: p, Old: enc(e)})
				}
			}
			for _, e := range bv {
				if l := label(e, kb); !seen[l] {
					*out = append(*out, Diff{Path: fmt.Sprintf("%s[%s]", path, l), New: enc(e)})
				}
			}
			return
		}
		n := max(len(av), len(bv))
		for i := 0; i < n; i++ {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(av):
				*out = append(*out, Diff{Path: p, New: enc(bv[i])})
			case i >= len(bv):
				*out = append(*out, Diff{Path: p, Old: enc(av[i])})
			default:
				walk(p, av[i], bv[i], out)
			}
		}
		return
	}
	if ea, eb := enc(a), enc(b); ea != eb {
		if path == "" {
			path = "$"
		}
		*out = append(*out, Diff{Path: path, Old: ea, New: eb})
	}
}

// keyOf names the field that identifies the elements of an array of
// objects ("name", then "id"), or "" when none is present and unique.
func keyOf(xs []any) string {
	for _, k := range []string{"name", "id"} {
		seen := map[string]bool{}
		ok := len(xs) > 0
		for _, x := range xs {
			m, isMap := x.(map[string]any)
			s, isStr := m[k].(string)
			if !isMap || !isStr || s == "" || seen[s] {
				ok = false
				break
			}
			seen[s] = true
		}
		if ok {
			return k
		}
	}
	return ""
}

func label(x any, key string) string {
	m, _ := x.(map[string]any)
	s, _ := m[key].(string)
	return s
}

func field(path, k string) string {
	simple := k != ""
	for _, c := range k {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			simple = false
			break
		}
	}
	if !simple {
		return path + "[" + strconv.Quote(k) + "]"
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

// Summarise lists at most n differences, one per line.
func Summarise(ds []Diff, n int) string {
	var b strings.Builder
	for i, d := range ds {
		if i == n {
			fmt.Fprintf(&b, "  … and %d more\n", len(ds)-n)
			break
		}
		fmt.Fprintf(&b, "  %s\n", d)
	}
	return b.String()
}
