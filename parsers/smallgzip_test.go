package parsers

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/migaudit/migaudit/parsers/timeline"
)

// TestSmallGzipFile: a small gzip file, decompressed in the parsing
// goroutine, parses to the same timeline and the same error as the same
// bytes through the read-ahead goroutine (a reader without Stat), whole and
// cut short; and smallFile picks the paths it says it picks.
func TestSmallGzipFile(t *testing.T) {
	dir := t.TempDir()
	files, _ := filepath.Glob("testdata/*.*")
	if ref := filepath.Join(repoRoot(t), "..", "shared", "reference", "traces", "msquic_server.log.gz"); fileExists(ref) {
		files = append(files, ref)
	}
	n := 0
	for _, f := range files {
		raw := gunzipFile(t, f)
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		w.Write(raw)
		w.Close()
		if z.Len() > smallGzip {
			continue
		}
		for _, frac := range []int{100, 60} {
			b := z.Bytes()[:z.Len()*frac/100]
			name := fmt.Sprintf("%s.%d.gz", filepath.Base(f), frac)
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			fh, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			if !smallFile(fh) {
				t.Fatalf("%s (%d bytes): smallFile false", name, len(b))
			}
			var viaFile, viaAhead timeline.Collector
			ferr := Parse(name, fh, Options{}, &viaFile)
			fh.Close()
			aerr := Parse(name, bytes.NewReader(b), Options{}, &viaAhead)
			if fmt.Sprint(ferr) != fmt.Sprint(aerr) {
				t.Errorf("%s: error %v from the file, %v through the read-ahead", name, ferr, aerr)
			}
			if !reflect.DeepEqual(viaFile.T, viaAhead.T) {
				t.Errorf("%s: the file parses to %d samples, %d events; through the read-ahead %d, %d",
					name, len(viaFile.T.Samples), len(viaFile.T.Events), len(viaAhead.T.Samples), len(viaAhead.T.Events))
			}
			n++
		}
	}
	if n < 10 {
		t.Fatalf("only %d small gzip files compared", n)
	}
	// A larger file, a pipe and a reader without Stat take the read-ahead.
	big := filepath.Join(dir, "big.gz")
	if err := os.WriteFile(big, make([]byte, smallGzip+1), 0o644); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(big)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	for name, r := range map[string]io.Reader{"larger file": fh, "pipe": pr, "bytes.Reader": bytes.NewReader(nil)} {
		if smallFile(r) {
			t.Errorf("%s: smallFile true", name)
		}
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
