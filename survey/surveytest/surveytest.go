// Package surveytest is what the tests of the survey's writers share: the
// survey package's hand-made fixture, finalised as the survey command
// finalises a survey, and golden files rewritten by -update.
package surveytest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/migaudit/migaudit/survey"
)

// Fixture reads survey/testdata/fixture_input.json and derives everything
// derived (survey.Finalise).
func Fixture(t testing.TB) *survey.Survey {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "testdata", "fixture_input.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s survey.Survey
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	survey.Finalise(&s)
	return &s
}

// Golden compares got with testdata/name, or rewrites the file when update
// is set (the test's -update flag).
func Golden(t testing.TB, name string, got []byte, update bool) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden (go test -update to accept):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}
