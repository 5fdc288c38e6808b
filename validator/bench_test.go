package validator

import (
	"compress/gzip"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// BenchmarkDecompressEvidence reads and decompresses every gzip file under
// data/evidence (traces and captures, spoiled attempts included) once: the
// floor validate is measured against, as `gzip -dc` of the same files.
func BenchmarkDecompressEvidence(b *testing.B) {
	var files []string
	filepath.WalkDir(filepath.Join("..", "data", "evidence"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".gz") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		b.Skip("no evidence traces")
	}
	var n int64
	for b.Loop() {
		n = 0
		for _, f := range files {
			r, err := openMaybeGzip(f)
			if err != nil {
				b.Fatal(err)
			}
			k, _ := io.Copy(io.Discard, r)
			n += k
			r.Close()
		}
	}
	b.ReportMetric(float64(len(files)), "files")
	b.ReportMetric(float64(n)/1e6, "MB")
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
