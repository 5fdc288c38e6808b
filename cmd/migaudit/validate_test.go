package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unverifiableSurvey is a survey whose every claim is true and whose one
// source claim (the pinned commit) cannot be checked: no mirror is given.
const unverifiableSurvey = `{
 "schema_version": 1,
 "implementations": [{
  "name": "aioquic", "language": "Python",
  "upstream": "https://github.com/aiortc/aioquic",
  "commit": "6d36838d008c2202c337142fa07e8bf80e96bac8",
  "source_audited": false,
  "answers": [
   {"question": "Q1", "requirement_level": "MUST", "answer": "UNKNOWN", "established": "source", "agreement": "none", "evidence": []},
   {"question": "Q2", "requirement_level": "MAY", "answer": "UNKNOWN", "established": "source", "agreement": "none", "evidence": []},
   {"question": "Q3", "requirement_level": "MUST", "answer": "UNKNOWN", "established": "source", "agreement": "none", "evidence": []}
  ],
  "constants": []
 }],
 "cross_cutting": {
  "F1": {"statement": "0 of 0 ship a migration reset hook that nothing calls", "implementations": [], "call_sites": {}},
  "F2": {"statement": "0 distinct mechanisms across 0 implementations", "distinct": 0, "of": 0, "mechanisms": {}},
  "F3": {"statement": "none of 0 uses the path-validation round trip as the new path's initial RTT", "users": [], "of": 0}
 },
 "disagreements": []
}`

// An UNVERIFIABLE claim is not a verified one: validate exits 1 unless
// --allow-unverifiable accepts it.
func TestValidateUnverifiableExitCode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "survey_results.json")
	if err := os.WriteFile(p, []byte(unverifiableSurvey), 0o644); err != nil {
		t.Fatal(err)
	}
	mirrors := t.TempDir()
	base := []string{"validate", "--file", p, "--mirrors", mirrors}
	if code := run(base, io.Discard, io.Discard); code != 1 {
		t.Errorf("validate with an unverifiable commit exited %d, want 1", code)
	}
	if code := run(append(base, "--allow-unverifiable"), io.Discard, io.Discard); code != 0 {
		t.Errorf("validate --allow-unverifiable exited %d, want 0", code)
	}
}

// validate judges the file without changing it; --record writes the counts
// into its validation block and says so.
func TestValidateRecordsOnlyWhenAsked(t *testing.T) {
	p := surveyFile(t)
	before, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"validate", "--file", p, "--mirrors", t.TempDir(), "--allow-unverifiable"}
	var out bytes.Buffer
	run(base, &out, io.Discard) // the fixture's claims need not hold here: only the file matters
	if b, _ := os.ReadFile(p); !bytes.Equal(b, before) {
		t.Errorf("validate without --record changed %s", p)
	}
	out.Reset()
	var errOut bytes.Buffer
	run(append(base, "--record"), &out, &errOut)
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), `"validation"`) || !strings.Contains(string(b), `"unverifiable"`) {
		t.Errorf("validate --record did not write the counts:\n%s", b)
	}
	if !strings.Contains(out.String(), "recorded in "+p) {
		t.Errorf("validate --record does not say where it recorded:\n%s%s", out.String(), errOut.String())
	}
}
