package report

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/survey"
	"github.com/migaudit/migaudit/survey/surveytest"
)

// TestFindingSectionReadsTheLogs: the finding's per-repetition figures come
// from the committed log, not from the survey: the survey's figures here are
// all zero, the row shows what the log gives.
func TestFindingSectionReadsTheLogs(t *testing.T) {
	s := surveytest.Fixture(t)
	im := s.Find("msquic")
	root := t.TempDir()
	rel := "data/evidence/msquic/instrumented/rep1/server.instrument.log.gz"
	b, err := os.ReadFile("../../parsers/msquiclog/testdata/server_small.log")
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b)
	zw.Close()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, rel), z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	link := "https://github.com/microsoft/msquic/blob/" + im.Commit + "/src/core/loss_detection.c#L1502"
	probe := survey.LiveFinding{ID: "msquic-old-path-probe-losses-cut-new-path-window", Statement: "probes", Requirement: "RFC 9000 §9.4",
		Repetitions: []string{"instrumented/rep1"}, Figures: []survey.FindingFigures{{Repetition: "instrumented/rep1", Log: rel}}, Reproduction: "sudo migaudit run --impl msquic --instrument --reps 1"}
	im.LiveFindings = []survey.LiveFinding{{ID: "msquic-rtt-never-fed-after-path-switch", Questions: []string{"Q3"},
		Statement: "the estimator is never fed", Requirement: "RFC 9002 §5.1",
		Evidence:    []survey.Evidence{{Path: "src/core/loss_detection.c", Line: 1502, Excerpt: "if (NewLargestAckRetransmittable && !NewLargestAckDifferentPath) {", Permalink: link, Note: "the gate"}},
		Repetitions: []string{"instrumented/rep1", "instrumented/rep2"},
		Figures: []survey.FindingFigures{{Repetition: "instrumented/rep1", Log: rel},
			{Repetition: "instrumented/rep2", Log: "data/evidence/msquic/instrumented/rep2/server.instrument.log.gz", DifferentPathAfter: 7, EligibleAfter: 7}},
		Reproduction: "sudo migaudit run --impl msquic --instrument --reps 1", Fix: "stamp the path"}, probe}
	var buf bytes.Buffer
	if _, err := Write(&buf, s, im, Options{RepoRoot: root}); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, want := range []string{
		"## Finding: msquic-rtt-never-fed-after-path-switch",
		"The live answer is explained with instrumented evidence below: [Finding: msquic-rtt-never-fed-after-path-switch](#finding-msquic-rtt-never-fed-after-path-switch).",
		"**Requirement.** RFC 9002 §5.1.",
		"1. [`src/core/loss_detection.c:1502`](" + link + ")",
		"| instrumented/rep1 | path 0 → 1 at 1796300005.090000 | 3 / 2 | 3 | 3 | 0 | 0 ×3 | 1 ×3 | pn 5001 (PathId 0) | 333.00 ms | no capture kept |",
		"| instrumented/rep2 | log not read: " + "data/evidence/msquic/instrumented/rep2/server.instrument.log.gz absent (the survey records 7 of 7 gated, 0 updates)",
		"## Finding: msquic-old-path-probe-losses-cut-new-path-window",
		"| instrumented/rep1 | path 0 → 1 at 1796300005.090000 | 2 | 1 | 5,978 B after 210 ms | 1 (0.05 s) | no capture kept |",
		"sudo migaudit run --impl msquic --instrument --reps 1",
		"**What a fix would change.** Stamp the path.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if t.Failed() {
		i := strings.Index(md, "## Finding")
		t.Log(md[i:min(len(md), i+3000)])
	}
}
