package validator

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkValidateCommittedSurvey is `migaudit validate` of the committed
// survey from cold caches: every git blob and trace read afresh each
// iteration. Target (issue #28): within 4× the time to decompress every
// evidence trace (BenchmarkDecompressEvidence), and under 200 MB peak.
func BenchmarkValidateCommittedSurvey(b *testing.B) {
	mirrors := os.Getenv("MIGAUDIT_MIRRORS")
	if mirrors == "" {
		b.Skip("MIGAUDIT_MIRRORS not set")
	}
	root := filepath.Join("..")
	survey := filepath.Join(root, "data", "survey_results.json")
	if _, err := os.Stat(survey); err != nil {
		b.Skip("data/survey_results.json absent")
	}
	ref := ""
	if _, err := findMirror(mirrors, "https://github.com/sivaahari/quic-congestion-control"); err != nil {
		if ref = referenceDir(root); ref == "" {
			b.Skip("no mirror of the study and no shared/reference above the repository")
		}
	}
	for b.Loop() {
		resetCaches()
		sum, err := Run(Options{Path: survey, RepoRoot: root, Mirrors: mirrors, Evidence: ref}, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		// The reference folder may lack the study's phase-1 files: what
		// rests on them is not this benchmark's concern, a failure of
		// anything else is.
		if sum.Failed > 0 && ref == "" {
			b.Fatalf("%s", sum)
		}
		b.ReportMetric(float64(sum.Passed+sum.Failed+sum.Unverifiable), "checks")
	}
}

// BenchmarkDecompressEvidence reads and decompresses every trace under
// data/evidence once: the floor validate is measured against.
func BenchmarkDecompressEvidence(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join("..", "data", "evidence", "*", "rep*", "*.gz"))
	more, _ := filepath.Glob(filepath.Join("..", "data", "evidence", "*", "rep*", "*", "*.gz"))
	files = append(files, more...)
	if len(files) == 0 {
		b.Skip("no evidence traces")
	}
	for b.Loop() {
		for _, f := range files {
			r, err := openMaybeGzip(f)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, r)
			r.Close()
		}
	}
}

// resetCaches empties the package-level memos so each iteration starts cold.
func resetCaches() {
	decided.Clear()
	liveDecided.Clear()
	symbolValues.Clear()
	wireMaps.Clear()
}

func openMaybeGzip(p string) (io.ReadCloser, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{zr, f}, nil
}
