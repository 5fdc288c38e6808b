package survey

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/migaudit/migaudit/data/atomicfile"
)

// SchemaFile is the schema's file name; it sits beside survey_results.json.
const SchemaFile = "survey.schema.json"

// SchemaPathFor returns the schema that governs the results file at path:
// data/survey.schema.json for data/survey_results.json.
func SchemaPathFor(resultsPath string) string {
	return filepath.Join(filepath.Dir(resultsPath), SchemaFile)
}

// CompileSchema loads and compiles the JSON Schema at path.
func CompileSchema(path string) (*jsonschema.Schema, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("survey schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	if err := c.AddResource(path, bytes.NewReader(b)); err != nil {
		return nil, fmt.Errorf("survey schema %s: %w", path, err)
	}
	s, err := c.Compile(path)
	if err != nil {
		return nil, fmt.Errorf("survey schema %s: %w", path, err)
	}
	return s, nil
}

// Validate checks raw JSON against the schema, returning one error that
// names the first failing location.
func Validate(schema *jsonschema.Schema, raw []byte) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := schema.Validate(v); err != nil {
		if ve, ok := err.(*jsonschema.ValidationError); ok {
			return fmt.Errorf("schema violation: %s", flatten(ve))
		}
		return err
	}
	return nil
}

// flatten reduces a validation error tree to its deepest causes on one line.
func flatten(ve *jsonschema.ValidationError) string {
	var leaves []string
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := e.InstanceLocation
			if loc == "" {
				loc = "/"
			}
			// oneOf alternatives fail at one location many times: say it once.
			if seen[loc] {
				return
			}
			seen[loc] = true
			leaves = append(leaves, fmt.Sprintf("at %s: %s", loc, e.Message))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(leaves) > 4 {
		leaves = append(leaves[:4], fmt.Sprintf("and %d more", len(leaves)-4))
	}
	return strings.Join(leaves, "; ")
}

// Marshal renders the survey as indented JSON with a trailing newline.
func Marshal(s *Survey) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Write validates s against the schema beside path and writes it atomically
// (temporary file in the same directory, then rename).
func Write(path string, s *Survey) error { return WriteWith(path, SchemaPathFor(path), s) }

// WriteWith is Write with an explicit schema file.
func WriteWith(path, schemaPath string, s *Survey) error {
	schema, err := CompileSchema(schemaPath)
	if err != nil {
		return err
	}
	b, err := Marshal(s)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := Validate(schema, b); err != nil {
		return fmt.Errorf("refusing to write %s: %w", path, err)
	}
	return WriteAtomic(path, b)
}

// WriteAtomic writes b to path through a temporary file and a rename, so a
// reader never sees a half-written file.
func WriteAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, b)
}

// Read loads and schema-checks the survey at path.
func Read(path string) (*Survey, error) { return ReadWith(path, SchemaPathFor(path)) }

// ReadWith is Read with an explicit schema file.
func ReadWith(path, schemaPath string) (*Survey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	schema, err := CompileSchema(schemaPath)
	if err != nil {
		return nil, err
	}
	if err := Validate(schema, b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var s Survey
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}
