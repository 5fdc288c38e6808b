package reproduce

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// realOptions reproduces this checkout from the mirrors in
// $MIGAUDIT_MIRRORS, or skips.
func realOptions(tb testing.TB) Options {
	tb.Helper()
	m := os.Getenv("MIGAUDIT_MIRRORS")
	if m == "" {
		tb.Skip("MIGAUDIT_MIRRORS not set: reproducing the committed survey needs the fourteen implementations' and the study's mirrors")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		tb.Fatal(err)
	}
	return Options{RepoRoot: root, Mirrors: m}
}

// The committed survey is what the public sources give, byte for byte, and
// every claim in it passes the independent validator.
func TestReproduceCommittedSurvey(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: rebuilds and validates all fourteen implementations (about a minute)")
	}
	o := realOptions(t)
	var out strings.Builder
	res, err := Run(context.Background(), o, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Diffs) > 0 {
		t.Errorf("data/survey_results.json differs from its rebuild in %d fields (run migaudit reproduce --update after changing evidence or pins):\n%s", len(res.Diffs), Summarise(res.Diffs, 40))
	}
	if res.Validation.Failed > 0 || res.Validation.Unverifiable > 0 {
		for _, l := range res.Checks {
			if !strings.HasPrefix(l, "PASS") {
				t.Log(l)
			}
		}
		t.Errorf("validation: %s", res.Validation)
	}
	if res.Survey.Find("picoquic").FixCheck == nil || !res.Survey.Find("picoquic").FixCheck.Visible {
		t.Errorf("picoquic fix check: %+v", res.Survey.Find("picoquic").FixCheck)
	}
}

// BenchmarkReproduce times one whole reproduction (sources, rebuild,
// validation, comparison); the target is under 3 minutes on 2 cores.
func BenchmarkReproduce(b *testing.B) {
	o := realOptions(b)
	for i := 0; i < b.N; i++ {
		if _, err := Run(context.Background(), o, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
