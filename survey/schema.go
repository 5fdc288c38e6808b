package survey

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// Schema is the compiled survey schema (JSON Schema draft 2020-12).
// github.com/google/jsonschema-go does no work at package initialisation
// (jsonschema/v5 compiled every draft's metaschema there, 3 ms of every
// migaudit start-up); it treats "format" as an annotation, so date-time is
// asserted here, and it names schema rather than instance locations, so a
// failure is located here by descending the instance.
type Schema struct {
	path     string
	doc      map[string]any // the schema as read: sub-schemas are found by pointer
	resolved *jsonschema.Resolved
	subs     map[string]*jsonschema.Resolved
}

// CompileSchema loads and compiles the JSON Schema at path.
func CompileSchema(path string) (*Schema, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("survey schema: %w", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("survey schema %s: %w", path, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("survey schema %s: %w", path, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("survey schema %s: %w", path, err)
	}
	return &Schema{path: path, doc: doc, resolved: rs, subs: map[string]*jsonschema.Resolved{}}, nil
}

// Validate checks raw JSON against the schema, returning one error that
// names the first failing location.
func Validate(schema *Schema, raw []byte) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := schema.resolved.Validate(v); err != nil {
		return fmt.Errorf("schema violation: %s", schema.locate(err, v))
	}
	if loc, bad := schema.badDateTime(schema.doc, v, ""); loc != "" {
		return fmt.Errorf("schema violation: at %s: %q is not a valid date-time", loc, bad)
	}
	return nil
}

// locate turns the library's chain of schema locations ("validating P1:
// validating P2: …: message") into the instance location that failed:
// each step that enters a property follows it in the instance; a step into
// items or additionalProperties tries each member against that sub-schema
// and follows the first that fails.
func (s *Schema) locate(err error, v any) string {
	msg := err.Error()
	var ptrs []string
	for strings.HasPrefix(msg, "validating ") {
		head, rest, ok := strings.Cut(msg[len("validating "):], ": ")
		if !ok {
			break
		}
		ptrs = append(ptrs, head)
		msg = rest
	}
	msg = anonymousList.ReplaceAllString(msg, " of its alternatives")
	loc, prev := "", ""
	cur := v
	for _, p := range ptrs[min(1, len(ptrs)):] {
		step, within := strings.CutPrefix(p, prev+"/")
		prev = p
		if !within {
			continue
		}
		kw, name, _ := strings.Cut(step, "/")
		switch {
		case kw == "properties" && name != "" && !strings.Contains(name, "/"):
			obj, ok := cur.(map[string]any)
			if !ok {
				return fmt.Sprintf("at %s: %s", orRoot(loc), msg)
			}
			cur = obj[unescapePointer(name)]
			loc += "/" + name
		case step == "items":
			arr, ok := cur.([]any)
			if !ok {
				return fmt.Sprintf("at %s: %s", orRoot(loc), msg)
			}
			i := s.firstFailing(p, len(arr), func(i int) any { return arr[i] })
			if i < 0 {
				return fmt.Sprintf("at %s: %s", orRoot(loc), msg)
			}
			cur = arr[i]
			loc += "/" + strconv.Itoa(i)
		case step == "additionalProperties":
			obj, ok := cur.(map[string]any)
			if !ok {
				return fmt.Sprintf("at %s: %s", orRoot(loc), msg)
			}
			keys := make([]string, 0, len(obj))
			for k := range obj {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			i := s.firstFailing(p, len(keys), func(i int) any { return obj[keys[i]] })
			if i < 0 {
				return fmt.Sprintf("at %s: %s", orRoot(loc), msg)
			}
			cur = obj[keys[i]]
			loc += "/" + escapePointer(keys[i])
		}
	}
	return fmt.Sprintf("at %s: %s", orRoot(loc), msg)
}

// anonymousList is the library's list of unnamed alternatives after
// "did not validate against any of": it says nothing a reader can use.
var anonymousList = regexp.MustCompile(` \[(<anonymous schema> ?)+\]$`)

// firstFailing is the index of the first of n values that the sub-schema at
// ptr rejects, or -1.
func (s *Schema) firstFailing(ptr string, n int, value func(int) any) int {
	rs, err := s.sub(ptr)
	if err != nil {
		return -1
	}
	for i := range n {
		if rs.Validate(value(i)) != nil {
			return i
		}
	}
	return -1
}

// sub compiles the sub-schema at a JSON pointer into the document: a
// schema whose $defs are the document's and whose $ref is the pointer,
// rewritten to a copy of the document kept under $defs.
func (s *Schema) sub(ptr string) (*jsonschema.Resolved, error) {
	if rs, ok := s.subs[ptr]; ok {
		return rs, nil
	}
	const home = "migaudit-document"
	defs := map[string]any{}
	if d, ok := s.doc["$defs"].(map[string]any); ok {
		for k, v := range d {
			defs[k] = v
		}
	}
	body := map[string]any{}
	for k, v := range s.doc {
		if k != "$id" && k != "$schema" && k != "$defs" {
			body[k] = v
		}
	}
	defs[home] = body
	ref := "#" + ptr
	if !strings.HasPrefix(ptr, "/$defs/") {
		ref = "#/$defs/" + home + ptr
	}
	b, err := json.Marshal(map[string]any{"$schema": s.doc["$schema"], "$defs": defs, "$ref": ref})
	if err != nil {
		return nil, err
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(b, &js); err != nil {
		return nil, err
	}
	rs, err := js.Resolve(nil)
	if err != nil {
		return nil, err
	}
	s.subs[ptr] = rs
	return rs, nil
}

// badDateTime returns the location and value of the first string the
// schema marks "format": "date-time" that is not an RFC 3339 date-time,
// following properties, items, additionalProperties and local $refs.
func (s *Schema) badDateTime(node map[string]any, v any, loc string) (string, string) {
	if ref, ok := node["$ref"].(string); ok {
		if target := s.pointer(strings.TrimPrefix(ref, "#")); target != nil {
			if l, bad := s.badDateTime(target, v, loc); l != "" {
				return l, bad
			}
		}
	}
	if f, _ := node["format"].(string); f == "date-time" {
		if str, ok := v.(string); ok {
			if _, err := time.Parse(time.RFC3339, strings.ToUpper(str)); err != nil {
				return orRoot(loc), str
			}
		}
	}
	switch inst := v.(type) {
	case map[string]any:
		props, _ := node["properties"].(map[string]any)
		extra, _ := node["additionalProperties"].(map[string]any)
		keys := make([]string, 0, len(inst))
		for k := range inst {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub, ok := props[k].(map[string]any)
			if !ok {
				sub = extra
			}
			if sub == nil {
				continue
			}
			if l, bad := s.badDateTime(sub, inst[k], loc+"/"+escapePointer(k)); l != "" {
				return l, bad
			}
		}
	case []any:
		if items, ok := node["items"].(map[string]any); ok {
			for i, e := range inst {
				if l, bad := s.badDateTime(items, e, loc+"/"+strconv.Itoa(i)); l != "" {
					return l, bad
				}
			}
		}
	}
	return "", ""
}

// pointer resolves a JSON pointer into the schema document.
func (s *Schema) pointer(ptr string) map[string]any {
	var cur any = s.doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if tok == "" {
			continue
		}
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = obj[unescapePointer(tok)]
	}
	m, _ := cur.(map[string]any)
	return m
}

func orRoot(loc string) string {
	if loc == "" {
		return "/"
	}
	return loc
}

func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func unescapePointer(s string) string {
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
}
