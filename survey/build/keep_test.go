package build

import (
	"errors"

	"bytes"
	"context"
	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/data"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/survey"
)

// A rebuild with less than the file it replaces fails, naming what is
// missing, and leaves the file byte-identical; --allow-partial writes it.
func TestSurveyNeverWritesLessThanItRead(t *testing.T) {
	root, mirrors := world(t, "YES")
	noStudy(t)
	out := filepath.Join(root, "data", "survey_results.json")
	schema, err := os.ReadFile(filepath.Join("..", "..", "data", survey.SchemaFile))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "data", survey.SchemaFile), schema)
	// The file as a full build left it: quic-go audited, with its run.
	if _, err := Run(context.Background(), Options{Out: out, RepoRoot: root, Mirrors: mirrors, Only: []string{"quic-go"}, Audit: fakeAudit}, nil); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		o    Options
		want []string // in the one-line error
	}{
		{"no mirrors at all", Options{Mirrors: t.TempDir(), Only: []string{"quic-go", "picoquic"}},
			[]string{"no mirror for 2 of the implementations", "quic-go (", "picoquic (", "private-octopus+picoquic", "left unchanged", "--allow-partial"}},
		{"one mirror missing", Options{Mirrors: mirrors, Only: []string{"quic-go", "picoquic"}},
			[]string{"no mirror for 1 of", "picoquic ("}},
		{"audit fails: the source audit is lost", Options{Mirrors: mirrors, Only: []string{"quic-go"}, Audit: failingAudit},
			[]string{"has less than it", "quic-go source audit"}},
		{"an implementation dropped", Options{Mirrors: mirrors, Only: []string{"msquic"}, Audit: fakeAudit, AllowPartial: false},
			nil},
	}
	os.MkdirAll(filepath.Join(mirrors, "microsoft+msquic", "repo", "objects"), 0o755) // a bare repository's shape
	os.WriteFile(filepath.Join(mirrors, "microsoft+msquic", "repo", "HEAD"), []byte("ref: refs/heads/master\n"), 0o644)
	tests[3].want = []string{"quic-go absent"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Out, o.RepoRoot = out, root
			if o.Audit == nil {
				o.Audit = fakeAudit
			}
			_, err := Run(context.Background(), o, nil)
			if err == nil {
				t.Fatal("rebuild with less than the file succeeded")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			after, _ := os.ReadFile(out)
			if !bytes.Equal(before, after) {
				t.Error("survey file changed")
			}
			// The same rebuild with --allow-partial writes.
			o.AllowPartial = true
			if _, err := Run(context.Background(), o, nil); err != nil {
				t.Fatalf("--allow-partial: %v", err)
			}
			if after, _ := os.ReadFile(out); bytes.Equal(before, after) {
				t.Error("--allow-partial did not write the partial survey")
			}
			os.WriteFile(out, before, 0o644)
		})
	}
}

func failingAudit(ctx context.Context, im data.Implementation, src string) ([]audit.Finding, error) {
	return nil, errors.New("parse connection.go: unexpected EOF")
}
