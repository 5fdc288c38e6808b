package parsers

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// Fuzz targets, one per parser: go test -fuzz FuzzParseNgtcp2 ./parsers
// Seeds are the hand-written testdata traces plus slices of the reference
// traces (when ../shared is present): the start, the path-validation
// exchange and the end.

// seedSlices returns slices of a reference trace cut at line boundaries.
func seedSlices(f testing.TB, file, marker string) [][]byte {
	root := repoRoot(f)
	p := filepath.Join(root, "..", "shared", "reference", file)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil // reference data absent: testdata seeds only
	}
	if z, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
		if b, err = io.ReadAll(io.LimitReader(z, 64<<20)); err != nil && err != io.ErrUnexpectedEOF {
			return nil
		}
	}
	const win = 6 << 10
	cut := func(from, to int) []byte {
		from, to = max(from, 0), min(to, len(b))
		if i := bytes.IndexByte(b[from:to], '\n'); from > 0 && i >= 0 {
			from += i + 1
		}
		if i := bytes.LastIndexByte(b[from:to], '\n'); to < len(b) && i >= 0 {
			to = from + i + 1
		}
		return append([]byte(nil), b[from:to]...)
	}
	out := [][]byte{cut(0, win), cut(len(b)-win, len(b))}
	if i := bytes.Index(b, []byte(marker)); i >= 0 {
		out = append(out, append(cut(0, 2<<10), cut(i-win/2, i+win/2)...))
	}
	return out
}

func fuzzParse(f *testing.F, format string, testdata []string, reference, marker string) {
	for _, g := range testdata {
		files, _ := filepath.Glob(filepath.Join("testdata", g))
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
	if reference != "" {
		for _, s := range seedSlices(f, reference, marker) {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkOracle(t, b, format)
		for _, opt := range []Options{{Format: format}, {}} {
			var c timeline.Collector
			err := Parse("fuzz.trace", bytes.NewReader(b), opt, &c)
			if err == nil {
				continue
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "parse fuzz.trace: ") {
				t.Fatalf("error without the file name: %q", msg)
			}
		}
	})
}

func FuzzParsePicoquic(f *testing.F) {
	fuzzParse(f, FormatPicoquic, []string{"picoquic_*.qlog", "errors/picoquic_*"}, "traces/picoquic_server.qlog.gz", `"path_challenge"`)
}

func FuzzParseNgtcp2(f *testing.F) {
	fuzzParse(f, FormatNgtcp2, []string{"ngtcp2_*", "errors/*.sqlog"}, "traces/ngtcp2_server.sqlog.gz", `"path_challenge"`)
}

func FuzzParseQuicGo(f *testing.F) {
	fuzzParse(f, FormatQuicGo, []string{"quicgo_*", "errors/*.sqlog"}, "traces/quicgo_server.sqlog.gz", `"path_challenge"`)
}

func FuzzParseQuiche(f *testing.F) {
	fuzzParse(f, FormatQuiche, []string{"quiche_*.sqlog"}, "traces/quiche_server.sqlog.gz", `"path_challenge"`)
}

func FuzzParseMsquic(f *testing.F) {
	fuzzParse(f, FormatMsquic, []string{"msquic_*", "errors/msquic_*"}, "traces/msquic_server.log.gz", "SERVER_PEER_ADDR_CHANGED")
}

func FuzzParseTimelineCSV(f *testing.F) {
	fuzzParse(f, FormatCSV, []string{"*.csv", "errors/*.csv"}, "timelines/msquic/rep1_server.csv.gz", "5532258")
}

func FuzzParseQuicly(f *testing.F) {
	fuzzParse(f, FormatQuicly, []string{"quicly_*", "errors/quicly_*"}, "", "")
}

func FuzzParseQuinn(f *testing.F) {
	fuzzParse(f, FormatQuinn, []string{"quinn_*", "errors/quinn_*"}, "", "")
}

func FuzzParseLsquic(f *testing.F) {
	fuzzParse(f, FormatLsquic, []string{"lsquic_*", "errors/lsquic_*"}, "", "")
}

func FuzzParseXquic(f *testing.F) {
	fuzzParse(f, FormatXquic, []string{"xquic_*", "errors/xquic_*"}, "", "")
}
