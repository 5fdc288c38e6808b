package survey

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/migaudit/migaudit/data/atomicfile"
)

// SchemaFile is the schema's file name; it sits beside survey_results.json.
const SchemaFile = "survey.schema.json"

// SchemaPathFor returns the schema that governs the results file at path:
// data/survey.schema.json for data/survey_results.json.
func SchemaPathFor(resultsPath string) string {
	return filepath.Join(filepath.Dir(resultsPath), SchemaFile)
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
