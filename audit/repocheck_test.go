package audit_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/audit"
	"github.com/migaudit/migaudit/audit/gitsrc"
	_ "github.com/migaudit/migaudit/audit/rules"
	"github.com/migaudit/migaudit/data"
)

// A --source that is another project: one line naming what was expected,
// an error (non-zero exit), no table of "absent" answers.
func TestWrongRepository(t *testing.T) {
	dir := t.TempDir()
	snap, err := gitsrc.CommitFiles(dir, map[string]string{"README.md": "another project\n"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		impl string
		want []string
	}{
		{"quic-go", []string{"is not quic-go's repository", "root commit b6178b89fa79", "pinned commit 2cfe6ee0b5ac"}},
		{"picoquic", []string{"is not picoquic's repository", "root commit 8c15cb2e1c3d"}},
	}
	for _, tt := range tests {
		t.Run(tt.impl, func(t *testing.T) {
			var out bytes.Buffer
			err := audit.Command(context.Background(), audit.Options{Impl: tt.impl, Source: dir}, &out)
			if err == nil {
				t.Fatalf("audit of %s against an unrelated repository succeeded:\n%s", tt.impl, out.String())
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines: %q", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			if out.Len() > 0 {
				t.Errorf("printed a report for the wrong repository:\n%s", out.String())
			}
		})
	}
	// The repository that holds the pin is accepted (a clone without the root).
	im := data.Implementation{Name: "quic-go", Upstream: "https://github.com/quic-go/quic-go", Commit: snap.Commit()}
	if err := audit.CheckRepository(snap.Repo(), im); err != nil {
		t.Errorf("repository holding the pin rejected: %v", err)
	}
}
