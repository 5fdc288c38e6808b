package xquic

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/harnesses/upstream"
)

// TestBuildPinned builds BoringSSL and the pinned xquic from the mirrors
// and runs the harness binary's version command.
func TestBuildPinned(t *testing.T) {
	if os.Getenv("MIGAUDIT_MIRRORS") == "" {
		t.Skip("MIGAUDIT_MIRRORS not set: no xquic/boringssl mirrors to build from (CI has none)")
	}
	b, err := Ensure(context.Background(), upstream.Options{}, testWriter{t})
	if upstream.IsNoSource(err) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []*upstream.Artifact{b.BoringSSL.Artifact, b.Lib, b.Harness} {
		t.Logf("%s %s: %s (built %s, reused %v)", a.Impl, a.Commit[:12], a.Dir, a.Duration, a.Reused)
	}
	t.Logf("submodules: %v", b.Lib.Deps)
	out, err := exec.Command(b.Harness.Path(Binary), "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "xquic ") {
		t.Fatalf("version: %q", out)
	}
}

// TestMissingDep: a --dep directory that does not exist is one line naming it.
func TestMissingDep(t *testing.T) {
	_, err := Ensure(context.Background(), upstream.Options{Deps: map[string]string{"boringssl": "/nonexistent/boringssl"}}, nil)
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/boringssl") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("want a one-line error naming the missing checkout, got %v", err)
	}
	_, err = Ensure(context.Background(), upstream.Options{Deps: map[string]string{"openssl": "/x"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "xquic's dependencies are boringssl") {
		t.Fatalf("unknown --dep: %v", err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
