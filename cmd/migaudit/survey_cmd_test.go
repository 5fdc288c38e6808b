package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/migaudit/migaudit/survey"
	"github.com/migaudit/migaudit/survey/surveytest"
)

// surveyFile writes the survey package's hand-made fixture, finalised, as a
// results file with its schema beside it.
func surveyFile(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s := surveytest.Fixture(t)
	schema, _ := os.ReadFile("../../data/survey.schema.json")
	os.WriteFile(filepath.Join(dir, survey.SchemaFile), schema, 0o644)
	p := filepath.Join(dir, "survey_results.json")
	if err := survey.Write(p, s); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSurveyCommandsExitCodes(t *testing.T) {
	p := surveyFile(t)
	out := filepath.Join(filepath.Dir(p), "r", "picoquic.md")
	tests := []struct {
		args []string
		ok   bool
	}{
		{[]string{"tables", "--file", p, "--format", "csv", "--table", "compliance"}, true},
		{[]string{"tables", "--file", p, "--format", "xml"}, false},
		{[]string{"tables", "--file", p, "--table", "nosuch"}, false},
		{[]string{"tables", "--file", filepath.Join(filepath.Dir(p), "absent.json")}, false},
		{[]string{"report", "--file", p, "--impl", "picoquic", "--out", out}, true},
		{[]string{"report", "--file", p, "--impl", "nosuch"}, false},
		// the fixture's evidence lives nowhere: nothing can PASS, nothing is
		// faked either; its hand-made figures fail against absent files
		{[]string{"validate", "--file", p, "--mirrors", t.TempDir()}, false},
	}
	for _, tc := range tests {
		if code := run(tc.args, io.Discard, io.Discard); (code == 0) != tc.ok {
			t.Errorf("%v exited %d", tc.args, code)
		}
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("report not written: %v", err)
	}
}
