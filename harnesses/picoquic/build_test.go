package picoquic

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/harnesses/upstream"
)

// TestBuildPinned builds the pinned picoquic with its picotls from the
// mirrors and runs the harness binary's version command.
func TestBuildPinned(t *testing.T) {
	if os.Getenv("MIGAUDIT_MIRRORS") == "" {
		t.Skip("MIGAUDIT_MIRRORS not set: no picoquic/picotls mirrors to build from (CI has none)")
	}
	b, err := Ensure(context.Background(), upstream.Options{}, testWriter{t})
	if upstream.IsNoSource(err) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("picotls %s from %s", b.Lib.Deps["picotls"], b.PicotlsFrom)
	a := b.Harness
	out, err := exec.Command(a.Path(Binary), "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "picoquic ") {
		t.Fatalf("version: %q", out)
	}
	t.Logf("%s: %s", a.Dir, out)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
