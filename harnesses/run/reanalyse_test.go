package run

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyDir copies a committed repetition directory into a temporary one.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		defer out.Close()
		_, err = io.Copy(out, in)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// Reanalyse on committed evidence: a tampered analysis is re-derived to
// exactly the committed one (and the manifest's digests with it); an
// untouched copy is left alone; a manifest without a file list is refused.
func TestReanalyseCommittedEvidence(t *testing.T) {
	src := filepath.Join("..", "..", "data", "evidence", "ngtcp2", "rep3")
	if _, err := os.Stat(filepath.Join(src, "manifest.json")); err != nil {
		t.Skipf("no committed evidence at %s: %v", src, err)
	}
	wantAn, _ := os.ReadFile(filepath.Join(src, "analysis.json"))
	wantMan, _ := os.ReadFile(filepath.Join(src, "manifest.json"))

	cases := []struct {
		name    string
		tamper  func(t *testing.T, dir string)
		changed bool
		err     string
	}{
		{"untouched", func(*testing.T, string) {}, false, ""},
		{"answer edited", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "analysis.json")
			b, _ := os.ReadFile(p)
			var a map[string]any
			if err := json.Unmarshal(b, &a); err != nil {
				t.Fatal(err)
			}
			a["q3"].(map[string]any)["answer"] = "YES"
			out, _ := json.MarshalIndent(a, "", "  ")
			if err := os.WriteFile(p, append(out, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}, true, ""},
		{"manifest without a file list", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "manifest.json")
			b, _ := os.ReadFile(p)
			if err := os.WriteFile(p, bytes.Replace(b, []byte(`"files"`), []byte(`"filez"`), 1), 0o644); err != nil {
				t.Fatal(err)
			}
		}, false, "no \"files\" list"},
		{"trace gone", func(t *testing.T, dir string) {
			matches, _ := filepath.Glob(filepath.Join(dir, "qlog-server", "*"))
			for _, m := range matches {
				os.Remove(m)
			}
		}, false, "server trace"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyDir(t, src)
			c.tamper(t, dir)
			changed, err := Reanalyse(dir)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if changed != c.changed {
				t.Errorf("changed = %v, want %v", changed, c.changed)
			}
			gotAn, _ := os.ReadFile(filepath.Join(dir, "analysis.json"))
			gotMan, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
			if !bytes.Equal(gotAn, wantAn) {
				t.Errorf("analysis.json differs from the committed one after reanalysis")
			}
			if !bytes.Equal(gotMan, wantMan) {
				t.Errorf("manifest.json differs from the committed one after reanalysis")
			}
		})
	}
}
